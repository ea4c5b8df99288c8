// The libtorch side of dispatch.*: a custom no-op op registered with TORCH_LIBRARY and
// called through c10's dispatcher, typed and boxed, in libtorch's best configuration for
// dispatch (see the configuration step below).
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <ATen/ops/empty.h>
#include <c10/core/InferenceMode.h>
#include <torch/library.h>
#include <torch/version.h>

#include <string>

#include "../harness.h"

namespace loom::bench {
namespace {

at::Tensor noop(const at::Tensor& self) { return self; }

TORCH_LIBRARY(bench, m) { m.def("noop(Tensor self) -> Tensor"); }
TORCH_LIBRARY_IMPL(bench, CPU, m) { m.impl("noop", &noop); }

const c10::OperatorHandle& noop_op() {
  static const c10::OperatorHandle op =
      c10::Dispatcher::singleton().findSchemaOrThrow("bench::noop", "");
  return op;
}

// An inference tensor has no autograd keys, so the call goes straight to the CPU kernel:
// the fastest dispatch libtorch offers. The guard lives as long as the process; every
// sample runs on this (the main) thread.
at::Tensor inference_tensor() {
  static c10::InferenceMode* guard = new c10::InferenceMode();
  (void)guard;
  return at::empty({1});
}

LOOM_BENCH_CONFIGURE(LOOM_BENCH_LIBTORCH_NAME) {
  at::set_num_threads(2);
  std::string line = "libtorch " TORCH_VERSION " (";
  line += at::hasMKL() ? "MKL" : "no MKL";
  line += at::hasMKLDNN() ? ", oneDNN" : ", no oneDNN";
  line += "), at::set_num_threads(2) (Loom's OpenMP loops use 2 too), c10::InferenceMode on "
          "(inference tensors: no autograd keys; off for the *_train rows, which run "
          "backward), no profiler callbacks; its child programs "
          "bench-" LOOM_BENCH_LIBTORCH_NAME "-* get OMP_WAIT_POLICY=passive";
  return line;
}

LOOM_BENCH_LIBTORCH_PEER("dispatch.noop.typed") {
  const auto op = noop_op().typed<at::Tensor(const at::Tensor&)>();
  const at::Tensor x = inference_tensor();
  return ns_per_call([=] { do_not_optimize(op.call(x)); });
}

LOOM_BENCH_LIBTORCH_PEER("dispatch.noop.boxed") {
  const c10::OperatorHandle op = noop_op();
  const at::Tensor x = inference_tensor();
  torch::jit::Stack stack;
  stack.reserve(1);
  return ns_per_call([=]() mutable {
    stack.clear();
    stack.emplace_back(x);
    op.callBoxed(&stack);
    do_not_optimize(stack.back());
  });
}

}  // namespace
}  // namespace loom::bench
