#pragma once
/// @file
/// Running backward: torch.autograd.backward and torch.autograd.grad.

#include <optional>

#include "loom/autograd/node.h"

namespace loom::autograd {

/// Computes the gradients of roots and accumulates them into the leaves' .grad (and the
/// .grad of non-leaves that retain_grad()). grad_roots: one per root, or empty / undefined
/// entries for one-element roots (taken as ones). retain_graph: keep saved tensors for
/// another backward (default: create_graph). create_graph: record the backward itself so
/// the gradients are differentiable (higher-order derivatives).
void backward(const variable_list& roots, const variable_list& grad_roots = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false);

/// Returns the gradients of outputs with respect to inputs (torch.autograd.grad) without
/// touching any .grad. allow_unused: an input the outputs do not depend on gets an undefined
/// gradient instead of an error.
variable_list grad(const variable_list& outputs, const variable_list& inputs,
                   const variable_list& grad_outputs = {},
                   std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
                   bool allow_unused = false);

}  // namespace loom::autograd
