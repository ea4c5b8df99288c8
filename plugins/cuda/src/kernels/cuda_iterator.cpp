// The host half of the CUDA pointwise kernels (cuda_iterator.h). Promotion, broadcasting,
// output checks, the output layout and dimension coalescing are the ones the CPU's
// TensorIterator (ops/core/cpu/pointwise_engine.cpp) calls, from loom/ops/meta/pointwise.h, so a
// CUDA op and its CPU reference agree on dtypes, shapes, layouts and messages.
#include "kernels/cuda_iterator.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/copy_kernel.h"
#include "loom/core/half.h"
#include "loom/core/str_cat.h"
#include "loom/core/tensor_checks.h"
#include "runtime/context.h"

namespace loom::cuda {

static_assert(static_cast<int>(kernels::Dt::Float64) == static_cast<int>(DType::Float64) &&
                  static_cast<int>(kernels::Dt::Bool) == static_cast<int>(DType::Bool) &&
                  static_cast<int>(kernels::Dt::Float16) == static_cast<int>(DType::Float16),
              "kernels::Dt must number dtypes as loom::DType does");

kernels::Geometry make_geometry(std::string_view op, IntArrayRef shape,
                                const std::vector<const Tensor*>& operands) {
  const size_t nops = operands.size();
  LOOM_CHECK(nops <= static_cast<size_t>(kernels::kMaxOperands), op,
             ": internal error: too many operands for a CUDA kernel");
  const auto ndim = static_cast<int64_t>(shape.size());
  // Element strides over shape per operand, outermost first (0 where broadcast).
  std::vector<DimVector> full(nops, DimVector(static_cast<size_t>(ndim), 0));
  for (size_t k = 0; k < nops; ++k) {
    const Tensor* t = operands[k];
    if (t == nullptr) continue;
    const int64_t off = ndim - t->dim();
    for (int64_t d = 0; d < t->dim(); ++d) full[k][off + d] = t->size(d) == 1 ? 0 : t->stride(d);
  }
  // Coalesced outermost to innermost as the CPU engine does.
  DimVector sizes;
  std::vector<DimVector> strides;
  ops::meta::coalesce_dims(shape, full, sizes, strides);
  LOOM_CHECK_T(ValueError, sizes.size() <= static_cast<size_t>(kernels::kMaxDims), op,
               ": CUDA kernels take at most ", kernels::kMaxDims,
               " dimensions that cannot be merged, got ", sizes.size(), " for shape ",
               sizes_str(shape));
  kernels::Geometry g;
  g.ndim = static_cast<int>(sizes.size());
  for (int d = 0; d < g.ndim; ++d) {
    const size_t src = sizes.size() - 1 - static_cast<size_t>(d);  // innermost first
    g.sizes[d] = sizes[src];
    for (size_t k = 0; k < nops; ++k) g.strides[k][d] = strides[k][src];
  }
  return g;
}

namespace {

// A 0-d CPU tensor's value as the CPU engine reads it after casting the tensor to dtype
// (convert<T>: through float for the 16-bit floats, a non-finite float to an integer is 0).
Scalar cast_value(const Scalar& v, DType dtype) {
  auto to_int = [&]() -> int64_t {
    if (!v.is_floating_point()) return v.to_int();
    const double d = v.to_double();
    return std::isfinite(d) ? static_cast<int64_t>(d) : 0;
  };
  switch (dtype) {
    case DType::Bool:
      return Scalar(v.is_floating_point() ? v.to_double() != 0 : v.to_int() != 0);
    case DType::UInt8:
      return Scalar(static_cast<int64_t>(static_cast<uint8_t>(to_int())));
    case DType::Int8:
      return Scalar(static_cast<int64_t>(static_cast<int8_t>(to_int())));
    case DType::Int16:
      return Scalar(static_cast<int64_t>(static_cast<int16_t>(to_int())));
    case DType::Int32:
      return Scalar(static_cast<int64_t>(static_cast<int32_t>(to_int())));
    case DType::Int64:
      return Scalar(to_int());
    case DType::Float16:
      return Scalar(static_cast<double>(half_to_float(float_to_half(v.to<float>()))));
    case DType::BFloat16:
      return Scalar(static_cast<double>(bfloat16_to_float(float_to_bfloat16(v.to<float>()))));
    case DType::Float32:
      return Scalar(static_cast<double>(v.to<float>()));
    case DType::Float64:
      break;
  }
  return Scalar(v.to_double());
}

}  // namespace

// Note [Output layout follows the input] (loom/ops/meta/pointwise.h).
using ops::meta::dense_layout_of;

CudaIterator& CudaIterator::add_input(std::string_view name, const Tensor& t, bool promote) {
  ops::meta::check_input_defined(op_, name, t);
  if (promote) promotion_.add(t);
  if (t.dim() == 0 && t.device().is_cpu()) {
    inputs_.push_back({name, Tensor(), t.item(), promote, /*from_cpu_tensor=*/true});
    return *this;
  }
  inputs_.push_back({name, t, std::nullopt, promote});
  return *this;
}

CudaIterator& CudaIterator::add_promotion_scalar(const Scalar& s) {
  promotion_.add(s);
  return *this;
}

CudaIterator& CudaIterator::add_scalar(const Scalar& s, bool promote) {
  if (promote) add_promotion_scalar(s);
  inputs_.push_back({"scalar", Tensor(), s, promote});
  return *this;
}

void CudaIterator::build() {
  // Devices: every tensor on one CUDA device.
  const Tensor* first = nullptr;
  std::string_view first_name;
  auto check_device = [&](std::string_view name, const Tensor& t) {
    check_cuda_tensors(op_, {{name, t}});
    if (first == nullptr) {
      first = &t;
      first_name = name;
    } else {
      check_same_device(op_, {{first_name, *first}, {name, t}});
    }
  };
  for (const Operand& in : inputs_) {
    if (in.tensor.defined()) check_device(in.name, in.tensor);
  }
  if (kind_ != OutputKind::New) {
    LOOM_CHECK_T(TypeError, out_.defined(), op_, ": the output tensor is undefined");
    check_device(kind_ == OutputKind::InPlace ? "self" : "out", out_);
  }
  LOOM_CHECK(first != nullptr, op_, ": internal error: a CUDA kernel without a tensor operand");
  device_ = device_index(*first);
  const Device dev = first->device();

  // Shape.
  shape_.clear();
  for (const Operand& in : inputs_) {
    if (in.tensor.defined()) shape_ = broadcast_shapes(op_, shape_, in.tensor.sizes());
  }
  if (kind_ == OutputKind::InPlace || kind_ == OutputKind::Copy) {
    shape_ = ops::meta::check_inplace_shape(op_, out_, shape_);
  }
  numel_ = 1;
  for (int64_t s : shape_) numel_ *= s;

  // Dtypes.
  common_ = ops::meta::computation_dtype(promotion_.result(), rule_);
  result_ = ops::meta::result_dtype(common_, rule_, kind_, out_);

  // Output.
  const TensorOptions opts = TensorOptions{}.with(dev);
  if (kind_ == OutputKind::New) {
    std::vector<int64_t> layout;
    for (const Operand& in : inputs_) {
      if (in.tensor.defined() && !(layout = dense_layout_of(in.tensor, shape())).empty()) break;
    }
    if (layout.empty()) {
      out_ = Tensor::empty(shape(), opts.with(result_));
    } else {  // Note [Output layout follows the input]
      out_ = Tensor::empty({numel_}, opts.with(result_)).as_strided_view(shape(), layout, 0);
    }
  } else {
    bool has_tensor_input = false;
    for (const Operand& in : inputs_) has_tensor_input = has_tensor_input || in.tensor.defined();
    ops::meta::check_written_output(op_, out_, result_, kind_, has_tensor_input);
    resize_output(op_, out_, shape());
  }
  result_buf_ = out_.dtype() == result_ ? out_ : Tensor::empty(shape(), opts.with(result_));

  // Inputs read in the common dtype (the CPU's cast_copy of a mismatched input), and from a
  // copy where they may share memory with the output (Note [Memory overlap]).
  for (Operand& in : inputs_) {
    if (!in.tensor.defined()) continue;
    const bool overlaps =
        kind_ != OutputKind::New && ops::meta::input_needs_copy(op_, out_, in.name, in.tensor);
    if (in.tensor.dtype() != common_ || overlaps) in.tensor = cast_copy(in.tensor, common_);
  }
}

void CudaIterator::run(kernels::PointwiseLaunch p) {
  LOOM_CHECK(inputs_.size() <= 3, op_, ": internal error: more than three inputs");
  if (numel_ == 0) return;
  p.dtype = to_dt(common_);
  p.bool_out = result_ == DType::Bool && rule_ == ResultRule::Bool;
  LOOM_CHECK(p.bool_out || result_ == common_, op_, ": internal error: result dtype ",
             dtype_name(result_), " differs from the common dtype ", dtype_name(common_));
  p.nin = static_cast<int>(inputs_.size());
  p.out = result_buf_.data_ptr();
  p.scalar_inputs = 0;
  std::vector<const Tensor*> operands{&result_buf_};
  for (size_t k = 0; k < inputs_.size(); ++k) {
    const Operand& in = inputs_[k];
    if (in.tensor.defined()) {
      p.in[k] = in.tensor.data_ptr();
      operands.push_back(&in.tensor);
    } else {
      p.in[k] = nullptr;
      p.scalar_inputs |= 1u << k;
      set_slot(p.s, kernels::kScalarInputSlot + static_cast<int>(k),
               in.from_cpu_tensor ? cast_value(*in.scalar, common_) : *in.scalar);
      operands.push_back(nullptr);
    }
  }
  const kernels::Geometry g = make_geometry(op_, shape(), operands);
  DeviceGuard guard(device_);
  kernels::launch_pointwise(p, g, numel_, current_stream(device_));
  check_launch(op_);
}

Tensor CudaIterator::finish() {
  if (!result_buf_.is_same(out_)) copy_kernel(op_, out_, result_buf_);
  if (kind_ != OutputKind::New) out_.bump_version();
  return out_;
}

void set_slot(kernels::ScalarSlots& s, int k, const Scalar& v) {
  s.d[k] = v.to<double>();
  s.f[k] = v.to<float>();
  s.i[k] = v.to<int64_t>();
}

void set_slot_double(kernels::ScalarSlots& s, int k, double v) {
  s.d[k] = v;
  s.f[k] = static_cast<float>(v);
  s.i[k] = static_cast<int64_t>(v);
}

void run_checking_zero_division(CudaIterator& it, kernels::PointwiseLaunch p) {
  if (is_floating_point(it.common_dtype())) {
    it.run(p);
    return;
  }
  const Device dev(device_type(), static_cast<int16_t>(it.device()));
  Tensor flag = Tensor::empty({1}, TensorOptions{}.with(DType::Int32).with(dev));
  {
    DeviceGuard guard(it.device());
    LOOM_CUDA_CHECK(cudaMemsetAsync(flag.data_ptr(), 0, sizeof(int), current_stream(it.device())),
                    it.op());
  }
  p.zero_division_flag = static_cast<int*>(flag.data_ptr());
  it.run(p);
  int host = 0;
  {
    DeviceGuard guard(it.device());
    const cudaStream_t stream = current_stream(it.device());
    LOOM_CUDA_CHECK(
        cudaMemcpyAsync(&host, flag.data_ptr(), sizeof(int), cudaMemcpyDeviceToHost, stream),
        it.op());
    LOOM_CUDA_CHECK(cudaStreamSynchronize(stream), it.op());
  }
  if (host != 0) ops::meta::throw_zero_division(it.op());
}

}  // namespace loom::cuda
