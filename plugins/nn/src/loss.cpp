#include "loom/nn/loss.h"

#include "loom/ops/core.h"
#include "loom/ops/nn.h"

namespace loom::nn {

namespace {
Tensor value_or_undefined(const std::optional<Tensor>& t) { return t ? *t : Tensor(); }
const char* reduction_name(Reduction r) {
  switch (r) {
    case Reduction::None:
      return "none";
    case Reduction::Mean:
      return "mean";
    case Reduction::Sum:
      return "sum";
  }
  return "?";
}
}  // namespace

Tensor Loss::forward(const Tensor& /*input*/) {
  LOOM_THROW(ValueError, name(), ".forward takes two inputs: forward(input, target)");
}

std::string Loss::extra_repr() const {
  return str_cat("reduction='", reduction_name(reduction), "'");
}

CrossEntropyLoss::CrossEntropyLoss(std::optional<Tensor> w, int64_t ignore, Reduction r,
                                   double smoothing)
    : Loss(r),
      ignore_index(ignore),
      label_smoothing(smoothing),
      weight(register_buffer("weight", value_or_undefined(w))) {}

Tensor CrossEntropyLoss::forward(const Tensor& input, const Tensor& target) {
  return loom::cross_entropy(input, target, buffer_or_none(weight), reduction, ignore_index,
                             label_smoothing);
}

NLLLoss::NLLLoss(std::optional<Tensor> w, int64_t ignore, Reduction r)
    : Loss(r), ignore_index(ignore), weight(register_buffer("weight", value_or_undefined(w))) {}

Tensor NLLLoss::forward(const Tensor& input, const Tensor& target) {
  return loom::nll_loss_nd(input, target, buffer_or_none(weight), reduction, ignore_index);
}

Tensor MSELoss::forward(const Tensor& input, const Tensor& target) {
  return loom::mse_loss(input, target, reduction);
}

Tensor L1Loss::forward(const Tensor& input, const Tensor& target) {
  return loom::l1_loss(input, target, reduction);
}

BCELoss::BCELoss(std::optional<Tensor> w, Reduction r)
    : Loss(r), weight(register_buffer("weight", value_or_undefined(w))) {}

Tensor BCELoss::forward(const Tensor& input, const Tensor& target) {
  return loom::binary_cross_entropy(input, target, buffer_or_none(weight), reduction);
}

BCEWithLogitsLoss::BCEWithLogitsLoss(std::optional<Tensor> w, Reduction r,
                                     std::optional<Tensor> pos)
    : Loss(r),
      weight(register_buffer("weight", value_or_undefined(w))),
      pos_weight(register_buffer("pos_weight", value_or_undefined(pos))) {}

Tensor BCEWithLogitsLoss::forward(const Tensor& input, const Tensor& target) {
  return loom::binary_cross_entropy_with_logits(input, target, buffer_or_none(weight),
                                                buffer_or_none(pos_weight), reduction);
}

Tensor SmoothL1Loss::forward(const Tensor& input, const Tensor& target) {
  return loom::smooth_l1_loss(input, target, reduction, beta);
}

Tensor HuberLoss::forward(const Tensor& input, const Tensor& target) {
  return loom::huber_loss(input, target, reduction, delta);
}

Tensor KLDivLoss::forward(const Tensor& input, const Tensor& target) {
  return loom::kl_div(input, target, kl_reduction, log_target);
}

std::string KLDivLoss::extra_repr() const {
  const char* names[] = {"none", "mean", "sum", "batchmean"};
  return str_cat("reduction='", names[static_cast<int>(kl_reduction)], "'");
}

}  // namespace loom::nn
