#include "loom/autograd/meta.h"

#include "autograd/functions.h"
#include "autograd/ops.h"
#include "loom/autograd/grad_mode.h"
#include "loom/core/error.h"

namespace loom::autograd {

// Note [Strong grad accumulator]: PyTorch's leaf holds its AccumulateGrad weakly, so a
// leaf used in a loop (a parameter) makes and frees one per iteration. Here the leaf holds
// it strongly and the node points back at the leaf's impl without owning it; the leaf's
// destructor cuts that pointer, after which a graph still holding the node accumulates
// nothing (nobody could see that gradient anyway).
AutogradMeta::~AutogradMeta() {
  if (retains_grad && grad_fn) grad_fn->set_retains_grad(output_nr, nullptr);
  if (grad_accumulator) static_cast<AccumulateGrad&>(*grad_accumulator).forget_variable();
}

std::shared_ptr<Node> grad_fn(const Tensor& t) {
  AutogradMeta* m = meta_of(t);
  if (m == nullptr) return nullptr;
  if (m->is_view && m->attr_version != t.version() && m->base.requires_grad()) {
    // The storage changed in place since this view's grad_fn was made (through the base or
    // another view): its history now goes through the base's.
    m->grad_fn = make_node<ViewNode>(m->base, t);
    m->output_nr = 0;
    m->attr_version = t.version();
    t.impl()->refresh_autograd_key();
  }
  return m->grad_fn;
}

std::shared_ptr<Node> grad_accumulator(const Tensor& t) {
  AutogradMeta& m = t.impl()->mutable_autograd_meta();
  if (!m.grad_accumulator) m.grad_accumulator = make_node<AccumulateGrad>(t);
  return m.grad_accumulator;
}

Edge gradient_edge(const Tensor& t) {
  if (auto fn = grad_fn(t)) return Edge{std::move(fn), meta_of(t)->output_nr};
  const AutogradMeta* m = meta_of(t);
  if (m != nullptr && m->requires_grad) return Edge{grad_accumulator(t), 0};
  return Edge{};
}

void set_history(const Tensor& t, const std::shared_ptr<Node>& fn, uint32_t output_nr) {
  AutogradMeta& m = t.impl()->mutable_autograd_meta();
  if (m.retains_grad && m.grad_fn) m.grad_fn->set_retains_grad(m.output_nr, nullptr);
  m.grad_fn = fn;
  m.output_nr = output_nr;
  m.requires_grad = false;
  if (m.retains_grad && fn) fn->set_retains_grad(output_nr, &m);
  t.impl()->refresh_autograd_key();
}

void set_view_of(const Tensor& out, const Tensor& self) {
  // `Tensor(a)` means "may alias": reshape, contiguous and to() return a copy when they must.
  if (!out.storage().defined() || !out.is_alias_of(self)) return;
  AutogradMeta& m = out.impl()->mutable_autograd_meta();
  const AutogradMeta* sm = meta_of(self);
  m.is_view = true;
  m.base = sm != nullptr && sm->is_view ? sm->base : self;
  m.attr_version = out.version();
}

void check_inplace(const Tensor& self, std::string_view op) {
  const AutogradMeta* m = meta_of(self);
  if (m == nullptr) return;
  LOOM_CHECK_T(AutogradError, !(m->requires_grad && !m->grad_fn),
               "a leaf Variable that requires grad is being used in an in-place operation (",
               op, " on ", self.describe(), ")");
  if (m->is_view) {
    const AutogradMeta* bm = meta_of(m->base);
    LOOM_CHECK_T(AutogradError, !(bm != nullptr && bm->requires_grad && !bm->grad_fn),
                 "a view of a leaf Variable that requires grad is being used in an in-place "
                 "operation (",
                 op, " on ", self.describe(), ")");
  }
}

void rebase_history(const Tensor& self, const std::shared_ptr<Node>& fn) {
  AutogradMeta& m = self.impl()->mutable_autograd_meta();
  if (!m.is_view) {
    set_history(self, fn, 0);
    return;
  }
  const Tensor base = m.base;
  auto cs = make_node<CopySlices>(base, self, fn);
  auto& edges = cs->mutable_next_edges();
  edges.push_back(gradient_edge(base));
  for (size_t i = 1; i < fn->next_edges().size(); ++i) edges.push_back(fn->next_edges()[i]);
  set_history(base, cs, 0);
  m.grad_fn = make_node<ViewNode>(base, self);
  m.output_nr = 0;
  m.attr_version = self.version();
  self.impl()->refresh_autograd_key();
}

// ------------------------------------------------------------------------- AccumulateGrad

AccumulateGrad::AccumulateGrad(const Tensor& variable)
    : Node(UINT64_MAX), variable_(variable.impl()) {
  add_input_metadata(variable);
}

namespace {
// A gradient can become .grad as it is when nothing else holds it and it owns exactly its
// memory; otherwise .grad gets its own copy (a later add_ must not write into a gradient
// that is shared, expanded or a slice of a bigger buffer).
bool can_steal(const Tensor& g) {
  return g.impl()->use_count() == 1 && g.storage().impl()->use_count() == 1 &&
         g.is_contiguous() && g.storage_offset() == 0 &&
         g.storage().nbytes() == static_cast<size_t>(g.numel()) * g.element_size();
}
}  // namespace

variable_list AccumulateGrad::apply(variable_list&& grads) {
  if (grads.empty() || !grads[0].defined() || variable_ == nullptr) return {};
  Tensor g = std::move(grads[0]);
  AutogradMeta& m = variable_->mutable_autograd_meta();
  for (const auto& [id, hook] : m.hooks) g = run_tensor_hook(hook, id, g);
  if (!m.requires_grad) return {};
  if (!m.grad.defined()) {
    if (GradMode::is_enabled()) {
      m.grad = std::move(g);  // create_graph: .grad keeps its history
    } else {
      m.grad = can_steal(g) ? std::move(g) : ops::clone(g);
    }
  } else if (GradMode::is_enabled()) {
    m.grad = ops::add(m.grad, g);
  } else {
    ops::add_(m.grad, g);
  }
  return {};
}

// ------------------------------------------------------------------------- views

ViewNode::ViewNode(const Tensor& base, const Tensor& view)
    : base_(Geometry::of(base)), view_(Geometry::of(view)), dtype_(base.dtype()),
      device_(base.device()) {
  next_edges_.push_back(gradient_edge(base));
  add_input_metadata(view);
}

variable_list ViewNode::apply(variable_list&& grads) {
  if (!grads[0].defined()) return {Tensor()};
  Tensor result = ops::empty_strided(base_.sizes, base_.strides, dtype_, device_);
  ops::zero_(result);
  Tensor region = ops::as_strided(result, view_.sizes, view_.strides, view_.offset - base_.offset);
  ops::copy_(region, grads[0]);
  return {result};
}

CopySlices::CopySlices(const Tensor& base, const Tensor& view, std::shared_ptr<Node> fn)
    : base_(Geometry::of(base)), view_(Geometry::of(view)), dtype_(base.dtype()),
      device_(base.device()), fn_(std::move(fn)) {
  add_input_metadata(base);
}

variable_list CopySlices::apply(variable_list&& grads) {
  variable_list out(num_outputs());
  if (!grads[0].defined()) return out;
  Tensor result = ops::empty_strided(base_.sizes, base_.strides, dtype_, device_);
  ops::copy_(result, grads[0]);
  Tensor region = ops::as_strided(result, view_.sizes, view_.strides, view_.offset - base_.offset);
  variable_list inner(fn_->num_inputs());
  inner[0] = ops::clone(region);
  variable_list res = fn_->apply(std::move(inner));
  if (!res.empty() && res[0].defined()) {
    ops::copy_(region, ops::sum_to(res[0], view_.sizes));
  } else {
    ops::zero_(region);
  }
  out[0] = result;
  for (size_t i = 1; i < out.size() && i < res.size(); ++i) out[i] = std::move(res[i]);
  return out;
}

variable_list NotImplementedNode::apply(variable_list&&) {
  LOOM_THROW(NotImplementedError, "the derivative for '", op_,
             "' is not implemented (no formula is registered for it at the Autograd key)");
}

}  // namespace loom::autograd
