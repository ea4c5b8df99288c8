// Reference CPU kernels of the creation ops: empty, zeros, ones, full, arange, linspace,
// eye, the random factories (rand, randn, randint, bernoulli) and the *_like forms.
// Random ops draw from the Generator argument, or the CPU default generator when it is
// None, so loom::manual_seed(s) makes them reproducible.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>
#include <vector>

#include "cpu/strided_copy.h"
#include "loom/core/generator.h"
#include "loom/core/half.h"
#include "loom/dispatcher/library.h"

namespace loom::ops::cpu {
namespace {

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

// PyTorch's torch.strided is layout 0; the reference backend has no other.
void check_layout(const char* op, std::optional<int64_t> layout) {
  LOOM_CHECK_T(NotImplementedError, !layout || *layout == 0, op, ": layout ", *layout,
               " is not supported (only torch.strided)");
}

void check_sizes(IntArrayRef size) {
  for (int64_t s : size) {
    LOOM_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s, ": ",
               sizes_str(size));
  }
}

Tensor make_empty(const char* op, IntArrayRef size, DType dtype, std::optional<int64_t> layout,
                  std::optional<Device> device) {
  check_layout(op, layout);
  check_sizes(size);
  return Tensor::empty(size, TensorOptions{}.with(dtype).with(device.value_or(Device())));
}

// Fills a contiguous tensor with one value: the element is written once, then replicated.
void fill_contiguous(const Tensor& t, const Scalar& value) {
  const int64_t n = t.numel();
  if (n == 0) return;
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

DType float_dtype(std::optional<DType> dtype) { return dtype.value_or(default_float_dtype()); }

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

// PyTorch infers full's dtype from the fill value: bool, int64 or the default float.
DType scalar_default_dtype(const Scalar& s) {
  if (s.is_bool()) return DType::Bool;
  if (s.is_integral()) return DType::Int64;
  return default_float_dtype();
}

Tensor full(IntArrayRef size, const Scalar& value, std::optional<DType> dtype,
            std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool>) {
  Tensor out =
      make_empty("full", size, dtype.value_or(scalar_default_dtype(value)), layout, device);
  fill_contiguous(out, value);
  return out;
}

Tensor arange_start_step(const Scalar& start, const Scalar& end, const Scalar& step,
                         std::optional<DType> dtype, std::optional<int64_t> layout,
                         std::optional<Device> device, std::optional<bool>) {
  const bool all_integral =
      !start.is_floating_point() && !end.is_floating_point() && !step.is_floating_point();
  const DType t = dtype.value_or(all_integral ? DType::Int64 : default_float_dtype());
  const double xstart = start.to_double();
  const double xend = end.to_double();
  const double xstep = step.to_double();
  LOOM_CHECK(xstep != 0, "step must be nonzero");
  LOOM_CHECK(std::isfinite(xstart) && std::isfinite(xend), "unsupported range: ", xstart, " -> ",
             xend);
  LOOM_CHECK((xstep > 0 && xend >= xstart) || (xstep < 0 && xend <= xstart),
             "upper bound and larger bound inconsistent with step sign");
  int64_t size;
  const bool exact = all_integral && is_integral(t, /*include_bool=*/false);
  if (exact) {
    const int64_t a = start.to_int(), b = end.to_int(), s = step.to_int();
    size = s > 0 ? (b - a + s - 1) / s : (a - b + (-s) - 1) / (-s);
  } else {
    const double size_d = std::ceil((xend - xstart) / xstep);
    LOOM_CHECK(size_d >= 0 && size_d <= static_cast<double>(std::numeric_limits<int64_t>::max()),
               "invalid size, possible overflow?");
    size = static_cast<int64_t>(size_d);
  }
  Tensor out = make_empty("arange", {size}, t, layout, device);
  for (int64_t i = 0; i < size; ++i) {
    if (exact) {
      store_int(element(out, i), t, start.to_int() + i * step.to_int());
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
  LOOM_CHECK(steps >= 0, "number of steps must be non-negative");
  const DType t = float_dtype(dtype);
  Tensor out = make_empty("linspace", {steps}, t, layout, device);
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
  LOOM_CHECK(n >= 0, "n must be greater or equal to 0, got ", n);
  LOOM_CHECK(m >= 0, "m must be greater or equal to 0, got ", m);
  Tensor out = zeros({n, m}, dtype, layout, device, pin);
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

void check_floating(const char* op, DType t) {
  LOOM_CHECK_T(TypeError, is_floating_point(t), op, ": expected a floating point dtype, got ",
               dtype_name(t));
}

void fill_uniform(const Tensor& out, Generator& g) {
  for (int64_t i = 0; i < out.numel(); ++i) {
    store_double(element(out, i), out.dtype(), uniform01(g, out.dtype()));
  }
}

void fill_normal(const Tensor& out, Generator& g) {
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
  LOOM_CHECK(low < high, "random_ expects 'from' to be less than 'to', but got from=", low,
             " >= to=", high);
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

// PyTorch's preserve_format: a dense, non-overlapping self (a permutation of a contiguous
// layout, e.g. a transpose) gives its strides to the result; anything else gets contiguous.
Dims like_strides(const Tensor& self, std::optional<int64_t> memory_format) {
  const int64_t nd = self.dim();
  const DimVector contiguous = contiguous_strides(self.sizes());
  Dims fallback(contiguous.begin(), contiguous.end());
  // MemoryFormat: 0 contiguous, 1 preserve (the default), 2/3 channels_last(_3d).
  LOOM_CHECK_T(NotImplementedError, !memory_format || *memory_format <= 1, "memory_format ",
               memory_format.value_or(0),
               " is not supported by the reference kernels (contiguous and preserve are)");
  if ((memory_format && *memory_format == 0) || self.is_contiguous()) return fallback;
  std::vector<int64_t> perm(nd);
  std::iota(perm.begin(), perm.end(), 0);
  // Outermost first: larger stride, ties keep dim order.
  std::stable_sort(perm.begin(), perm.end(),
                   [&](int64_t a, int64_t b) { return self.stride(a) > self.stride(b); });
  Dims strides(nd);
  int64_t expected = 1;
  for (int64_t k = nd - 1; k >= 0; --k) {
    const int64_t d = perm[k];
    if (self.size(d) != 1 && self.stride(d) != expected) return fallback;
    strides[d] = expected;
    expected *= std::max<int64_t>(self.size(d), 1);
  }
  return strides;
}

Tensor like(const char* op, const Tensor& self, std::optional<DType> dtype,
            std::optional<int64_t> layout, std::optional<Device> device,
            std::optional<int64_t> memory_format) {
  check_layout(op, layout);
  const Dims strides = like_strides(self, memory_format);
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
  LOOM_CHECK_T(TypeError, is_floating_point(self.dtype()),
               "bernoulli: expected a floating point tensor of probabilities, got ",
               self.describe());
  const Tensor p = contiguous_copy(self);  // read in row-major order
  Generator& g = generator_or_default(gen);
  Tensor out = Tensor::empty(self.sizes(), TensorOptions{}.with(self.dtype()));
  for (int64_t i = 0; i < out.numel(); ++i) {
    const double prob = read_probability(p, i);
    LOOM_CHECK(prob >= 0 && prob <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", prob);
    store_double(element(out, i), out.dtype(), g.next_double() < prob ? 1.0 : 0.0);
  }
  return out;
}

Tensor bernoulli_p(const Tensor& self, double prob, Generator* gen) {
  LOOM_CHECK(prob >= 0 && prob <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", prob);
  Generator& g = generator_or_default(gen);
  Tensor out = Tensor::empty(self.sizes(), TensorOptions{}.with(self.dtype()));
  for (int64_t i = 0; i < out.numel(); ++i) {
    store_double(element(out, i), out.dtype(), g.next_double() < prob ? 1.0 : 0.0);
  }
  return out;
}

}  // namespace

LOOM_LIBRARY_IMPL(aten, CPU, m) {
  m.set_provider("reference");
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

}  // namespace loom::ops::cpu
