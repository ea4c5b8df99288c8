// loom::compile (loom/compile/compile.h): guarded graphs lowered to fused loops.
#include "loom/compile/compile.h"

#include <omp.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "code_cache.h"
#include "logs.h"
#include "loom/autograd/grad_mode.h"
#include "loom/autograd/meta.h"
#include "loom/autograd/node.h"
#include "loom/core/error.h"
#include "loom/core/generator.h"
#include "loom/core/str_cat.h"
#include "loom/core/warning.h"
#include "loom/graph/fusion.h"
#include "loom/graph/guarded.h"
#include "loom/ops/tensor_methods.h"

namespace loom {

using GroupFn = void(char* const*, int);

struct CompiledFunction::State {
  std::unique_ptr<graph::GuardedFunction> guarded;
  std::atomic<int> fused_groups{0}, compiles{0}, cache_hits{0}, fallbacks{0}, removed_nodes{0},
      folded_nodes{0};
};

namespace {

/// What a fused group's backward needs after its graph is gone: its loop, the layouts, and the
/// library that holds the loop.
struct GroupBackward {
  GroupFn* fn = nullptr;                            ///< loom_group_<i>_backward
  std::shared_ptr<graph::detail::CodeLibrary> lib;  ///< keeps fn loaded
  std::string ops;                                  ///< the group's ops, for errors
  std::vector<Tensor> output_metas;                 ///< each output's layout
  Tensor grad_layout;                               ///< the input gradients' layout
  std::vector<bool> column_grads;                   ///< FusedGroup::column_grads
  std::vector<Tensor> input_metas;                  ///< each input's layout
  std::vector<bool> input_grads;                    ///< FusedGroup::input_grads
  std::vector<std::vector<bool>> depends;           ///< [output][input]: reads it
  Device device;
};

/// The autograd node of a fused group run with grad mode on: its backward loop computes the
/// inputs' gradients from the saved inputs and the outputs' gradients (Note [Backward of a
/// fused group]).
class FusedGroupBackward final : public autograd::Node {
 public:
  FusedGroupBackward(std::shared_ptr<const GroupBackward> code, const std::vector<Tensor>& inputs,
                     std::vector<uint64_t> seeds)
      : code_(std::move(code)), seeds_(std::move(seeds)) {
    for (const Tensor& t : inputs) {
      saved_.emplace_back(t, /*is_output=*/false);
      next_edges_.push_back(t.requires_grad() ? autograd::gradient_edge(t) : autograd::Edge{});
    }
  }

  std::string name() const override { return "CompiledFunctionBackward"; }

  autograd::variable_list apply(autograd::variable_list&& grads) override {
    // Note [Backward of a fused group]: the loop is first-order code; a backward that records
    // (create_graph) would need the derivative of the derivative. As torch.compile does, it
    // refuses with a clear error instead of returning gradients with no history.
    LOOM_CHECK_T(AutogradError, !autograd::GradMode::is_enabled(),
                 "loom::compile: a compiled graph (fused ops:", code_->ops,
                 ") does not support double backward (backward with create_graph=true); "
                 "compile with CompileOptions::fuse = false or run the function eagerly");
    std::vector<Tensor> inputs;
    for (const autograd::SavedTensor& s : saved_) inputs.push_back(s.unpack(shared_from_this()));
    std::vector<Tensor> outputs(inputs.size());
    std::vector<char*> pointers;
    const Tensor& layout = code_->grad_layout;
    for (size_t k = 0; k < inputs.size(); ++k) {
      if (!code_->input_grads[k]) continue;
      // A column gradient is summed over the rows already: laid out as its input.
      outputs[k] = graph::empty_with_layout(code_->column_grads[k] ? code_->input_metas[k] : layout,
                                            code_->device);
      pointers.push_back(static_cast<char*>(outputs[k].data_ptr()));
    }
    for (const Tensor& t : inputs) pointers.push_back(static_cast<char*>(t.data_ptr()));
    // The loop's strides are constants: a gradient laid out otherwise (an expanded one from
    // sum(), say) is copied into the output's layout first; a missing one is zeros.
    std::vector<Tensor> held;
    for (size_t k = 0; k < code_->output_metas.size(); ++k) {
      const Tensor& m = code_->output_metas[k];
      Tensor g = k < grads.size() ? grads[k] : Tensor();
      if (!g.defined() || g.strides() != m.strides() || g.dtype() != m.dtype()) {
        Tensor c = graph::empty_with_layout(m, code_->device);
        if (g.defined()) {
          c.copy_(g);
        } else {
          c.zero_();
        }
        g = c;
      }
      held.push_back(g);
      pointers.push_back(static_cast<char*>(g.data_ptr()));
    }
    // The forward call's dropout seeds: the loop recomputes its masks from them.
    if (!seeds_.empty()) pointers.push_back(reinterpret_cast<char*>(seeds_.data()));
    code_->fn(pointers.data(), omp_get_max_threads());
    // As eager: an input that no output with a gradient depends on gets none (not zeros).
    for (size_t j = 0; j < outputs.size(); ++j) {
      bool reached = false;
      for (size_t k = 0; k < code_->depends.size() && k < grads.size(); ++k) {
        reached = reached || (grads[k].defined() && code_->depends[k][j]);
      }
      if (!reached) outputs[j] = Tensor();
    }
    return outputs;
  }

