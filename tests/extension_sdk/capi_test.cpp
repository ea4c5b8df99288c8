// The stable C ABI (extension_sdk/include/loom/capi.h) used as a C client uses it: only the
// header and libloom.so. Every entry of version 1 is exercised here, errors included; version
// 2's entries are capi_v2_test.cpp's.
#include "loom/capi.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "capi_test_util.h"

namespace {

using namespace loom_capi_test;  // NOLINT: the helpers are the suite's vocabulary

TEST(CApi, VersionedTable) {
  ASSERT_NE(api(), nullptr);
  EXPECT_EQ(api()->version, 2u);
  EXPECT_EQ(api()->struct_size, sizeof(LoomApi));
  EXPECT_EQ(loom_api_version(), 2u);
  // A client of version 1 gets the same table and uses its first 58 entries.
  EXPECT_EQ(loom_get_api(1), api());
  EXPECT_EQ(loom_get_api(0), nullptr);
  EXPECT_EQ(loom_get_api(LOOM_API_VERSION + 1), nullptr) << "a newer client must be told no";
  EXPECT_STRNE(api()->VersionString(), "");
}

TEST(CApi, DTypesByName) {
  const int32_t f = dtype("float32");
  EXPECT_EQ(dtype("float"), f);
  EXPECT_STREQ(api()->DTypeName(f), "float32");
  size_t size = 0;
  OK(api()->DTypeItemSize(dtype("float64"), &size));
  EXPECT_EQ(size, 8u);
  int32_t d = 0;
  LoomStatus* s = api()->DTypeFromName("float33", &d);
  EXPECT_EQ(api()->StatusCode(s), LOOM_TYPE_ERROR);
  EXPECT_NE(message(s).find("unknown dtype 'float33'"), std::string::npos);
  EXPECT_EQ(api()->DTypeName(1000), nullptr);
}

TEST(CApi, TensorAccessors) {
  LoomTensor* t = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  size_t ndim = 0;
  OK(api()->TensorDim(t, &ndim));
  EXPECT_EQ(ndim, 2u);
  int64_t sizes[4] = {}, strides[4] = {};
  OK(api()->TensorSizes(t, sizes, 4, &ndim));
  EXPECT_EQ(sizes[0], 2);
  EXPECT_EQ(sizes[1], 3);
  OK(api()->TensorStrides(t, strides, 4, &ndim));
  EXPECT_EQ(strides[0], 3);
  EXPECT_EQ(strides[1], 1);
  LoomStatus* small = api()->TensorSizes(t, sizes, 1, &ndim);
  EXPECT_EQ(api()->StatusCode(small), LOOM_INVALID_ARGUMENT);
  EXPECT_EQ(ndim, 2u) << "the needed count is written even when the buffer is too small";
  api()->StatusRelease(small);
  char dev[16];
  OK(api()->TensorDevice(t, dev, sizeof dev));
  EXPECT_STREQ(dev, "cpu");
  char desc[64];
  OK(api()->TensorDescribe(t, desc, sizeof desc));
  EXPECT_STREQ(desc, "[2, 3] cpu float32");
  void* p = nullptr;
  OK(api()->TensorDataPtr(t, &p));
  EXPECT_EQ(static_cast<float*>(p)[4], 5.f);
  EXPECT_EQ(values(t), (std::vector<float>{1, 2, 3, 4, 5, 6}));

  // Reference counting: a retained handle survives one release.
  EXPECT_EQ(api()->TensorRetain(t), t);
  api()->TensorRelease(t);
  EXPECT_EQ(values(t)[0], 1.f);
  api()->TensorRelease(t);
  api()->TensorRelease(nullptr);

  LoomTensor* z = nullptr;
  const int64_t zs[] = {3};
  OK(api()->TensorZeros(zs, 1, dtype("int64"), "cpu", &z));
  int32_t zd = -1;
  OK(api()->TensorDType(z, &zd));
  EXPECT_EQ(zd, dtype("int64"));
  api()->TensorRelease(z);

  LoomTensor* bad = nullptr;
  const int64_t neg[] = {2, -1};
  LoomStatus* s = api()->TensorEmpty(neg, 2, dtype("float32"), "cpu", &bad);
  EXPECT_EQ(api()->StatusCode(s), LOOM_VALUE_ERROR);
  EXPECT_EQ(bad, nullptr) << "outputs are written only on success";
  api()->StatusRelease(s);
  s = api()->TensorEmpty(zs, 1, dtype("float32"), "nowhere:0", &bad);
  EXPECT_EQ(api()->StatusCode(s), LOOM_DEVICE_ERROR);
  api()->StatusRelease(s);
}

TEST(CApi, NullArgumentsAreErrorsNotCrashes) {
  LoomStatus* s = api()->TensorDim(nullptr, nullptr);
  EXPECT_EQ(api()->StatusCode(s), LOOM_INVALID_ARGUMENT);
  EXPECT_EQ(message(s), "TensorDim: argument 't' is NULL");
  s = api()->OpFind(nullptr, nullptr);
  EXPECT_EQ(api()->StatusCode(s), LOOM_INVALID_ARGUMENT);
  api()->StatusRelease(s);
  EXPECT_EQ(api()->StatusCode(nullptr), LOOM_OK);
  EXPECT_STREQ(api()->StatusMessage(nullptr), "");
}

TEST(CApi, CallsOpsByName) {
  LoomTensor* a = tensor({1, 2, 3}, {3});
  LoomTensor* b = tensor({10, 20, 30}, {3});
  // add.Tensor(self, other, *, alpha=1): alpha omitted, then given.
  LoomTensor* c = call1("add.Tensor", {tv(a), tv(b)});
  EXPECT_EQ(values(c), (std::vector<float>{11, 22, 33}));
  LoomTensor* d = call1("aten::add.Tensor", {tv(a), tv(b), fv(0.5)});
  EXPECT_EQ(values(d), (std::vector<float>{6, 12, 18}));

  const LoomOp* op = nullptr;
  OK(api()->OpFind("add.Tensor", &op));
  EXPECT_STREQ(api()->OpSchema(op),
               "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");

  // An in-place op returns a new reference to its argument.
  LoomTensor* e = call1("mul_.Tensor", {tv(a), tv(b)});
  EXPECT_EQ(values(a), (std::vector<float>{10, 40, 90}));
  EXPECT_EQ(values(e), values(a));

  // Int lists and several returns: max.dim returns (values, indices).
  LoomTensor* m = tensor({1, 5, 2, 7, 3, 0}, {2, 3});
  const LoomOp* max_dim = nullptr;
  OK(api()->OpFind("max.dim", &max_dim));
  LoomValue args[] = {tv(m), iv(1)};
  LoomValue rets[2] = {};
  rets[0].struct_size = rets[1].struct_size = sizeof(LoomValue);
  size_t n = 0;
  OK(api()->OpCall(max_dim, args, 2, rets, 2, &n));
  ASSERT_EQ(n, 2u);
  EXPECT_EQ(values(rets[0].u.tensor), (std::vector<float>{5, 7}));
  api()->ValuesRelease(rets, 2);
  EXPECT_EQ(rets[0].kind, LOOM_VALUE_NONE) << "released values are cleared";

  for (LoomTensor* t : {a, b, c, d, e, m}) api()->TensorRelease(t);
}

TEST(CApi, ErrorsReadAsTheCppApisDo) {
  LoomTensor* a = tensor({1, 2, 3}, {3});
  LoomTensor* b = tensor({1, 2}, {2});
  const LoomOp* op = nullptr;
  OK(api()->OpFind("add.Tensor", &op));
  LoomValue args[] = {tv(a), tv(b)};
  LoomValue ret{};
  ret.struct_size = sizeof(LoomValue);
  size_t n = 0;
  LoomStatus* s = api()->OpCall(op, args, 2, &ret, 1, &n);
  EXPECT_EQ(api()->StatusCode(s), LOOM_VALUE_ERROR);
  const std::string m = message(s);
  EXPECT_NE(m.find("The size of tensor a (3) must match the size of tensor b (2)"),
            std::string::npos)
      << m;

  s = api()->OpFind("aten::add.Tensr", &op);
  EXPECT_EQ(api()->StatusCode(s), LOOM_NOT_IMPLEMENTED);
  EXPECT_NE(message(s).find("add.Tensor"), std::string::npos) << "close matches are named";

  // A wrong argument kind names the op and the argument.
  OK(api()->OpFind("add.Tensor", &op));
  LoomValue wrong[] = {tv(a), fv(1.0), iv(2)};
  s = api()->OpCall(op, wrong, 3, &ret, 1, &n);
  EXPECT_EQ(api()->StatusCode(s), LOOM_TYPE_ERROR);
  EXPECT_NE(message(s).find("other"), std::string::npos);

  // Too small a returns array.
  s = api()->OpCall(op, args, 2, nullptr, 0, &n);
  EXPECT_EQ(api()->StatusCode(s), LOOM_INVALID_ARGUMENT);
  api()->StatusRelease(s);
  api()->TensorRelease(a);
  api()->TensorRelease(b);
}

TEST(CApi, NewerClientsWithLargerValuesAreRead) {
  // A client built against a future header whose LoomValue grew by 16 bytes.
  struct FutureValue {
    LoomValue v;
    char extra[16];
  };
  LoomTensor* a = tensor({1, 2}, {2});
  FutureValue args[2] = {};
  args[0].v = tv(a);
  args[1].v = tv(a);
  args[0].v.struct_size = args[1].v.struct_size = sizeof(FutureValue);
  FutureValue ret{};
  ret.v.struct_size = sizeof(FutureValue);
  const LoomOp* op = nullptr;
  OK(api()->OpFind("mul.Tensor", &op));
  size_t n = 0;
  OK(api()->OpCall(op, &args[0].v, 2, &ret.v, 1, &n));
  EXPECT_EQ(values(ret.v.u.tensor), (std::vector<float>{1, 4}));
  api()->ValuesRelease(&ret.v, 1);
  api()->TensorRelease(a);

  LoomValue old{};
  old.struct_size = 8;  // smaller than any real LoomValue
  old.kind = LOOM_VALUE_INT;
  LoomStatus* s = api()->OpCall(op, &old, 1, &ret.v, 1, &n);
  EXPECT_EQ(api()->StatusCode(s), LOOM_INVALID_ARGUMENT);
  EXPECT_NE(message(s).find("struct_size"), std::string::npos);
}

TEST(CApi, Autograd) {
  LoomTensor* x = tensor({1, 2, 3}, {3});
  OK(api()->TensorSetRequiresGrad(x, true));
  bool rg = false;
  OK(api()->TensorRequiresGrad(x, &rg));
  EXPECT_TRUE(rg);
  // loss = sum(x * x): d/dx = 2x
  LoomTensor* sq = call1("mul.Tensor", {tv(x), tv(x)});
  LoomTensor* loss = call1("sum", {tv(sq)});
  OK(api()->Backward(loss, nullptr, false));
  LoomTensor* g = nullptr;
  OK(api()->TensorGrad(x, &g));
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(values(g), (std::vector<float>{2, 4, 6}));
  double item = 0;
  OK(api()->TensorItem(loss, &item));
  EXPECT_EQ(item, 14.0);

  // Backward through a freed graph is PyTorch's error.
  LoomStatus* s = api()->Backward(loss, nullptr, false);
  EXPECT_EQ(api()->StatusCode(s), LOOM_AUTOGRAD_ERROR);
  EXPECT_NE(message(s).find("second time"), std::string::npos);

  // Set-to-none, then no_grad: nothing is recorded.
  OK(api()->TensorSetGrad(x, nullptr));
  LoomTensor* none = g;
  OK(api()->TensorGrad(x, &none));
  EXPECT_EQ(none, nullptr);
  EXPECT_TRUE(api()->GradEnabled());
  EXPECT_TRUE(api()->SetGradEnabled(false));
  LoomTensor* y = call1("mul.Tensor", {tv(x), tv(x)});
  OK(api()->TensorRequiresGrad(y, &rg));
  EXPECT_FALSE(rg);
  EXPECT_FALSE(api()->SetGradEnabled(true));
  LoomTensor* det = nullptr;
  OK(api()->TensorDetach(x, &det));
  OK(api()->TensorRequiresGrad(det, &rg));
  EXPECT_FALSE(rg);
  for (LoomTensor* t : {x, sq, loss, g, y, det}) api()->TensorRelease(t);
}

// ---- a custom op from C: capi_test::scale(Tensor x, float k) -> Tensor, y = k * x^2 ----

int g_released = 0;

LoomStatus* scale_cpu(void* user_data, const LoomValue* args, size_t nargs, LoomValue* rets,
                      size_t nrets) {
  EXPECT_EQ(*static_cast<int*>(user_data), 42);
  if (nargs != 2 || nrets != 1) return api()->StatusCreate(LOOM_ERROR, "scale: bad arity");
  const LoomTensor* x = args[0].u.tensor;
  const double k = args[1].u.f;
  int32_t d = -1;
  api()->StatusRelease(api()->TensorDType(x, &d));
  if (d != dtype("float64") && d != dtype("float32")) {
    return api()->StatusCreate(LOOM_TYPE_ERROR, "capi_test::scale: expected a floating tensor");
  }
  // y = k * x * x through other ops (the kernel may call back into Loom).
  LoomTensor* xx =
      call1("mul.Tensor", {tv(const_cast<LoomTensor*>(x)), tv(const_cast<LoomTensor*>(x))});
  LoomTensor* y = call1("mul.Scalar", {tv(xx), fv(k)});
  api()->TensorRelease(xx);
  rets[0].kind = LOOM_VALUE_TENSOR;
  rets[0].u.tensor = y;
  return nullptr;
}

LoomStatus* scale_backward(void*, LoomBackwardContext* ctx) {
  // dy/dx = 2 k x
  if (api()->BackwardNumInputs(ctx) != 1 || api()->BackwardNumOutputs(ctx) != 1) {
    return api()->StatusCreate(LOOM_ERROR, "scale backward: bad context");
  }
  const LoomTensor* x = nullptr;
  const LoomTensor* gy = nullptr;
  LoomStatus* s = api()->BackwardInput(ctx, 0, &x);
  if (s) return s;
  if ((s = api()->BackwardGradOutput(ctx, 0, &gy))) return s;
  LoomValue k{};
  if ((s = api()->BackwardArgument(ctx, 1, &k))) return s;
  if (!api()->BackwardNeedsInputGrad(ctx, 0)) return nullptr;
  LoomTensor* t =
      call1("mul.Tensor", {tv(const_cast<LoomTensor*>(x)), tv(const_cast<LoomTensor*>(gy))});
  LoomTensor* g = call1("mul.Scalar", {tv(t), fv(2 * k.u.f)});
  s = api()->BackwardSetGradInput(ctx, 0, g);
  api()->TensorRelease(t);
  api()->TensorRelease(g);
  return s;
}

TEST(CApi, RegistersAnOpWithForwardAndBackward) {
  static int ud = 42;
  LoomLibrary* lib = nullptr;
  OK(api()->LibraryCreate("capi_test", &lib));
  OK(api()->LibraryDef(lib, "scale(Tensor x, float k) -> Tensor"));
  OK(api()->LibraryImpl(lib, "scale", "CPU", &scale_cpu, &ud, [](void*) { ++g_released; }));
  OK(api()->LibraryImplBackward(lib, "scale", &scale_backward, nullptr, nullptr));
  EXPECT_EQ(g_released, 0) << "user data lives as long as its registration";
  // A refused registration never releases the caller's user data.
  int refused_released = 0;
  LoomStatus* refused = api()->LibraryImpl(lib, "scale", "NoSuchKey", &scale_cpu, &refused_released,
                                           [](void* p) { ++*static_cast<int*>(p); });
  EXPECT_NE(api()->StatusCode(refused), LOOM_OK);
  api()->StatusRelease(refused);
  EXPECT_EQ(refused_released, 0);

  LoomTensor* x = tensor({1, -2, 3}, {3});
  OK(api()->TensorSetRequiresGrad(x, true));
  LoomTensor* y = call1("capi_test::scale", {tv(x), fv(3.0)});
  EXPECT_EQ(values(y), (std::vector<float>{3, 12, 27}));
  LoomTensor* loss = call1("sum", {tv(y)});
  OK(api()->Backward(loss, nullptr, false));
  LoomTensor* g = nullptr;
  OK(api()->TensorGrad(x, &g));
  EXPECT_EQ(values(g), (std::vector<float>{6, -12, 18}));

  // Finite differences in float64 agree with the registered backward.
  const std::vector<double> xs = {0.3, -1.2, 2.5};
  const int64_t n3[] = {3};
  LoomTensor* xd = nullptr;
  OK(api()->TensorFromData(xs.data(), n3, 1, dtype("float64"), "cpu", &xd));
  OK(api()->TensorSetRequiresGrad(xd, true));
  LoomTensor* yd = call1("capi_test::scale", {tv(xd), fv(0.7)});
  LoomTensor* sd = call1("sum", {tv(yd)});
  OK(api()->Backward(sd, nullptr, false));
  LoomTensor* gd = nullptr;
  OK(api()->TensorGrad(xd, &gd));
  std::vector<double> analytic(3);
  OK(api()->TensorCopyToHost(gd, analytic.data(), 3 * sizeof(double)));
  const bool prev = api()->SetGradEnabled(false);
  for (size_t i = 0; i < 3; ++i) {
    double f[2];
    for (int sign = 0; sign < 2; ++sign) {
      std::vector<double> p = xs;
      p[i] += sign ? -1e-6 : 1e-6;
      LoomTensor* xp = nullptr;
      OK(api()->TensorFromData(p.data(), n3, 1, dtype("float64"), "cpu", &xp));
      LoomTensor* yp = call1("capi_test::scale", {tv(xp), fv(0.7)});
      LoomTensor* sp = call1("sum", {tv(yp)});
      OK(api()->TensorItem(sp, &f[sign]));
      for (LoomTensor* t : {xp, yp, sp}) api()->TensorRelease(t);
    }
    EXPECT_NEAR(analytic[i], (f[0] - f[1]) / 2e-6, 1e-6) << "element " << i;
  }
  api()->SetGradEnabled(prev);

  // A kernel's status becomes the op's error, with its code.
  LoomTensor* ints = nullptr;
  OK(api()->TensorZeros(n3, 1, dtype("int64"), "cpu", &ints));
  const LoomOp* op = nullptr;
  OK(api()->OpFind("capi_test::scale", &op));
  LoomValue args[] = {tv(ints), fv(1.0)};
  LoomValue ret{};
  ret.struct_size = sizeof(LoomValue);
  size_t nr = 0;
  LoomStatus* s = api()->OpCall(op, args, 2, &ret, 1, &nr);
  EXPECT_EQ(api()->StatusCode(s), LOOM_TYPE_ERROR);
  EXPECT_EQ(message(s), "capi_test::scale: expected a floating tensor");

  // A second library for the same namespace is refused.
  LoomLibrary* dup = nullptr;
  s = api()->LibraryCreate("capi_test", &dup);
  EXPECT_EQ(api()->StatusCode(s), LOOM_REGISTRATION_ERROR);
  api()->StatusRelease(s);

  for (LoomTensor* t : {x, y, loss, g, xd, yd, sd, gd, ints}) api()->TensorRelease(t);
  // Releasing the library undoes the registrations and frees the user data.
  api()->LibraryRelease(lib);
  EXPECT_EQ(g_released, 1);
  s = api()->OpFind("capi_test::scale", &op);
  EXPECT_EQ(api()->StatusCode(s), LOOM_NOT_IMPLEMENTED);
  api()->StatusRelease(s);
  OK(api()->LibraryCreate("capi_test", &lib));  // the namespace is free again
  api()->LibraryRelease(lib);
}

// Note [Graphs keep their plugin]: a graph recorded before LibraryRelease may still run the
// backward function afterwards, so its user data is released only when the last such graph
// is gone; before, it was released at once and backward read freed user data.
TEST(CApi, BackwardUserDataOutlivesTheLibraryWhileAGraphNeedsIt) {
  struct Data {
    int released = 0;
    int calls = 0;
  };
  static Data data;
  data = Data{};
  LoomLibrary* lib = nullptr;
  OK(api()->LibraryCreate("capi_life", &lib));
  OK(api()->LibraryDef(lib, "scale(Tensor x, float k) -> Tensor"));
  static int forty_two = 42;  // what scale_cpu expects
  OK(api()->LibraryImpl(lib, "scale", "CPU", &scale_cpu, &forty_two, nullptr));
  OK(api()->LibraryImplBackward(
      lib, "scale",
      [](void* ud, LoomBackwardContext* ctx) -> LoomStatus* {
        ++static_cast<Data*>(ud)->calls;
        return scale_backward(nullptr, ctx);
      },
      &data, [](void* ud) { ++static_cast<Data*>(ud)->released; }));
  LoomTensor* x = tensor({1, -2, 3}, {3});
  OK(api()->TensorSetRequiresGrad(x, true));
  LoomTensor* y = call1("capi_life::scale", {tv(x), fv(3.0)});
  LoomTensor* loss = call1("sum", {tv(y)});
  api()->LibraryRelease(lib);
  EXPECT_EQ(data.released, 0) << "a live graph still needs the backward's user data";
  OK(api()->Backward(loss, nullptr, false));
  EXPECT_EQ(data.calls, 1);
  LoomTensor* g = nullptr;
  OK(api()->TensorGrad(x, &g));
  EXPECT_EQ(values(g), (std::vector<float>{6, -12, 18}));
  for (LoomTensor* t : {y, loss}) api()->TensorRelease(t);
  EXPECT_EQ(data.released, 1) << "released with the last node that could call it";
  for (LoomTensor* t : {x, g}) api()->TensorRelease(t);
  EXPECT_EQ(data.released, 1);
}

TEST(CApi, ImplOfAnUndefinedOpIsRefused) {
  LoomLibrary* lib = nullptr;
  OK(api()->LibraryCreate(nullptr, &lib));
  int released = 0;
  LoomStatus* s = api()->LibraryImpl(lib, "capi_nowhere::op", "CPU", &scale_cpu, &released,
                                     [](void* p) { ++*static_cast<int*>(p); });
  EXPECT_EQ(api()->StatusCode(s), LOOM_REGISTRATION_ERROR);
  const std::string m = message(s);  // frees s
  EXPECT_NE(m.find("no operator named 'capi_nowhere::op' is defined"), std::string::npos) << m;
  EXPECT_EQ(released, 0);
  api()->LibraryRelease(lib);
}

TEST(CApi, Plugins) {
  size_t n = 0;
  OK(api()->PluginCount(&n));
  ASSERT_GT(n, 0u);
  bool found = false;
  for (size_t i = 0; i < n; ++i) {
    const char* name = nullptr;
    const char* version = nullptr;
    OK(api()->PluginInfo(i, &name, &version));
    found |= std::strcmp(name, "ops_core") == 0;
  }
  EXPECT_TRUE(found);
  LoomStatus* s = api()->PluginInfo(n, nullptr, nullptr);
  EXPECT_EQ(api()->StatusCode(s), LOOM_INDEX_ERROR);
  api()->StatusRelease(s);
  // A file that is not a plugin is refused with a reason; the process goes on.
  s = api()->PluginLoad("/dev/null");
  EXPECT_EQ(api()->StatusCode(s), LOOM_PLUGIN_ERROR);
  EXPECT_NE(message(s), "");
  s = api()->PluginLoad("no_such_plugin_anywhere");
  EXPECT_NE(api()->StatusCode(s), LOOM_OK);
  api()->StatusRelease(s);
}

TEST(CApi, DevicesAndSeeds) {
  int32_t n = -1;
  const char* reason = nullptr;
  OK(api()->DeviceCount("cpu", &n, &reason));
  EXPECT_EQ(n, 1);
  OK(api()->DeviceCount("no_such_device", &n, &reason));
  EXPECT_EQ(n, 0);
  EXPECT_NE(std::string(reason).find("no plugin"), std::string::npos);
  // CUDA: devices where a driver and a GPU exist; otherwise a reason a user can act on.
  OK(api()->DeviceCount("cuda", &n, &reason));
  if (n == 0) {
    EXPECT_STRNE(reason, "") << "no CUDA device must say why";
  }
  void* stream = reinterpret_cast<void*>(1);
  OK(api()->DeviceCurrentStream("cpu", &stream));
  EXPECT_EQ(stream, nullptr);
  OK(api()->DeviceSynchronize("cpu"));
  // Same seed, same numbers.
  const int64_t sz[] = {4};
  std::vector<float> first;
  for (int round = 0; round < 2; ++round) {
    OK(api()->ManualSeed(123));
    LoomValue size{};
    size.struct_size = sizeof(LoomValue);
    size.kind = LOOM_VALUE_INT_LIST;
    size.u.ints.data = sz;
    size.u.ints.size = 1;
    LoomTensor* r = call1("rand", {size});
    if (round == 0) {
      first = values(r);
    } else {
      EXPECT_EQ(values(r), first);
    }
    api()->TensorRelease(r);
  }
}

}  // namespace

