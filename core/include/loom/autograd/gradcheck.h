#pragma once
/// @file
/// gradcheck / gradgradcheck (torch.autograd.gradcheck): analytic gradients from backward
/// compared with central finite differences in float64, for op tests and extension authors.

#include <functional>
#include <string>

#include "loom/autograd/node.h"

namespace loom::autograd {

/// The function checked: inputs to outputs (non-tensor and integer outputs are ignored).
using CheckedFunction = std::function<variable_list(const variable_list& inputs)>;

/// Tolerances and switches of gradcheck.
struct GradcheckOptions {
  double eps = 1e-6;   ///< finite-difference step
  double atol = 1e-5;  ///< absolute tolerance
  double rtol = 1e-3;  ///< relative tolerance (of the numerical value)
  /// Throw AutogradError with the report on a mismatch (PyTorch's raise_exception=True);
  /// otherwise return false.
  bool raise_exception = true;
};

/// Checks the Jacobian of fn with respect to every input that requires grad (they must be
/// float64) against finite differences. The report names the output, the input, the
/// element indices and both values of the first mismatch.
bool gradcheck(const CheckedFunction& fn, const variable_list& inputs,
               const GradcheckOptions& options = {});

/// Checks second derivatives: gradcheck of (inputs, grad_outputs) -> grad(fn(inputs),
/// inputs, grad_outputs, create_graph=true), with fixed pseudo-random grad_outputs.
bool gradgradcheck(const CheckedFunction& fn, const variable_list& inputs,
                   const GradcheckOptions& options = {});

}  // namespace loom::autograd
