#pragma once
// Helpers for the operator suites (tests/ops): load the pack, build tensors of any dtype
// from float64 values (contiguous or deliberately strided), read them back, and compare
// against a float64 oracle with a report of the first mismatching element.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "loom/core/half.h"
#include "loom/core/tensor.h"
#include "loom/dispatcher/plugin_loader.h"

namespace loom::testing {

/// Loads the ops_core plugin (idempotent); call from SetUp or at the start of each test.
inline void load_ops_core() { PluginLoader::instance().load("ops_core"); }

/// Loads the ops_nn plugin (and, as its dependency, ops_core); idempotent.
inline void load_ops_nn() { PluginLoader::instance().load("ops_nn"); }

/// Writes v into the element at p, converted to dtype t.
inline void write_as(void* p, DType t, double v) {
  switch (t) {
    case DType::Bool:
      *static_cast<bool*>(p) = v != 0;
      break;
    case DType::UInt8:
      *static_cast<uint8_t*>(p) = static_cast<uint8_t>(v);
      break;
    case DType::Int8:
      *static_cast<int8_t*>(p) = static_cast<int8_t>(v);
      break;
    case DType::Int16:
      *static_cast<int16_t*>(p) = static_cast<int16_t>(v);
      break;
    case DType::Int32:
      *static_cast<int32_t*>(p) = static_cast<int32_t>(v);
      break;
    case DType::Int64:
      *static_cast<int64_t*>(p) = static_cast<int64_t>(v);
      break;
    case DType::Float16:
      *static_cast<uint16_t*>(p) = float_to_half(static_cast<float>(v));
      break;
    case DType::BFloat16:
      *static_cast<uint16_t*>(p) = float_to_bfloat16(static_cast<float>(v));
      break;
    case DType::Float32:
      *static_cast<float*>(p) = static_cast<float>(v);
      break;
    case DType::Float64:
      *static_cast<double*>(p) = v;
      break;
  }
}

/// Reads the element at p of dtype t as double.
inline double read_as(const void* p, DType t) {
  switch (t) {
    case DType::Bool:
      return *static_cast<const bool*>(p);
    case DType::UInt8:
      return *static_cast<const uint8_t*>(p);
    case DType::Int8:
      return *static_cast<const int8_t*>(p);
    case DType::Int16:
      return *static_cast<const int16_t*>(p);
    case DType::Int32:
      return *static_cast<const int32_t*>(p);
    case DType::Int64:
      return static_cast<double>(*static_cast<const int64_t*>(p));
    case DType::Float16:
      return half_to_float(*static_cast<const uint16_t*>(p));
    case DType::BFloat16:
      return bfloat16_to_float(*static_cast<const uint16_t*>(p));
    case DType::Float32:
      return *static_cast<const float*>(p);
    case DType::Float64:
      return *static_cast<const double*>(p);
  }
  return 0;
}

/// A tensor of dtype t holding values (row-major) with the given sizes. With strided=true
/// the last dimension gets stride 2 (the tensor is a non-contiguous view of a larger
/// storage), which is how suites check that kernels honour strides.
inline Tensor make_tensor(const std::vector<double>& values, IntArrayRef sizes,
                          DType t = DType::Float32, bool strided = false) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  EXPECT_EQ(static_cast<size_t>(n), values.size()) << "make_tensor: values do not fill sizes";
  std::vector<int64_t> strides(sizes.size());
  int64_t stride = strided ? 2 : 1;
  for (int64_t i = static_cast<int64_t>(sizes.size()) - 1; i >= 0; --i) {
    strides[i] = stride;
    stride *= std::max<int64_t>(sizes[i], 1);
  }
  Tensor base = Tensor::empty({std::max<int64_t>(stride, 1)}, TensorOptions{}.with(t));
  Tensor out = base.as_strided_view(sizes, strides, 0);
  const auto es = static_cast<int64_t>(element_size(t));
  std::vector<int64_t> idx(sizes.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * strides[d];
    write_as(static_cast<char*>(out.data_ptr()) + off * es, t, values[static_cast<size_t>(k)]);
    for (int64_t d = static_cast<int64_t>(idx.size()) - 1; d >= 0; --d) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

/// The elements of t (any dtype, any strides, CPU) in row-major order, as doubles.
inline std::vector<double> to_doubles(const Tensor& t) {
  std::vector<double> out;
  out.reserve(static_cast<size_t>(t.numel()));
  if (t.numel() == 0) return out;
  const auto es = static_cast<int64_t>(t.element_size());
  std::vector<int64_t> idx(static_cast<size_t>(t.dim()), 0);
  for (int64_t k = 0; k < t.numel(); ++k) {
    int64_t off = 0;
    for (int64_t d = 0; d < t.dim(); ++d) off += idx[d] * t.stride(d);
    out.push_back(read_as(static_cast<const char*>(t.data_ptr()) + off * es, t.dtype()));
    for (int64_t d = t.dim() - 1; d >= 0; --d) {
      if (++idx[d] < t.size(d)) break;
      idx[d] = 0;
    }
  }
  return out;
}

/// n uniform doubles in [lo, hi) from a fixed seed.
inline std::vector<double> random_values(size_t n, uint64_t seed, double lo = -2, double hi = 2) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = dist(gen);
  return v;
}

/// Expects got's sizes and values to match the oracle within |got - want| <= atol + rtol*|want|
/// (NaN matches NaN, infinities must match exactly); reports the first mismatch.
inline void expect_close(const Tensor& got, IntArrayRef want_sizes, const std::vector<double>& want,
                         double rtol = 1e-5, double atol = 1e-6) {
  ASSERT_TRUE(got.defined());
  ASSERT_EQ(sizes_str(got.sizes()), sizes_str(want_sizes));
  const std::vector<double> g = to_doubles(got);
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i) {
    const double w = want[i];
    const bool ok = (std::isnan(w) && std::isnan(g[i])) || (std::isinf(w) && g[i] == w) ||
                    std::fabs(g[i] - w) <= atol + rtol * std::fabs(w);
    if (!ok) {
      ADD_FAILURE() << "element " << i << " of " << got.describe() << ": got " << g[i]
                    << ", expected " << w << " (rtol " << rtol << ", atol " << atol << ")";
      return;
    }
  }
}

}  // namespace loom::testing
