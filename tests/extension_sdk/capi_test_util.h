// Helpers of the stable C ABI's suites (capi_test.cpp, capi_v2_test.cpp): the table, fetched
// once and initialised, and short ways to make tensors, values and calls as a C client does.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "loom/capi.h"

namespace loom_capi_test {

/// The table (this header's version), with Init done.
inline const LoomApi* api() {
  static const LoomApi* a = [] {
    const LoomApi* t = loom_get_api(LOOM_API_VERSION);
    if (t != nullptr) {
      LoomStatus* s = t->Init();
      if (s) {
        ADD_FAILURE() << t->StatusMessage(s);
        t->StatusRelease(s);
      }
    }
    return t;
  }();
  return a;
}

/// The message of a failed call (and frees it); "" for success.
inline std::string message(LoomStatus* s) {
  std::string m = s ? api()->StatusMessage(s) : "";
  api()->StatusRelease(s);
  return m;
}

#define OK(call) ASSERT_EQ(message(call), "")

/// The token of a dtype name.
inline int32_t dtype(const char* name) {
  int32_t d = -1;
  LoomStatus* s = api()->DTypeFromName(name, &d);
  EXPECT_EQ(s, nullptr);
  api()->StatusRelease(s);
  return d;
}

/// A new float32 CPU tensor.
inline LoomTensor* tensor(std::vector<float> v, std::vector<int64_t> sizes) {
  LoomTensor* t = nullptr;
  LoomStatus* s =
      api()->TensorFromData(v.data(), sizes.data(), sizes.size(), dtype("float32"), "cpu", &t);
  EXPECT_EQ(message(s), "");
  return t;
}

/// The elements of a float32 tensor.
inline std::vector<float> values(const LoomTensor* t) {
  int64_t n = 0;
  EXPECT_EQ(message(api()->TensorNumel(t, &n)), "");
  std::vector<float> v(static_cast<size_t>(n));
  EXPECT_EQ(message(api()->TensorCopyToHost(t, v.data(), v.size() * sizeof(float))), "");
  return v;
}

/// A TENSOR value.
inline LoomValue tv(LoomTensor* t) {
  LoomValue v{};
  v.struct_size = sizeof(LoomValue);
  v.kind = LOOM_VALUE_TENSOR;
  v.u.tensor = t;
  return v;
}
/// A FLOAT value.
inline LoomValue fv(double f) {
  LoomValue v{};
  v.struct_size = sizeof(LoomValue);
  v.kind = LOOM_VALUE_FLOAT;
  v.u.f = f;
  return v;
}
/// An INT value.
inline LoomValue iv(int64_t i) {
  LoomValue v{};
  v.struct_size = sizeof(LoomValue);
  v.kind = LOOM_VALUE_INT;
  v.u.i = i;
  return v;
}

/// Calls an op with one tensor return.
inline LoomTensor* call1(const char* name, std::vector<LoomValue> args) {
  const LoomOp* op = nullptr;
  EXPECT_EQ(message(api()->OpFind(name, &op)), "");
  LoomValue ret{};
  ret.struct_size = sizeof(LoomValue);
  size_t n = 0;
  EXPECT_EQ(message(api()->OpCall(op, args.data(), args.size(), &ret, 1, &n)), "");
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(ret.kind, LOOM_VALUE_TENSOR);
  return ret.u.tensor;  // the caller owns it
}

}  // namespace loom_capi_test
