// Guard-only replay (loom/graph/guarded.h).
#include "loom/graph/guarded.h"

#include <cstdio>
#include <memory>

#include "logs.h"
#include "loom/autograd/grad_mode.h"
#include "loom/core/str_cat.h"
#include "loom/core/warning.h"

namespace loom::graph {

GuardedFunction::GuardedFunction(TensorFunction fn, GuardedOptions options)
    : fn_(std::move(fn)), options_(std::move(options)) {
  LOOM_CHECK(fn_ != nullptr, "GuardedFunction: the function is empty");
  LOOM_CHECK(options_.recompile_limit >= 1,
             "GuardedFunction: recompile_limit must be at least 1, got ", options_.recompile_limit);
}

std::vector<Tensor> GuardedFunction::operator()(const std::vector<Tensor>& inputs) {
  const bool grad = autograd::GradMode::is_enabled();
  std::string why;  // the first guard that failed, for the logs and the warning
  std::shared_ptr<const Entry> match;
  bool eager = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < entries_.size() && !match; ++i) {
      const Entry& e = *entries_[i];
      const std::string failure = e.grad_mode != grad
                                      ? str_cat("grad mode ", grad ? "on" : "off", ", captured ",
                                                e.grad_mode ? "on" : "off")
                                      : e.graph.guard_failure(inputs);
      if (failure.empty()) {
        match = entries_[i];
      } else if (why.empty()) {
        why = str_cat("graph ", i, ": ", failure);
      }
    }
    if (match && !match->graph.value_dependence().empty()) {
      ++stats_.eager;
    } else if (match) {
      ++stats_.replays;
    } else if (static_cast<int>(entries_.size()) >= options_.recompile_limit) {
      eager = true;
      ++stats_.eager;
      if (!warned_) {
        warned_ = true;
        warn(str_cat("loom::graph: ", options_.name, " reached its recompile limit (",
                     options_.recompile_limit,
                     " graphs); calls whose inputs match none of them run eagerly from now on. "
                     "The guard that failed: ",
                     why));
      }
    }
  }
  if (match && !match->graph.value_dependence().empty()) return fn_(inputs);
  if (match) return match->lowered ? match->lowered->run(inputs) : match->graph.run(inputs);
  if (eager) return fn_(inputs);
  if (!why.empty() && detail::logs_topic("recompiles")) {
    std::fprintf(stderr, "[loom recompiles] %s: capturing again: %s\n", options_.name.c_str(),
                 why.c_str());
  }
  std::vector<Tensor> out;
  Graph g = capture(fn_, inputs, &out, options_.decompose);
  // Note [Values read while capturing] (capture.cpp): such a graph is kept, so that calls
  // with these inputs find it, but they run the function itself.
  const bool replayable = g.value_dependence().empty();
  std::shared_ptr<const Executable> lowered =
      options_.lower && replayable ? options_.lower(g) : nullptr;
  const std::string reason = g.value_dependence();
  auto entry = std::make_shared<const Entry>(Entry{std::move(g), grad, std::move(lowered)});
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.captures;
  entries_.push_back(std::move(entry));
  if (!replayable && !warned_values_) {
    warned_values_ = true;
    warn(str_cat("loom::graph: ", options_.name, ": ", reason,
                 ". Calls with these inputs run it eagerly (a graph break); pass such values as "
                 "tensor inputs, or keep the read outside the compiled function"));
  }
  return out;
}

GuardedStats GuardedFunction::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

std::vector<Graph> GuardedFunction::graphs() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Graph> out;
  for (const auto& e : entries_) out.push_back(e->graph);
  return out;
}

}  // namespace loom::graph
