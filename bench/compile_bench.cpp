// graph.* and compile.*: loom::compile (docs/design/compile.md).
// - graph.replay.guarded calls a GuardedFunction whose guards hold (a one-element add): the
//   guard checks and the interpreter on top of the op; its raw side calls the same function
//   eagerly, so ratio_raw is replay / eager. The budget for calling a compiled graph
//   whose guards hold is 5 us.
// - compile.pointwise.4M is the pointwise chain gelu(x * w + b) + r over 4M float32
//   (x, r [2048, 2048], w, b [2048]), no grad: loom::compile's one fused loop against eager
//   Loom (the "eager" side; target: 2.5x, ratio_eager <= 0.4) and eager libtorch 2.x (torch).
//   The compile happens in the setup (LOOM_CACHE_DIR decides where its code is kept).
// - compile.pointwise_train.4M is the same chain with x, w and b requiring grad: forward, then
//   backward with a dense output gradient (gradients reset to none each step). Compiled, the
//   forward is one loop and the backward one generated loop plus the sums over rows for w and
//   b; eager runs four ops and their four derivatives. Against eager Loom and eager libtorch.
// - compile.softmax.4096x1024 and compile.layer_norm.4096x1024: softmax and layer norm over
//   the last dim written out of reductions and pointwise ops, as users write them (and as
//   RMS norm is always written), no grad: one row loop compiled, five or more passes eagerly.
//   Against the same ops in eager Loom, and libtorch's own fused softmax and layer_norm ops
//   (what a PyTorch user calls: the stronger peer).
// - compile.softmax_train.4096x1024 and compile.layer_norm_train.4096x1024: the same with x
//   (and w, b) requiring grad, forward then backward with a dense output gradient: the
//   compiled backward is one row loop too.
// - compile.transformer_train is the TransformerEncoderLayer row: d_model 256, 4 heads,
//   PyTorch's defaults otherwise (feed-forward 2048, dropout 0.1, relu, post-norm), batch
//   first, x [16, 128, 256] requiring grad, training mode: forward, backward with a dense
//   output gradient, every gradient reset. loom::compile(module) against the same module
//   eagerly (target: 1.3x, ratio_eager <= 0.77) and PyTorch's eager and torch.compile.
// The torch column of the compile.* rows other than graph.* and build.* is, where
// LOOM_BENCH_PYTHON names a Python with PyTorch (scripts/run-bench.sh sets it),
// bench/python/compile_peer.py: the same case eagerly (softmax and layer norm through
// PyTorch's own fused ops), under torch.compile, and under torch.compile written out as Loom's
// side writes it. Every configuration is timed once at setup (each printed above the row);
// each round then times the fastest one in a fresh process. Without it, the column is the C++
// program's eager libtorch (bench/libtorch/ops_peer.cpp), as the libtorch113 column.

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>

#include "harness.h"
#include "loom/autograd/grad_mode.h"
#include "loom/compile/compile.h"
#include "loom/dispatcher/plugin_loader.h"
#include "loom/graph/guarded.h"
#include "loom/nn/transformer.h"
#include "loom/ops/creation.h"
#include "loom/ops/pointwise.h"
#include "loom/ops/reduction.h"
#include "python_peer.h"

