// The non-template half of TensorIterator (cpu/tensor_iterator.h): broadcasting, type
// promotion, output checks, dimension coalescing, and the dtype-converting copy.
#include <algorithm>
#include <cstring>
#include <type_traits>
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
  // Devices: this is the CPU engine, and the Meta key's (Note [Meta kernels share the
  // reference's setup]): every operand on the cpu, or every operand on meta.
  if (kind_ != OutputKind::New) {
    LOOM_CHECK_T(TypeError, out_.defined(), op_, ": the output tensor is undefined");
  }
  meta_ = kind_ != OutputKind::New ? out_.device().is_meta()
                                   : !inputs_.empty() && inputs_[0].tensor.device().is_meta();
  const Device device = meta_ ? Device(DeviceType::meta()) : Device();
  const char* expected = meta_ ? "meta" : "cpu";
  const auto on_device = [&](const Tensor& t) {
    return meta_ ? t.device().is_meta() : t.device().is_cpu();
  };
  for (const Operand& in : inputs_) {
    LOOM_CHECK_T(DeviceError, on_device(in.tensor), op_,
                 ": expected all tensors to be on the ", expected, ", but got ", in.name, " on ",
                 in.tensor.device().str());
  }
  if (kind_ != OutputKind::New) {
    LOOM_CHECK_T(DeviceError, on_device(out_), op_, ": expected all tensors to be on the ",
                 expected, ", but got the output on ", out_.device().str());
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
    const TensorOptions options = TensorOptions{}.with(result_).with(device);
    if (layout.empty()) {
      out_ = Tensor::empty(shape(), options);
    } else {  // Note [Output layout follows the input]
      out_ = Tensor::empty({numel_}, options).as_strided_view(shape(), layout, 0);
    }
  } else {
    meta::check_written_output(op_, out_, result_, kind_, !inputs_.empty());
    // A mis-sized out= is resized, as PyTorch's resize_output does.
    resize_output(op_, out_, shape());
  }
  result_buf_ = out_.dtype() == result_
                    ? out_
                    : Tensor::empty(shape(), TensorOptions{}.with(result_).with(device));

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

bool TensorIterator::flat(DType dtype) const {
  if (meta_ || sizes_.size() != 1 || numel_ <= 1 || result_buf_.dtype() != dtype) return false;
  const auto es = static_cast<int64_t>(result_buf_.element_size());
  if (strides_[0][0] != es) return false;
  for (size_t k = 0; k < inputs_.size(); ++k) {
    const int64_t st = strides_[k + 1][0];
    if (inputs_[k].tensor.dtype() != dtype || (st != es && st != 0)) return false;
  }
  return true;
}

// ---- the per-ISA loops (Note [Per-ISA fast path]) ---------------------------------------------

namespace {

template <typename T>
auto binary_loop() {
  if constexpr (std::is_same_v<T, float>) {
    return LOOM_ISA_CALL(binary_f32);
  } else {
    return LOOM_ISA_CALL(binary_f64);
  }
}
template <typename T>
auto unary_loop() {
  if constexpr (std::is_same_v<T, float>) {
    return LOOM_ISA_CALL(unary_f32);
  } else {
    return LOOM_ISA_CALL(unary_f64);
  }
}
template <typename T>
auto threshold_backward_loop() {
  if constexpr (std::is_same_v<T, float>) {
    return LOOM_ISA_CALL(threshold_backward_f32);
  } else {
    return LOOM_ISA_CALL(threshold_backward_f64);
  }
}

/// Whether it is flat for T with n_inputs inputs, none of them a broadcast value except
/// (when last_may_be_scalar) the last one.
template <typename T>
bool flat_with(const TensorIterator& it, size_t n_inputs, bool last_may_be_scalar = false) {
  if (it.num_inputs() != n_inputs || !it.flat(storage_dtype<T>)) return false;
  for (size_t k = 0; k < n_inputs; ++k) {
    if (it.scalar_input(k) && !(last_may_be_scalar && k + 1 == n_inputs)) return false;
  }
  return true;
}

}  // namespace

