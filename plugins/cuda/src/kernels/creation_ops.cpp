// CUDA kernels of fill_, zero_ and the creation ops (ops/core/cpu/{fill,creation}.cpp's
// semantics and messages): empty, zeros, ones, full, arange, linspace, eye, the *_like forms,
// and the random factories rand, randn, randint, bernoulli on the device's Philox generator.
//
// Note [CUDA factories]: a factory without tensor arguments reaches the CUDA key only when its
// `device` names a CUDA device (Note [Factory dispatch] in kernel_traits.h). A *_like call
// reaches it when self is a CUDA tensor or `device` is CUDA; when the result is asked for on
// the CPU (zeros_like(cuda_tensor, device=cpu)) the CPU kernel makes it (CpuKernelGuard).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <vector>

#include "kernels/copy_kernel.h"
#include "kernels/cpu_redispatch.h"
#include "kernels/cuda_iterator.h"
#include "loom/core/generator.h"
#include "loom/core/half.h"
#include "loom/core/str_cat.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/meta/creation.h"
#include "loom/ops/meta/scalar_conversion.h"
#include "loom/ops/op_handle.h"
#include "runtime/context.h"

namespace loom::cuda {
namespace {

using ops::meta::check_floating;
using ops::meta::check_layout;
using ops::meta::float_dtype;
using Dims = std::vector<int64_t>;

// The bits of one element of dtype t holding v: fill_'s convert<T>(v.to<compute_t<T>>()), or
// with via_double the creation ops' store_scalar (an integer reaches a float through double).
uint64_t element_bits(DType t, const Scalar& v, bool via_double) {
  auto as_float = [&]() -> float {
    return via_double && !v.is_floating_point()
               ? static_cast<float>(static_cast<double>(v.to_int()))
               : v.to<float>();
  };
  auto as_double = [&]() -> double {
    return via_double && !v.is_floating_point() ? static_cast<double>(v.to_int()) : v.to<double>();
  };
  uint64_t bits = 0;
  auto put = [&](auto x) { std::memcpy(&bits, &x, sizeof(x)); };
  switch (t) {
    case DType::Bool:
      put(static_cast<uint8_t>(v.is_floating_point() ? v.to<double>() != 0 : v.to_int() != 0));
      break;
    case DType::UInt8:
      put(v.to<uint8_t>());
      break;
    case DType::Int8:
      put(v.to<int8_t>());
      break;
    case DType::Int16:
      put(v.to<int16_t>());
      break;
    case DType::Int32:
      put(v.to<int32_t>());
      break;
    case DType::Int64:
      put(v.to<int64_t>());
      break;
    case DType::Float16:
      put(float_to_half(as_float()));
      break;
    case DType::BFloat16:
      put(float_to_bfloat16(as_float()));
      break;
    case DType::Float32:
      put(as_float());
      break;
    case DType::Float64:
      put(as_double());
      break;
  }
  return bits;
}

// Writes value into every element of the CUDA tensor t (any strides).
void fill_cuda(std::string_view op, const Tensor& t, const Scalar& value, bool via_double) {
  ops::meta::check_scalar_fits(op, value, t.dtype());  // Note [Checked scalar conversion]
  if (t.numel() == 0) return;
  const uint64_t bits = element_bits(t.dtype(), value, via_double);
  const int device = device_index(t);
  DeviceGuard guard(device);
  const cudaStream_t stream = current_stream(device);
  if (bits == 0 && t.is_contiguous()) {
    LOOM_CUDA_CHECK(
        cudaMemsetAsync(t.data_ptr(), 0, static_cast<size_t>(t.numel()) * t.element_size(), stream),
        op);
    return;
  }
  const kernels::Geometry g = make_geometry(op, t.sizes(), {&t});
  kernels::launch_fill(t.data_ptr(), static_cast<int>(t.element_size()), bits, g, t.numel(),
                       stream);
  check_launch(op);
}

// ---- fill_ / zero_ ----------------------------------------------------------------------------

Tensor& fill_(Tensor& self, const Scalar& value) {
  check_cuda_tensors("fill_.Scalar", {{"self", self}});
  fill_cuda("fill_.Scalar", self, value, false);
  self.bump_version();
  return self;
}

Tensor& fill_tensor_(Tensor& self, const Tensor& value) {
  ops::meta::check_fill_value(value);
  check_cuda_tensors("fill_.Tensor", {{"self", self}});
  if (value.device().is_cpu()) {
    fill_cuda("fill_.Tensor", self, value.item(), false);
  } else {
    copy_kernel("fill_.Tensor", self, value);  // broadcasts the 0-d value, on the device
  }
  self.bump_version();
  return self;
}

Tensor& zero_(Tensor& self) {
  check_cuda_tensors("zero_", {{"self", self}});
  fill_cuda("zero_", self, 0, false);
  self.bump_version();
  return self;
}

// ---- factories ---------------------------------------------------------------------------------

// The CUDA device a factory allocates on: device with its index resolved.
Device cuda_device(const char* op, std::optional<Device> device) {
  LOOM_CHECK_T(DeviceError, device && device->type() == device_type(), op,
               ": internal error: the CUDA kernel was asked for a tensor on ",
               device ? device->str() : std::string("no device"));
  check_available(op);
  if (device->index() >= 0) return *device;
  return Device(device_type(), static_cast<int16_t>(current_device()));
}

Tensor make_empty(const char* op, IntArrayRef size, DType dtype, std::optional<int64_t> layout,
                  std::optional<Device> device) {
  check_layout(op, layout);
  ops::meta::check_sizes(size);
  return Tensor::empty(size, TensorOptions{}.with(dtype).with(cuda_device(op, device)));
}

Tensor empty(IntArrayRef size, std::optional<DType> dtype, std::optional<int64_t> layout,
             std::optional<Device> device, std::optional<bool>, std::optional<int64_t>) {
  return make_empty("empty", size, float_dtype(dtype), layout, device);
}

Tensor zeros(IntArrayRef size, std::optional<DType> dtype, std::optional<int64_t> layout,
             std::optional<Device> device, std::optional<bool>) {
  Tensor out = make_empty("zeros", size, float_dtype(dtype), layout, device);
  fill_cuda("zeros", out, 0, true);
  return out;
}

Tensor ones(IntArrayRef size, std::optional<DType> dtype, std::optional<int64_t> layout,
            std::optional<Device> device, std::optional<bool>) {
  Tensor out = make_empty("ones", size, float_dtype(dtype), layout, device);
  fill_cuda("ones", out, 1, true);
  return out;
}

Tensor full(IntArrayRef size, const Scalar& value, std::optional<DType> dtype,
            std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool>) {
  const DType t = dtype.value_or(ops::meta::scalar_default_dtype(value));
  ops::meta::check_scalar_fits("full", value, t);  // before allocating, as the CPU kernel
  Tensor out = make_empty("full", size, t, layout, device);
  fill_cuda("full", out, value, true);
  return out;
}

Tensor arange_start_step(const Scalar& start, const Scalar& end, const Scalar& step,
                         std::optional<DType> dtype, std::optional<int64_t> layout,
                         std::optional<Device> device, std::optional<bool>) {
  const ops::meta::ArangeParams a = ops::meta::arange_params(start, end, step, dtype);
  const DType t = a.dtype;
  const int64_t size = a.size;
  Tensor out = make_empty("arange", {size}, t, layout, device);
  const int dev = device_index(out);
  DeviceGuard guard(dev);
  kernels::launch_arange(out.data_ptr(), to_dt(t), size, a.exact, start.to_int(), step.to_int(),
                         a.start, a.step, current_stream(dev));
  check_launch("arange");
  return out;
}

Tensor arange_start(const Scalar& start, const Scalar& end, std::optional<DType> dtype,
                    std::optional<int64_t> layout, std::optional<Device> device,
                    std::optional<bool> pin) {
  return arange_start_step(start, end, 1, dtype, layout, device, pin);
}

Tensor arange(const Scalar& end, std::optional<DType> dtype, std::optional<int64_t> layout,
              std::optional<Device> device, std::optional<bool> pin) {
  return arange_start_step(0, end, 1, dtype, layout, device, pin);
}

// linspace is computed by the CPU kernel (its two-sided formula) and copied over: a rare op
// with few elements.
Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, std::optional<DType> dtype,
                std::optional<int64_t> layout, std::optional<Device> device,
                std::optional<bool> pin) {
  LOOM_TYPED_OP(op, "aten::linspace",
                Tensor(const Scalar&, const Scalar&, int64_t, std::optional<DType>,
                       std::optional<int64_t>, std::optional<Device>, std::optional<bool>));
  const Device target = cuda_device("linspace", device);
  Tensor host;
  {
    CpuKernelGuard cpu;
    host = op(start, end, steps, dtype, layout, Device(), pin);
  }
  LOOM_TYPED_OP(copy_op, "aten::copy_", Tensor(const Tensor&, const Tensor&, bool));
  Tensor out = Tensor::empty(host.sizes(), TensorOptions{}.with(host.dtype()).with(target));
  copy_op(out, host, false);  // host to device (runtime/copy.cpp)
  return out;
}

Tensor eye_m(int64_t n, int64_t m, std::optional<DType> dtype, std::optional<int64_t> layout,
             std::optional<Device> device, std::optional<bool> pin) {
  ops::meta::check_eye_sizes(n, m, dtype);
  Tensor out = zeros({n, m}, dtype, layout, device, pin);
  const int64_t k = std::min(n, m);
  if (k > 0) fill_cuda("eye", out.as_strided_view({k}, {m + 1}, 0), 1, true);
  return out;
}

Tensor eye(int64_t n, std::optional<DType> dtype, std::optional<int64_t> layout,
           std::optional<Device> device, std::optional<bool> pin) {
  return eye_m(n, n, dtype, layout, device, pin);
}

// ---- random factories --------------------------------------------------------------------------

// Fills the contiguous CUDA tensor out with r (op, a, b ...) from gen or the device's default.
void random_fill(const char* op, const Tensor& out, kernels::RandomLaunch r, Generator* gen) {
  r.numel = out.numel();
  if (r.numel == 0) return;
  const int dev = device_index(out);
  const uint64_t inc = kernels::random_increment(r.numel);
  const auto [seed, offset] =
      gen != nullptr ? philox_seed_offset(*gen, inc) : philox_seed_offset(dev, inc);
  r.seed = seed;
  r.offset = offset;
  r.dtype = to_dt(out.dtype());
  r.out = out.data_ptr();
  DeviceGuard guard(dev);
  kernels::launch_random(r, current_stream(dev));
  check_launch(op);
}

kernels::RandomLaunch rand_op(kernels::RandOp op, double a = 0, double b = 1) {
  kernels::RandomLaunch r;
  r.op = op;
  r.a = a;
  r.b = b;
  return r;
}

Tensor rand_generator(IntArrayRef size, Generator* gen, std::optional<DType> dtype,
                      std::optional<int64_t> layout, std::optional<Device> device,
                      std::optional<bool>) {
  const DType t = float_dtype(dtype);
  check_floating("rand", t);
  Tensor out = make_empty("rand", size, t, layout, device);
  random_fill("rand", out, rand_op(kernels::RandOp::Uniform), gen);
  return out;
}
Tensor rand(IntArrayRef size, std::optional<DType> dtype, std::optional<int64_t> layout,
            std::optional<Device> device, std::optional<bool> pin) {
  return rand_generator(size, nullptr, dtype, layout, device, pin);
}

Tensor randn_generator(IntArrayRef size, Generator* gen, std::optional<DType> dtype,
                       std::optional<int64_t> layout, std::optional<Device> device,
                       std::optional<bool>) {
  const DType t = float_dtype(dtype);
  check_floating("randn", t);
  Tensor out = make_empty("randn", size, t, layout, device);
  random_fill("randn", out, rand_op(kernels::RandOp::Normal), gen);
  return out;
}
Tensor randn(IntArrayRef size, std::optional<DType> dtype, std::optional<int64_t> layout,
             std::optional<Device> device, std::optional<bool> pin) {
  return randn_generator(size, nullptr, dtype, layout, device, pin);
}

void randint_fill(const Tensor& out, int64_t low, int64_t high, Generator* gen) {
  ops::meta::check_randint_range(low, high);
  kernels::RandomLaunch r = rand_op(kernels::RandOp::RandInt);
  r.low = low;
  r.range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  random_fill("randint", out, r, gen);
}

Tensor randint_low_generator(int64_t low, int64_t high, IntArrayRef size, Generator* gen,
                             std::optional<DType> dtype, std::optional<int64_t> layout,
                             std::optional<Device> device, std::optional<bool>) {
  Tensor out = make_empty("randint", size, dtype.value_or(DType::Int64), layout, device);
  randint_fill(out, low, high, gen);
  return out;
}
Tensor randint_low(int64_t low, int64_t high, IntArrayRef size, std::optional<DType> dtype,
                   std::optional<int64_t> layout, std::optional<Device> device,
                   std::optional<bool> pin) {
  return randint_low_generator(low, high, size, nullptr, dtype, layout, device, pin);
}
Tensor randint_generator(int64_t high, IntArrayRef size, Generator* gen, std::optional<DType> dtype,
                         std::optional<int64_t> layout, std::optional<Device> device,
                         std::optional<bool> pin) {
  return randint_low_generator(0, high, size, gen, dtype, layout, device, pin);
}
Tensor randint(int64_t high, IntArrayRef size, std::optional<DType> dtype,
               std::optional<int64_t> layout, std::optional<Device> device,
               std::optional<bool> pin) {
  return randint_low_generator(0, high, size, nullptr, dtype, layout, device, pin);
}

// ---- *_like (Note [CUDA factories]) ----------------------------------------------------------

// The device a *_like result goes to.
Device like_device(const Tensor& self, std::optional<Device> device) {
  return device.value_or(self.device());
}

Tensor like(const char* op, const Tensor& self, std::optional<DType> dtype,
            std::optional<int64_t> layout, std::optional<Device> device,
            std::optional<int64_t> memory_format) {
  check_layout(op, layout);
  const Dims strides = ops::meta::like_strides(self, memory_format);
  const Device target = cuda_device(op, like_device(self, device));
  Tensor flat = Tensor::empty({self.numel()},
                              TensorOptions{}.with(dtype.value_or(self.dtype())).with(target));
  return flat.as_strided_view(self.sizes(), strides, 0);
}

// The result of like() covers its storage exactly: filled in storage order through this view.
Tensor storage_order(const Tensor& t) { return t.as_strided_view({t.numel()}, {1}, 0); }

using LikeSig = Tensor(const Tensor&, std::optional<DType>, std::optional<int64_t>,
                       std::optional<Device>, std::optional<bool>, std::optional<int64_t>);

Tensor empty_like(const Tensor& self, std::optional<DType> dtype, std::optional<int64_t> layout,
                  std::optional<Device> device, std::optional<bool> pin,
                  std::optional<int64_t> memory_format) {
  if (like_device(self, device).is_cpu()) {
    LOOM_TYPED_OP(op, "aten::empty_like", LikeSig);
    CpuKernelGuard cpu;
    return op(self, dtype, layout, device, pin, memory_format);
  }
  return like("empty_like", self, dtype, layout, device, memory_format);
}

Tensor full_like(const Tensor& self, const Scalar& value, std::optional<DType> dtype,
                 std::optional<int64_t> layout, std::optional<Device> device,
                 std::optional<bool> pin, std::optional<int64_t> memory_format) {
  if (like_device(self, device).is_cpu()) {
    LOOM_TYPED_OP(op, "aten::full_like",
                  Tensor(const Tensor&, const Scalar&, std::optional<DType>, std::optional<int64_t>,
                         std::optional<Device>, std::optional<bool>, std::optional<int64_t>));
    CpuKernelGuard cpu;
    return op(self, value, dtype, layout, device, pin, memory_format);
  }
  ops::meta::check_scalar_fits("full_like", value, dtype.value_or(self.dtype()));
  Tensor out = like("full_like", self, dtype, layout, device, memory_format);
  fill_cuda("full_like", storage_order(out), value, true);
  return out;
}

Tensor zeros_like(const Tensor& self, std::optional<DType> dtype, std::optional<int64_t> layout,
                  std::optional<Device> device, std::optional<bool> pin,
                  std::optional<int64_t> memory_format) {
  return full_like(self, 0, dtype, layout, device, pin, memory_format);
}

Tensor ones_like(const Tensor& self, std::optional<DType> dtype, std::optional<int64_t> layout,
                 std::optional<Device> device, std::optional<bool> pin,
                 std::optional<int64_t> memory_format) {
  return full_like(self, 1, dtype, layout, device, pin, memory_format);
}

Tensor rand_like(const Tensor& self, std::optional<DType> dtype, std::optional<int64_t> layout,
                 std::optional<Device> device, std::optional<bool> pin,
                 std::optional<int64_t> memory_format) {
  if (like_device(self, device).is_cpu()) {
    LOOM_TYPED_OP(op, "aten::rand_like", LikeSig);
    CpuKernelGuard cpu;
    return op(self, dtype, layout, device, pin, memory_format);
  }
  Tensor out = like("rand_like", self, dtype, layout, device, memory_format);
  check_floating("rand_like", out.dtype());
  random_fill("rand_like", storage_order(out), rand_op(kernels::RandOp::Uniform), nullptr);
  return out;
}

Tensor randn_like(const Tensor& self, std::optional<DType> dtype, std::optional<int64_t> layout,
                  std::optional<Device> device, std::optional<bool> pin,
                  std::optional<int64_t> memory_format) {
  if (like_device(self, device).is_cpu()) {
    LOOM_TYPED_OP(op, "aten::randn_like", LikeSig);
    CpuKernelGuard cpu;
    return op(self, dtype, layout, device, pin, memory_format);
  }
  Tensor out = like("randn_like", self, dtype, layout, device, memory_format);
  check_floating("randn_like", out.dtype());
  random_fill("randn_like", storage_order(out), rand_op(kernels::RandOp::Normal), nullptr);
  return out;
}

Tensor randint_like_low(const Tensor& self, int64_t low, int64_t high, std::optional<DType> dtype,
                        std::optional<int64_t> layout, std::optional<Device> device,
                        std::optional<bool> pin, std::optional<int64_t> memory_format) {
  if (like_device(self, device).is_cpu()) {
    LOOM_TYPED_OP(
        op, "aten::randint_like.low_dtype",
        Tensor(const Tensor&, int64_t, int64_t, std::optional<DType>, std::optional<int64_t>,
               std::optional<Device>, std::optional<bool>, std::optional<int64_t>));
    CpuKernelGuard cpu;
    return op(self, low, high, dtype, layout, device, pin, memory_format);
  }
  Tensor out = like("randint_like", self, dtype, layout, device, memory_format);
  randint_fill(storage_order(out), low, high, nullptr);
  return out;
}

Tensor randint_like(const Tensor& self, int64_t high, std::optional<DType> dtype,
                    std::optional<int64_t> layout, std::optional<Device> device,
                    std::optional<bool> pin, std::optional<int64_t> memory_format) {
  return randint_like_low(self, 0, high, dtype, layout, device, pin, memory_format);
}

// ---- bernoulli ---------------------------------------------------------------------------------

// Note: the CPU kernel checks every probability is in [0, 1]; here that would cost a
// device-to-host round trip per call, so probabilities outside give 0 (< 0) or 1 (> 1).
Tensor bernoulli(const Tensor& self, Generator* gen) {
  check_cuda_tensors("bernoulli", {{"self", self}});
  ops::meta::check_bernoulli_self(self);
  const Tensor p = contiguous_cuda(self);
  Tensor out = Tensor::empty(self.sizes(), TensorOptions{}.with(self.dtype()).with(self.device()));
  kernels::RandomLaunch r = rand_op(kernels::RandOp::Bernoulli);
  r.p_tensor = p.data_ptr();
  random_fill("bernoulli", out, r, gen);
  return out;
}

Tensor bernoulli_p(const Tensor& self, double prob, Generator* gen) {
  check_cuda_tensors("bernoulli.p", {{"self", self}});
  ops::meta::check_probability(prob);
  Tensor out = Tensor::empty(self.sizes(), TensorOptions{}.with(self.dtype()).with(self.device()));
  random_fill("bernoulli.p", out, rand_op(kernels::RandOp::Bernoulli, prob), gen);
  return out;
}

}  // namespace

