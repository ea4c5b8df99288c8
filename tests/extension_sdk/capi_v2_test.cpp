// Version 2 of the stable C ABI (extension_sdk/include/loom/capi.h), from a C client's side:
// listing ops and their schemas, enum arguments by name (Note [Enum arguments]), error codes
// as the header documents them (Note [C ABI error codes] in capi/capi.cpp), messages without
// Loom's source locations or C++-only advice (Note [Messages for C clients]), meta tensors
// and the reason a device type is missing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "capi_test_util.h"
#include "loom/capi.h"

namespace {

using namespace loom_capi_test;  // NOLINT: the helpers are the suite's vocabulary

/// The status of a call, as (code, message); frees it.
struct Outcome {
  LoomErrorCode code;
  std::string message;
};
Outcome outcome(LoomStatus* s) {
  const LoomErrorCode code = api()->StatusCode(s);
  return {code, message(s)};
}

/// A STRING value.
LoomValue sv(const char* s) {
  LoomValue v{};
  v.struct_size = sizeof(LoomValue);
  v.kind = LOOM_VALUE_STRING;
  v.u.s = s;
  return v;
}
/// A NONE value.
LoomValue nv() {
  LoomValue v{};
  v.struct_size = sizeof(LoomValue);
  v.kind = LOOM_VALUE_NONE;
  return v;
}
/// An INT_LIST value over data (borrowed).
LoomValue lv(const std::vector<int64_t>& data) {
  LoomValue v{};
  v.struct_size = sizeof(LoomValue);
  v.kind = LOOM_VALUE_INT_LIST;
  v.u.ints.data = data.data();
  v.u.ints.size = data.size();
  return v;
}

/// Calls op with args; the outcome, and the first return in *out (released by the caller).
Outcome call(const char* name, std::vector<LoomValue> args, LoomTensor** out = nullptr) {
  const LoomOp* op = nullptr;
  LoomStatus* s = api()->OpFind(name, &op);
  if (s) return outcome(s);
  LoomValue rets[4] = {};
  for (LoomValue& r : rets) r.struct_size = sizeof(LoomValue);
  size_t n = 0;
  s = api()->OpCall(op, args.data(), args.size(), rets, 4, &n);
  if (s == nullptr && out != nullptr && n > 0 && rets[0].kind == LOOM_VALUE_TENSOR) {
    *out = rets[0].u.tensor;
    rets[0].kind = LOOM_VALUE_NONE;
  }
  if (s == nullptr) api()->ValuesRelease(rets, n);
  return outcome(s);
}

std::vector<int64_t> strides(const LoomTensor* t) {
  int64_t buf[8] = {};
  size_t ndim = 0;
  EXPECT_EQ(message(api()->TensorStrides(t, buf, 8, &ndim)), "");
  return std::vector<int64_t>(buf, buf + ndim);
}

std::string describe(const LoomTensor* t) {
  char buf[128] = {};
  EXPECT_EQ(message(api()->TensorDescribe(t, buf, sizeof buf)), "");
  return buf;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// ---- listing ops ----

TEST(CApiV2, ListsEveryOpWithItsSchema) {
  LoomOpList* list = nullptr;
  OK(api()->OpListCreate(&list));
  const size_t n = api()->OpListSize(list);
  ASSERT_GT(n, 100u) << "ops_core alone defines hundreds of ops";
  std::vector<std::string> names;
  bool found_add = false;
  for (size_t i = 0; i < n; ++i) {
    const char* name = nullptr;
    const char* schema = nullptr;
    OK(api()->OpListGet(list, i, &name, &schema));
    names.emplace_back(name);
    // Every name is one OpFind takes, and the schema is OpSchema's.
    const LoomOp* op = nullptr;
    OK(api()->OpFind(name, &op));
    EXPECT_STREQ(api()->OpSchema(op), schema);
    EXPECT_STREQ(api()->OpName(op), name);
    found_add |= std::strcmp(name, "aten::add.Tensor") == 0;
  }
  EXPECT_TRUE(found_add);
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  // Either output may be NULL; an index past the end is an index error.
  OK(api()->OpListGet(list, 0, nullptr, nullptr));
  const Outcome past = outcome(api()->OpListGet(list, n, nullptr, nullptr));
  EXPECT_EQ(past.code, LOOM_INDEX_ERROR);
  EXPECT_EQ(past.message, "OpListGet: index " + std::to_string(n) +
                              " is out of range for a list of " + std::to_string(n) + " ops");
  EXPECT_EQ(outcome(api()->OpListGet(nullptr, 0, nullptr, nullptr)).code, LOOM_INVALID_ARGUMENT);
  EXPECT_EQ(outcome(api()->OpListCreate(nullptr)).code, LOOM_INVALID_ARGUMENT);
  EXPECT_EQ(api()->OpListSize(nullptr), 0u);

  // The list is a snapshot: an op defined later is in the next list only.
  LoomLibrary* lib = nullptr;
  OK(api()->LibraryCreate("capi_v2_list", &lib));
  OK(api()->LibraryDef(lib, "twice(Tensor x) -> Tensor"));
  EXPECT_EQ(api()->OpListSize(list), n);
  LoomOpList* later = nullptr;
  OK(api()->OpListCreate(&later));
  ASSERT_EQ(api()->OpListSize(later), n + 1);
  bool found_new = false;
  for (size_t i = 0; i < n + 1; ++i) {
    const char* name = nullptr;
    const char* schema = nullptr;
    OK(api()->OpListGet(later, i, &name, &schema));
    if (std::strcmp(name, "capi_v2_list::twice") == 0) {
      found_new = true;
      EXPECT_STREQ(schema, "capi_v2_list::twice(Tensor x) -> Tensor");
    }
  }
  EXPECT_TRUE(found_new);
  api()->OpListRelease(later);
  api()->OpListRelease(list);
  api()->OpListRelease(nullptr);
  api()->LibraryRelease(lib);
  EXPECT_STREQ(api()->OpName(nullptr), "");
}

// ---- enum arguments by name ----

TEST(CApiV2, ReductionByName) {
  LoomTensor* a = tensor({1, 2, 3}, {3});
  LoomTensor* b = tensor({0, 0, 1}, {3});
  // mse_loss(Tensor self, Tensor target, int reduction=Mean): 1 + 4 + 4.
  LoomTensor* sum_by_name = nullptr;
  LoomTensor* sum_by_code = nullptr;
  LoomTensor* mean = nullptr;
  LoomTensor* none = nullptr;
  ASSERT_EQ(call("mse_loss", {tv(a), tv(b), sv("sum")}, &sum_by_name).message, "");
  ASSERT_EQ(call("mse_loss", {tv(a), tv(b), iv(2)}, &sum_by_code).message, "");
  ASSERT_EQ(call("mse_loss", {tv(a), tv(b), sv("mean")}, &mean).message, "");
  ASSERT_EQ(call("mse_loss", {tv(a), tv(b), sv("none")}, &none).message, "");
  EXPECT_EQ(values(sum_by_name), (std::vector<float>{9}));
  EXPECT_EQ(values(sum_by_code), (std::vector<float>{9}));
  EXPECT_EQ(values(mean), (std::vector<float>{3}));
  EXPECT_EQ(values(none), (std::vector<float>{1, 4, 4}));

  // An unknown name, or a number that is no reduction, names the op, the argument and the
  // allowed names (these numbers used to reach the kernel unchecked).
  const Outcome bad_name = call("mse_loss", {tv(a), tv(b), sv("avg")});
  EXPECT_EQ(bad_name.code, LOOM_VALUE_ERROR);
  EXPECT_EQ(bad_name.message,
            "mse_loss: argument 'reduction' got 'avg', expected one of 'none' (0), 'mean' (1), "
            "'sum' (2)");
  const Outcome bad_code = call("mse_loss", {tv(a), tv(b), iv(7)});
  EXPECT_EQ(bad_code.code, LOOM_VALUE_ERROR);
  EXPECT_EQ(bad_code.message,
            "mse_loss: argument 'reduction' is 7, which is none of 'none' (0), 'mean' (1), "
            "'sum' (2)");
  EXPECT_EQ(call("mse_loss", {tv(a), tv(b), iv(-1)}).code, LOOM_VALUE_ERROR);
  for (LoomTensor* t : {a, b, sum_by_name, sum_by_code, mean, none}) api()->TensorRelease(t);
}

TEST(CApiV2, MemoryFormatLayoutAndDTypeByName) {
  // empty_like(Tensor self, *, ScalarType? dtype, Layout? layout, Device? device,
  //            bool? pin_memory, MemoryFormat? memory_format): a transposed input.
  LoomTensor* x = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  LoomTensor* xt = call1("t", {tv(x)});
  LoomTensor* preserved = nullptr;
  LoomTensor* contiguous = nullptr;
  ASSERT_EQ(call("empty_like", {tv(xt), nv(), sv("strided"), nv(), nv(), sv("preserve_format")},
                 &preserved)
                .message,
            "");
  ASSERT_EQ(
      call("empty_like",
           {tv(xt), sv("float64"), sv("strided"), nv(), nv(), sv("contiguous_format")}, &contiguous)
          .message,
      "");
  EXPECT_EQ(strides(preserved), strides(xt));
  EXPECT_EQ(strides(contiguous), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(describe(contiguous), "[3, 2] cpu float64") << "a dtype by name";

  const Outcome bad_format =
      call("empty_like", {tv(xt), nv(), nv(), nv(), nv(), sv("channels_first")});
  EXPECT_EQ(bad_format.code, LOOM_VALUE_ERROR);
  EXPECT_EQ(bad_format.message,
            "empty_like: argument 'memory_format' got 'channels_first', expected one of "
            "'contiguous_format' (0), 'preserve_format' (1), 'channels_last' (2), "
            "'channels_last_3d' (3)");
  const Outcome bad_layout = call("empty_like", {tv(xt), nv(), sv("sparse_coo")});
  EXPECT_EQ(bad_layout.code, LOOM_VALUE_ERROR);
  EXPECT_EQ(bad_layout.message,
            "empty_like: argument 'layout' got 'sparse_coo', expected one of 'strided' (0)");
  EXPECT_EQ(call("empty_like", {tv(xt), nv(), iv(1)}).code, LOOM_VALUE_ERROR);
  EXPECT_EQ(call("empty_like", {tv(xt), nv(), nv(), nv(), nv(), iv(4)}).code, LOOM_VALUE_ERROR);
  const Outcome bad_dtype = call("empty_like", {tv(xt), sv("float33")});
  EXPECT_EQ(bad_dtype.code, LOOM_TYPE_ERROR);
  EXPECT_TRUE(has(bad_dtype.message, "empty_like: argument 'dtype' got 'float33'"))
      << bad_dtype.message;
  // A string for an int argument that is no enum stays a type error.
  EXPECT_EQ(call("sum.dim_IntList", {tv(x), sv("mean")}).code, LOOM_TYPE_ERROR);
  for (LoomTensor* t : {x, xt, preserved, contiguous}) api()->TensorRelease(t);
}

TEST(CApiV2, EnumNamesOfAnArgument) {
  const LoomOp* op = nullptr;
  OK(api()->OpFind("mse_loss", &op));
  const char* const* names = nullptr;
  OK(api()->OpArgumentEnumNames(op, "reduction", &names));
  ASSERT_NE(names, nullptr);
  std::vector<std::string> got;
  for (; *names != nullptr; ++names) got.emplace_back(*names);
  EXPECT_EQ(got, (std::vector<std::string>{"none", "mean", "sum"}));
  names = reinterpret_cast<const char* const*>(&op);
  OK(api()->OpArgumentEnumNames(op, "self", &names));
  EXPECT_EQ(names, nullptr) << "self is no enum";
  const Outcome missing = outcome(api()->OpArgumentEnumNames(op, "reductio", &names));
  EXPECT_EQ(missing.code, LOOM_VALUE_ERROR);
  EXPECT_EQ(missing.message,
            "OpArgumentEnumNames: aten::mse_loss has no argument 'reductio' (its arguments: "
            "self, target, reduction)");
  OK(api()->OpFind("contiguous", &op));
  OK(api()->OpArgumentEnumNames(op, "memory_format", &names));
  ASSERT_NE(names, nullptr);
  EXPECT_STREQ(names[2], "channels_last");
}

// ---- error codes as documented ----

LoomStatus* fail_with(void* user_data, const LoomValue*, size_t, LoomValue*, size_t) {
  const LoomErrorCode code = *static_cast<const LoomErrorCode*>(user_data);
  return api()->StatusCreate(code, "capi_v2_codes::fail: as asked");
}

TEST(CApiV2, ErrorCodesAreTheHeaders) {
  // Misuse of the API (a NULL pointer where data is needed, a buffer of the wrong size, an
  // unknown value kind) is LOOM_INVALID_ARGUMENT, never a value or type error.
  LoomTensor* t = tensor({1, 2, 3}, {3});
  float small[2];
  EXPECT_EQ(outcome(api()->TensorCopyToHost(t, small, sizeof small)).code, LOOM_INVALID_ARGUMENT);
  EXPECT_EQ(outcome(api()->TensorCopyToHost(t, nullptr, 3 * sizeof(float))).code,
            LOOM_INVALID_ARGUMENT);
  LoomTensor* out = nullptr;
  EXPECT_EQ(outcome(api()->TensorEmpty(nullptr, 2, dtype("float32"), "cpu", &out)).code,
            LOOM_INVALID_ARGUMENT);
  const int64_t n3[] = {3};
  EXPECT_EQ(outcome(api()->TensorFromData(nullptr, n3, 1, dtype("float32"), "cpu", &out)).code,
            LOOM_INVALID_ARGUMENT);
  EXPECT_EQ(out, nullptr);
  const Outcome s = call("add.Tensor", {tv(t), sv(nullptr)});
  EXPECT_EQ(s.code, LOOM_INVALID_ARGUMENT) << s.message;
  LoomValue odd = iv(1);
  odd.kind = 99;
  const Outcome k = call("add.Tensor", {tv(t), odd});
  EXPECT_EQ(k.code, LOOM_INVALID_ARGUMENT) << k.message;
  EXPECT_TRUE(has(k.message, "unknown value kind 99")) << k.message;
  // A bad value passed correctly is a value error, a bad dtype a type error.
  const int64_t negative[] = {-1};
  EXPECT_EQ(outcome(api()->TensorEmpty(negative, 1, dtype("float32"), "cpu", &out)).code,
            LOOM_VALUE_ERROR);
  EXPECT_EQ(outcome(api()->TensorEmpty(n3, 1, 1000, "cpu", &out)).code, LOOM_TYPE_ERROR);
  api()->TensorRelease(t);

  // A kernel's status reaches the caller with its code, every code included.
  LoomLibrary* lib = nullptr;
  OK(api()->LibraryCreate("capi_v2_codes", &lib));
  OK(api()->LibraryDef(lib, "fail(Tensor x, int code) -> Tensor"));
  static LoomErrorCode asked = LOOM_OK;
  OK(api()->LibraryImpl(lib, "fail", "CPU", &fail_with, &asked, nullptr));
  LoomTensor* x = tensor({1}, {1});
  for (LoomErrorCode code = LOOM_ERROR; code <= LOOM_OUT_OF_MEMORY; ++code) {
    asked = code;
    const Outcome o = call("capi_v2_codes::fail", {tv(x), iv(code)});
    EXPECT_EQ(o.code, code);
    EXPECT_EQ(o.message, "capi_v2_codes::fail: as asked");
  }
  api()->TensorRelease(x);
  api()->LibraryRelease(lib);
}

// ---- messages for C clients ----

/// True if text names a source file of Loom's ("binary.cpp:300", "capi_registration.cpp:190").
bool has_source_location(const std::string& text) {
  for (const char* ext : {".cpp:", ".h:", ".cu:"}) {
    if (has(text, ext)) return true;
  }
  return false;
}

TEST(CApiV2, RegistrationMessagesSpeakC) {
  LoomLibrary* lib = nullptr;
  OK(api()->LibraryCreate("capi_v2_msgs", &lib));
  OK(api()->LibraryDef(lib, "f(Tensor x) -> Tensor"));
  // The C++ API's words would be "LOOM_LIBRARY(capi_v2_msgs) at static registration at
  // extension_sdk/capi/...: ... use LOOM_LIBRARY_FRAGMENT(capi_v2_msgs, m)".
  LoomLibrary* second = nullptr;
  const Outcome twice = outcome(api()->LibraryCreate("capi_v2_msgs", &second));
  EXPECT_EQ(twice.code, LOOM_REGISTRATION_ERROR);
  EXPECT_EQ(twice.message,
            "LibraryCreate(\"capi_v2_msgs\"): namespace 'capi_v2_msgs' is already defined by "
            "another library of this program; only one library may define a namespace: define "
            "the operator in that library, or use another namespace");
  const Outcome redef = outcome(api()->LibraryDef(lib, "f(Tensor x) -> Tensor"));
  EXPECT_EQ(redef.code, LOOM_REGISTRATION_ERROR);
  EXPECT_EQ(redef.message,
            "def(capi_v2_msgs::f): the operator is already defined by a library of this program "
            "as 'capi_v2_msgs::f(Tensor x) -> Tensor'; this definition comes from a library of "
            "this program");
  OK(api()->LibraryImpl(lib, "f", "CPU", &fail_with, nullptr, nullptr));
  const Outcome impl_twice =
      outcome(api()->LibraryImpl(lib, "f", "CPU", &fail_with, nullptr, nullptr));
  EXPECT_EQ(impl_twice.code, LOOM_REGISTRATION_ERROR);
  EXPECT_FALSE(has_source_location(impl_twice.message)) << impl_twice.message;
  EXPECT_TRUE(has(impl_twice.message, "registered by a library of this program"))
      << impl_twice.message;
  api()->LibraryRelease(lib);
}

TEST(CApiV2, KernelListsNameProvidersWithoutSourceFiles) {
  // nonzero on a meta tensor (its result's shape depends on the values: no Meta kernel); the
  // error lists who has kernels (plugin ops_core), without the file and line the C++ API shows.
  const int64_t n2[] = {2};
  LoomTensor* m = nullptr;
  OK(api()->TensorEmpty(n2, 1, dtype("float32"), "meta", &m));
  const Outcome o = call("nonzero", {tv(m)});
  EXPECT_EQ(o.code, LOOM_NOT_IMPLEMENTED);
  EXPECT_TRUE(has(o.message, "Could not run 'aten::nonzero'")) << o.message;
  EXPECT_TRUE(has(o.message, "reference (plugin 'ops_core')")) << o.message;
  EXPECT_FALSE(has_source_location(o.message)) << o.message;
  api()->TensorRelease(m);
}

TEST(CApiV2, AutogradMessagesLeaveOutCppOnlyAdvice) {
  // exp saves its result; changing it in place makes backward fail with PyTorch's message,
  // whose hint (anomaly mode) the C API does not offer.
  LoomTensor* x = tensor({1, 2}, {2});
  OK(api()->TensorSetRequiresGrad(x, true));
  LoomTensor* y = call1("exp", {tv(x)});
  api()->TensorRelease(call1("mul_.Scalar", {tv(y), fv(2.0)}));
  LoomTensor* loss = call1("sum", {tv(y)});
  const Outcome o = outcome(api()->Backward(loss, nullptr, false));
  EXPECT_EQ(o.code, LOOM_AUTOGRAD_ERROR);
  EXPECT_TRUE(has(o.message, "has been modified by an inplace operation")) << o.message;
  EXPECT_FALSE(has(o.message, "loom::")) << o.message;
  EXPECT_FALSE(has(o.message, "Hint")) << o.message;
  // Changing requires_grad of a computed tensor: PyTorch's advice, in the C API's words.
  const Outcome rg = outcome(api()->TensorSetRequiresGrad(y, false));
  EXPECT_EQ(rg.code, LOOM_VALUE_ERROR);
  EXPECT_TRUE(has(rg.message, "use TensorDetach")) << rg.message;
  for (LoomTensor* t : {x, y, loss}) api()->TensorRelease(t);
}

// ---- meta tensors and missing devices ----

TEST(CApiV2, MetaTensorsHaveShapesButNoData) {
  const int64_t n23[] = {2, 3};
  LoomTensor* e = nullptr;
  LoomTensor* z = nullptr;
  LoomTensor* d = nullptr;
  OK(api()->TensorEmpty(n23, 2, dtype("float32"), "meta", &e));
  OK(api()->TensorZeros(n23, 2, dtype("int64"), "meta", &z));
  const float data[6] = {1, 2, 3, 4, 5, 6};
  OK(api()->TensorFromData(data, n23, 2, dtype("float32"), "meta", &d));
  EXPECT_EQ(describe(e), "[2, 3] meta float32");
  EXPECT_EQ(describe(z), "[2, 3] meta int64");
  EXPECT_EQ(describe(d), "[2, 3] meta float32");
  char dev[16];
  OK(api()->TensorDevice(e, dev, sizeof dev));
  EXPECT_STREQ(dev, "meta");
  EXPECT_EQ(strides(e), (std::vector<int64_t>{3, 1}));
  int32_t n = 0;
  OK(api()->DeviceCount("meta", &n, nullptr));
  EXPECT_EQ(n, 1);

  // Shapes flow through factories at the Meta key.
  LoomTensor* like = nullptr;
  ASSERT_EQ(call("zeros_like", {tv(e)}, &like).message, "");
  EXPECT_EQ(describe(like), "[2, 3] meta float32");
  const std::vector<int64_t> size = {4, 5};
  LoomTensor* r = nullptr;
  ASSERT_EQ(call("rand", {lv(size), nv(), nv(), sv("meta")}, &r).message, "");
  EXPECT_EQ(describe(r), "[4, 5] meta float32");

  // Reading the data fails naming the entry.
  void* p = nullptr;
  const Outcome ptr = outcome(api()->TensorDataPtr(e, &p));
  EXPECT_EQ(ptr.code, LOOM_DEVICE_ERROR);
  EXPECT_EQ(ptr.message,
            "TensorDataPtr: the meta tensor [2, 3] meta float32 has no data (a meta tensor "
            "carries only sizes, strides and dtype)");
  float host[6];
  const Outcome copy = outcome(api()->TensorCopyToHost(e, host, sizeof host));
  EXPECT_EQ(copy.code, LOOM_DEVICE_ERROR);
  EXPECT_TRUE(has(copy.message, "TensorCopyToHost: the meta tensor")) << copy.message;
  const int64_t one[] = {1};
  LoomTensor* scalar = nullptr;
  OK(api()->TensorEmpty(one, 1, dtype("float32"), "meta", &scalar));
  double item = 0;
  const Outcome it = outcome(api()->TensorItem(scalar, &item));
  EXPECT_EQ(it.code, LOOM_DEVICE_ERROR);
  EXPECT_EQ(it.message,
            "TensorItem: item() cannot be called on meta tensors (got [1] meta float32)");
  for (LoomTensor* t : {e, z, d, like, r, scalar}) api()->TensorRelease(t);
}

TEST(CApiV2, AMissingDeviceSaysWhy) {
  int32_t n = -1;
  const char* reason = nullptr;
  OK(api()->DeviceCount("cuda", &n, &reason));
  if (n > 0) GTEST_SKIP() << "a CUDA device is here";
  ASSERT_STRNE(reason, "");
  // Whether Init left the cuda plugin out (no driver) or the plugin found no device, using
  // the device says the same reason DeviceCount gives, not "unknown device type".
  const int64_t n2[] = {2};
  LoomTensor* out = nullptr;
  const Outcome o = outcome(api()->TensorEmpty(n2, 1, dtype("float32"), "cuda:7", &out));
  EXPECT_EQ(o.code, LOOM_DEVICE_ERROR);
  EXPECT_TRUE(has(o.message, reason)) << o.message << "\nreason: " << reason;
  EXPECT_FALSE(has(o.message, "unknown device type")) << o.message;
}

}  // namespace
