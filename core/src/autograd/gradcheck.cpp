#include "loom/autograd/gradcheck.h"

#include <cmath>

#include "autograd/ops.h"
#include "loom/autograd/engine.h"
#include "loom/autograd/grad_mode.h"
#include "loom/core/error.h"

namespace loom::autograd {
namespace {

// Element address of flat (row-major logical) index i of t.
double* element(const Tensor& t, int64_t i) {
  int64_t off = 0;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    const int64_t s = t.size(d);
    off += (i % s) * t.stride(d);
    i /= s;
  }
  return t.data_ptr<double>() + off;
}

// The float outputs of fn, flattened to float64 values, one vector per output.
std::vector<std::vector<double>> values_of(const variable_list& outs) {
  std::vector<std::vector<double>> v;
  for (const Tensor& o : outs) {
    if (!o.defined() || !is_floating_point(o.dtype())) {
      v.emplace_back();
      continue;
    }
    Tensor d = o.dtype() == DType::Float64 ? o : ops::to_dtype(o, DType::Float64);
    LOOM_CHECK(d.device().is_cpu(), "gradcheck: outputs must be on the CPU (got ", d.describe(), ")");
    std::vector<double> vals(static_cast<size_t>(d.numel()));
    for (int64_t i = 0; i < d.numel(); ++i) vals[i] = *element(d, i);
    v.push_back(std::move(vals));
  }
  return v;
}

bool fail(const GradcheckOptions& o, const std::string& why) {
  if (o.raise_exception) LOOM_THROW(AutogradError, why);
  return false;
}

}  // namespace

bool gradcheck(const CheckedFunction& fn, const variable_list& inputs,
               const GradcheckOptions& options) {
  std::vector<size_t> checked;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined() || !t.requires_grad()) continue;
    LOOM_CHECK_T(TypeError, t.dtype() == DType::Float64 && t.device().is_cpu(),
                 "gradcheck: input ", i, " requires grad but is ", t.describe(),
                 "; gradcheck needs float64 CPU inputs (finite differences in lower precision "
                 "are not meaningful)");
    checked.push_back(i);
  }
  LOOM_CHECK_T(ValueError, !checked.empty(), "gradcheck: no input requires grad");

  // Analytic Jacobian, one backward per output element.
  variable_list outs = fn(inputs);
  const auto out_values = values_of(outs);
  variable_list diff_inputs;
  for (size_t i : checked) diff_inputs.push_back(inputs[i]);
  // analytic[o][k][input][j]
  std::vector<std::vector<std::vector<std::vector<double>>>> analytic(outs.size());
  for (size_t o = 0; o < outs.size(); ++o) {
    if (out_values[o].empty()) continue;
    const Tensor& out = outs[o];
    analytic[o].resize(out_values[o].size());
    for (size_t k = 0; k < out_values[o].size(); ++k) {
      auto& row = analytic[o][k];
      row.resize(checked.size());
      for (size_t c = 0; c < checked.size(); ++c) {
        row[c].assign(static_cast<size_t>(inputs[checked[c]].numel()), 0.0);
      }
      if (!out.requires_grad()) continue;
      // One-hot at output element k (outputs are on the CPU: values_of checked).
      Tensor seed = ops::zeros(out.sizes(), DType::Float64, out.device());
      *element(seed, static_cast<int64_t>(k)) = 1.0;
      if (out.dtype() != DType::Float64) seed = ops::to_dtype(seed, out.dtype());
      variable_list g = grad({out}, diff_inputs, {seed}, /*retain_graph=*/true,
                             /*create_graph=*/false, /*allow_unused=*/true);
      for (size_t c = 0; c < checked.size(); ++c) {
        if (!g[c].defined()) continue;
        Tensor g64 = g[c].dtype() == DType::Float64 ? g[c] : ops::to_dtype(g[c], DType::Float64);
        LOOM_CHECK_T(AutogradError, g64.sizes() == inputs[checked[c]].sizes(),
                     "gradcheck: the gradient of input ", checked[c], " has shape ",
                     sizes_str(g64.sizes()), " but the input has ",
                     sizes_str(inputs[checked[c]].sizes()));
        for (int64_t j = 0; j < g64.numel(); ++j) row[c][j] = *element(g64, j);
      }
    }
  }

  // Numerical Jacobian by central differences, perturbing each input element in place (raw
  // writes: no version bump, no recording). fn runs in the caller's grad mode, because
  // gradgradcheck's function itself calls grad().
  for (size_t c = 0; c < checked.size(); ++c) {
    const Tensor& x = inputs[checked[c]];
    for (int64_t j = 0; j < x.numel(); ++j) {
      double* p = element(x, j);
      const double orig = *p;
      *p = orig + options.eps;
      const auto plus = values_of(fn(inputs));
      *p = orig - options.eps;
      const auto minus = values_of(fn(inputs));
      *p = orig;
      for (size_t o = 0; o < outs.size(); ++o) {
        for (size_t k = 0; k < out_values[o].size(); ++k) {
          const double num = (plus[o][k] - minus[o][k]) / (2 * options.eps);
          const double ana = analytic[o][k][c][j];
          if (std::abs(ana - num) <= options.atol + options.rtol * std::abs(num)) continue;
          if (std::isnan(num) && std::isnan(ana)) continue;
          return fail(options,
                      loom::str_cat("gradcheck: Jacobian mismatch for output ", o,
                                    " with respect to input ", checked[c], " (", x.describe(),
                                    ") at output element ", k, ", input element ", j,
                                    ":\nnumerical: ", num, "\nanalytical: ", ana,
                                    "\n(atol ", options.atol, ", rtol ", options.rtol, ")"));
        }
      }
    }
  }
  return true;
}

bool gradgradcheck(const CheckedFunction& fn, const variable_list& inputs,
                   const GradcheckOptions& options) {
  // Fixed pseudo-random grad_outputs shaped like fn's float outputs.
  variable_list outs = fn(inputs);
  variable_list grad_outputs;
  uint64_t state = 0x9E3779B97F4A7C15ull;
  for (const Tensor& o : outs) {
    if (!o.defined() || !is_floating_point(o.dtype()) || !o.requires_grad()) continue;
    Tensor g = Tensor::empty(o.sizes(), TensorOptions{}.with(DType::Float64));
    for (int64_t i = 0; i < g.numel(); ++i) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      g.data_ptr<double>()[i] = static_cast<double>(state >> 11) / 9007199254740992.0 * 2 - 1;
    }
    g.set_requires_grad(true);
    grad_outputs.push_back(g);
  }
  const size_t n = inputs.size();
  CheckedFunction first = [&fn, n](const variable_list& all) -> variable_list {
    variable_list in(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n));
    variable_list go(all.begin() + static_cast<std::ptrdiff_t>(n), all.end());
    variable_list out = fn(in), diff_out, diff_in;
    for (const Tensor& o : out) {
      if (o.defined() && is_floating_point(o.dtype()) && o.requires_grad()) diff_out.push_back(o);
    }
    for (const Tensor& t : in) {
      if (t.defined() && t.requires_grad()) diff_in.push_back(t);
    }
    return grad(diff_out, diff_in, go, /*retain_graph=*/true, /*create_graph=*/true,
                /*allow_unused=*/true);
  };
  variable_list all = inputs;
  all.insert(all.end(), grad_outputs.begin(), grad_outputs.end());
  return gradcheck(first, all, options);
}

}  // namespace loom::autograd
