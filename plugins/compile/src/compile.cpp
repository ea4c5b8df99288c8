// loom::compile (loom/compile/compile.h): guarded graphs lowered to fused loops.
#include "loom/compile/compile.h"

#include <omp.h>

#include <atomic>
#include <cstdio>
#include <mutex>

#include "code_cache.h"
#include "logs.h"
#include "loom/autograd/grad_mode.h"
#include "loom/core/str_cat.h"
#include "loom/core/warning.h"
#include "loom/graph/fusion.h"
#include "loom/graph/guarded.h"

namespace loom {

using GroupFn = void(char* const*, int);

struct CompiledFunction::State {
  std::unique_ptr<graph::GuardedFunction> guarded;
  std::atomic<int> fused_groups{0}, compiles{0}, cache_hits{0}, fallbacks{0};
};

namespace {

/// A graph whose fused groups run generated loops and whose other nodes run through the
/// dispatcher.
class FusedGraph final : public graph::Executable {
 public:
  FusedGraph(graph::Graph g, graph::FusionPlan plan,
             std::shared_ptr<graph::detail::CodeLibrary> lib)
      : graph_(std::move(g)), plan_(std::move(plan)), lib_(std::move(lib)) {
    for (size_t i = 0; i < plan_.groups.size(); ++i) {
      fns_.push_back(&lib_->library.get<GroupFn>(str_cat("loom_group_", i)));
    }
  }

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const override {
    std::vector<Tensor> env = graph_.bind(inputs, "loom::compile");
    const int threads = omp_get_max_threads();
    std::vector<char*> pointers;
    for (const graph::FusionStep& step : plan_.steps) {
      if (step.node >= 0) {
        graph::Graph::call_node(graph_.nodes()[step.node], env);
        continue;
      }
      const graph::FusedGroup& group = plan_.groups[step.group];
      pointers.clear();
      for (int id : group.outputs) {
        const graph::Value& v = graph_.values()[id];
        env[id] = graph::empty_with_layout(v.meta, v.device);  // eager's layout
        pointers.push_back(static_cast<char*>(env[id].data_ptr()));
      }
      for (int id : group.inputs) pointers.push_back(static_cast<char*>(env[id].data_ptr()));
      fns_[step.group](pointers.data(), threads);
    }
    return graph_.outputs_of(env);
  }

 private:
  graph::Graph graph_;
  graph::FusionPlan plan_;
  std::shared_ptr<graph::detail::CodeLibrary> lib_;  // keeps fns_ loaded
  std::vector<GroupFn*> fns_;
};

/// Lowers g: fuses what fuses and builds its code; nullptr (the interpreter) when nothing
/// fuses or there is no code.
std::shared_ptr<const graph::Executable> lower(const graph::Graph& g, const std::string& name,
                                               CompiledFunction::State& state) {
  graph::FusionPlan plan = graph::plan_fusion(g, autograd::GradMode::is_enabled());
  if (plan.groups.empty()) return nullptr;
  const std::string source = graph::generate_cpp(g, plan);
  if (graph::detail::logs_topic("code")) {
    std::fprintf(stderr, "[loom code] %s:\n%s", name.c_str(), source.c_str());
  }
  graph::detail::CodeBuild build = graph::detail::build_or_load(source);
  if (!build.library) {
    ++state.fallbacks;
    static std::once_flag no_compiler;
    if (build.no_compiler) {
      std::call_once(no_compiler, [&] {
        warn(str_cat("loom::compile: ", build.error, "; fused groups run eagerly"));
      });
    } else {
      warn(str_cat("loom::compile: ", name, ": ", build.error,
                   "\nthe graph runs eagerly, node by node"));
    }
    return nullptr;
  }
  ++(build.cache_hit ? state.cache_hits : state.compiles);
  state.fused_groups += static_cast<int>(plan.groups.size());
  return std::make_shared<FusedGraph>(g, std::move(plan), std::move(build.library));
}

}  // namespace

std::vector<Tensor> CompiledFunction::operator()(const std::vector<Tensor>& inputs) const {
  return (*state_->guarded)(inputs);
}

CompileStats CompiledFunction::stats() const {
  const graph::GuardedStats g = state_->guarded->stats();
  CompileStats s;
  s.captures = g.captures;
  s.replays = g.replays;
  s.eager = g.eager;
  s.fused_groups = state_->fused_groups;
  s.compiles = state_->compiles;
  s.cache_hits = state_->cache_hits;
  s.fallbacks = state_->fallbacks;
  return s;
}

CompiledFunction compile(graph::TensorFunction fn, CompileOptions options) {
  auto state = std::make_shared<CompiledFunction::State>();
  graph::GuardedOptions guarded{options.name, options.recompile_limit, {}};
  if (options.fuse) {
    // The lowering holds the state by a raw pointer: the state owns the GuardedFunction that
    // owns the lowering, so the state outlives every call of it.
    CompiledFunction::State* s = state.get();
    guarded.lower = [s, name = options.name](const graph::Graph& g) { return lower(g, name, *s); };
  }
  state->guarded = std::make_unique<graph::GuardedFunction>(std::move(fn), std::move(guarded));
  return CompiledFunction(std::move(state));
}

}  // namespace loom
