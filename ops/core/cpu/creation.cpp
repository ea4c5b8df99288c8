// Reference CPU kernels of the creation ops: empty, zeros, ones, full, arange, linspace,
// eye, the random factories (rand, randn, randint, bernoulli) and the *_like forms.
// Random ops draw from the Generator argument, or the CPU default generator when it is
// None, so loom::manual_seed(s) makes them reproducible.
//
// The same kernels are the Meta key's (Note [Meta tensors] in core/src/allocator.cpp): every
// check and shape rule runs, and the element-writing steps are skipped for a meta result.
// They must be, on the CPU key too: a call that mixes a CPU tensor and device=meta
// (zeros_like(cpu_tensor, device="meta")) dispatches to CPU, the higher key.
#include "loom/ops/meta/creation.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>
#include <vector>

#include "cpu/meta.h"
#include "cpu/strided_copy.h"
#include "loom/core/generator.h"
#include "loom/core/half.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/meta/integer_math.h"
#include "loom/ops/meta/scalar_conversion.h"

namespace loom::ops::cpu {
namespace {

using meta::check_floating;
using meta::check_layout;
using meta::float_dtype;
using Dims = std::vector<int64_t>;

// Writes one element of dtype t from a double (floating values) or an int64 (exact integers).
void store(void* p, DType t, double d, int64_t i, bool integral) {
  switch (t) {
    case DType::Bool:
      *static_cast<bool*>(p) = integral ? i != 0 : d != 0;
      break;
    case DType::UInt8:
      *static_cast<uint8_t*>(p) = integral ? static_cast<uint8_t>(i) : static_cast<uint8_t>(d);
      break;
    case DType::Int8:
      *static_cast<int8_t*>(p) = integral ? static_cast<int8_t>(i) : static_cast<int8_t>(d);
      break;
    case DType::Int16:
      *static_cast<int16_t*>(p) = integral ? static_cast<int16_t>(i) : static_cast<int16_t>(d);
      break;
    case DType::Int32:
      *static_cast<int32_t*>(p) = integral ? static_cast<int32_t>(i) : static_cast<int32_t>(d);
      break;
    case DType::Int64:
      *static_cast<int64_t*>(p) = integral ? i : static_cast<int64_t>(d);
      break;
    case DType::Float16:
      *static_cast<uint16_t*>(p) = float_to_half(static_cast<float>(integral ? double(i) : d));
      break;
    case DType::BFloat16:
      *static_cast<uint16_t*>(p) = float_to_bfloat16(static_cast<float>(integral ? double(i) : d));
      break;
    case DType::Float32:
      *static_cast<float*>(p) = static_cast<float>(integral ? double(i) : d);
      break;
    case DType::Float64:
      *static_cast<double*>(p) = integral ? static_cast<double>(i) : d;
      break;
  }
}

void store_double(void* p, DType t, double d) { store(p, t, d, 0, false); }
void store_int(void* p, DType t, int64_t i) { store(p, t, 0, i, true); }
void store_scalar(void* p, DType t, const Scalar& s) {
  if (s.is_floating_point()) {
    store_double(p, t, s.to_double());
  } else {
    store_int(p, t, s.to_int());
  }
}

char* element(const Tensor& t, int64_t i) {
  return static_cast<char*>(t.data_ptr()) + i * static_cast<int64_t>(t.element_size());
}

// True for a result without elements to write: a meta tensor has no memory.
bool no_data(const Tensor& t) { return t.device().is_meta(); }

Tensor make_empty(const char* op, IntArrayRef size, DType dtype, std::optional<int64_t> layout,
                  std::optional<Device> device) {
  check_layout(op, layout);
  meta::check_sizes(size);
  return Tensor::empty(size, TensorOptions{}.with(dtype).with(device.value_or(Device())));
}

// Fills a contiguous tensor with one value: the element is written once, then replicated.
void fill_contiguous(const Tensor& t, const Scalar& value) {
  const int64_t n = t.numel();
  if (n == 0 || no_data(t)) return;
  const size_t es = t.element_size();
  store_scalar(t.data_ptr(), t.dtype(), value);
  char* p = static_cast<char*>(t.data_ptr());
  bool all_zero = true;
  for (size_t b = 0; b < es; ++b) all_zero = all_zero && p[b] == 0;
  if (all_zero) {
    std::memset(p, 0, static_cast<size_t>(n) * es);
    return;
  }
  // Doubling copies: log2(n) memcpy calls instead of n.
  const size_t total = static_cast<size_t>(n) * es;
  for (size_t filled = es; filled < total;) {
    const size_t chunk = std::min(filled, total - filled);
    std::memcpy(p + filled, p, chunk);
    filled += chunk;
  }
}

Tensor empty(IntArrayRef size, std::optional<DType> dtype, std::optional<int64_t> layout,
             std::optional<Device> device, std::optional<bool>, std::optional<int64_t>) {
  return make_empty("empty", size, float_dtype(dtype), layout, device);
}

Tensor zeros(IntArrayRef size, std::optional<DType> dtype, std::optional<int64_t> layout,
             std::optional<Device> device, std::optional<bool>) {
  Tensor out = make_empty("zeros", size, float_dtype(dtype), layout, device);
  fill_contiguous(out, 0);
  return out;
}

Tensor ones(IntArrayRef size, std::optional<DType> dtype, std::optional<int64_t> layout,
            std::optional<Device> device, std::optional<bool>) {
  Tensor out = make_empty("ones", size, float_dtype(dtype), layout, device);
  fill_contiguous(out, 1);
  return out;
}

Tensor full(IntArrayRef size, const Scalar& value, std::optional<DType> dtype,
            std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool>) {
  const DType t = dtype.value_or(meta::scalar_default_dtype(value));
  meta::check_scalar_fits("full", value, t);  // Note [Checked scalar conversion]
  Tensor out = make_empty("full", size, t, layout, device);
  fill_contiguous(out, value);
  return out;
}

Tensor arange_start_step(const Scalar& start, const Scalar& end, const Scalar& step,
                         std::optional<DType> dtype, std::optional<int64_t> layout,
                         std::optional<Device> device, std::optional<bool>) {
  const meta::ArangeParams a = meta::arange_params(start, end, step, dtype);
  const DType t = a.dtype;
  const int64_t size = a.size;
  const bool exact = a.exact;
  const double xstart = a.start, xstep = a.step;
  Tensor out = make_empty("arange", {size}, t, layout, device);
  if (no_data(out)) return out;
  for (int64_t i = 0; i < size; ++i) {
    if (exact) {
      // Wrapping: i * step may pass int64 on the way to a value that fits (arange(INT64_MIN,
      // INT64_MAX, 1 << 62)); the modular result is then the exact one.
      store_int(element(out, i), t,
                meta::wrapping_add(start.to_int(), meta::wrapping_mul(i, step.to_int())));
    } else {
      store_double(element(out, i), t, xstart + static_cast<double>(i) * xstep);
    }
  }
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

Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, std::optional<DType> dtype,
                std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool>) {
  meta::check_linspace_steps(steps);
  const DType t = float_dtype(dtype);
  Tensor out = make_empty("linspace", {steps}, t, layout, device);
  if (no_data(out)) return out;
  const double a = start.to_double();
  const double b = end.to_double();
  if (steps == 1) store_double(element(out, 0), t, a);
  if (steps <= 1) return out;
  // As PyTorch: the first half counts up from start, the second down from end, so both
  // ends are exact.
  const double step = (b - a) / static_cast<double>(steps - 1);
  const int64_t halfway = steps / 2;
  for (int64_t i = 0; i < steps; ++i) {
    const double v = i < halfway ? a + step * static_cast<double>(i)
                                 : b - step * static_cast<double>(steps - i - 1);
    store_double(element(out, i), t, v);
  }
  return out;
}

Tensor eye_m(int64_t n, int64_t m, std::optional<DType> dtype, std::optional<int64_t> layout,
             std::optional<Device> device, std::optional<bool> pin) {
  meta::check_eye_sizes(n, m, dtype);
  Tensor out = zeros({n, m}, dtype, layout, device, pin);
  if (no_data(out)) return out;
  for (int64_t i = 0; i < std::min(n, m); ++i) store_int(element(out, i * m + i), out.dtype(), 1);
  return out;
}

Tensor eye(int64_t n, std::optional<DType> dtype, std::optional<int64_t> layout,
           std::optional<Device> device, std::optional<bool> pin) {
  return eye_m(n, n, dtype, layout, device, pin);
}

// ---- random ----

Generator& generator_or_default(Generator* g) { return g ? *g : default_generator(Device()); }

// A uniform draw in [0, 1) with as many random bits as dtype t's mantissa holds, so that
// rounding to t can never produce 1.
double uniform01(Generator& g, DType t) {
  int bits = 53;
  if (t == DType::Float32) bits = 24;
  if (t == DType::Float16) bits = 11;
  if (t == DType::BFloat16) bits = 8;
  return static_cast<double>(g.next_u64() >> (64 - bits)) * std::ldexp(1.0, -bits);
}

void fill_uniform(const Tensor& out, Generator& g) {
  if (no_data(out)) return;  // the generator does not advance either
  for (int64_t i = 0; i < out.numel(); ++i) {
    store_double(element(out, i), out.dtype(), uniform01(g, out.dtype()));
  }
}

void fill_normal(const Tensor& out, Generator& g) {
  if (no_data(out)) return;
  // Box-Muller, both outputs used.
  const int64_t n = out.numel();
  for (int64_t i = 0; i < n; i += 2) {
    const double u1 = 1.0 - g.next_double();  // (0, 1]: log is finite
    const double u2 = g.next_double();
    const double r = std::sqrt(-2.0 * std::log(u1));
    store_double(element(out, i), out.dtype(), r * std::cos(2 * M_PI * u2));
    if (i + 1 < n) store_double(element(out, i + 1), out.dtype(), r * std::sin(2 * M_PI * u2));
  }
}

void fill_randint(const Tensor& out, int64_t low, int64_t high, Generator& g) {
  meta::check_randint_range(low, high);
  if (no_data(out)) return;
  const auto range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  for (int64_t i = 0; i < out.numel(); ++i) {
    const auto v = static_cast<int64_t>(static_cast<uint64_t>(low) + g.next_u64() % range);
    store_int(element(out, i), out.dtype(), v);
  }
}

Tensor rand_generator(IntArrayRef size, Generator* gen, std::optional<DType> dtype,
                      std::optional<int64_t> layout, std::optional<Device> device,
                      std::optional<bool>) {
  const DType t = float_dtype(dtype);
  check_floating("rand", t);
  Tensor out = make_empty("rand", size, t, layout, device);
  fill_uniform(out, generator_or_default(gen));
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
  fill_normal(out, generator_or_default(gen));
  return out;
}

Tensor randn(IntArrayRef size, std::optional<DType> dtype, std::optional<int64_t> layout,
             std::optional<Device> device, std::optional<bool> pin) {
  return randn_generator(size, nullptr, dtype, layout, device, pin);
}

Tensor randint_low_generator(int64_t low, int64_t high, IntArrayRef size, Generator* gen,
                             std::optional<DType> dtype, std::optional<int64_t> layout,
                             std::optional<Device> device, std::optional<bool>) {
  Tensor out = make_empty("randint", size, dtype.value_or(DType::Int64), layout, device);
  fill_randint(out, low, high, generator_or_default(gen));
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

// ---- *_like ----

Tensor like(const char* op, const Tensor& self, std::optional<DType> dtype,
            std::optional<int64_t> layout, std::optional<Device> device,
            std::optional<int64_t> memory_format) {
  check_layout(op, layout);
  const Dims strides = meta::like_strides(self, memory_format);
  Tensor flat = Tensor::empty(
      {self.numel()},
      TensorOptions{}.with(dtype.value_or(self.dtype())).with(device.value_or(self.device())));
  return flat.as_strided_view(self.sizes(), strides, 0);
}

// The result of like() covers its storage exactly, so its elements can be filled in
// storage order through this flat view.
Tensor storage_order(const Tensor& t) { return t.as_strided_view({t.numel()}, {1}, 0); }

Tensor empty_like(const Tensor& self, std::optional<DType> dtype, std::optional<int64_t> layout,
                  std::optional<Device> device, std::optional<bool>,
                  std::optional<int64_t> memory_format) {
  return like("empty_like", self, dtype, layout, device, memory_format);
}

Tensor full_like(const Tensor& self, const Scalar& value, std::optional<DType> dtype,
                 std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool>,
                 std::optional<int64_t> memory_format) {
  meta::check_scalar_fits("full_like", value, dtype.value_or(self.dtype()));
  Tensor out = like("full_like", self, dtype, layout, device, memory_format);
  fill_contiguous(storage_order(out), value);
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
                 std::optional<Device> device, std::optional<bool>,
                 std::optional<int64_t> memory_format) {
  Tensor out = like("rand_like", self, dtype, layout, device, memory_format);
  check_floating("rand_like", out.dtype());
  fill_uniform(storage_order(out), default_generator(Device()));
  return out;
}

Tensor randn_like(const Tensor& self, std::optional<DType> dtype, std::optional<int64_t> layout,
                  std::optional<Device> device, std::optional<bool>,
                  std::optional<int64_t> memory_format) {
  Tensor out = like("randn_like", self, dtype, layout, device, memory_format);
  check_floating("randn_like", out.dtype());
  fill_normal(storage_order(out), default_generator(Device()));
  return out;
}

Tensor randint_like_low(const Tensor& self, int64_t low, int64_t high, std::optional<DType> dtype,
                        std::optional<int64_t> layout, std::optional<Device> device,
                        std::optional<bool>, std::optional<int64_t> memory_format) {
  Tensor out = like("randint_like", self, dtype, layout, device, memory_format);
  fill_randint(storage_order(out), low, high, default_generator(Device()));
  return out;
}

Tensor randint_like(const Tensor& self, int64_t high, std::optional<DType> dtype,
                    std::optional<int64_t> layout, std::optional<Device> device,
                    std::optional<bool> pin, std::optional<int64_t> memory_format) {
  return randint_like_low(self, 0, high, dtype, layout, device, pin, memory_format);
}

// ---- bernoulli ----

double read_probability(const Tensor& p, int64_t i) {
  const char* e = element(p, i);
  switch (p.dtype()) {
    case DType::Float16:
      return half_to_float(*reinterpret_cast<const uint16_t*>(e));
    case DType::BFloat16:
      return bfloat16_to_float(*reinterpret_cast<const uint16_t*>(e));
    case DType::Float32:
      return *reinterpret_cast<const float*>(e);
    case DType::Float64:
      return *reinterpret_cast<const double*>(e);
    default:
      LOOM_THROW(TypeError, "bernoulli: expected a floating point tensor of probabilities, got ",
                 p.describe());
  }
}

Tensor bernoulli(const Tensor& self, Generator* gen) {
  meta::check_bernoulli_self(self);
  if (is_meta(self)) return Tensor::empty(self.sizes(), options_like(self, self.dtype()));
  const Tensor p = contiguous_copy(self);  // read in row-major order
  Generator& g = generator_or_default(gen);
  Tensor out = Tensor::empty(self.sizes(), TensorOptions{}.with(self.dtype()));
  for (int64_t i = 0; i < out.numel(); ++i) {
    const double prob = read_probability(p, i);
    meta::check_probability(prob);
    store_double(element(out, i), out.dtype(), g.next_double() < prob ? 1.0 : 0.0);
  }
  return out;
}

Tensor bernoulli_p(const Tensor& self, double prob, Generator* gen) {
  meta::check_probability(prob);
  if (is_meta(self)) return Tensor::empty(self.sizes(), options_like(self, self.dtype()));
  Generator& g = generator_or_default(gen);
  Tensor out = Tensor::empty(self.sizes(), TensorOptions{}.with(self.dtype()));
  for (int64_t i = 0; i < out.numel(); ++i) {
    store_double(element(out, i), out.dtype(), g.next_double() < prob ? 1.0 : 0.0);
  }
  return out;
}

// The factories, the *_like forms and bernoulli, for the CPU and the Meta key alike (on meta,
// bernoulli makes its result's metadata and draws nothing).
void impl_factories(Library& m) {
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
  m.impl("empty_like", &empty_like);
  m.impl("zeros_like", &zeros_like);
  m.impl("ones_like", &ones_like);
  m.impl("full_like", &full_like);
  m.impl("rand_like", &rand_like);
  m.impl("randn_like", &randn_like);
  m.impl("randint_like", &randint_like);
  m.impl("randint_like.low_dtype", &randint_like_low);
  m.impl("bernoulli", &bernoulli);
  m.impl("bernoulli.p", &bernoulli_p);
}

}  // namespace

LOOM_LIBRARY_IMPL(aten, CPU, m) {
  m.set_provider("reference");
  impl_factories(m);
}

// Note [Meta tensors] (core/src/allocator.cpp): shapes without data.
LOOM_LIBRARY_IMPL(aten, Meta, m) {
  m.set_provider("reference");
  impl_factories(m);
}

}  // namespace loom::ops::cpu