  void release_variables() override {
    for (autograd::SavedTensor& s : saved_) s.reset();
  }

  void take_references(autograd::NodeReferences& out) override {
    Node::take_references(out);
    for (autograd::SavedTensor& s : saved_) s.take(out.tensors);
  }

 private:
  std::shared_ptr<const GroupBackward> code_;
  std::vector<autograd::SavedTensor> saved_;
  std::vector<uint64_t> seeds_;  // the forward call's dropout seeds (FusedGroup::dropouts)
};

/// A graph whose fused groups run generated loops and whose other nodes run through the
/// dispatcher.
class FusedGraph final : public graph::Executable {
 public:
  FusedGraph(graph::Graph g, graph::FusionPlan plan,
             std::shared_ptr<graph::detail::CodeLibrary> lib)
      : graph_(std::move(g)), plan_(std::move(plan)), lib_(std::move(lib)) {
    for (size_t i = 0; i < plan_.groups.size(); ++i) {
      const graph::FusedGroup& group = plan_.groups[i];
      fns_.push_back(&lib_->library.get<GroupFn>(str_cat("loom_group_", i)));
      backward_.emplace_back();
      if (!group.backward) continue;
      auto code = std::make_shared<GroupBackward>();
      code->fn = &lib_->library.get<GroupFn>(str_cat("loom_group_", i, "_backward"));
      code->lib = lib_;
      for (int n : group.nodes) code->ops += str_cat(" ", graph_.nodes()[n].op.name());
      for (int id : group.outputs) code->output_metas.push_back(graph_.values()[id].meta);
      code->input_grads = group.input_grads;
      code->grad_layout = group.grad_layout;
      code->column_grads = group.column_grads;
      for (int id : group.inputs) code->input_metas.push_back(graph_.values()[id].meta);
      code->depends = depends(group);
      code->device = graph_.values()[group.outputs[0]].device;
      backward_.back() = std::move(code);
    }
  }

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const override {
    std::vector<Tensor> env = graph_.bind(inputs, "loom::compile");
    const int threads = omp_get_max_threads();
    std::vector<char*> pointers;
    std::vector<Tensor> group_inputs;
    for (const graph::FusionStep& step : plan_.steps) {
      if (step.node >= 0 && step.same_as >= 0) {
        // Common-subexpression elimination: the equal node's results.
        const auto& outs = graph_.nodes()[step.node].outputs;
        const auto& same = graph_.nodes()[step.same_as].outputs;
        for (size_t k = 0; k < outs.size(); ++k) {
          if (outs[k] >= 0 && same[k] >= 0) env[outs[k]] = env[same[k]];
        }
        continue;
      }
      if (step.node >= 0 && step.folded) {
        fold(step.node, env);
        continue;
      }
      if (step.node >= 0) {
        graph::Graph::call_node(graph_.nodes()[step.node], env);
        continue;
      }
      const graph::FusedGroup& group = plan_.groups[step.group];
      if (!layouts_hold(group, env)) {
        // An op before the group made a value of other sizes than at capture (its output size
        // counts values: masked_select, nonzero, unique): the loop's constants do not fit, so
        // the group's ops run eagerly.
        for (int n : group.nodes) graph::Graph::call_node(graph_.nodes()[n], env);
        continue;
      }
      pointers.clear();
      for (int id : group.outputs) {
        const graph::Value& v = graph_.values()[id];
        env[id] = graph::empty_with_layout(v.meta, v.device);  // eager's layout
        pointers.push_back(static_cast<char*>(env[id].data_ptr()));
      }
      for (int id : group.inputs) pointers.push_back(static_cast<char*>(env[id].data_ptr()));
      // One seed per dropout, drawn as eager's native_dropout draws it (FusedGroup::dropouts).
      std::vector<uint64_t> seeds;
      for (size_t k = 0; k < group.dropouts.size(); ++k) {
        seeds.push_back(default_generator(Device()).next_u64());
      }
      if (!seeds.empty()) pointers.push_back(reinterpret_cast<char*>(seeds.data()));
      fns_[step.group](pointers.data(), threads);
      if (backward_[step.group]) record(step.group, env, std::move(seeds));
    }
    return graph_.outputs_of(env);
  }

