// Decompositions at capture time (decompose.h).
//
// Note [Decompositions]: eager's softmax, log_softmax and layer_norm are single kernels, so a
// graph that records them has nothing of them to fuse: a residual add before a layer_norm,
// or the scale before a softmax, stays a pass of its own over memory. A capture for
// loom::compile records them as the reductions and pointwise ops they are made of instead,
// which the fusion pass turns into one row loop with their neighbours, forward and backward
// (Note [Row groups] in fusion.cpp). Only where that loop is sure to be built and to keep
// eager's results: the input is contiguous (the parts' results are then laid out as eager's
// single op lays out its own), float32 or float64 on the CPU, with elements, and the
// reduction is over the last dim. The values equal eager's up to float rounding; anything
// else records the op as it is.
#include "decompose.h"

#include <optional>
#include <string_view>

#include "loom/core/tensor.h"
#include "loom/ops/pointwise.h"
#include "loom/ops/reduction.h"

namespace loom::graph::detail {
namespace {

/// Whether t is an input the parts are built for.
bool qualifies(const Tensor& t) {
  return t.defined() && t.dim() >= 1 && t.numel() > 0 && t.is_contiguous() && t.device().is_cpu() &&
         (t.dtype() == DType::Float32 || t.dtype() == DType::Float64);
}

/// Whether dim names the last of rank dims.
bool is_last(int64_t dim, int64_t rank) { return dim == -1 || dim == rank - 1; }

/// An optional tensor argument: nullopt for None or an undefined tensor.
std::optional<Tensor> optional_tensor(const IValue& v) {
  if (v.is_none() || !v.is_tensor() || !v.to_tensor().defined()) return std::nullopt;
  return v.to_tensor();
}

/// softmax(x) over the last dim, or log_softmax with log_of.
std::optional<Tensor> softmax_parts(const Stack& stack, bool log_of) {
  // (Tensor self, int dim, ScalarType? dtype)
  if (stack.size() != 3 || !stack[0].is_tensor() || !stack[2].is_none()) return std::nullopt;
  const Tensor x = stack[0].to_tensor();
  if (!qualifies(x) || !is_last(stack[1].to_int(), x.dim())) return std::nullopt;
  const Tensor shifted = sub(x, amax(x, {-1}, true));
  const Tensor e = exp(shifted);
  const Tensor total = sum(e, {-1}, true);
  return log_of ? sub(shifted, log(total)) : div(e, total);
}

/// layer_norm(x, [n], weight, bias, eps) over the last dim.
std::optional<Tensor> layer_norm_parts(const Stack& stack) {
  // (Tensor input, int[] normalized_shape, Tensor? weight, Tensor? bias, float eps,
  //  bool cudnn_enable)
  if (stack.size() != 6 || !stack[0].is_tensor()) return std::nullopt;
  const Tensor x = stack[0].to_tensor();
  if (!qualifies(x)) return std::nullopt;
  const std::vector<int64_t>& shape = stack[1].to_int_list();
  if (shape.size() != 1 || shape[0] != x.size(-1)) return std::nullopt;
  const std::optional<Tensor> w = optional_tensor(stack[2]), b = optional_tensor(stack[3]);
  for (const std::optional<Tensor>& p : {w, b}) {
    if (p && (p->dim() != 1 || p->size(0) != shape[0] || p->dtype() != x.dtype() ||
              !p->device().is_cpu())) {
      return std::nullopt;  // eager's errors, from the op itself
    }
  }
  const Tensor centered = sub(x, mean(x, {-1}, true));
  const Tensor var = mean(mul(centered, centered), {-1}, true);
  Tensor y = mul(centered, rsqrt(add(var, stack[4].to_double())));
  if (w) y = mul(y, *w);
  if (b) y = add(y, *b);
  return y;
}

}  // namespace

bool decompose_call(const OperatorHandle& op, Stack& stack) {
  const std::string_view name = op.name();
  std::optional<Tensor> out;
  if (name == "aten::softmax.int") {
    out = softmax_parts(stack, false);
  } else if (name == "aten::log_softmax.int") {
    out = softmax_parts(stack, true);
  } else if (name == "aten::layer_norm") {
    out = layer_norm_parts(stack);
  }
  if (!out) return false;
  stack.clear();
  stack.emplace_back(std::move(*out));
  return true;
}

}  // namespace loom::graph::detail
