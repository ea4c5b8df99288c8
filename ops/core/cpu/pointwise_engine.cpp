// The non-template half of TensorIterator (cpu/tensor_iterator.h): broadcasting, type
// promotion, output checks, dimension coalescing, and the dtype-converting copy.
#include "cpu/tensor_iterator.h"

#include <algorithm>
#include <vector>

#include "loom/core/str_cat.h"
#include "loom/core/tensor_checks.h"

namespace loom::ops::cpu {

DimVector broadcast_shapes(std::string_view op, IntArrayRef a, IntArrayRef b) {
  const size_t n = std::max(a.size(), b.size());
  DimVector out(n, 1);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    LOOM_CHECK(da == db || da == 1 || db == 1, op, ": The size of tensor a (", da,
               ") must match the size of tensor b (", db, ") at non-singleton dimension ", i);
    out[i] = da == 1 ? db : da;
  }
  return out;
}

namespace {
// Note [Output layout follows the input]: as in PyTorch, a new output takes the dimension
// order of an input of the full shape that is dense but not row-major (channels-last, a
// transposed matrix), so that relu of a channels-last activation is channels-last and the
// loop stays one contiguous sweep. The strides of such an input, if it is one; else empty.
std::vector<int64_t> dense_layout_of(const Tensor& t, IntArrayRef shape) {
  if (t.sizes() != shape || t.dim() < 2 || t.is_contiguous()) return {};
  const auto n = static_cast<size_t>(t.dim());
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  // Innermost first: smaller stride, and for equal strides (size-1 dims) the later dim.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int64_t sa = t.stride(static_cast<int64_t>(a)), sb = t.stride(static_cast<int64_t>(b));
    return sa != sb ? sa < sb : a > b;
  });
  std::vector<int64_t> strides(n);
  int64_t run = 1;
  for (size_t i : order) {
    const int64_t size = t.size(static_cast<int64_t>(i));
    if (size != 1 && t.stride(static_cast<int64_t>(i)) != run) return {};
    strides[i] = run;
    run *= std::max<int64_t>(size, 1);
  }
  return strides;
}

void update(std::optional<DType>& slot, DType d) { slot = slot ? promote_types(*slot, d) : d; }

// c10's combine_categories: the higher-priority result wins unless the lower one is of a
// higher category.
std::optional<DType> combine(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  if (is_floating_point(*higher)) return higher;
  if (*higher == DType::Bool || is_floating_point(*lower)) return promote_types(*higher, *lower);
  return higher;
}
}  // namespace

void ResultTypeState::add(const Tensor& t) {
  update(t.dim() == 0 ? zero_result : dim_result, t.dtype());
}

void ResultTypeState::add(const Scalar& s) {
  update(wrapped_result, s.is_floating_point() ? default_float_dtype()
                         : s.is_bool()         ? DType::Bool
                                               : DType::Int64);
}

DType ResultTypeState::result() const {
  return combine(dim_result, combine(zero_result, wrapped_result)).value_or(default_float_dtype());
}

TensorIterator& TensorIterator::add_input(std::string_view name, const Tensor& t,
                                          std::optional<DType> as_dtype) {
  LOOM_CHECK_T(TypeError, t.defined(), op_,
               ": expected a proper Tensor but got an undefined Tensor for argument '", name, "'");
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
    const DimVector full = broadcast_shapes(op_, out_.sizes(), shape_);
    LOOM_CHECK(IntArrayRef(full.data(), full.size()) == out_.sizes(), op_, ": output with shape ",
               sizes_str(out_.sizes()), " doesn't match the broadcast shape ",
               sizes_str({full.data(), full.size()}));
    shape_ = DimVector(out_.sizes().begin(), out_.sizes().end());
  }
  numel_ = 1;
  for (int64_t s : shape_) numel_ *= s;

  // Dtypes.
  common_ = forced_common_ ? *forced_common_ : promotion_.result();
  if (rule_ == ResultRule::IntToFloat && !is_floating_point(common_))
    common_ = default_float_dtype();
  result_ = rule_ == ResultRule::Bool ? DType::Bool : common_;
  if (kind_ == OutputKind::Copy) result_ = out_.dtype();

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
    if (kind_ != OutputKind::Copy) {
      LOOM_CHECK_T(TypeError, can_cast(result_, out_.dtype()), op_, ": result type ",
                   torch_type_name(result_), " can't be cast to the desired output type ",
                   torch_type_name(out_.dtype()));
    }
    // A written-to tensor with a broadcast (stride 0) dim would have several results race
    // for one element; PyTorch refuses it the same way. fill_ (no inputs) is idempotent, so
    // there it is allowed, as in PyTorch.
    for (int64_t d = 0; d < out_.dim() && !inputs_.empty(); ++d) {
      LOOM_CHECK(out_.size(d) <= 1 || out_.stride(d) != 0, op_,
                 ": unsupported operation: more than one element of the written-to tensor refers "
                 "to a single memory location. Please clone() the tensor before performing the "
                 "operation.");
    }
    // A mis-sized out= is resized, as PyTorch's resize_output does.
    resize_output(op_, out_, shape());
  }
  result_buf_ =
      out_.dtype() == result_ ? out_ : Tensor::empty(shape(), TensorOptions{}.with(result_));

  // Inputs read in their dtype.
  for (Operand& in : inputs_) {
    const DType want = in.as_dtype ? *in.as_dtype : common_;
    if (in.tensor.dtype() != want) in.tensor = cast_copy(in.tensor, want);
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

  sizes_.clear();
  strides_.assign(nops, DimVector{});
  for (int64_t d = 0; d < ndim; ++d) {
    if (shape_[d] == 1) continue;
    if (!sizes_.empty()) {
      // Merge d into the previous kept dim when every operand steps through both as one.
      bool mergeable = true;
      for (size_t k = 0; k < nops; ++k)
        mergeable = mergeable && strides_[k].back() == full[k][d] * shape_[d];
      if (mergeable) {
        sizes_.back() *= shape_[d];
        for (size_t k = 0; k < nops; ++k) strides_[k].back() = full[k][d];
        continue;
      }
    }
    sizes_.push_back(shape_[d]);
    for (size_t k = 0; k < nops; ++k) strides_[k].push_back(full[k][d]);
  }
  if (sizes_.empty()) {
    sizes_.push_back(1);
    for (size_t k = 0; k < nops; ++k) strides_[k].push_back(0);
  }
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
