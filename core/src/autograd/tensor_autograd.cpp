// loom::Tensor's autograd methods.

#include <atomic>

#include "loom/autograd/engine.h"
#include "loom/autograd/meta.h"
#include "loom/core/error.h"
#include "loom/core/tensor.h"

namespace loom {

using autograd::AutogradMeta;
using autograd::meta_of;

Tensor Tensor::detach() const { return as_strided_view(sizes(), strides(), storage_offset()); }

const Tensor& Tensor::detach_() const {
  AutogradMeta* m = meta_of(*this);
  LOOM_CHECK_T(AutogradError, m == nullptr || !m->is_view,
               "Can't detach views in-place. Use detach() instead.");
  if (m != nullptr) {
    m->grad_fn.reset();
    m->output_nr = 0;
    m->requires_grad = false;
    impl()->refresh_autograd_key();
  }
  return *this;
}

Tensor Tensor::grad() const {
  const AutogradMeta* m = meta_of(*this);
  return m ? m->grad : Tensor();
}

const Tensor& Tensor::set_grad(const Tensor& grad) const {
  if (grad.defined()) {
    LOOM_CHECK_T(ValueError, grad.sizes() == sizes(), "assigned grad has data of a different size (",
                 sizes_str(grad.sizes()), " vs the tensor's ", sizes_str(sizes()), ")");
    LOOM_CHECK_T(TypeError, grad.dtype() == dtype(), "assigned grad has dtype ",
                 dtype_name(grad.dtype()), " but the tensor is ", dtype_name(dtype()));
    LOOM_CHECK_T(DeviceError, grad.device() == device(), "assigned grad is on ",
                 grad.device().str(), " but the tensor is on ", device().str());
  }
  checked()->mutable_autograd_meta().grad = grad;
  return *this;
}

std::shared_ptr<autograd::Node> Tensor::grad_fn() const { return autograd::grad_fn(*this); }

bool Tensor::is_leaf() const { return grad_fn() == nullptr; }

uint32_t Tensor::output_nr() const {
  const AutogradMeta* m = meta_of(*this);
  return m ? m->output_nr : 0;
}

void Tensor::retain_grad() const {
  LOOM_CHECK_T(AutogradError, requires_grad(),
               "can't retain_grad on Tensor that has requires_grad=False");
  auto fn = grad_fn();
  if (!fn) return;  // a leaf already keeps its gradient
  AutogradMeta& m = checked()->mutable_autograd_meta();
  if (m.retains_grad) return;
  m.retains_grad = true;
  fn->set_retains_grad(m.output_nr, &m);
}

bool Tensor::retains_grad() const {
  const AutogradMeta* m = meta_of(*this);
  return m && m->retains_grad;
}

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph,
                      bool create_graph) const {
  autograd::backward({*this}, {gradient}, retain_graph, create_graph);
}

namespace {
std::atomic<int> g_next_hook{1};
}

int Tensor::register_hook(std::function<Tensor(const Tensor&)> hook) const {
  LOOM_CHECK_T(AutogradError, requires_grad(),
               "cannot register a hook on a tensor that doesn't require gradient");
  const int id = g_next_hook.fetch_add(1);
  if (auto fn = grad_fn()) {
    fn->add_tensor_pre_hook(output_nr(), id, std::move(hook));
  } else {
    checked()->mutable_autograd_meta().hooks.emplace_back(id, std::move(hook));
  }
  return id;
}

bool Tensor::remove_hook(int id) const {
  if (auto fn = grad_fn()) return fn->remove_tensor_pre_hook(id);
  AutogradMeta* m = meta_of(*this);
  if (m == nullptr) return false;
  for (auto it = m->hooks.begin(); it != m->hooks.end(); ++it) {
    if (it->first == id) {
      m->hooks.erase(it);
      return true;
    }
  }
  return false;
}

bool Tensor::is_view() const {
  const AutogradMeta* m = meta_of(*this);
  return m && m->is_view;
}

Tensor Tensor::base() const {
  const AutogradMeta* m = meta_of(*this);
  return m && m->is_view ? m->base : Tensor();
}

}  // namespace loom
