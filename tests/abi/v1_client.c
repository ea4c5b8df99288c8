/* A client of version 1 of the stable C ABI, compiled against the frozen copy of the header
 * (tests/abi/frozen/v1, never extension_sdk/include) and run against the current libloom.so:
 * what an application built with Loom's first SDK does must keep working.
 *
 *     abi_v1_client <path of the abi_v1_plugin module>
 *
 * It goes through most of the table: statuses, dtypes and devices, tensors, ops called by name
 * with every kind of boxed value, autograd, registering ops (with kernels and a backward, and a
 * library without a namespace), and plugins (a stable-ABI plugin built against the frozen
 * header too). Every check prints a line when it fails; the exit status is the number of
 * failed checks (capped at 100), 0 when all pass.
 */
#include <loom/capi.h> /* the frozen v1 copy: see tests/abi/CMakeLists.txt */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "v1_layout.h" /* the v1 slot offsets, asserted at compile time */

static const LoomApi* api;
static int failures;
static int32_t f32, f64, i64, b8;

/* ---- checks ---- */

#define EXPECT(cond)                                                      \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                         \
    }                                                                     \
  } while (0)

/* The call succeeds (a NULL status). Evaluates to 1 on success. */
#define OK(call) expect_ok((call), #call, __LINE__)
static int expect_ok(LoomStatus* st, const char* call, int line) {
  if (!st) return 1;
  fprintf(stderr, "%s:%d: %s failed (code %d): %s\n", __FILE__, line, call,
          (int)api->StatusCode(st), api->StatusMessage(st));
  api->StatusRelease(st);
  ++failures;
  return 0;
}

/* The call fails with code (any code when code is LOOM_OK) and a message holding text. */
#define FAILS(call, code, text) expect_fails((call), (code), (text), #call, __LINE__)
static void expect_fails(LoomStatus* st, LoomErrorCode code, const char* text, const char* call,
                         int line) {
  if (!st) {
    fprintf(stderr, "%s:%d: %s succeeded, expected an error\n", __FILE__, line, call);
    ++failures;
    return;
  }
  const char* message = api->StatusMessage(st);
  if ((code != LOOM_OK && api->StatusCode(st) != code) || !message ||
      (text && !strstr(message, text))) {
    fprintf(stderr, "%s:%d: %s failed with code %d '%s', expected code %d and '%s'\n", __FILE__,
            line, call, (int)api->StatusCode(st), message ? message : "(null)", (int)code,
            text ? text : "");
    ++failures;
  }
  api->StatusRelease(st);
}

/* ---- boxed values ---- */

static LoomValue value(LoomValueKind kind) {
  LoomValue v;
  memset(&v, 0, sizeof v);
  v.struct_size = sizeof v;
  v.kind = kind;
  return v;
}
static LoomValue tensor_v(LoomTensor* t) {
  LoomValue v = value(LOOM_VALUE_TENSOR);
  v.u.tensor = t;
  return v;
}
static LoomValue int_v(int64_t i) {
  LoomValue v = value(LOOM_VALUE_INT);
  v.u.i = i;
  return v;
}
static LoomValue float_v(double f) {
  LoomValue v = value(LOOM_VALUE_FLOAT);
  v.u.f = f;
  return v;
}
static LoomValue bool_v(bool b) {
  LoomValue v = value(LOOM_VALUE_BOOL);
  v.u.b = b;
  return v;
}
static LoomValue string_v(const char* s) {
  LoomValue v = value(LOOM_VALUE_STRING);
  v.u.s = s;
  return v;
}
static LoomValue ints_v(const int64_t* data, size_t size) {
  LoomValue v = value(LOOM_VALUE_INT_LIST);
  v.u.ints.data = data;
  v.u.ints.size = size;
  return v;
}
static LoomValue floats_v(const double* data, size_t size) {
  LoomValue v = value(LOOM_VALUE_FLOAT_LIST);
  v.u.floats.data = data;
  v.u.floats.size = size;
  return v;
}
static LoomValue tensors_v(LoomTensor* const* data, size_t size) {
  LoomValue v = value(LOOM_VALUE_TENSOR_LIST);
  v.u.tensors.data = data;
  v.u.tensors.size = size;
  return v;
}
static LoomValue dtype_v(int32_t dtype) {
  LoomValue v = value(LOOM_VALUE_DTYPE);
  v.u.i = dtype;
  return v;
}

/* ---- helpers ---- */

/* Return slots: the library steps through them by struct_size, so each gets it set. */
static void init_returns(LoomValue* ret, size_t n) {
  for (size_t i = 0; i < n; ++i) ret[i] = value(LOOM_VALUE_NONE);
}

static const LoomOp* find(const char* name) {
  const LoomOp* op = NULL;
  OK(api->OpFind(name, &op));
  return op;
}

/* Calls the op named name and returns its one tensor return (a new reference), or NULL after
 * counting a failure. */
