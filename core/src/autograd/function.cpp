#include "loom/autograd/function.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>

#include "autograd/ops.h"
#include "loom/autograd/engine.h"
#include "loom/core/error.h"
#include "loom/core/generator.h"

namespace loom::autograd {

variable_list AutogradContext::get_saved_variables() const {
  LOOM_CHECK_T(AutogradError, !has_freed_,
               "Trying to backward through the graph a second time (or directly access saved "
               "tensors after they have already been freed). Saved intermediate values of the "
               "graph are freed when you call .backward() or autograd.grad(). Specify "
               "retain_graph=True if you need to backward through the graph a second time or if "
               "you need to access saved tensors after calling backward.");
  if (saved_.empty()) return to_save_;  // forward without recording: nothing was converted
  variable_list out;
  out.reserve(saved_.size());
  for (const SavedTensor& s : saved_) out.push_back(s.unpack());
  return out;
}

void AutogradContext::mark_dirty(const variable_list& inputs) {
  for (const Tensor& t : inputs) dirty_.push_back(t.impl());
}

void AutogradContext::mark_non_differentiable(const variable_list& outputs) {
  for (const Tensor& t : outputs) non_differentiable_.push_back(t.impl());
}

bool AutogradContext::needs_input_grad(size_t i) const {
  return i < needs_input_grad_.size() && needs_input_grad_[i];
}

variable_list CustomFunctionNode::apply(variable_list&& grads) {
  if (ctx.materialize_grads_) {
    for (size_t i = 0; i < grads.size(); ++i) {
      const InputMetadata& m = input_metadata(i);
      if (!grads[i].defined() && m.differentiable) {
        grads[i] = ops::zeros({m.sizes.data(), m.sizes.size()}, m.dtype, m.device);
      }
    }
  }
  variable_list out = backward_(&ctx, std::move(grads));
  // One gradient per forward input, as PyTorch's C++ custom functions: extra entries are
  // allowed only when undefined, and an input that is not a tensor gets none.
  const size_t want = num_outputs();
  if (out.size() > want && std::all_of(out.begin() + static_cast<std::ptrdiff_t>(want), out.end(),
                                       [](const Tensor& g) { return !g.defined(); })) {
    out.resize(want);
  }
  LOOM_CHECK_T(AutogradError, out.size() == want, "function ", name_,
               " returned an incorrect number of gradients (expected ", want, ", got ", out.size(),
               ")");
  for (size_t i = 0; i < want; ++i) {
    LOOM_CHECK_T(AutogradError, !out[i].defined() || ctx.input_defined_[i], "function ", name_,
                 " returned a gradient that is defined at position ", i + 1,
                 ", but the corresponding forward input is an undefined Tensor");
  }
  return out;
}

void CustomFunctionNode::take_references(NodeReferences& out) {
  Node::take_references(out);
  for (SavedTensor& s : ctx.saved_) s.take(out.tensors);
  for (Tensor& t : ctx.to_save_) out.tensors.push_back(std::move(t));
}

void CustomFunctionNode::release_variables() {
  for (SavedTensor& s : ctx.saved_) s.reset();
  ctx.has_freed_ = true;
}

std::shared_ptr<CustomFunctionNode> FunctionSupport::make_node(
    std::string name, CustomFunctionNode::BackwardFn backward, const variable_list& inputs) {
  bool any = false;
  for (const Tensor& t : inputs) any |= t.defined() && t.requires_grad();
  if (!any || !GradMode::is_enabled()) return nullptr;
  auto node = autograd::make_node<CustomFunctionNode>(std::move(name), backward);
  for (const Tensor& t : inputs) {
    const bool rg = t.defined() && t.requires_grad();
    node->ctx.needs_input_grad_.push_back(rg);
    node->ctx.input_defined_.push_back(t.defined());
    node->mutable_next_edges().push_back(rg ? gradient_edge(t) : Edge{});
  }
  return node;
}

variable_list FunctionSupport::finish(const std::shared_ptr<CustomFunctionNode>& node,
                                      const variable_list& inputs, variable_list outputs) {
  if (!node) return outputs;
  AutogradContext& ctx = node->ctx;
  auto contains = [](const std::vector<const TensorImpl*>& v, const Tensor& t) {
    return std::find(v.begin(), v.end(), t.impl()) != v.end();
  };
  for (const Tensor& t : inputs) {
    if (t.defined() && contains(ctx.dirty_, t)) check_inplace(t, node->name());
  }
  for (uint32_t i = 0; i < outputs.size(); ++i) {
    Tensor& out = outputs[i];
    if (!out.defined() || !is_floating_point(out.dtype()) || contains(ctx.non_differentiable_, out)) {
      node->add_input_metadata_undifferentiable();
      continue;
    }
    const bool is_input =
        std::find_if(inputs.begin(), inputs.end(), [&](const Tensor& in) { return in.is_same(out); }) !=
        inputs.end();
    if (is_input && contains(ctx.dirty_, out)) {
      // A modified input returned: its history now goes through this node.
      node->add_input_metadata(out);
      if (i == 0) {
        rebase_history(out, node);
      } else {
        set_history(out, node, i);
      }
      continue;
    }
    // An input returned as it is becomes a new tensor aliasing it (as PyTorch does).
    if (is_input) out = out.as_strided_view(out.sizes(), out.strides(), out.storage_offset());
    node->add_input_metadata(out);
    set_history(out, node, i);
  }
  for (const Tensor& t : ctx.to_save_) {
    const bool is_output = std::find_if(outputs.begin(), outputs.end(), [&](const Tensor& o) {
                             return o.is_same(t);
                           }) != outputs.end();
    ctx.saved_.emplace_back(t, is_output);
  }
  ctx.to_save_.clear();
  return outputs;
}

std::string function_name_of(const char* mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(mangled, nullptr, nullptr, &status),
                                           std::free);
  std::string name = status == 0 && d ? d.get() : mangled;
  if (const size_t colon = name.rfind("::"); colon != std::string::npos) name = name.substr(colon + 2);
  return name + "Backward";
}