LOOM_LIBRARY_IMPL(aten, CUDA, m) {
  m.impl("fill_.Scalar", &fill_);
  m.impl("fill_.Tensor", &fill_tensor_);
  m.impl("zero_", &zero_);
  m.impl("empty.memory_format", &empty);
  m.impl("zeros", &zeros);
  m.impl("ones", &ones);
  m.impl("full", &full);
  m.impl("arange", &arange);
  m.impl("arange.start", &arange_start);
  m.impl("arange.start_step", &arange_start_step);
  m.impl("linspace", &linspace);
  m.impl("eye", &eye);
  m.impl("eye.m", &eye_m);
  m.impl("rand", &rand);
  m.impl("rand.generator", &rand_generator);
  m.impl("randn", &randn);
  m.impl("randn.generator", &randn_generator);
  m.impl("randint", &randint);
  m.impl("randint.generator", &randint_generator);
  m.impl("randint.low", &randint_low);
  m.impl("randint.low_generator", &randint_low_generator);
  m.impl("bernoulli", &bernoulli);
  m.impl("bernoulli.p", &bernoulli_p);
  m.impl("empty_like", &empty_like);
  m.impl("zeros_like", &zeros_like);
  m.impl("ones_like", &ones_like);
  m.impl("full_like", &full_like);
  m.impl("rand_like", &rand_like);
  m.impl("randn_like", &randn_like);
  m.impl("randint_like", &randint_like);
  m.impl("randint_like.low_dtype", &randint_like_low);
}

}  // namespace loom::cuda