static LoomTensor* call1(const char* name, const LoomValue* args, size_t n) {
  const LoomOp* op = find(name);
  if (!op) return NULL;
  LoomValue ret[2];
  size_t nret = 0;
  init_returns(ret, sizeof ret / sizeof ret[0]);
  if (!OK(api->OpCall(op, args, n, ret, 2, &nret))) return NULL;
  LoomTensor* t = NULL;
  if (nret == 1 && ret[0].kind == LOOM_VALUE_TENSOR && ret[0].u.tensor) {
    t = api->TensorRetain(ret[0].u.tensor);
  } else {
    fprintf(stderr, "%s returned %zu values, expected one tensor\n", name, nret);
    ++failures;
  }
  api->ValuesRelease(ret, nret);
  return t;
}

static LoomTensor* from_floats(const float* data, const int64_t* sizes, size_t ndim) {
  LoomTensor* t = NULL;
  OK(api->TensorFromData(data, sizes, ndim, f32, "cpu", &t));
  return t;
}

/* Whether t holds exactly the float32 values want[0..n). */
static int equals(const LoomTensor* t, const float* want, size_t n) {
  if (!t) return 0;
  int64_t numel = -1;
  int32_t dtype = -1;
  if (!OK(api->TensorNumel(t, &numel)) || !OK(api->TensorDType(t, &dtype))) return 0;
  if (numel != (int64_t)n || dtype != f32) {
    fprintf(stderr, "expected %zu float32 values, got %lld of %s\n", n, (long long)numel,
            api->DTypeName(dtype) ? api->DTypeName(dtype) : "?");
    return 0;
  }
  float got[64];
  if (n > 64 || !OK(api->TensorCopyToHost(t, got, n * sizeof(float)))) return 0;
  for (size_t i = 0; i < n; ++i) {
    if (fabsf(got[i] - want[i]) > 1e-5f * (1.0f + fabsf(want[i]))) {
      fprintf(stderr, "element %zu is %g, expected %g\n", i, got[i], want[i]);
      return 0;
    }
  }
  return 1;
}

/* ---- the checks, by group of the table ---- */

static void check_table(void) {
  EXPECT(loom_api_version() >= 1);
  EXPECT(api->version >= 1);
  EXPECT(api->struct_size >= 8 + loom_v1_entry_count * sizeof(void*));
  EXPECT(loom_get_api(1) == api);
  EXPECT(loom_get_api(loom_api_version() + 1) == NULL);
  /* Every v1 slot is filled. */
  const void* const* slots = (const void* const*)((const char*)api + 8);
  for (size_t k = 0; k < loom_v1_entry_count; ++k) EXPECT(slots[k] != NULL);
}

static void check_status(void) {
  EXPECT(api->StatusCode(NULL) == LOOM_OK);
  EXPECT(strcmp(api->StatusMessage(NULL), "") == 0);
  api->StatusRelease(NULL);
  LoomStatus* st = api->StatusCreate(LOOM_INDEX_ERROR, "index 7 is out of range");
  EXPECT(st != NULL);
  EXPECT(api->StatusCode(st) == LOOM_INDEX_ERROR);
  EXPECT(strcmp(api->StatusMessage(st), "index 7 is out of range") == 0);
  api->StatusRelease(st);
  EXPECT(api->VersionString() && strlen(api->VersionString()) > 0);
  OK(api->Init()); /* idempotent */
}

static void check_dtypes_and_devices(void) {
  int32_t alias = -1;
  OK(api->DTypeFromName("float", &alias));
  EXPECT(alias == f32);
  OK(api->DTypeFromName("long", &alias));
  EXPECT(alias == i64);
  EXPECT(strcmp(api->DTypeName(f32), "float32") == 0);
  EXPECT(strcmp(api->DTypeName(i64), "int64") == 0);
  EXPECT(api->DTypeName(-12345) == NULL);
  size_t size = 0;
  OK(api->DTypeItemSize(f64, &size));
  EXPECT(size == 8);
  OK(api->DTypeItemSize(b8, &size));
  EXPECT(size == 1);
  FAILS(api->DTypeFromName("float33", &alias), LOOM_OK, "float33");

  int32_t count = -1;
  const char* reason = NULL;
  LoomStatus* st = api->DeviceCount("cuda", &count, &reason);
  if (st) {
    api->StatusRelease(st); /* no CUDA plugin installed: an error is fine */
  } else {
    EXPECT(count >= 0);
    EXPECT(count > 0 || reason != NULL);
  }
  void* stream = (void*)&count;
  OK(api->DeviceCurrentStream("cpu", &stream));
  EXPECT(stream == NULL);
  OK(api->DeviceSynchronize("cpu"));

  /* The same seed gives the same numbers. */
  const int64_t sizes[1] = {8};
  const LoomValue args[1] = {ints_v(sizes, 1)};
  float a[8], b[8];
  OK(api->ManualSeed(1234));
  LoomTensor* ra = call1("randn", args, 1);
  OK(api->ManualSeed(1234));
  LoomTensor* rb = call1("randn", args, 1);
  if (ra && rb && OK(api->TensorCopyToHost(ra, a, sizeof a)) &&
      OK(api->TensorCopyToHost(rb, b, sizeof b))) {
    EXPECT(memcmp(a, b, sizeof a) == 0);
  }
  api->TensorRelease(ra);
  api->TensorRelease(rb);
}