 private:
  /// A folded node's results: computed on the first run, kept (never returned or viewed, see
  /// fold_constants) and handed to the later runs.
  void fold(int node, std::vector<Tensor>& env) const {
    const graph::Node& n = graph_.nodes()[node];
    std::lock_guard<std::mutex> lock(folded_mu_);
    auto [it, first] = folded_.try_emplace(node);
    if (first) {
      try {
        graph::Graph::call_node(n, env);
      } catch (...) {
        folded_.erase(node);  // the next run tries again (and fails the same way)
        throw;
      }
      for (int id : n.outputs) it->second.push_back(id >= 0 ? env[id] : Tensor());
      return;
    }
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      if (n.outputs[k] >= 0) env[n.outputs[k]] = it->second[k];
    }
  }

  /// Makes group i's outputs in env the outputs of a FusedGroupBackward (the guards hold the
  /// grad mode and requires_grad, so an input requires grad as at capture).
  void record(int i, std::vector<Tensor>& env, std::vector<uint64_t> seeds) const {
    const graph::FusedGroup& group = plan_.groups[i];
    std::vector<Tensor> inputs;
    for (int id : group.inputs) inputs.push_back(env[id]);
    auto node = autograd::make_node<FusedGroupBackward>(backward_[i], inputs, std::move(seeds));
    const std::vector<std::vector<bool>>& depends = backward_[i]->depends;
    for (uint32_t k = 0; k < group.outputs.size(); ++k) {
      const Tensor& out = env[group.outputs[k]];
      node->add_input_metadata(out);
      // As eager: an output that depends on no input requiring grad requires none.
      bool needs = false;
      for (size_t j = 0; j < group.inputs.size(); ++j) {
        needs = needs || (group.input_grads[j] && depends[k][j]);
      }
      if (needs) autograd::set_history(out, node, k);
    }
  }

  /// Whether group's inputs in env have the sizes, strides and dtypes its loop was built for.
  bool layouts_hold(const graph::FusedGroup& group, const std::vector<Tensor>& env) const {
    for (int id : group.inputs) {
      const Tensor& t = env[id];
      const Tensor& m = graph_.values()[id].meta;
      if (t.sizes() != m.sizes() || t.strides() != m.strides() || t.dtype() != m.dtype() ||
          !t.device().is_cpu()) {
        return false;
      }
    }
    return true;
  }

  /// For each output of group, which of its inputs it depends on.
  std::vector<std::vector<bool>> depends(const graph::FusedGroup& group) const {
    absl::flat_hash_map<int, std::vector<bool>> reads;  // value -> inputs it depends on
    const size_t ni = group.inputs.size();
    for (size_t j = 0; j < ni; ++j) {
      reads[group.inputs[j]] = std::vector<bool>(ni, false);
      reads[group.inputs[j]][j] = true;
    }
    for (int i : group.nodes) {
      const graph::Node& n = graph_.nodes()[i];
      std::vector<bool> r(ni, false);
      for (const graph::NodeArgument& a : n.arguments) {
        if (a.kind != graph::NodeArgument::Kind::Value) continue;
        auto it = reads.find(a.value);
        if (it == reads.end()) continue;
        for (size_t j = 0; j < ni; ++j) r[j] = r[j] || it->second[j];
      }
      reads[n.outputs[0]] = std::move(r);
    }
    std::vector<std::vector<bool>> out;
    for (int id : group.outputs) out.push_back(reads[id]);
    return out;
  }