template <typename T>
bool flat_binary(TensorIterator& it, BinaryKernel k, T alpha) {
  if (!flat_with<T>(it, 2, true)) return false;
  const auto loop = binary_loop<T>();
  T* out = it.data<T>(0);
  const T* a = it.data<T>(1);
  const T* b = it.data<T>(2);
  const bool b_scalar = it.scalar_input(1), stream = it.stream_output();
  it.parallel_ranges([&](int64_t begin, int64_t end) {
    loop(k, out + begin, a + begin, b_scalar ? b : b + begin, b_scalar, alpha, end - begin,
         stream);
  });
  return true;
}

template <typename T>
bool flat_binary_scalar(TensorIterator& it, BinaryKernel k, T value) {
  if (!flat_with<T>(it, 1)) return false;
  const auto loop = binary_loop<T>();
  T* out = it.data<T>(0);
  const T* a = it.data<T>(1);
  const bool stream = it.stream_output();
  it.parallel_ranges([&](int64_t begin, int64_t end) {
    loop(k, out + begin, a + begin, &value, true, T(1), end - begin, stream);
  });
  return true;
}

template <typename T>
bool flat_unary(TensorIterator& it, UnaryKernel k) {
  // sigmoid and silu have a float32 loop only (their vector exp is float).
  if (!std::is_same_v<T, float> && k != UnaryKernel::relu) return false;
  if (!flat_with<T>(it, 1)) return false;
  const auto loop = unary_loop<T>();
  T* out = it.data<T>(0);
  const T* x = it.data<T>(1);
  const bool stream = it.stream_output();
  it.parallel_ranges(
      [&](int64_t begin, int64_t end) { loop(k, out + begin, x + begin, end - begin, stream); });
  return true;
}

template <typename T>
bool flat_threshold_backward(TensorIterator& it, T threshold) {
  if (!flat_with<T>(it, 2)) return false;
  const auto loop = threshold_backward_loop<T>();
  T* out = it.data<T>(0);
  const T* grad = it.data<T>(1);
  const T* x = it.data<T>(2);
  const bool stream = it.stream_output();
  it.parallel_ranges([&](int64_t begin, int64_t end) {
    loop(out + begin, grad + begin, x + begin, threshold, end - begin, stream);
  });
  return true;
}

template bool flat_binary<float>(TensorIterator&, BinaryKernel, float);
template bool flat_binary<double>(TensorIterator&, BinaryKernel, double);
template bool flat_binary_scalar<float>(TensorIterator&, BinaryKernel, float);
template bool flat_binary_scalar<double>(TensorIterator&, BinaryKernel, double);
template bool flat_unary<float>(TensorIterator&, UnaryKernel);
template bool flat_unary<double>(TensorIterator&, UnaryKernel);
template bool flat_threshold_backward<float>(TensorIterator&, float);
template bool flat_threshold_backward<double>(TensorIterator&, double);

Tensor TensorIterator::finish() {
  if (!result_buf_.is_same(out_)) copy_into(op_, out_, result_buf_);
  if (kind_ != OutputKind::New) out_.bump_version();
  return out_;
}

void copy_into(std::string_view op, const Tensor& dst, const Tensor& src) {
  TensorIterator it(op);
  it.add_input("src", src, src.dtype()).set_output(dst, OutputKind::Copy);
  it.build();
  if (src.dtype() == dst.dtype() && it.flat(dst.dtype()) && !it.scalar_input(0)) {
    // A contiguous copy without conversion: a byte copy per thread range, with streaming
    // stores when the result is large (Note [Streaming stores]; the C library's memcpy did not
    // stream at these sizes: 35 GB/s against 54 for 64 MiB on 2 threads).
    char* d = it.data<char>(0);
    const char* s = it.data<char>(1);
    const auto es = static_cast<int64_t>(dst.element_size());
    const auto copy = LOOM_ISA_CALL(copy_bytes);
    const bool stream = it.stream_output();
    it.parallel_ranges([&](int64_t begin, int64_t end) {
      copy(d + begin * es, s + begin * es, (end - begin) * es, stream);
    });
    return;
  }
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
  Tensor out = Tensor::empty(t.sizes(), TensorOptions{}.with(dtype).with(t.device()));
  copy_into("to", out, t);
  return out;
}

}  // namespace loom::ops::cpu