static void check_tensors(void) {
  const float data[6] = {1, 2, 3, 4, 5, 6};
  const int64_t sizes[2] = {2, 3};
  LoomTensor* t = from_floats(data, sizes, 2);
  if (!t) return;
  size_t ndim = 0;
  int64_t numel = 0, got[4] = {0, 0, 0, 0};
  OK(api->TensorDim(t, &ndim));
  EXPECT(ndim == 2);
  OK(api->TensorNumel(t, &numel));
  EXPECT(numel == 6);
  OK(api->TensorSizes(t, got, 4, &ndim));
  EXPECT(ndim == 2 && got[0] == 2 && got[1] == 3);
  ndim = 0;
  FAILS(api->TensorSizes(t, got, 1, &ndim), LOOM_INVALID_ARGUMENT, NULL);
  EXPECT(ndim == 2); /* written even when the buffer is too small */
  OK(api->TensorStrides(t, got, 4, &ndim));
  EXPECT(ndim == 2 && got[0] == 3 && got[1] == 1);
  int32_t dtype = -1;
  OK(api->TensorDType(t, &dtype));
  EXPECT(dtype == f32);
  char text[64];
  OK(api->TensorDevice(t, text, sizeof text));
  EXPECT(strcmp(text, "cpu") == 0);
  FAILS(api->TensorDevice(t, text, 2), LOOM_INVALID_ARGUMENT, NULL);
  OK(api->TensorDescribe(t, text, sizeof text));
  EXPECT(strstr(text, "[2, 3]") && strstr(text, "float32"));
  void* ptr = NULL;
  OK(api->TensorDataPtr(t, &ptr));
  EXPECT(ptr && ((const float*)ptr)[5] == 6.0f);
  EXPECT(equals(t, data, 6));
  float small[2];
  FAILS(api->TensorCopyToHost(t, small, sizeof small), LOOM_OK, NULL);
  double item = 0;
  FAILS(api->TensorItem(t, &item), LOOM_OK, NULL);

  /* A reference more, a reference less: the tensor stays alive. */
  EXPECT(api->TensorRetain(t) == t);
  api->TensorRelease(t);
  EXPECT(equals(t, data, 6));

  /* A transposed view: strides (1, 3), copied out in row-major order. */
  const LoomValue targs[1] = {tensor_v(t)};
  LoomTensor* tt = call1("t", targs, 1);
  if (tt) {
    OK(api->TensorStrides(tt, got, 4, &ndim));
    EXPECT(ndim == 2 && got[0] == 1 && got[1] == 3);
    const float transposed[6] = {1, 4, 2, 5, 3, 6};
    EXPECT(equals(tt, transposed, 6));
  }
  api->TensorRelease(tt);

  LoomTensor *z = NULL, *e = NULL, *one = NULL;
  const float zeros[6] = {0, 0, 0, 0, 0, 0};
  OK(api->TensorZeros(sizes, 2, f32, "cpu", &z));
  EXPECT(equals(z, zeros, 6));
  OK(api->TensorEmpty(sizes, 2, i64, "cpu", &e));
  if (e) {
    OK(api->TensorDType(e, &dtype));
    EXPECT(dtype == i64);
  }
  const float seven = 7.5f;
  const int64_t one_size[1] = {1};
  one = from_floats(&seven, one_size, 1);
  if (one) {
    OK(api->TensorItem(one, &item));
    EXPECT(item == 7.5);
  }
  const int64_t bad_sizes[1] = {-2};
  LoomTensor* bad = NULL;
  FAILS(api->TensorEmpty(bad_sizes, 1, f32, "cpu", &bad), LOOM_OK, NULL);
  EXPECT(bad == NULL);
  FAILS(api->TensorEmpty(sizes, 2, f32, "cuda:7", &bad), LOOM_OK, NULL);
  api->TensorRelease(z);
  api->TensorRelease(e);
  api->TensorRelease(one);
  api->TensorRelease(t);
}