  graph::Graph graph_;
  graph::FusionPlan plan_;
  std::shared_ptr<graph::detail::CodeLibrary> lib_;  // keeps fns_ loaded
  std::vector<GroupFn*> fns_;
  std::vector<std::shared_ptr<const GroupBackward>> backward_;  // per group; null: none
  mutable std::mutex folded_mu_;
  mutable absl::flat_hash_map<int, std::vector<Tensor>> folded_;  // node -> its kept results
};

/// Lowers g: fuses what fuses and builds its code; nullptr (the interpreter) when nothing
/// fuses or there is no code.
std::shared_ptr<const graph::Executable> lower(const graph::Graph& g, const std::string& name,
                                               CompiledFunction::State& state) {
  graph::FusionPlan plan = graph::plan_fusion(g);
  if (plan.groups.empty()) {
    if (plan.removed == 0 && plan.folded == 0) return nullptr;  // the interpreter does the same
    state.removed_nodes += plan.removed;
    state.folded_nodes += plan.folded;
    return std::make_shared<FusedGraph>(g, std::move(plan), nullptr);
  }
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
  state.removed_nodes += plan.removed;
  state.folded_nodes += plan.folded;
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
  s.removed_nodes = state_->removed_nodes;
  s.folded_nodes = state_->folded_nodes;
  return s;
}

CompiledFunction compile(graph::TensorFunction fn, CompileOptions options) {
  auto state = std::make_shared<CompiledFunction::State>();
  graph::GuardedOptions guarded{options.name, options.recompile_limit, {}};
  // Composites are captured as their parts only where fused code can be built for them
  // (Note [Decompositions] in decompose.cpp): without a compiler, the parts would run one by
  // one, slower than the composite.
  guarded.decompose = options.fuse && graph::detail::compiler_found();
  if (options.fuse) {
    // The lowering holds the state by a raw pointer: the state owns the GuardedFunction that
    // owns the lowering, so the state outlives every call of it.
    CompiledFunction::State* s = state.get();
    guarded.lower = [s, name = options.name](const graph::Graph& g) { return lower(g, name, *s); };
  }
  state->guarded = std::make_unique<graph::GuardedFunction>(std::move(fn), std::move(guarded));
  return CompiledFunction(std::move(state));
}

struct CompiledModule::State {
  CompiledModule::Access access;
  CompileOptions options;
  std::mutex mutex;
  /// Per training mode (0: eval, 1: train): the compiled call, made on first use.
  std::optional<CompiledFunction> modes[2];
  /// The parameters' and buffers' identities the graphs were recorded with.
  std::vector<const TensorImpl*> identities;
  CompileStats dropped;  ///< counts of graphs dropped after a state change
};

CompiledModule::CompiledModule(Access access, CompileOptions options)
    : state_(std::make_shared<State>()) {
  state_->access = std::move(access);
  state_->options = std::move(options);
}

namespace {

void add_stats(CompileStats& to, const CompileStats& s) {
  to.captures += s.captures;
  to.replays += s.replays;
  to.eager += s.eager;
  to.fused_groups += s.fused_groups;
  to.compiles += s.compiles;
  to.cache_hits += s.cache_hits;
  to.fallbacks += s.fallbacks;
  to.removed_nodes += s.removed_nodes;
  to.folded_nodes += s.folded_nodes;
}

}  // namespace

Tensor CompiledModule::operator()(const Tensor& input) const {
  State& st = *state_;
  std::vector<const TensorImpl*> identities;
  for (const Tensor& t : st.access.state()) identities.push_back(t.impl());
  const int mode = st.access.training() ? 1 : 0;
  CompiledFunction f = [&] {
    std::lock_guard<std::mutex> lock(st.mutex);
    if (identities != st.identities) {
      // A parameter or buffer was replaced: the graphs captured the old tensors.
      for (auto& m : st.modes) {
        if (m) add_stats(st.dropped, m->stats());
        m.reset();
      }
      st.identities = std::move(identities);
    }
    if (!st.modes[mode]) {
      CompileOptions o = st.options;
      o.name = str_cat(o.name, mode ? " (train)" : " (eval)");
      auto call = st.access.call;
      st.modes[mode] = compile(
          [call](const std::vector<Tensor>& in) { return std::vector<Tensor>{call(in[0])}; },
          std::move(o));
    }
    return *st.modes[mode];
  }();
  return f({input})[0];
}

CompileStats CompiledModule::stats() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  CompileStats s = state_->dropped;
  for (const auto& m : state_->modes) {
    if (m) add_stats(s, m->stats());
  }
  return s;
}

}  // namespace loom