namespace loom::bench {
namespace {

std::vector<Tensor> add_one(const std::vector<Tensor>& in) { return {add(in[0], in[1])}; }

LOOM_BENCH("graph.replay.guarded", unit::ns, .target = 5000) {
  PluginLoader::instance().load("ops_core");
  auto f = std::make_shared<graph::GuardedFunction>(&add_one);
  const std::vector<Tensor> in = {Tensor::empty({1}), Tensor::empty({1})};
  (*f)(in);  // the capture
  return ns_per_call([f, in] { do_not_optimize((*f)(in)[0]); });
}

LOOM_BENCH_PEER(raw, "graph.replay.guarded") {
  PluginLoader::instance().load("ops_core");
  const std::vector<Tensor> in = {Tensor::empty({1}), Tensor::empty({1})};
  return ns_per_call([in] { do_not_optimize(add_one(in)[0]); });
}

std::vector<Tensor> pointwise_chain(const std::vector<Tensor>& in) {
  return {add(gelu(add(mul(in[0], in[1]), in[2])), in[3])};
}

std::vector<Tensor> pointwise_chain_inputs() {
  PluginLoader::instance().load("ops_core");
  return {rand({2048, 2048}), rand({2048}), rand({2048}), rand({2048, 2048})};
}

/// Milliseconds per call of body.
template <typename F>
Side ms_per_call(F body) {
  auto side = ns_per_call(std::move(body));
  return [side] { return side()[0] / 1e6; };
}

LOOM_BENCH("compile.pointwise.4M", unit::ms, .rounds = 9, .raw_label = "eager", .max_ratio = 1.0,
           .max_ratio_raw = 0.4) {
  const std::vector<Tensor> in = pointwise_chain_inputs();
  autograd::NoGradGuard no_grad;
  auto f = std::make_shared<CompiledFunction>(compile(&pointwise_chain, {.name = "chain"}));
  (*f)(in);  // capture and compile (or load from the disk cache)
  if (f->stats().fused_groups != 1) return Side();  // no compiler: nothing to measure
  return ms_per_call([f, in] {
    autograd::NoGradGuard off;
    do_not_optimize((*f)(in)[0]);
  });
}

LOOM_BENCH_PEER(raw, "compile.pointwise.4M") {
  const std::vector<Tensor> in = pointwise_chain_inputs();
  return ms_per_call([in] {
    autograd::NoGradGuard off;
    do_not_optimize(pointwise_chain(in)[0]);
  });
}

std::vector<Tensor> softmax_written(const std::vector<Tensor>& in) {
  const Tensor e = exp(sub(in[0], amax(in[0], {-1}, true)));
  return {div(e, sum(e, {-1}, true))};
}

std::vector<Tensor> layer_norm_written(const std::vector<Tensor>& in) {
  const Tensor centered = sub(in[0], mean(in[0], {-1}, true));
  const Tensor var = mean(mul(centered, centered), {-1}, true);
  return {add(mul(mul(centered, rsqrt(add(var, 1e-5))), in[1]), in[2])};
}

std::vector<Tensor> row_inputs() {
  PluginLoader::instance().load("ops_core");
  return {randn({4096, 1024}), rand({1024}), rand({1024})};
}

/// The compiled side of a no-grad row benchmark: nothing when nothing fused (no compiler).
Side compiled_rows(std::vector<Tensor> (*fn)(const std::vector<Tensor>&), const char* name) {
  const std::vector<Tensor> in = row_inputs();
  autograd::NoGradGuard no_grad;
  auto f = std::make_shared<CompiledFunction>(compile(fn, {.name = name}));
  (*f)(in);
  if (f->stats().fused_groups != 1) return Side();
  return ms_per_call([f, in] {
    autograd::NoGradGuard off;
    do_not_optimize((*f)(in)[0]);
  });
}

Side eager_rows(std::vector<Tensor> (*fn)(const std::vector<Tensor>&)) {
  const std::vector<Tensor> in = row_inputs();
  return ms_per_call([fn, in] {
    autograd::NoGradGuard off;
    do_not_optimize(fn(in)[0]);
  });
}

LOOM_BENCH("compile.softmax.4096x1024", unit::ms, .rounds = 9, .raw_label = "eager",
           .max_ratio = 1.0, .max_ratio_raw = 0.67) {
  return compiled_rows(&softmax_written, "softmax");
}

LOOM_BENCH_PEER(raw, "compile.softmax.4096x1024") { return eager_rows(&softmax_written); }

LOOM_BENCH("compile.layer_norm.4096x1024", unit::ms, .rounds = 9, .raw_label = "eager",
           .max_ratio = 1.0, .max_ratio_raw = 0.67) {
  return compiled_rows(&layer_norm_written, "layer_norm");
}

LOOM_BENCH_PEER(raw, "compile.layer_norm.4096x1024") { return eager_rows(&layer_norm_written); }

/// Forward and backward of fn on row_inputs() with x, w, b requiring grad (gradients reset).
template <typename F>
Side row_train(F fn) {
  std::vector<Tensor> in = row_inputs();
  for (Tensor& t : in) t.set_requires_grad(true);
  const Tensor gout = randn({4096, 1024});
  auto step = [fn, in, gout] {
    fn(in)[0].backward(gout);
    for (const Tensor& t : in) t.set_grad(Tensor());
  };
  step();  // a compiled fn records and builds here
  return ms_per_call(step);
}

Side compiled_row_train(std::vector<Tensor> (*fn)(const std::vector<Tensor>&), const char* name) {
  auto f = std::make_shared<CompiledFunction>(compile(fn, {.name = name}));
  Side side = row_train([f](const std::vector<Tensor>& in) { return (*f)(in); });
  return f->stats().fused_groups == 1 ? side : Side();  // none: no compiler
}

LOOM_BENCH("compile.softmax_train.4096x1024", unit::ms, .rounds = 9, .raw_label = "eager",
           .max_ratio = 1.0, .max_ratio_raw = 0.67) {
  return compiled_row_train(&softmax_written, "softmax");
}

LOOM_BENCH_PEER(raw, "compile.softmax_train.4096x1024") { return row_train(&softmax_written); }

LOOM_BENCH("compile.layer_norm_train.4096x1024", unit::ms, .rounds = 9, .raw_label = "eager",
           .max_ratio = 1.0, .max_ratio_raw = 0.67) {
  return compiled_row_train(&layer_norm_written, "layer_norm");
}

LOOM_BENCH_PEER(raw, "compile.layer_norm_train.4096x1024") {
  return row_train(&layer_norm_written);
}

/// The first call of a compiled layer norm with x, w, b requiring grad (forward and backward
/// row loops: the largest code loom::compile makes here), in a fresh process's way: a new
/// CompiledFunction, its capture, then its code built (cache_dir empty) or loaded.
void first_train_call(const std::vector<Tensor>& in, const Tensor& gout) {
  CompiledFunction f = compile(&layer_norm_written, {.name = "layer_norm"});
  f(in)[0].backward(gout);
  for (const Tensor& t : in) t.set_grad(Tensor());
}

/// Inputs for first_train_call: small, so that the time is the compile's.
std::pair<std::vector<Tensor>, Tensor> first_call_inputs() {
  PluginLoader::instance().load("ops_core");
  std::vector<Tensor> in = {randn({8, 1024}), rand({1024}), rand({1024})};
  for (Tensor& t : in) t.set_requires_grad(true);
  return {in, randn({8, 1024})};
}

// compile.build.cold: a graph's first call with an empty cache (capture, code generation, the
// C++ compiler, loading); compile.build.warm: the same with the code in the disk cache (a new
// process's start). The budgets: 2 s and 20 ms (Inductor: tens of seconds cold). The
// raw side is the function's first call eagerly.
LOOM_BENCH("compile.build.cold", unit::ms, .target = 2000, .rounds = 5, .raw_label = "eager") {
  auto [in, gout] = first_call_inputs();
  const std::string root =
      (std::filesystem::temp_directory_path() / ("loom-bench-cold-" + std::to_string(getpid())))
          .string();
  auto count = std::make_shared<int>(0);
  return ms_per_call([in, gout, root, count] {
    const std::string dir = root + "/" + std::to_string((*count)++);
    setenv("LOOM_CACHE_DIR", dir.c_str(), 1);
    first_train_call(in, gout);
    std::filesystem::remove_all(dir);
  });
}

/// The raw side of both: the function's call, forward and backward, eagerly.
Side eager_first_call() {
  auto [in, gout] = first_call_inputs();
  return ms_per_call([in, gout] {
    layer_norm_written(in)[0].backward(gout);
    for (const Tensor& t : in) t.set_grad(Tensor());
  });
}

LOOM_BENCH_PEER(raw, "compile.build.cold") { return eager_first_call(); }

LOOM_BENCH("compile.build.warm", unit::ms, .target = 20, .rounds = 9, .raw_label = "eager") {
  auto [in, gout] = first_call_inputs();
  first_train_call(in, gout);  // into LOOM_CACHE_DIR (or the default cache)
  return ms_per_call([in, gout] { first_train_call(in, gout); });
}

LOOM_BENCH_PEER(raw, "compile.build.warm") { return eager_first_call(); }

/// The training step of the chain: forward, backward with gout, gradients reset.
void train_step(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                const std::vector<Tensor>& in, const Tensor& gout) {
  const Tensor out = fn(in)[0];
  out.backward(gout);
  for (size_t i = 0; i < 3; ++i) in[i].set_grad(Tensor());
}

std::vector<Tensor> train_inputs() {
  std::vector<Tensor> in = pointwise_chain_inputs();
  for (size_t i = 0; i < 3; ++i) in[i].set_requires_grad(true);
  return in;
}

LOOM_BENCH("compile.pointwise_train.4M", unit::ms, .rounds = 9, .raw_label = "eager",
           .max_ratio = 1.0, .max_ratio_raw = 0.8) {
  const std::vector<Tensor> in = train_inputs();
  const Tensor gout = rand({2048, 2048});
  auto f = std::make_shared<CompiledFunction>(compile(&pointwise_chain, {.name = "chain"}));
  train_step(*f, in, gout);  // capture and compile (or load from the disk cache)
  if (f->stats().fused_groups != 1) return Side();  // no compiler: nothing to measure
  return ms_per_call([f, in, gout] { train_step(*f, in, gout); });
}

LOOM_BENCH_PEER(raw, "compile.pointwise_train.4M") {
  const std::vector<Tensor> in = train_inputs();
  const Tensor gout = rand({2048, 2048});
  return ms_per_call([in, gout] { train_step(&pointwise_chain, in, gout); });
}

/// The encoder layer in training mode, and its input and output gradient.
struct TransformerCase {
  std::shared_ptr<nn::TransformerEncoderLayer> layer;
  Tensor x, gout;
};

TransformerCase transformer_case() {
  PluginLoader::instance().load("ops_core");
  PluginLoader::instance().load("ops_nn");
  TransformerCase c;
  c.layer = std::make_shared<nn::TransformerEncoderLayer>(
      256, 4, nn::TransformerEncoderLayerOptions{.batch_first = true});
  c.layer->train();
  c.x = randn({16, 128, 256});
  c.x.set_requires_grad(true);
  c.gout = randn({16, 128, 256});
  return c;
}

/// One training step of the layer through forward (the module or its compiled form).
template <typename F>
Side transformer_steps(TransformerCase c, F forward) {
  auto step = [c, forward] {
    forward(c.x).backward(c.gout);
    c.x.set_grad(Tensor());
    for (Tensor& p : c.layer->parameters()) p.set_grad(Tensor());
  };
  step();  // a compiled forward records and builds here
  return ms_per_call(step);
}

LOOM_BENCH("compile.transformer_train", unit::ms, .rounds = 5, .raw_label = "eager",
           .max_ratio = 1.0, .max_ratio_raw = 0.77) {
  TransformerCase c = transformer_case();
  auto compiled = std::make_shared<CompiledModule>(compile(c.layer));
  Side side = transformer_steps(c, [compiled](const Tensor& x) { return (*compiled)(x); });
  const CompileStats s = compiled->stats();
  std::printf("  compile.transformer_train loom: %d fused groups, %d fallbacks\n", s.fused_groups,
              s.fallbacks);
  return s.fused_groups > 0 ? side : Side();  // none: no compiler
}

LOOM_BENCH_PEER(raw, "compile.transformer_train") {
  TransformerCase c = transformer_case();
  return transformer_steps(c, [layer = c.layer](const Tensor& x) { return (*layer)(x); });
}

/// The torch side of compile.<row> through compile_peer.py --case <c> (see the top of this
/// file); empty without the Python peer or where no configuration ran.
Side torch_compile_side(const std::string& row, const std::string& c) {
  const PythonPeer py = python_peer("compile_peer.py");
  if (!py) return {};
  auto run = [py, c](const std::string& configs, int samples) {
    const std::string report = scratch("compile-" + c) + "/report.json";
    return run_for_report(
        py.command("--case " + c + " --threads 2 --configs " + configs + " --samples " +
                   std::to_string(samples) + " --report " + report),
        report, /*passive=*/true);
  };
  const nlohmann::json all = run("all", 5);
  for (const auto& [name, why] : all["skipped"].items()) {
    std::printf("  %s torch (python %s): skipped: %s\n", row.c_str(), name.c_str(),
                why.get<std::string>().c_str());
  }
  for (const auto& [name, r] : all["configs"].items()) {
    std::printf("  %s torch (python %s, %s): %.3f ms", row.c_str(), name.c_str(),
                all["torch"].get<std::string>().c_str(), r["ms"].get<double>());
    if (r.contains("compile_seconds")) {
      std::printf(", compiled in %.1f s (not timed)", r["compile_seconds"].get<double>());
    }
    std::printf("\n");
  }
  std::fflush(stdout);
  if (!all.contains("best")) return {};
  const std::string best = all["best"].get<std::string>();
  return [run, best] { return run(best, 3)["configs"][best]["ms"].get<double>(); };
}

LOOM_BENCH_PEER(torch, "compile.pointwise.4M") {
  return torch_compile_side("compile.pointwise.4M", "pointwise");
}
LOOM_BENCH_PEER(torch, "compile.pointwise_train.4M") {
  return torch_compile_side("compile.pointwise_train.4M", "pointwise_train");
}
LOOM_BENCH_PEER(torch, "compile.softmax.4096x1024") {
  return torch_compile_side("compile.softmax.4096x1024", "softmax");
}
LOOM_BENCH_PEER(torch, "compile.layer_norm.4096x1024") {
  return torch_compile_side("compile.layer_norm.4096x1024", "layer_norm");
}
LOOM_BENCH_PEER(torch, "compile.softmax_train.4096x1024") {
  return torch_compile_side("compile.softmax_train.4096x1024", "softmax_train");
}
LOOM_BENCH_PEER(torch, "compile.transformer_train") {
  return torch_compile_side("compile.transformer_train", "transformer_train");
}
LOOM_BENCH_PEER(torch, "compile.layer_norm_train.4096x1024") {
  return torch_compile_side("compile.layer_norm_train.4096x1024", "layer_norm_train");
}

}  // namespace
}  // namespace loom::bench