static void check_ops(void) {
  const float xd[6] = {1, 2, 3, 4, 5, 6}, yd[6] = {10, 20, 30, 40, 50, 60};
  const int64_t sizes[2] = {2, 3}, sizes_t[2] = {3, 2};
  LoomTensor* x = from_floats(xd, sizes, 2);
  LoomTensor* y = from_floats(yd, sizes, 2);
  LoomTensor* yt = from_floats(yd, sizes_t, 2);
  if (!x || !y || !yt) goto cleanup;

  const LoomOp *add = find("add.Tensor"), *add_q = find("aten::add.Tensor");
  EXPECT(add && add == add_q);
  if (add) EXPECT(strstr(api->OpSchema(add), "add.Tensor(Tensor self, Tensor other") != NULL);
  const LoomOp* missing = NULL;
  FAILS(api->OpFind("aten::add.Tensr", &missing), LOOM_NOT_IMPLEMENTED, "add.Tensr");
  EXPECT(missing == NULL);

  /* Scalars as FLOAT and INT values; the alpha default omitted. */
  {
    const LoomValue args[3] = {tensor_v(x), tensor_v(y), float_v(0.5)};
    LoomTensor* r = call1("add.Tensor", args, 3);
    const float want[6] = {6, 12, 18, 24, 30, 36};
    EXPECT(equals(r, want, 6));
    api->TensorRelease(r);
    const LoomValue args_i[3] = {tensor_v(x), tensor_v(y), int_v(2)};
    r = call1("add.Tensor", args_i, 3);
    const float want_i[6] = {21, 42, 63, 84, 105, 126};
    EXPECT(equals(r, want_i, 6));
    api->TensorRelease(r);
    r = call1("add.Tensor", args, 2);
    const float want_d[6] = {11, 22, 33, 44, 55, 66};
    EXPECT(equals(r, want_d, 6));
    api->TensorRelease(r);
  }
  /* A newer client's bigger LoomValue: the library steps by struct_size. */
  {
    typedef struct {
      LoomValue v;
      uint64_t field_of_a_later_version;
    } BigValue;
    BigValue args[2];
    memset(args, 0, sizeof args);
    args[0].v = tensor_v(x);
    args[1].v = tensor_v(y);
    args[0].v.struct_size = args[1].v.struct_size = sizeof(BigValue);
    args[0].field_of_a_later_version = args[1].field_of_a_later_version = UINT64_MAX;
    LoomTensor* r = call1("add.Tensor", &args[0].v, 2);
    const float want[6] = {11, 22, 33, 44, 55, 66};
    EXPECT(equals(r, want, 6));
    api->TensorRelease(r);
  }
  /* mm; sum with a DTYPE and with NONE; mean.dim with an INT_LIST and a BOOL. */
  {
    const LoomValue args[2] = {tensor_v(x), tensor_v(yt)};
    LoomTensor* r = call1("mm", args, 2);
    const float want[4] = {220, 280, 490, 640};
    EXPECT(equals(r, want, 4));
    api->TensorRelease(r);

    const LoomValue sum_args[2] = {tensor_v(x), dtype_v(f64)};
    r = call1("sum", sum_args, 2);
    int32_t dtype = -1;
    double item = 0;
    if (r && OK(api->TensorDType(r, &dtype)) && OK(api->TensorItem(r, &item))) {
      EXPECT(dtype == f64 && item == 21.0);
    }
    api->TensorRelease(r);
    const LoomValue sum_none[2] = {tensor_v(x), value(LOOM_VALUE_NONE)};
    r = call1("sum", sum_none, 2);
    if (r && OK(api->TensorDType(r, &dtype))) EXPECT(dtype == f32);
    api->TensorRelease(r);

    const int64_t dim[1] = {1};
    const LoomValue mean_args[3] = {tensor_v(x), ints_v(dim, 1), bool_v(true)};
    r = call1("mean.dim", mean_args, 3);
    const float want_mean[2] = {2, 5};
    EXPECT(equals(r, want_mean, 2));
    size_t ndim = 0;
    int64_t got[2] = {0, 0};
    if (r && OK(api->TensorSizes(r, got, 2, &ndim))) EXPECT(ndim == 2 && got[1] == 1);
    api->TensorRelease(r);
  }
  /* A STRING argument; DTYPE, STRING (a Device) and NONE in a factory. */
  {
    const LoomValue args[3] = {tensor_v(y), tensor_v(x), string_v("floor")};
    LoomTensor* r = call1("div.Tensor_mode", args, 3);
    const float want[6] = {10, 10, 10, 10, 10, 10};
    EXPECT(equals(r, want, 6));
    api->TensorRelease(r);

    const int64_t full_sizes[1] = {3};
    const LoomValue full_args[6] = {ints_v(full_sizes, 1), float_v(2.5),
                                    dtype_v(f64),          value(LOOM_VALUE_NONE),
                                    string_v("cpu"),       value(LOOM_VALUE_NONE)};
    r = call1("full", full_args, 6);
    double d[3] = {0, 0, 0};
    int32_t dtype = -1;
    if (r && OK(api->TensorDType(r, &dtype)) && OK(api->TensorCopyToHost(r, d, sizeof d))) {
      EXPECT(dtype == f64 && d[0] == 2.5 && d[2] == 2.5);
    }
    api->TensorRelease(r);
  }
  /* TENSOR_LIST in (cat) and out (unbind). */
  {
    LoomTensor* const list[2] = {x, y};
    const LoomValue args[2] = {tensors_v(list, 2), int_v(0)};
    LoomTensor* r = call1("cat", args, 2);
    int64_t got[2] = {0, 0};
    size_t ndim = 0;
    if (r && OK(api->TensorSizes(r, got, 2, &ndim))) EXPECT(ndim == 2 && got[0] == 4);
    api->TensorRelease(r);

    const LoomOp* unbind = find("unbind.int");
    LoomValue ret[1];
    size_t nret = 0;
    init_returns(ret, sizeof ret / sizeof ret[0]);
    const LoomValue uargs[2] = {tensor_v(x), int_v(0)};
    if (unbind && OK(api->OpCall(unbind, uargs, 2, ret, 1, &nret))) {
      EXPECT(nret == 1 && ret[0].kind == LOOM_VALUE_TENSOR_LIST && ret[0].u.tensors.size == 2);
      if (nret == 1 && ret[0].kind == LOOM_VALUE_TENSOR_LIST && ret[0].u.tensors.size == 2) {
        const float row1[3] = {4, 5, 6};
        EXPECT(equals(ret[0].u.tensors.data[1], row1, 3));
      }
      api->ValuesRelease(ret, nret);
    }
  }
  /* In place: a new reference to the same tensor. */
  {
    LoomTensor* copy = from_floats(xd, sizes, 2);
    const LoomValue args[2] = {tensor_v(copy), float_v(3.0)};
    LoomTensor* r = copy ? call1("mul_.Scalar", args, 2) : NULL;
    void *p1 = NULL, *p2 = NULL;
    if (r && OK(api->TensorDataPtr(r, &p1)) && OK(api->TensorDataPtr(copy, &p2))) EXPECT(p1 == p2);
    const float want[6] = {3, 6, 9, 12, 15, 18};
    EXPECT(equals(copy, want, 6));
    api->TensorRelease(r);
    api->TensorRelease(copy);
  }
  /* Errors come back as statuses that say what went wrong. */
  if (add) {
    const float zd[4] = {1, 2, 3, 4};
    const int64_t zs[1] = {4};
    LoomTensor* z = from_floats(zd, zs, 1);
    LoomValue ret[1];
    size_t nret = 99;
    init_returns(ret, sizeof ret / sizeof ret[0]);
    const LoomValue bad_shapes[2] = {tensor_v(x), tensor_v(z)};
    FAILS(api->OpCall(add, bad_shapes, 2, ret, 1, &nret), LOOM_OK, "add");
    EXPECT(nret == 99); /* not written on failure */
    const LoomValue bad_kind[2] = {tensor_v(x), string_v("seven")};
    FAILS(api->OpCall(add, bad_kind, 2, ret, 1, &nret), LOOM_OK, NULL);
    const LoomValue too_few[1] = {tensor_v(x)};
    FAILS(api->OpCall(add, too_few, 1, ret, 1, &nret), LOOM_OK, NULL);
    const LoomValue good[2] = {tensor_v(x), tensor_v(y)};
    FAILS(api->OpCall(add, good, 2, ret, 0, &nret), LOOM_INVALID_ARGUMENT, NULL);
    api->TensorRelease(z);
  }
cleanup:
  api->TensorRelease(x);
  api->TensorRelease(y);
  api->TensorRelease(yt);
}

