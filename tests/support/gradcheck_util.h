#pragma once
// What the autograd suites share: float64 leaves (random, given, transposed) and a
// gradcheck that reports a mismatch as a test failure instead of throwing.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "loom/autograd/gradcheck.h"
#include "loom/ops/tensor_methods.h"
#include "ops_test_util.h"

namespace loom::testing {

/// Number of elements of sizes.
inline int64_t numel_of(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

/// A float64 leaf that requires grad, of uniform values in [lo, hi) from seed; strided=true
/// gives its last dim stride 2.
inline Tensor leaf(const std::vector<int64_t>& sizes, uint64_t seed, bool strided = false,
                   double lo = -2, double hi = 2) {
  Tensor t = make_tensor(random_values(static_cast<size_t>(numel_of(sizes)), seed, lo, hi), sizes,
                         DType::Float64, strided);
  t.set_requires_grad(true);
  return t;
}

/// A float64 leaf that requires grad, holding values.
inline Tensor leaf_of(const std::vector<double>& values, const std::vector<int64_t>& sizes) {
  Tensor t = make_tensor(values, sizes, DType::Float64);
  t.set_requires_grad(true);
  return t;
}

/// A float64 leaf whose last two dims are a transpose (non-contiguous).
inline Tensor transposed_leaf(const std::vector<int64_t>& sizes, uint64_t seed) {
  std::vector<int64_t> swapped = sizes;
  std::swap(swapped[swapped.size() - 1], swapped[swapped.size() - 2]);
  Tensor t = make_tensor(random_values(static_cast<size_t>(numel_of(sizes)), seed), swapped,
                         DType::Float64)
                 .transpose(-1, -2);
  t.set_requires_grad(true);
  return t;
}

/// gradcheck(fn, inputs); a mismatch (or any error) becomes a test failure naming what.
inline void expect_gradcheck(
    const std::function<autograd::variable_list(const autograd::variable_list&)>& fn,
    const autograd::variable_list& inputs, const std::string& what = "") {
  SCOPED_TRACE(what);
  try {
    autograd::gradcheck(fn, inputs);
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << (what.empty() ? "" : ": ") << e.what();
  }
}

}  // namespace loom::testing