// ------------------------------------------------------------------------- checkpoint

namespace {

class CheckpointNode final : public Node {
 public:
  CheckpointNode(std::function<variable_list(const variable_list&)> fn, const variable_list& inputs,
                 std::string rng_state)
      : fn_(std::move(fn)), rng_state_(std::move(rng_state)) {
    for (const Tensor& t : inputs) {
      saved_.emplace_back(t, false);
      requires_.push_back(t.defined() && t.requires_grad());
      next_edges_.push_back(requires_.back() ? gradient_edge(t) : Edge{});
    }
  }
  std::string name() const override { return "CheckpointFunctionBackward"; }

  variable_list apply(variable_list&& grads) override {
    variable_list inputs;
    for (size_t i = 0; i < saved_.size(); ++i) {
      Tensor t = saved_[i].unpack();
      if (t.defined()) {
        t = t.detach();
        if (requires_[i]) t.set_requires_grad(true);
      }
      inputs.push_back(t);
    }
    Generator& gen = default_generator(kCPU);
    const std::string now = gen.get_state();
    gen.set_state(rng_state_);
    variable_list outs;
    {
      EnableGradGuard enable;
      outs = fn_(inputs);
    }
    gen.set_state(now);
    variable_list roots, seeds, wrt;
    std::vector<size_t> wrt_index;
    for (size_t i = 0; i < outs.size() && i < grads.size(); ++i) {
      if (outs[i].defined() && outs[i].requires_grad() && grads[i].defined()) {
        roots.push_back(outs[i]);
        seeds.push_back(grads[i]);
      }
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (requires_[i]) {
        wrt.push_back(inputs[i]);
        wrt_index.push_back(i);
      }
    }
    variable_list result(inputs.size());
    if (roots.empty() || wrt.empty()) return result;
    variable_list g = grad(roots, wrt, seeds, /*retain_graph=*/false,
                           /*create_graph=*/GradMode::is_enabled(), /*allow_unused=*/true);
    for (size_t k = 0; k < wrt_index.size(); ++k) result[wrt_index[k]] = g[k];
    return result;
  }

  void release_variables() override {
    for (SavedTensor& s : saved_) s.reset();
  }

  void take_references(NodeReferences& out) override {
    Node::take_references(out);
    for (SavedTensor& s : saved_) s.take(out.tensors);
  }

 private:
  std::function<variable_list(const variable_list&)> fn_;
  std::vector<SavedTensor> saved_;
  std::vector<bool> requires_;
  std::string rng_state_;
};

}  // namespace

variable_list checkpoint(const std::function<variable_list(const variable_list&)>& fn,
                         const variable_list& inputs) {
  bool any = false;
  for (const Tensor& t : inputs) any |= t.defined() && t.requires_grad();
  if (!any || !GradMode::is_enabled()) return fn(inputs);
  const std::string rng = default_generator(kCPU).get_state();
  variable_list outs;
  {
    NoGradGuard no_grad;
    outs = fn(inputs);
  }
  auto node = make_node<CheckpointNode>(fn, inputs, rng);
  for (uint32_t i = 0; i < outs.size(); ++i) {
    if (outs[i].defined() && is_floating_point(outs[i].dtype())) {
      node->add_input_metadata(outs[i]);
      set_history(outs[i], node, i);
    } else {
      node->add_input_metadata_undifferentiable();
    }
  }
  return outs;
}

}  // namespace loom::autograd