static void check_autograd(void) {
  const float xd[3] = {1, -2, 3};
  const int64_t sizes[1] = {3};
  LoomTensor* x = from_floats(xd, sizes, 1);
  if (!x) return;
  bool flag = true;
  OK(api->TensorRequiresGrad(x, &flag));
  EXPECT(!flag);
  OK(api->TensorSetRequiresGrad(x, true));
  OK(api->TensorRequiresGrad(x, &flag));
  EXPECT(flag);

  const LoomValue sq_args[2] = {tensor_v(x), tensor_v(x)};
  LoomTensor* sq = call1("mul.Tensor", sq_args, 2);
  const LoomValue sum_args[1] = {tensor_v(sq)};
  LoomTensor* s = sq ? call1("sum", sum_args, 1) : NULL;
  LoomTensor* grad = NULL;
  if (s) {
    OK(api->TensorRequiresGrad(s, &flag));
    EXPECT(flag);
    OK(api->Backward(s, NULL, false));
    OK(api->TensorGrad(x, &grad));
    const float want[3] = {2, -4, 6};
    EXPECT(equals(grad, want, 3));
    api->TensorRelease(grad);
    grad = NULL;
    FAILS(api->Backward(s, NULL, false), LOOM_AUTOGRAD_ERROR, NULL); /* the graph is freed */
  }
  /* Backward from a non-scalar root with an explicit gradient (a new graph: the first
   * backward freed that of sq); gradients accumulate. */
  LoomTensor* sq2 = call1("mul.Tensor", sq_args, 2);
  if (sq2) {
    FAILS(api->Backward(sq2, NULL, true), LOOM_OK, NULL); /* not one element */
    const float gd[3] = {1, 1, 1};
    LoomTensor* g = from_floats(gd, sizes, 1);
    OK(api->TensorSetGrad(x, NULL));
    OK(api->TensorGrad(x, &grad));
    EXPECT(grad == NULL);
    OK(api->Backward(sq2, g, true));
    OK(api->Backward(sq2, g, false));
    OK(api->TensorGrad(x, &grad));
    const float want[3] = {4, -8, 12};
    EXPECT(equals(grad, want, 3));
    api->TensorRelease(grad);
    grad = NULL;
    OK(api->TensorSetGrad(x, g));
    OK(api->TensorGrad(x, &grad));
    EXPECT(equals(grad, gd, 3));
    api->TensorRelease(grad);
    api->TensorRelease(g);
  }
  /* no_grad, and detach. */
  EXPECT(api->GradEnabled());
  const bool previous = api->SetGradEnabled(false);
  EXPECT(previous && !api->GradEnabled());
  LoomTensor* nograd = call1("mul.Tensor", sq_args, 2);
  if (nograd) {
    OK(api->TensorRequiresGrad(nograd, &flag));
    EXPECT(!flag);
  }
  api->TensorRelease(nograd);
  EXPECT(api->SetGradEnabled(previous) == false);
  EXPECT(api->GradEnabled());
  LoomTensor* d = NULL;
  OK(api->TensorDetach(x, &d));
  if (d) {
    void *p1 = NULL, *p2 = NULL;
    OK(api->TensorRequiresGrad(d, &flag));
    EXPECT(!flag);
    OK(api->TensorDataPtr(d, &p1));
    OK(api->TensorDataPtr(x, &p2));
    EXPECT(p1 == p2);
  }
  api->TensorRelease(d);
  /* Only floating-point leaves record gradients. */
  LoomTensor* ints = NULL;
  OK(api->TensorZeros(sizes, 1, i64, "cpu", &ints));
  if (ints) FAILS(api->TensorSetRequiresGrad(ints, true), LOOM_OK, NULL);
  api->TensorRelease(ints);
  api->TensorRelease(s);
  api->TensorRelease(sq);
  api->TensorRelease(sq2);
  api->TensorRelease(x);
}

