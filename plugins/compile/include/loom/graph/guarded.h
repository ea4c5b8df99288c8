#pragma once
/// @file
/// Guard-only replay (docs/design/compile.md, section 3): a function called through a
/// GuardedFunction runs once per distinct input metadata, under capture; later calls whose
/// inputs match a captured graph's guards replay that graph without running the function.
///
/// Opt-in, because it is sound only for a function whose ops depend on nothing but its
/// inputs' metadata and the grad mode: no branch on a member counter, a global flag or the
/// clock. A function that reads a value with `Tensor::item()` while captured is detected
/// (Graph::value_dependence): its calls with those inputs run it eagerly, with one warning.
/// Reading data through `data_ptr()` is not seen. The built-in nn layers qualify; an
/// arbitrary C++ function needs the checked replay of a later stage. Guards: each
/// input's sizes, strides, dtype, device and requires_grad (Graph::guard_failure), and the
/// grad mode. Not yet a guard: the chosen providers (the dispatcher's registry generation).
///
/// At `recompile_limit` graphs (8, as Dynamo's default) a call whose inputs match none runs
/// eagerly, and one warning names the function, the limit and the guard that failed.
/// `LOOM_LOGS=recompiles` prints a line for each capture after the first, with its reason.

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "loom/graph/capture.h"

namespace loom::graph {

/// A captured graph made ready to run. loom::compile lowers a graph to fused kernels
/// (loom/compile/compile.h); a GuardedFunction without a lowering runs its graphs with
/// Graph::run.
class Executable {
 public:
  virtual ~Executable() = default;
  /// Runs the graph on inputs that passed its guards; returns its outputs.
  virtual std::vector<Tensor> run(const std::vector<Tensor>& inputs) const = 0;
};

/// Makes a graph ready to run, once, right after its capture.
using Lowering = std::function<std::shared_ptr<const Executable>(const Graph&)>;

/// Options of a GuardedFunction.
struct GuardedOptions {
  std::string name = "function";  ///< names the function in warnings and logs
  int recompile_limit = 8;        ///< graphs kept; beyond, new metadata runs eagerly
  Lowering lower = {};            ///< empty: replays run the interpreter (Graph::run)
  /// Captures record composites as their parts (capture(): decompose); loom::compile sets it
  /// where it can build fused code.
  bool decompose = false;
};

/// What a GuardedFunction did so far.
struct GuardedStats {
  int captures = 0;  ///< calls that ran the function under capture (one graph each)
  int replays = 0;   ///< calls that replayed a graph without running the function
  int eager = 0;     ///< calls that ran the function eagerly: past the recompile limit, or
                     ///< matching a graph that read values (Graph::value_dependence)
};

/// A function replayed from its captured graphs while their guards hold (see the file comment
/// for when that is sound). Thread-safe: calls may come from several threads.
class GuardedFunction {
 public:
  /// Wraps fn; nothing runs until the first call.
  explicit GuardedFunction(TensorFunction fn, GuardedOptions options = {});

  /// fn(inputs), by replay when a graph's guards hold, else by capture (or eagerly past the
  /// recompile limit).
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs);

  /// The counts so far.
  GuardedStats stats() const;
  /// The graphs captured so far, in order (copies).
  std::vector<Graph> graphs() const;

 private:
  struct Entry {
    Graph graph;
    bool grad_mode;
    std::shared_ptr<const Executable> lowered;  // null: Graph::run
  };
  TensorFunction fn_;
  GuardedOptions options_;
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<const Entry>> entries_;  // shared: a replay runs unlocked
  GuardedStats stats_;
  bool warned_ = false;
  bool warned_values_ = false;  // the warning about a trace that read values, once
};

}  // namespace loom::graph
