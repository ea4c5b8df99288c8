// The host half of the CUDA pointwise kernels (cuda_iterator.h). Promotion, broadcasting,
// output checks and the output layout follow ops/core/cpu/pointwise_engine.cpp line by line,
// so a CUDA op and its CPU reference agree on dtypes, shapes, layouts and messages.
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

std::string_view torch_type_name(DType d) {
  switch (d) {
    case DType::Bool:
      return "Bool";
    case DType::UInt8:
      return "Byte";
    case DType::Int8:
      return "Char";
    case DType::Int16:
      return "Short";
    case DType::Int32:
      return "Int";
    case DType::Int64:
      return "Long";
    case DType::Float16:
      return "Half";
    case DType::BFloat16:
      return "BFloat16";
    case DType::Float32:
      return "Float";
    case DType::Float64:
      break;
  }
  return "Double";
}

void check_dtype_category(std::string_view op, DType d, unsigned cats) {
  const unsigned cat = d == DType::Bool ? kBool : is_floating_point(d) ? kFloats : kInts;
  LOOM_CHECK_T(TypeError, (cats & cat) != 0, "\"", op, "\" not implemented for '",
               torch_type_name(d), "'");
}

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
  // Coalesce outermost to innermost as the CPU engine does: merge d into the previous kept
  // dim when every operand steps through both as one.
  DimVector sizes;
  std::vector<DimVector> strides(nops);
  for (int64_t d = 0; d < ndim; ++d) {
    if (shape[d] == 1) continue;
    if (!sizes.empty()) {
      bool mergeable = true;
      for (size_t k = 0; k < nops; ++k)
        mergeable = mergeable && strides[k].back() == full[k][d] * shape[d];
      if (mergeable) {
        sizes.back() *= shape[d];
        for (size_t k = 0; k < nops; ++k) strides[k].back() = full[k][d];
        continue;
      }
    }
    sizes.push_back(shape[d]);
    for (size_t k = 0; k < nops; ++k) strides[k].push_back(full[k][d]);
  }
  if (sizes.empty()) {
    sizes.push_back(1);
    for (size_t k = 0; k < nops; ++k) strides[k].push_back(0);
  }
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

// Note [Output layout follows the input] (ops/core/cpu/pointwise_engine.cpp): the strides
// of a dense, not row-major input of the full shape, or empty.
std::vector<int64_t> dense_layout_of(const Tensor& t, IntArrayRef shape) {
  if (t.sizes() != shape || t.dim() < 2 || t.is_contiguous()) return {};
  const auto n = static_cast<size_t>(t.dim());
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
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

// c10's combine_categories, as the CPU's ResultTypeState.
std::optional<DType> combine(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  if (is_floating_point(*higher)) return higher;
  if (*higher == DType::Bool || is_floating_point(*lower)) return promote_types(*higher, *lower);
  return higher;
}

}  // namespace

CudaIterator& CudaIterator::add_input(std::string_view name, const Tensor& t, bool promote) {
  LOOM_CHECK_T(TypeError, t.defined(), op_,
               ": expected a proper Tensor but got an undefined Tensor for argument '", name, "'");
  if (promote) update(t.dim() == 0 ? zero_result_ : dim_result_, t.dtype());
  if (t.dim() == 0 && t.device().is_cpu()) {
    inputs_.push_back({name, Tensor(), t.item(), promote, /*from_cpu_tensor=*/true});
    return *this;
  }
  inputs_.push_back({name, t, std::nullopt, promote});
  return *this;
}

CudaIterator& CudaIterator::add_promotion_scalar(const Scalar& s) {
  update(wrapped_result_, s.is_floating_point() ? default_float_dtype()
                          : s.is_bool()         ? DType::Bool
                                                : DType::Int64);
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
    const DimVector full = broadcast_shapes(op_, out_.sizes(), shape_);
    LOOM_CHECK(IntArrayRef(full.data(), full.size()) == out_.sizes(), op_, ": output with shape ",
               sizes_str(out_.sizes()), " doesn't match the broadcast shape ",
               sizes_str({full.data(), full.size()}));
    shape_ = DimVector(out_.sizes().begin(), out_.sizes().end());
  }
  numel_ = 1;
  for (int64_t s : shape_) numel_ *= s;

  // Dtypes.
  common_ =
      combine(dim_result_, combine(zero_result_, wrapped_result_)).value_or(default_float_dtype());
  if (rule_ == ResultRule::IntToFloat && !is_floating_point(common_))
    common_ = default_float_dtype();
  result_ = rule_ == ResultRule::Bool ? DType::Bool : common_;
  if (kind_ == OutputKind::Copy) result_ = out_.dtype();

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
    if (kind_ != OutputKind::Copy) {
      LOOM_CHECK_T(TypeError, can_cast(result_, out_.dtype()), op_, ": result type ",
                   torch_type_name(result_), " can't be cast to the desired output type ",
                   torch_type_name(out_.dtype()));
    }
    bool has_tensor_input = false;
    for (const Operand& in : inputs_) has_tensor_input = has_tensor_input || in.tensor.defined();
    for (int64_t d = 0; d < out_.dim() && has_tensor_input; ++d) {
      LOOM_CHECK(out_.size(d) <= 1 || out_.stride(d) != 0, op_,
                 ": unsupported operation: more than one element of the written-to tensor refers "
                 "to a single memory location. Please clone() the tensor before performing the "
                 "operation.");
    }
    resize_output(op_, out_, shape());
  }
  result_buf_ = out_.dtype() == result_ ? out_ : Tensor::empty(shape(), opts.with(result_));

  // Inputs read in the common dtype (the CPU's cast_copy of a mismatched input).
  for (Operand& in : inputs_) {
    if (in.tensor.defined() && in.tensor.dtype() != common_)
      in.tensor = cast_copy(in.tensor, common_);
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
  LOOM_CHECK_T(ValueError, host == 0, it.op(), ": ZeroDivisionError (integer division by zero)");
}

}  // namespace loom::cuda
