// The non-template half of TensorIterator (cpu/tensor_iterator.h): broadcasting, type
// promotion, output checks, dimension coalescing, and the dtype-converting copy.
#include <algorithm>
#include <vector>

#include "cpu/tensor_iterator.h"
#include "loom/core/str_cat.h"
#include "loom/core/tensor_checks.h"

namespace loom::ops::cpu {

using meta::dense_layout_of;  // Note [Output layout follows the input]

TensorIterator& TensorIterator::add_input(std::string_view name, const Tensor& t,
                                          std::optional<DType> as_dtype) {
  meta::check_input_defined(op_, name, t);
  if (!as_dtype) promotion_.add(t);
  inputs_.push_back({name, t, as_dtype});
  return *this;
}

void TensorIterator::check_dtypes(std::initializer_list<DType> storage) const {
  auto it = storage.begin();
  LOOM_CHECK(*it == result_buf_.dtype(), op_, ": internal error: loop writes ", dtype_name(*it),
             " into a ", dtype_name(result_buf_.dtype()), " buffer");
  for (const Operand& in : inputs_) {
    ++it;
    LOOM_CHECK(*it == in.tensor.dtype(), op_, ": internal error: loop reads ", in.name, " as ",
               dtype_name(*it), " but it is ", dtype_name(in.tensor.dtype()));
  }
}

void TensorIterator::build() {
  // Devices: this is the CPU engine.
  for (const Operand& in : inputs_) {
    LOOM_CHECK_T(DeviceError, in.tensor.device().is_cpu(), op_,
                 ": expected all tensors to be on the cpu, but got ", in.name, " on ",
                 in.tensor.device().str());
  }
  if (kind_ != OutputKind::New) {
    LOOM_CHECK_T(TypeError, out_.defined(), op_, ": the output tensor is undefined");
    LOOM_CHECK_T(DeviceError, out_.device().is_cpu(), op_,
                 ": expected all tensors to be on the cpu, but got the output on ",
                 out_.device().str());
  }

  // Shape.
  shape_.clear();
  for (const Operand& in : inputs_) shape_ = broadcast_shapes(op_, shape_, in.tensor.sizes());
  if (kind_ == OutputKind::InPlace || kind_ == OutputKind::Copy) {
    shape_ = meta::check_inplace_shape(op_, out_, shape_);
  }
  numel_ = 1;
  for (int64_t s : shape_) numel_ *= s;

  // Dtypes.
  common_ = meta::computation_dtype(forced_common_ ? *forced_common_ : promotion_.result(), rule_);
  result_ = meta::result_dtype(common_, rule_, kind_, out_);

  // Output.
  if (kind_ == OutputKind::New) {
    std::vector<int64_t> layout;
    for (const Operand& in : inputs_) {
      if (!(layout = dense_layout_of(in.tensor, shape())).empty()) break;
    }
    if (layout.empty()) {
      out_ = Tensor::empty(shape(), TensorOptions{}.with(result_));
    } else {  // Note [Output layout follows the input]
      out_ = Tensor::empty({numel_}, TensorOptions{}.with(result_))
                 .as_strided_view(shape(), layout, 0);
    }
  } else {
    meta::check_written_output(op_, out_, result_, kind_, !inputs_.empty());
    // A mis-sized out= is resized, as PyTorch's resize_output does.
    resize_output(op_, out_, shape());
  }
  result_buf_ =
      out_.dtype() == result_ ? out_ : Tensor::empty(shape(), TensorOptions{}.with(result_));

  // Inputs read in their dtype, and from a copy where they may share memory with the
  // output (Note [Memory overlap]).
  for (Operand& in : inputs_) {
    const DType want = in.as_dtype ? *in.as_dtype : common_;
    const bool overlaps =
        kind_ != OutputKind::New && meta::input_needs_copy(op_, out_, in.name, in.tensor);
    if (in.tensor.dtype() != want || overlaps) in.tensor = cast_copy(in.tensor, want);
  }

  // Geometry: byte strides per operand over shape_ (0 where broadcast), then coalescing.
  const size_t nops = inputs_.size() + 1;
  const int64_t ndim = static_cast<int64_t>(shape_.size());
  absl::InlinedVector<DimVector, 4> full(nops, DimVector(static_cast<size_t>(ndim), 0));
  data_.assign(nops, nullptr);
  auto fill = [&](size_t k, const Tensor& t) {
    const int64_t off = ndim - t.dim();
    const auto es = static_cast<int64_t>(t.element_size());
    for (int64_t d = 0; d < t.dim(); ++d) full[k][off + d] = t.size(d) == 1 ? 0 : t.stride(d) * es;
    data_[k] = static_cast<char*>(t.data_ptr());
  };
  fill(0, result_buf_);
  for (size_t k = 1; k < nops; ++k) fill(k, inputs_[k - 1].tensor);

  meta::coalesce_dims(shape_, full, sizes_, strides_);
}

Tensor TensorIterator::finish() {
  if (!result_buf_.is_same(out_)) copy_into(op_, out_, result_buf_);
  if (kind_ != OutputKind::New) out_.bump_version();
  return out_;
}

void copy_into(std::string_view op, const Tensor& dst, const Tensor& src) {
  TensorIterator it(op);
  it.add_input("src", src, src.dtype()).set_output(dst, OutputKind::Copy);
  it.build();
  dispatch_all(dst.dtype(), [&]<typename D>(D*) {
    dispatch_all(src.dtype(), [&]<typename S>(S*) {
      // Through compute_t<S>: a 16-bit float goes via float, everything else directly.
      it.for_each<D, S>([](auto x) { return x; });
    });
  });
  // The caller decides whether this write is a version bump (copy_ is; a temporary isn't),
  // so finish() is not called: the iterator wrote straight into dst.
}

Tensor cast_copy(const Tensor& t, DType dtype) {
  Tensor out = Tensor::empty(t.sizes(), TensorOptions{}.with(dtype));
  copy_into("to", out, t);
  return out;
}

}  // namespace loom::ops::cpu