/* ---- registering ops ---- */

typedef struct {
  int forward_calls;
  int backward_calls;
  int released;
} Counters;

static void count_release(void* user_data) { ((Counters*)user_data)->released++; }

/* abi_v1_test::scale(Tensor x, float k) -> Tensor: x * k, computed on the host. */
static LoomStatus* scale_kernel(void* user_data, const LoomValue* args, size_t num_args,
                                LoomValue* returns, size_t num_returns) {
  ((Counters*)user_data)->forward_calls++;
  if (num_args != 2 || num_returns != 1 || args[0].kind != LOOM_VALUE_TENSOR ||
      args[1].kind != LOOM_VALUE_FLOAT) {
    return api->StatusCreate(LOOM_TYPE_ERROR, "scale: expected (Tensor, float) -> Tensor");
  }
  const double k = args[1].u.f;
  if (!isfinite(k)) return api->StatusCreate(LOOM_VALUE_ERROR, "scale: k must be finite");
  const LoomTensor* x = args[0].u.tensor;
  int32_t dtype = -1;
  int64_t numel = 0, sizes[8];
  size_t ndim = 0;
  LoomStatus* st = NULL;
  if ((st = api->TensorDType(x, &dtype)) || (st = api->TensorNumel(x, &numel)) ||
      (st = api->TensorSizes(x, sizes, 8, &ndim))) {
    return st;
  }
  if (dtype != f32) return api->StatusCreate(LOOM_TYPE_ERROR, "scale: expected float32");
  float* buffer = malloc(sizeof(float) * (size_t)(numel > 0 ? numel : 1));
  if (!buffer) return api->StatusCreate(LOOM_OUT_OF_MEMORY, "scale: out of memory");
  LoomTensor* out = NULL;
  if (!(st = api->TensorCopyToHost(x, buffer, sizeof(float) * (size_t)numel))) {
    for (int64_t i = 0; i < numel; ++i) buffer[i] = (float)(buffer[i] * k);
    st = api->TensorFromData(buffer, sizes, ndim, f32, "cpu", &out);
  }
  free(buffer);
  if (st) return st;
  returns[0] = tensor_v(out); /* the library takes this reference over */
  return NULL;
}

/* scale's backward: grad_x = k * grad_out, with an op called from inside the backward. */
static LoomStatus* scale_backward(void* user_data, LoomBackwardContext* ctx) {
  ((Counters*)user_data)->backward_calls++;
  if (api->BackwardNumInputs(ctx) != 1 || api->BackwardNumOutputs(ctx) != 1) {
    return api->StatusCreate(LOOM_ERROR, "scale backward: expected one input and one output");
  }
  const LoomTensor *input = NULL, *output = NULL, *grad_out = NULL;
  LoomValue k;
  memset(&k, 0, sizeof k);
  k.struct_size = sizeof k;
  LoomStatus* st = NULL;
  if ((st = api->BackwardInput(ctx, 0, &input)) || (st = api->BackwardOutput(ctx, 0, &output)) ||
      (st = api->BackwardGradOutput(ctx, 0, &grad_out)) ||
      (st = api->BackwardArgument(ctx, 1, &k))) {
    return st;
  }
  if (!input || !output || !grad_out || k.kind != LOOM_VALUE_FLOAT) {
    return api->StatusCreate(LOOM_ERROR, "scale backward: missing saved values");
  }
  if (!api->BackwardNeedsInputGrad(ctx, 0)) return NULL;
  const LoomOp* mul = NULL;
  if ((st = api->OpFind("mul.Scalar", &mul))) return st;
  const LoomValue args[2] = {tensor_v((LoomTensor*)grad_out), float_v(k.u.f)};
  LoomValue ret[1];
  size_t nret = 0;
  init_returns(ret, sizeof ret / sizeof ret[0]);
  if ((st = api->OpCall(mul, args, 2, ret, 1, &nret))) return st;
  st = api->BackwardSetGradInput(ctx, 0, ret[0].u.tensor);
  api->ValuesRelease(ret, nret);
  return st;
}

