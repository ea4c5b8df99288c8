#include "loom/nn/normalization.h"

#include "loom/autograd/grad_mode.h"
#include "loom/nn/init.h"
#include "loom/ops/core.h"
#include "loom/ops/nn.h"
#include "loom/ops/tensor_methods.h"

namespace loom::nn {

namespace {
std::optional<Tensor> opt(const Tensor& t) {
  return t.defined() ? std::optional<Tensor>(t) : std::nullopt;
}
std::string yes_no(bool b) { return b ? "true" : "false"; }
}  // namespace

BatchNormBase::BatchNormBase(int64_t n, double e, std::optional<double> m, bool a, bool track)
    : num_features(n),
      eps(e),
      momentum(m),
      affine(a),
      track_running_stats(track),
      weight(register_parameter("weight", a ? loom::empty({n}) : Tensor())),
      bias(register_parameter("bias", a ? loom::empty({n}) : Tensor())),
      running_mean(register_buffer("running_mean", track ? loom::zeros({n}) : Tensor())),
      running_var(register_buffer("running_var", track ? loom::ones({n}) : Tensor())),
      num_batches_tracked(register_buffer("num_batches_tracked",
                                          track ? loom::zeros({}, DType::Int64) : Tensor())) {
  reset_parameters();
}

void BatchNormBase::reset_running_stats() {
  if (!track_running_stats) return;
  init::zeros_(running_mean);
  init::ones_(running_var);
  autograd::NoGradGuard no_grad;
  num_batches_tracked.zero_();
}

void BatchNormBase::reset_parameters() {
  reset_running_stats();
  if (affine) {
    init::ones_(weight);
    init::zeros_(bias);
  }
}

Tensor BatchNormBase::forward(const Tensor& input) {
  check_input_dim(input);
  // Batch statistics in training, and in eval when there are no running ones.
  const bool use_batch_stats = is_training() || !running_mean.defined();
  const bool update = is_training() && track_running_stats;
  // This batch is counted only once batch_norm has succeeded, so a call it refuses (one
  // value per channel) leaves every buffer as it was; the cumulative average's factor is
  // that of the count it will have.
  double factor = momentum.value_or(0.0);
  if (update && !momentum) factor = 1.0 / (num_batches_tracked.item<double>() + 1);
  Tensor out = loom::batch_norm(input, opt(weight), opt(bias),
                                update || !use_batch_stats ? opt(running_mean) : std::nullopt,
                                update || !use_batch_stats ? opt(running_var) : std::nullopt,
                                use_batch_stats, factor, eps, true);
  if (update) {
    autograd::NoGradGuard no_grad;
    num_batches_tracked.add_(1);
  }
  return out;
}

std::string BatchNormBase::extra_repr() const {
  return str_cat(num_features, ", eps=", eps,
                 ", momentum=", momentum ? str_cat(*momentum) : std::string("None"),
                 ", affine=", yes_no(affine),
                 ", track_running_stats=", yes_no(track_running_stats));
}

void BatchNorm1d::check_input_dim(const Tensor& input) const {
  LOOM_CHECK(input.dim() == 2 || input.dim() == 3, "expected 2D or 3D input (got ", input.dim(),
             "D input)");
}

void BatchNorm2d::check_input_dim(const Tensor& input) const {
  LOOM_CHECK(input.dim() == 4, "expected 4D input (got ", input.dim(), "D input)");
}

LayerNorm::LayerNorm(std::vector<int64_t> shape, double e, bool affine, bool with_bias)
    : normalized_shape(std::move(shape)),
      eps(e),
      elementwise_affine(affine),
      weight(register_parameter("weight", affine ? loom::empty(normalized_shape) : Tensor())),
      bias(register_parameter("bias",
                              affine && with_bias ? loom::empty(normalized_shape) : Tensor())) {
  reset_parameters();
}

void LayerNorm::reset_parameters() {
  if (weight.defined()) init::ones_(weight);
  if (bias.defined()) init::zeros_(bias);
}

Tensor LayerNorm::forward(const Tensor& input) {
  return loom::layer_norm(input, normalized_shape, opt(weight), opt(bias), eps);
}

std::string LayerNorm::extra_repr() const {
  std::string s = "(";
  for (size_t i = 0; i < normalized_shape.size(); ++i) {
    str_append(&s, i == 0 ? "" : ", ", normalized_shape[i]);
  }
  return str_cat(s, normalized_shape.size() == 1 ? ",)" : ")", ", eps=", eps,
                 ", elementwise_affine=", yes_no(elementwise_affine));
}

GroupNorm::GroupNorm(int64_t groups, int64_t channels, double e, bool a)
    : num_groups(groups),
      num_channels(channels),
      eps(e),
      affine(a),
      weight(register_parameter("weight", a ? loom::empty({channels}) : Tensor())),
      bias(register_parameter("bias", a ? loom::empty({channels}) : Tensor())) {
  LOOM_CHECK(groups > 0 && channels % groups == 0, "num_channels must be divisible by num_groups");
  reset_parameters();
}

void GroupNorm::reset_parameters() {
  if (affine) {
    init::ones_(weight);
    init::zeros_(bias);
  }
}

Tensor GroupNorm::forward(const Tensor& input) {
  return loom::group_norm(input, num_groups, opt(weight), opt(bias), eps);
}

std::string GroupNorm::extra_repr() const {
  return str_cat(num_groups, ", ", num_channels, ", eps=", eps, ", affine=", yes_no(affine));
}

}  // namespace loom::nn
