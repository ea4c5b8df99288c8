#pragma once
/// @file
/// torch.nn.utils in C++: gradient clipping and activation checkpointing of a module.

#include <memory>
#include <vector>

#include "loom/core/tensor.h"
#include "loom/nn/module.h"

namespace loom::nn::utils {

/// Scales the gradients of params in place so that their joint norm (the norm_type norm of
/// the per-gradient norms; norm_type may be infinity) is at most max_norm, as
/// torch.nn.utils.clip_grad_norm_: each gradient is multiplied by
/// min(1, max_norm / (total + 1e-6)). Parameters without a gradient are skipped. Returns the
/// total norm before clipping (a 0-dim tensor; 0 when no parameter has a gradient). With
/// error_if_nonfinite, a nan or infinite total is a ValueError and nothing is scaled.
Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);
/// Clamps every gradient of params to [-clip_value, clip_value] in place
/// (torch.nn.utils.clip_grad_value_).
void clip_grad_value_(const std::vector<Tensor>& params, double clip_value);

/// Runs module's forward on input through autograd::checkpoint: its intermediate tensors are
/// not kept but recomputed during backward, and the gradients still reach input and every
/// parameter of module (they are passed to the checkpoint as inputs and stand in for the
/// module's own during the recomputation). Dropout draws the same mask both times; batch
/// norm running statistics are updated twice, as in PyTorch.
Tensor checkpoint(const std::shared_ptr<Module>& module, const Tensor& input);

/// All parameters as one 1-D tensor (torch.nn.utils.parameters_to_vector).
Tensor parameters_to_vector(const std::vector<Tensor>& params);
/// Copies consecutive slices of vec into params (torch.nn.utils.vector_to_parameters);
/// throws ValueError when the sizes do not add up.
void vector_to_parameters(const Tensor& vec, const std::vector<Tensor>& params);

}  // namespace loom::nn::utils
