#include "loom/nn/linear.h"

#include <cmath>

#include "loom/autograd/grad_mode.h"
#include "loom/nn/init.h"
#include "loom/ops/core.h"
#include "loom/ops/tensor_methods.h"

namespace loom::nn {

namespace {
Tensor empty_param(IntArrayRef sizes) { return loom::empty(sizes); }
std::string yes_no(bool b) { return b ? "true" : "false"; }
}  // namespace

Linear::Linear(int64_t in, int64_t out, bool with_bias)
    : in_features(in),
      out_features(out),
      weight(register_parameter("weight", empty_param({out, in}))),
      bias(register_parameter("bias", with_bias ? empty_param({out}) : Tensor())) {
  LOOM_CHECK(in >= 0 && out >= 0, "Linear: in_features and out_features must be non-negative, got ",
             in, " and ", out);
  reset_parameters();
}

void Linear::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const double bound = in_features > 0 ? 1.0 / std::sqrt(static_cast<double>(in_features)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

Tensor Linear::forward(const Tensor& input) {
  return loom::linear(input, weight, bias.defined() ? std::optional<Tensor>(bias) : std::nullopt);
}

std::string Linear::extra_repr() const {
  return str_cat("in_features=", in_features, ", out_features=", out_features,
                 ", bias=", yes_no(bias.defined()));
}

Bilinear::Bilinear(int64_t in1, int64_t in2, int64_t out, bool with_bias)
    : in1_features(in1),
      in2_features(in2),
      out_features(out),
      weight(register_parameter("weight", empty_param({out, in1, in2}))),
      bias(register_parameter("bias", with_bias ? empty_param({out}) : Tensor())) {
  reset_parameters();
}

void Bilinear::reset_parameters() {
  const double bound = 1.0 / std::sqrt(static_cast<double>(in1_features));
  init::uniform_(weight, -bound, bound);
  if (bias.defined()) init::uniform_(bias, -bound, bound);
}

Tensor Bilinear::forward(const Tensor& input1, const Tensor& input2) {
  LOOM_CHECK(input1.dim() >= 1 && input1.size(-1) == in1_features, "Bilinear: input1 ",
             input1.describe(), " must end in in1_features=", in1_features);
  LOOM_CHECK(input2.dim() >= 1 && input2.size(-1) == in2_features, "Bilinear: input2 ",
             input2.describe(), " must end in in2_features=", in2_features);
  LOOM_CHECK(input1.sizes().size() == input2.sizes().size(),
             "Bilinear: input1 and input2 must have the same batch dims, got ", input1.describe(),
             " and ", input2.describe());
  std::vector<int64_t> batch(input1.sizes().begin(), input1.sizes().end() - 1);
  const Tensor x1 = input1.reshape({-1, in1_features});
  const Tensor x2 = input2.reshape({-1, in2_features});
  // x1 [B, in1] @ W viewed as [in1, out * in2] -> [B, out, in2], then the dot with x2.
  const Tensor w = weight.permute({1, 0, 2}).reshape({in1_features, out_features * in2_features});
  const Tensor t = x1.matmul(w).view({-1, out_features, in2_features});
  Tensor y = t.mul(x2.unsqueeze(1)).sum({-1});
  if (bias.defined()) y = y.add(bias);
  batch.push_back(out_features);
  return y.reshape(batch);
}

Tensor Bilinear::forward(const Tensor& /*input*/) {
  LOOM_THROW(ValueError, "Bilinear.forward takes two inputs: forward(input1, input2)");
}

std::string Bilinear::extra_repr() const {
  return str_cat("in1_features=", in1_features, ", in2_features=", in2_features,
                 ", out_features=", out_features, ", bias=", yes_no(bias.defined()));
}

Tensor Flatten::forward(const Tensor& input) { return input.flatten(start_dim, end_dim); }

std::string Flatten::extra_repr() const {
  return str_cat("start_dim=", start_dim, ", end_dim=", end_dim);
}

Tensor Unflatten::forward(const Tensor& input) { return input.unflatten(dim, sizes); }

}  // namespace loom::nn
