#pragma once
/// @file
/// `loom::compile`: a function's ops captured into graphs and its pointwise chains fused into
/// generated C++ loops (docs/design/compile.md; docs/guide/compile.md shows its use).
///
/// What is built so far, and what it asks of the function:
/// - **Replay without running the function.** The first call with new input metadata runs the
///   function under capture (loom/graph/guarded.h); later calls whose inputs match that
///   capture's guards (sizes, strides, dtype, device, requires_grad of each input, and the
///   grad mode) run the compiled graph instead of the function. So the function's ops must
///   depend on those guards only: no branch on a member counter, a global flag, the clock or
///   data read through `data_ptr()`, and no scalar that changes between calls (`lr` from a
///   scheduler): such a function gives the first call's ops again. A value read with
///   `item()` while the function is recorded is seen: calls with those inputs then run the
///   function eagerly (one warning says where it read). The built-in nn layers and models of
///   them qualify (BatchNorm with momentum None reads its batch count with `item()` in
///   training: its calls run eagerly). (Running an arbitrary function checked against its graph is
///   a later stage of the design.)
/// - **Fusion.** Chains of pointwise ops over one shape, and reductions over the last dim with
///   the pointwise ops around them (softmax, layer norm written out; loom/graph/fusion.h lists
///   them), become one loop each, in C++ built by the system compiler once per machine and kept in
///   the disk cache (LOOM_CACHE_DIR); everything else runs its eager kernel. Values equal
///   eager's within float rounding (the loops compute float32 exp, erf and tanh with vector
///   code of their own, eager's kernels partly with the C library's).
/// - **Autograd.** Captured with grad mode on and inputs that require grad, each fused group
///   also gets a generated backward loop (loom/graph/fusion.h): the group's outputs have one
///   `CompiledFunctionBackward` node, whose loop recomputes the group's values from its saved
///   inputs and writes their gradients; other ops record eager's derivatives. Gradients equal
///   eager's within float rounding. Double backward (create_graph) through a fused group is
///   refused with an error; `fuse = false` runs such graphs node by node.
/// - **No compiler**, or one that fails: one warning with the reason (the compiler's first
///   lines), and the graph runs node by node: never a wrong answer.
///
/// `LOOM_LOGS=code` prints the generated source, `LOOM_LOGS=graph` the captured graphs,
/// `LOOM_LOGS=recompiles` each capture after the first with the guard that failed.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loom/core/error.h"
#include "loom/graph/capture.h"

namespace loom {

/// Options of loom::compile.
struct CompileOptions {
  std::string name = "function";  ///< names the function in warnings and logs
  int recompile_limit = 8;        ///< graphs kept; beyond, new input metadata runs eagerly
  bool fuse = true;               ///< false: graphs replay node by node (no generated code)
};

/// What a compiled function did so far.
struct CompileStats {
  int captures = 0;      ///< calls that ran the function under capture
  int replays = 0;       ///< calls that ran a compiled graph instead of the function
  int eager = 0;         ///< calls past the recompile limit, run eagerly
  int fused_groups = 0;  ///< fused loops in the graphs so far
  int compiles = 0;      ///< graphs whose code the C++ compiler built
  int cache_hits = 0;    ///< graphs whose code came from the disk cache
  int fallbacks = 0;     ///< graphs left unfused: no compiler, or it failed
  int removed_nodes = 0;  ///< nodes not run: dead, or equal to an earlier one (fusion.h)
  int folded_nodes = 0;   ///< nodes folded into constants, run on the first call only (fusion.h)
};

/// A function compiled by loom::compile. Copies share the graphs; calls may come from several
/// threads.
class CompiledFunction {
 public:
  /// fn(inputs): by a compiled graph when one's guards hold, else by capture (see the file
  /// comment for what that asks of the function).
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const;
  /// The counts so far.
  CompileStats stats() const;

  /// Internal state, shared by copies.
  struct State;
  /// Made by loom::compile.
  explicit CompiledFunction(std::shared_ptr<State> state) : state_(std::move(state)) {}

 private:
  std::shared_ptr<State> state_;
};

/// Compiles fn: nothing runs until the first call.
CompiledFunction compile(graph::TensorFunction fn, CompileOptions options = {});

/// A module compiled by loom::compile(module): `compiled(x)` is `(*module)(x)` (hooks
/// included) through compiled graphs. What a module's graph depends on beyond its input is
/// guarded too, as torch.compile guards a module:
/// - the training mode: train() and eval() each have their graphs (dropout and batch norm
///   differ), so switching back and forth recompiles nothing;
/// - the parameters and buffers themselves: after one is replaced by another tensor
///   (`to(dtype)`, `to(MemoryFormat)`, a new register_parameter), the graphs are dropped and
///   the next call records anew. Values changed in place (an optimizer step,
///   load_state_dict) need nothing: the graphs read the tensors' current values.
/// Calls may come from several threads.
class CompiledModule {
 public:
  /// How a module is called and inspected (made by loom::compile(module)).
  struct Access {
    std::function<Tensor(const Tensor&)> call;   ///< (*module)(x)
    std::function<bool()> training;              ///< module->is_training()
    std::function<std::vector<Tensor>()> state;  ///< its parameters, then its buffers
  };
  /// Made by loom::compile(module).
  CompiledModule(Access access, CompileOptions options);
  /// (*module)(input), by a compiled graph where one's guards hold.
  Tensor operator()(const Tensor& input) const;
  /// The counts so far, over both training modes and every recompile.
  CompileStats stats() const;

  /// Internal state, shared by copies.
  struct State;

 private:
  std::shared_ptr<State> state_;
};

/// Compiles module (an nn::Module, or anything with operator()(const Tensor&), is_training(),
/// parameters() and buffers()): nothing runs until the first call. The compiled module holds
/// the module.
template <class M>
CompiledModule compile(std::shared_ptr<M> module, CompileOptions options = {}) {
  LOOM_CHECK(module != nullptr, "loom::compile: the module is null (an empty shared_ptr)");
  if (options.name == CompileOptions{}.name) options.name = module->name();
  CompiledModule::Access access;
  access.call = [module](const Tensor& x) { return (*module)(x); };
  access.training = [module] { return module->is_training(); };
  access.state = [module] {
    std::vector<Tensor> out = module->parameters();
    for (Tensor& t : module->buffers()) out.push_back(std::move(t));
    return out;
  };
  return CompiledModule(std::move(access), std::move(options));
}

}  // namespace loom