/* abi_v1_test::combine(Tensor x, int n, float[] w, str mode, bool negate) -> Tensor:
 * x * n * sum(w), negated if asked; registered by a library without a namespace. */
static LoomStatus* combine_kernel(void* user_data, const LoomValue* args, size_t num_args,
                                  LoomValue* returns, size_t num_returns) {
  (void)user_data;
  if (num_args != 5 || num_returns != 1 || args[1].kind != LOOM_VALUE_INT ||
      args[2].kind != LOOM_VALUE_FLOAT_LIST || args[3].kind != LOOM_VALUE_STRING ||
      args[4].kind != LOOM_VALUE_BOOL) {
    return api->StatusCreate(LOOM_TYPE_ERROR, "combine: unexpected argument kinds");
  }
  if (strcmp(args[3].u.s, "mul") != 0) {
    return api->StatusCreate(LOOM_VALUE_ERROR, "combine: mode must be 'mul'");
  }
  double factor = (double)args[1].u.i * (args[4].u.b ? -1.0 : 1.0), w = 0;
  for (size_t i = 0; i < args[2].u.floats.size; ++i) w += args[2].u.floats.data[i];
  const LoomOp* mul = NULL;
  LoomStatus* st = api->OpFind("mul.Scalar", &mul);
  if (st) return st;
  const LoomValue margs[2] = {args[0], float_v(factor * w)};
  size_t nret = 0;
  return api->OpCall(mul, margs, 2, returns, 1, &nret); /* its return becomes ours */
}

static void check_registration(void) {
  Counters counters = {0, 0, 0};
  LoomLibrary *lib = NULL, *impls = NULL;
  if (!OK(api->LibraryCreate("abi_v1_test", &lib))) return;
  OK(api->LibraryDef(lib, "scale(Tensor x, float k) -> Tensor"));
  OK(api->LibraryDef(lib, "combine(Tensor x, int n, float[] w, str mode, bool negate) -> Tensor"));
  FAILS(api->LibraryDef(lib, "scale(Tensor x, float k) -> Tensor"), LOOM_REGISTRATION_ERROR,
        "scale");
  FAILS(api->LibraryDef(lib, "broken(Tensor x -> Tensor"), LOOM_OK, NULL);
  OK(api->LibraryImpl(lib, "scale", "CPU", scale_kernel, &counters, count_release));
  OK(api->LibraryImplBackward(lib, "scale", scale_backward, &counters, count_release));
  /* A refused registration never calls release: the caller keeps its user data. */
  FAILS(api->LibraryImpl(lib, "no_such_op", "CPU", scale_kernel, &counters, count_release),
        LOOM_OK, "no_such_op");
  EXPECT(counters.released == 0);
  /* A namespace belongs to one library. */
  LoomLibrary* second = NULL;
  FAILS(api->LibraryCreate("abi_v1_test", &second), LOOM_OK, "abi_v1_test");
  EXPECT(second == NULL);
  if (OK(api->LibraryCreate(NULL, &impls))) {
    OK(api->LibraryImpl(impls, "abi_v1_test::combine", "CPU", combine_kernel, NULL, NULL));
  }

  const LoomOp* scale = find("abi_v1_test::scale");
  if (scale) EXPECT(strstr(api->OpSchema(scale), "scale(Tensor x, float k) -> Tensor") != NULL);
  const float xd[3] = {1, 2, 3};
  const int64_t sizes[1] = {3};
  LoomTensor* x = from_floats(xd, sizes, 1);
  if (x && scale) {
    OK(api->TensorSetRequiresGrad(x, true));
    const LoomValue args[2] = {tensor_v(x), float_v(-2.0)};
    LoomTensor* y = call1("abi_v1_test::scale", args, 2);
    const float want[3] = {-2, -4, -6};
    EXPECT(equals(y, want, 3));
    EXPECT(counters.forward_calls == 1);
    /* Backward through the custom op: d/dx sum(scale(x, -2)) = -2. */
    const LoomValue sum_args[1] = {tensor_v(y)};
    LoomTensor* s = y ? call1("sum", sum_args, 1) : NULL;
    LoomTensor* grad = NULL;
    if (s && OK(api->Backward(s, NULL, false)) && OK(api->TensorGrad(x, &grad))) {
      const float want_grad[3] = {-2, -2, -2};
      EXPECT(equals(grad, want_grad, 3));
      EXPECT(counters.backward_calls == 1);
    }
    api->TensorRelease(grad);
    api->TensorRelease(s);
    api->TensorRelease(y);
    /* The kernel's own error reaches the caller with its code and message. */
    LoomValue ret[1];
    size_t nret = 0;
    init_returns(ret, sizeof ret / sizeof ret[0]);
    const LoomValue bad[2] = {tensor_v(x), float_v(INFINITY)};
    FAILS(api->OpCall(scale, bad, 2, ret, 1, &nret), LOOM_VALUE_ERROR, "k must be finite");
  }
  if (x && impls) {
    const double w[3] = {0.5, 1.0, 1.5};
    const LoomValue args[5] = {tensor_v(x), int_v(2), floats_v(w, 3), string_v("mul"),
                               bool_v(true)};
    LoomTensor* r = call1("abi_v1_test::combine", args, 5);
    const float want[3] = {-6, -12, -18};
    EXPECT(equals(r, want, 3));
    api->TensorRelease(r);
    const LoomOp* combine = find("abi_v1_test::combine");
    LoomValue ret[1];
    size_t nret = 0;
    init_returns(ret, sizeof ret / sizeof ret[0]);
    const LoomValue bad[5] = {tensor_v(x), int_v(2), floats_v(w, 3), string_v("add"), bool_v(true)};
    if (combine) {
      FAILS(api->OpCall(combine, bad, 5, ret, 1, &nret), LOOM_VALUE_ERROR, "mode must be 'mul'");
    }
  }
  api->TensorRelease(x);

  /* The user data lives as long as the registrations (a library must not free it early). */
  EXPECT(counters.released == 0);
  /* Releasing the libraries undoes their registrations and frees the user data. */
  api->LibraryRelease(impls);
  api->LibraryRelease(lib);
  EXPECT(counters.released == 2);
  const LoomOp* gone = NULL;
  FAILS(api->OpFind("abi_v1_test::scale", &gone), LOOM_NOT_IMPLEMENTED, NULL);
  api->LibraryRelease(NULL);
}

