// The profiler's ranges through the stable C ABI: the ops profiler::record_function_enter and
// record_function_exit (ops/core/schemas/profiler.cpp), called by name as a C client calls
// any op. Recording itself is checked in tests/core/profiler_test.cpp; here, that a C client
// gets a handle, closes it, and gets a value error naming the handle when it closes one twice.
#include <gtest/gtest.h>

#include <string>

#include "capi_test_util.h"
#include "loom/capi.h"

namespace {

using namespace loom_capi_test;  // NOLINT: the helpers are the suite's vocabulary

LoomValue value(LoomValueKind kind) {
  LoomValue v{};
  v.struct_size = sizeof(LoomValue);
  v.kind = kind;
  return v;
}

TEST(CapiProfiler, RangesOpenAndCloseByName) {
  const LoomOp* enter = nullptr;
  const LoomOp* exit_op = nullptr;
  OK(api()->OpFind("profiler::record_function_enter", &enter));
  OK(api()->OpFind("profiler::record_function_exit", &exit_op));

  LoomValue name = value(LOOM_VALUE_STRING);
  name.u.s = "from C";
  LoomValue ret[1] = {value(LOOM_VALUE_NONE)};
  size_t n = 0;
  OK(api()->OpCall(enter, &name, 1, ret, 1, &n));
  ASSERT_EQ(n, 1u);
  ASSERT_EQ(ret[0].kind, LOOM_VALUE_INT);
  const int64_t handle = ret[0].u.i;

  LoomValue h = value(LOOM_VALUE_INT);
  h.u.i = handle;
  OK(api()->OpCall(exit_op, &h, 1, ret, 1, &n));
  EXPECT_EQ(n, 0u);

  LoomStatus* again = api()->OpCall(exit_op, &h, 1, ret, 1, &n);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(api()->StatusCode(again), LOOM_VALUE_ERROR);
  const std::string m = message(again);
  EXPECT_NE(m.find("record_function_exit"), std::string::npos) << m;
  EXPECT_NE(m.find(std::to_string(handle)), std::string::npos) << m;
}

}  // namespace