namespace {

// ---- lists, dtypes and strings through a C kernel ----
// capi_test2::split_scale(Tensor x, int[] sizes, ScalarType dtype, str tag) -> Tensor[]
thread_local std::vector<LoomTensor*> g_list;

LoomStatus* split_scale(void*, const LoomValue* args, size_t nargs, LoomValue* rets, size_t) {
  if (nargs != 4 || args[1].kind != LOOM_VALUE_INT_LIST || args[2].kind != LOOM_VALUE_DTYPE ||
      args[3].kind != LOOM_VALUE_STRING) {
    return api()->StatusCreate(LOOM_TYPE_ERROR, "split_scale: unexpected argument kinds");
  }
  if (std::strcmp(args[3].u.s, "ok") != 0) {
    return api()->StatusCreate(LOOM_VALUE_ERROR, "split_scale: tag must be 'ok'");
  }
  g_list.clear();
  for (size_t i = 0; i < args[1].u.ints.size; ++i) {
    // Each piece: a tensor of the requested size and dtype, filled with 1 (zeros + 1).
    LoomTensor* z = nullptr;
    const int64_t n = args[1].u.ints.data[i];
    LoomStatus* s = api()->TensorZeros(&n, 1, static_cast<int32_t>(args[2].u.i), "cpu", &z);
    if (s) return s;
    LoomTensor* one = call1("add.Scalar", {tv(z), iv(1)});
    api()->TensorRelease(z);
    g_list.push_back(one);
  }
  rets[0].kind = LOOM_VALUE_TENSOR_LIST;
  rets[0].u.tensors.data = g_list.data();
  rets[0].u.tensors.size = g_list.size();
  return nullptr;
}

TEST(CApi, KernelsTakeListsDTypesStringsAndReturnTensorLists) {
  LoomLibrary* lib = nullptr;
  OK(api()->LibraryCreate("capi_test2", &lib));
  OK(api()->LibraryDef(
      lib, "split_scale(Tensor x, int[] sizes, ScalarType dtype, str tag) -> Tensor[]"));
  OK(api()->LibraryImpl(lib, "split_scale", "CPU", &split_scale, nullptr, nullptr));
  LoomTensor* x = tensor({1}, {1});
  const int64_t sizes[] = {2, 3};
  LoomValue args[4] = {};
  for (LoomValue& a : args) a.struct_size = sizeof(LoomValue);
  args[0] = tv(x);
  args[1].kind = LOOM_VALUE_INT_LIST;
  args[1].u.ints.data = sizes;
  args[1].u.ints.size = 2;
  args[2].kind = LOOM_VALUE_DTYPE;
  args[2].u.i = dtype("float64");
  args[3].kind = LOOM_VALUE_STRING;
  args[3].u.s = "ok";
  const LoomOp* op = nullptr;
  OK(api()->OpFind("capi_test2::split_scale", &op));
  LoomValue ret{};
  ret.struct_size = sizeof(LoomValue);
  size_t n = 0;
  OK(api()->OpCall(op, args, 4, &ret, 1, &n));
  ASSERT_EQ(ret.kind, LOOM_VALUE_TENSOR_LIST);
  ASSERT_EQ(ret.u.tensors.size, 2u);
  int64_t numel = 0;
  OK(api()->TensorNumel(ret.u.tensors.data[1], &numel));
  EXPECT_EQ(numel, 3);
  int32_t d = -1;
  OK(api()->TensorDType(ret.u.tensors.data[0], &d));
  EXPECT_EQ(d, dtype("float64"));
  std::vector<double> host(3);
  OK(api()->TensorCopyToHost(ret.u.tensors.data[1], host.data(), 3 * sizeof(double)));
  EXPECT_EQ(host, (std::vector<double>{1, 1, 1}));
  api()->ValuesRelease(&ret, 1);

  // The kernel's own error, with its code and words.
  args[3].u.s = "bad";
  LoomStatus* s = api()->OpCall(op, args, 4, &ret, 1, &n);
  EXPECT_EQ(api()->StatusCode(s), LOOM_VALUE_ERROR);
  EXPECT_EQ(message(s), "split_scale: tag must be 'ok'");
  api()->TensorRelease(x);
  api()->LibraryRelease(lib);
}

TEST(CApi, FastAndBoxedPathsAgree) {
  // The same ops through the typed fast path (exact arity) and the boxed path (a trailing
  // default given as None is not a Scalar, so the call takes the boxed path).
  LoomTensor* a = tensor({1, -2, 3}, {3});
  LoomTensor* b = tensor({4, 5, -6}, {3});
  LoomTensor* fast = call1("sub.Tensor", {tv(a), tv(b), iv(2)});
  LoomTensor* boxed = nullptr;
  {
    const LoomOp* op = nullptr;
    OK(api()->OpFind("sub.Tensor", &op));
    // A float alpha is widened by the boxed path and by the fast path alike.
    LoomValue args[] = {tv(a), tv(b), fv(2.0)};
    LoomValue ret{};
    ret.struct_size = sizeof(LoomValue);
    size_t n = 0;
    OK(api()->OpCall(op, args, 3, &ret, 1, &n));
    boxed = ret.u.tensor;
  }
  EXPECT_EQ(values(fast), values(boxed));
  EXPECT_EQ(values(fast), (std::vector<float>{-7, -12, 15}));
  // An undefined tensor argument takes the checked path and gets the dispatcher's error.
  const LoomOp* op = nullptr;
  OK(api()->OpFind("mul.Tensor", &op));
  LoomValue args[] = {tv(a), tv(nullptr)};
  LoomValue ret{};
  ret.struct_size = sizeof(LoomValue);
  size_t n = 0;
  LoomStatus* s = api()->OpCall(op, args, 2, &ret, 1, &n);
  EXPECT_EQ(api()->StatusCode(s), LOOM_TYPE_ERROR);
  EXPECT_NE(message(s).find("undefined Tensor"), std::string::npos);
  for (LoomTensor* t : {a, b, fast, boxed}) api()->TensorRelease(t);
}

// ---- what a careless or hostile client passes ----

/// A failed call's code and message (and frees it).
struct Outcome {
  LoomErrorCode code;
  std::string message;
};
Outcome outcome(LoomStatus* s) {
  Outcome o{api()->StatusCode(s), s ? api()->StatusMessage(s) : ""};
  api()->StatusRelease(s);
  return o;
}

TEST(CApi, LibraryNamespacesAreIdentifiers) {
  // A library of "" or "a b" could define nothing (no schema can name its namespace); they
  // used to be accepted.
  for (const char* bad : {"", "a b", "1x", "a::b", "x-y", "caf\xC3\xA9"}) {
    SCOPED_TRACE(bad);
    LoomLibrary* lib = nullptr;
    const Outcome o = outcome(api()->LibraryCreate(bad, &lib));
    EXPECT_EQ(o.code, LOOM_VALUE_ERROR) << o.message;
    EXPECT_NE(o.message.find(std::string("LibraryCreate: namespace '") + bad +
                             "' is not an identifier (ASCII letters, digits and '_'"),
              std::string::npos)
        << o.message;
    EXPECT_EQ(lib, nullptr);
  }
  LoomLibrary* lib = nullptr;
  EXPECT_NE(outcome(api()->LibraryCreate("", &lib)).message.find("pass NULL"), std::string::npos);
  const std::string long_ns(100000, '-');
  const Outcome o = outcome(api()->LibraryCreate(long_ns.c_str(), &lib));
  EXPECT_EQ(o.code, LOOM_VALUE_ERROR);
  EXPECT_LT(o.message.size(), 500u);
  OK(api()->LibraryCreate("_capi_ns2", &lib));
  api()->LibraryRelease(lib);
}

TEST(CApi, ANullElementOfATensorListIsNamed) {
  LoomTensor* t = tensor({1, 2}, {2});
  LoomTensor* list[] = {t, nullptr};
  LoomValue args[2] = {iv(0), iv(0)};
  args[0].kind = LOOM_VALUE_TENSOR_LIST;
  args[0].u.tensors.data = list;
  args[0].u.tensors.size = 2;
  const LoomOp* cat = nullptr;
  OK(api()->OpFind("cat", &cat));
  LoomValue ret{};
  ret.struct_size = sizeof(LoomValue);
  size_t n = 0;
  const Outcome o = outcome(api()->OpCall(cat, args, 2, &ret, 1, &n));
  EXPECT_EQ(o.code, LOOM_TYPE_ERROR);
  EXPECT_EQ(o.message,
            "cat: argument 'tensors' is a TENSOR_LIST whose element 1 of 2 is NULL; a Tensor[] "
            "takes defined tensors only");
  api()->TensorRelease(t);
}

LoomStatus* returns_null_tensor(void*, const LoomValue*, size_t, LoomValue* rets, size_t) {
  rets[0].kind = LOOM_VALUE_TENSOR;
  rets[0].u.tensor = nullptr;
  return nullptr;
}
LoomStatus* returns_int(void*, const LoomValue*, size_t, LoomValue* rets, size_t) {
  rets[0].kind = LOOM_VALUE_INT;
  rets[0].u.i = 5;
  return nullptr;
}
LoomStatus* returns_list_with_null(void*, const LoomValue* args, size_t, LoomValue* rets, size_t) {
  thread_local LoomTensor* list[2];
  list[0] = api()->TensorRetain(args[0].u.tensor);
  list[1] = nullptr;
  rets[0].kind = LOOM_VALUE_TENSOR_LIST;
  rets[0].u.tensors.data = list;
  rets[0].u.tensors.size = 2;
  return nullptr;
}

TEST(CApi, AKernelReturningANullTensorIsToldSo) {
  LoomLibrary* lib = nullptr;
  OK(api()->LibraryCreate("capi_nullret", &lib));
  OK(api()->LibraryDef(lib, "null_tensor(Tensor x) -> Tensor"));
  OK(api()->LibraryDef(lib, "an_int(Tensor x) -> Tensor"));
  OK(api()->LibraryDef(lib, "null_in_list(Tensor x) -> Tensor[]"));
  OK(api()->LibraryImpl(lib, "null_tensor", "CPU", &returns_null_tensor, nullptr, nullptr));
  OK(api()->LibraryImpl(lib, "an_int", "CPU", &returns_int, nullptr, nullptr));
  OK(api()->LibraryImpl(lib, "null_in_list", "CPU", &returns_list_with_null, nullptr, nullptr));
  LoomTensor* x = tensor({1, 2}, {2});
  auto call = [&](const char* name) {
    const LoomOp* op = nullptr;
    EXPECT_EQ(message(api()->OpFind(name, &op)), "");
    LoomValue args[] = {tv(x)};
    LoomValue ret{};
    ret.struct_size = sizeof(LoomValue);
    size_t n = 0;
    return outcome(api()->OpCall(op, args, 1, &ret, 1, &n));
  };
  Outcome o = call("capi_nullret::null_tensor");
  EXPECT_EQ(o.code, LOOM_TYPE_ERROR);
  EXPECT_NE(
      o.message.find("null_tensor: the C kernel returned a NULL tensor for return 0 (Tensor)"),
      std::string::npos)
      << o.message;
  o = call("capi_nullret::an_int");
  EXPECT_EQ(o.code, LOOM_TYPE_ERROR);
  EXPECT_EQ(o.message, "an_int: the C kernel returned int for return 0 but the schema says Tensor");
  o = call("capi_nullret::null_in_list");
  EXPECT_EQ(o.code, LOOM_TYPE_ERROR);
  EXPECT_EQ(o.message,
            "null_in_list: return 0 is a TENSOR_LIST whose element 1 of 2 is NULL; a Tensor[] "
            "takes defined tensors only");
  api()->TensorRelease(x);
  api()->LibraryRelease(lib);
}

// Note [An input returned as the output] (core/src/autograd/derivative.cpp): a C kernel that
// returns its argument itself still gets its backward. It used to be skipped: x.grad came out
// as ones, whatever the backward function said.
int g_times3_calls = 0;
LoomStatus* returns_its_input(void*, const LoomValue* args, size_t, LoomValue* rets, size_t) {
  rets[0].kind = LOOM_VALUE_TENSOR;
  rets[0].u.tensor = api()->TensorRetain(args[0].u.tensor);
  return nullptr;
}
LoomStatus* times3_backward(void*, LoomBackwardContext* ctx) {
  ++g_times3_calls;
  const LoomTensor* gy = nullptr;
  if (LoomStatus* s = api()->BackwardGradOutput(ctx, 0, &gy)) return s;
  LoomTensor* g = call1("mul.Scalar", {tv(const_cast<LoomTensor*>(gy)), fv(3.0)});
  LoomStatus* s = api()->BackwardSetGradInput(ctx, 0, g);
  api()->TensorRelease(g);
  return s;
}

TEST(CApi, AKernelReturningItsInputStillGetsItsBackward) {
  LoomLibrary* lib = nullptr;
  OK(api()->LibraryCreate("capi_same", &lib));
  OK(api()->LibraryDef(lib, "same(Tensor x) -> Tensor"));
  OK(api()->LibraryImpl(lib, "same", "CPU", &returns_its_input, nullptr, nullptr));
  OK(api()->LibraryImplBackward(lib, "same", &times3_backward, nullptr, nullptr));
  g_times3_calls = 0;
  LoomTensor* x = tensor({1, 2, 3}, {3});
  OK(api()->TensorSetRequiresGrad(x, true));
  LoomTensor* y = call1("capi_same::same", {tv(x)});
  EXPECT_NE(y, x) << "the output is a new tensor aliasing x, with the op's node as history";
  void* xp = nullptr;
  void* yp = nullptr;
  OK(api()->TensorDataPtr(x, &xp));
  OK(api()->TensorDataPtr(y, &yp));
  EXPECT_EQ(xp, yp);
  LoomTensor* loss = call1("sum", {tv(y)});
  OK(api()->Backward(loss, nullptr, false));
  EXPECT_EQ(g_times3_calls, 1);
  LoomTensor* g = nullptr;
  OK(api()->TensorGrad(x, &g));
  EXPECT_EQ(values(g), (std::vector<float>{3, 3, 3}));
  for (LoomTensor* t : {x, y, loss, g}) api()->TensorRelease(t);
  api()->LibraryRelease(lib);
}

TEST(CApi, MessagesQuoteAtMost200CharactersOfWhatTheCallerPassed) {
  // A megabyte of name used to come back whole in the message.
  const std::string name(1 << 20, 'a');
  const LoomOp* op = nullptr;
  Outcome o = outcome(api()->OpFind(name.c_str(), &op));
  EXPECT_EQ(o.code, LOOM_NOT_IMPLEMENTED);
  // The dispatcher quotes the qualified name ("aten::" + name) at most 200 characters long.
  EXPECT_EQ(o.message, "no operator named 'aten::" + std::string(194, 'a') + "... (" +
                           std::to_string(name.size() + 6 - 200) +
                           " more characters)' is defined (is the plugin that defines it "
                           "loaded?)");

  LoomLibrary* lib = nullptr;
  OK(api()->LibraryCreate("capi_long", &lib));
  const std::string arg(400000, 'n');
  // A parse error: the parser's window around the caret.
  o = outcome(api()->LibraryDef(lib, ("f(Tensor " + arg + " junk) -> Tensor").c_str()));
  EXPECT_EQ(o.code, LOOM_REGISTRATION_ERROR);
  EXPECT_LT(o.message.size(), 1000u) << o.message.substr(0, 1000);
  EXPECT_NE(o.message.find("found 'junk'"), std::string::npos) << o.message.substr(0, 1000);
  // A registration error quoting the schema whole.
  const std::string other_ns = "capi_elsewhere::f(Tensor " + arg + ") -> Tensor";
  o = outcome(api()->LibraryDef(lib, other_ns.c_str()));
  EXPECT_EQ(o.code, LOOM_REGISTRATION_ERROR);
  EXPECT_LT(o.message.size(), 1000u) << o.message.substr(0, 1000);
  EXPECT_NE(o.message.find(other_ns.substr(0, 200) + "... (" +
                           std::to_string(other_ns.size() - 200) + " more characters)"),
            std::string::npos)
      << o.message.substr(0, 1000);
  EXPECT_NE(o.message.find("does not match"), std::string::npos) << o.message.substr(0, 1000);
  api()->LibraryRelease(lib);

  int32_t d = 0;
  o = outcome(api()->DTypeFromName(name.c_str(), &d));
  EXPECT_EQ(o.code, LOOM_TYPE_ERROR);
  EXPECT_LT(o.message.size(), 600u) << o.message.substr(0, 1000);
}

}  // namespace
