// capi.add.1elem: what the stable C ABI costs on the smallest op call. The Loom side calls
// aten::add.Tensor on two 1-element float32 tensors through libloom.so (loom/capi.h: the op
// handle found once with OpFind, boxed LoomValue arguments, OpCall, the result released with
// ValuesRelease every iteration), as an application built on the SDK does. Its peers:
//   raw       the same call through Loom's C++ API, loom::add(a, b): the table's "raw" column;
//             in the JSON "cpp" (.raw_label), and "ratio_cpp" = C ABI / C++ API (target <= 1.5)
//   libtorch  torch::add(a, b) (at::add) on inference tensors, its fastest configuration as in
//             add.1elem (target: ratio <= 1)
//
// This file is compiled twice: into loom-bench for the Loom and C++ sides, and, with
// LOOM_CAPI_BENCH_LIBTORCH_SIDE, into loom_bench_libtorch for the libtorch side (libtorch's
// headers stay out of Loom's translation units).
#include "harness.h"

#ifndef LOOM_CAPI_BENCH_LIBTORCH_SIDE

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

#include "loom/capi.h"
#include "loom/dispatcher/plugin_loader.h"
#include "loom/ops/core.h"

namespace loom::bench {
namespace {

/// The C ABI table; ops_core loaded through the C++ loader, as the other benchmarks do (Init()
/// would also load cpu_onednn and make it the CPU default for the benchmarks after this one).
const LoomApi& c_api() {
  const LoomApi* api = loom_get_api(LOOM_API_VERSION);
  if (!api) {
    throw std::runtime_error("loom_get_api(" + std::to_string(LOOM_API_VERSION) +
                             ") returned NULL");
  }
  PluginLoader::instance().load("ops_core");
  return *api;
}

/// Throws the status's message (and releases it) if the call failed.
void check(const LoomApi& api, LoomStatus* status, const char* what) {
  if (!status) return;
  std::string message = std::string(what) + ": " + api.StatusMessage(status);
  api.StatusRelease(status);
  throw std::runtime_error(message);
}

/// A 1-element float32 tensor on the CPU holding v, through the C ABI.
LoomTensor* c_scalar_tensor(const LoomApi& api, float v) {
  int32_t f32 = 0;
  check(api, api.DTypeFromName("float32", &f32), "DTypeFromName");
  const int64_t sizes[1] = {1};
  LoomTensor* t = nullptr;
  check(api, api.TensorFromData(&v, sizes, 1, f32, "cpu", &t), "TensorFromData");
  return t;
}

LoomValue tensor_value(LoomTensor* t) {
  LoomValue v{};
  v.struct_size = sizeof(LoomValue);
  v.kind = LOOM_VALUE_TENSOR;
  v.u.tensor = t;
  return v;
}

/// An empty return slot (the library steps through the returns by struct_size).
LoomValue return_slot() {
  LoomValue v{};
  v.struct_size = sizeof(LoomValue);
  return v;
}

/// One OpCall of add.Tensor with its result released; the tensors live as long as the side
/// (they are released at exit by the shared_ptr).
struct CAdd {
  const LoomApi* api;
  const LoomOp* add = nullptr;
  std::shared_ptr<LoomTensor> a, b;
  LoomValue args[2];
};

LOOM_BENCH("capi.add.1elem", unit::ns, .raw_label = "cpp") {
  const LoomApi& api = c_api();
  auto s = std::make_shared<CAdd>();
  s->api = &api;
  auto release = [table = &api](LoomTensor* t) { table->TensorRelease(t); };
  s->a = std::shared_ptr<LoomTensor>(c_scalar_tensor(api, 1.5f), release);
  s->b = std::shared_ptr<LoomTensor>(c_scalar_tensor(api, 2.5f), release);
  check(api, api.OpFind("add.Tensor", &s->add), "OpFind(add.Tensor)");
  s->args[0] = tensor_value(s->a.get());
  s->args[1] = tensor_value(s->b.get());
  // One call outside the loop: a failure is reported once, not measured.
  LoomValue ret[1] = {return_slot()};
  size_t n = 0;
  check(api, api.OpCall(s->add, s->args, 2, ret, 1, &n), "OpCall(add.Tensor)");
  api.ValuesRelease(ret, n);
  std::printf(
      "  capi.add.1elem: loom = the C ABI (OpCall), raw (JSON: cpp) = the C++ API (loom::add); "
      "targets: ratio_cpp (C ABI / C++) <= 1.5, ratio (C ABI / libtorch) <= 1\n");
  return ns_per_call([s] {
    LoomValue out[1] = {return_slot()};
    size_t count = 0;
    LoomStatus* st = s->api->OpCall(s->add, s->args, 2, out, 1, &count);
    if (st) check(*s->api, st, "OpCall(add.Tensor)");
    do_not_optimize(out[0].u.tensor);
    s->api->ValuesRelease(out, count);
  });
}

LOOM_BENCH_PEER(raw, "capi.add.1elem") {
  PluginLoader::instance().load("ops_core");
  Tensor a = Tensor::empty({1}), b = Tensor::empty({1});
  fill_(a, 1.5);
  fill_(b, 2.5);
  return ns_per_call([=] { do_not_optimize(add(a, b)); });
}

}  // namespace
}  // namespace loom::bench

#else  // LOOM_CAPI_BENCH_LIBTORCH_SIDE

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

namespace loom::bench {
namespace {

LOOM_BENCH_LIBTORCH_PEER("capi.add.1elem") {
  static c10::InferenceMode* guard = new c10::InferenceMode();  // for the process, as add.1elem
  (void)guard;
  const at::Tensor a = at::full({1}, 1.5), b = at::full({1}, 2.5);
  return ns_per_call([=] { do_not_optimize(at::add(a, b)); });  // torch::add is at::add
}

}  // namespace
}  // namespace loom::bench

#endif  // LOOM_CAPI_BENCH_LIBTORCH_SIDE