static void check_plugins(const char* plugin_path) {
  size_t count = 0;
  OK(api->PluginCount(&count));
  EXPECT(count >= 1);
  int has_ops_core = 0;
  for (size_t i = 0; i < count; ++i) {
    const char *name = NULL, *version = NULL;
    if (OK(api->PluginInfo(i, &name, &version))) {
      EXPECT(name && version);
      if (name && strcmp(name, "ops_core") == 0) has_ops_core = 1;
    }
  }
  EXPECT(has_ops_core);
  const char *name = NULL, *version = NULL;
  FAILS(api->PluginInfo(count, &name, &version), LOOM_OK, NULL);
  FAILS(api->PluginLoad("abi_v1_no_such_plugin"), LOOM_PLUGIN_ERROR, "abi_v1_no_such_plugin");

  /* A stable-ABI plugin, built against the frozen header as well. */
  if (!OK(api->PluginLoad(plugin_path))) return;
  size_t after = 0;
  OK(api->PluginCount(&after));
  EXPECT(after == count + 1);
  const float xd[2] = {1.5f, -3};
  const int64_t sizes[1] = {2};
  LoomTensor* x = from_floats(xd, sizes, 1);
  const LoomValue args[1] = {tensor_v(x)};
  LoomTensor* r = x ? call1("abi_v1_plugin::twice", args, 1) : NULL;
  const float want[2] = {3, -6};
  EXPECT(equals(r, want, 2));
  api->TensorRelease(r);
  api->TensorRelease(x);
  OK(api->PluginUnload("abi_v1_plugin"));
  const LoomOp* gone = NULL;
  FAILS(api->OpFind("abi_v1_plugin::twice", &gone), LOOM_NOT_IMPLEMENTED, NULL);
  OK(api->PluginCount(&after));
  EXPECT(after == count);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: abi_v1_client <abi_v1_plugin module>\n");
    return 100;
  }
  api = loom_get_api(1);
  if (!api) {
    fprintf(stderr, "loom_get_api(1) returned NULL (the library implements version %u)\n",
            (unsigned)loom_api_version());
    return 100;
  }
  if (!OK(api->Init()) || !OK(api->DTypeFromName("float32", &f32)) ||
      !OK(api->DTypeFromName("float64", &f64)) || !OK(api->DTypeFromName("int64", &i64)) ||
      !OK(api->DTypeFromName("bool", &b8))) {
    return 100;
  }
  check_table();
  check_status();
  check_dtypes_and_devices();
  check_tensors();
  check_ops();
  check_autograd();
  check_registration();
  check_plugins(argv[1]);
  printf("abi_v1_client: %s against libloom %s (table version %u): %d failed check%s\n",
         failures ? "FAILED" : "passed", api->VersionString(), (unsigned)api->version, failures,
         failures == 1 ? "" : "s");
  return failures > 99 ? 99 : failures;
}
