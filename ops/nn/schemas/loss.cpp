// Schemas of the loss functions and their backward ops, in PyTorch's spelling
// (native_functions.yaml). `int reduction` takes at::Reduction's values (0 none, 1 mean,
// 2 sum). nll_loss, nll_loss2d, nll_loss_nd, cross_entropy_loss, l1_loss, kl_div and
// margin_ranking_loss are composites of other ops, as in PyTorch (Note [Loss composites] in
// cpu/loss_util.h). PyTorch has no backward op for binary_cross_entropy_with_logits (its
// derivative is a formula) nor for kl_div and l1_loss (composites), so neither has Loom.
#include "loom/dispatcher/library.h"

// One schema a line, as in native_functions.yaml, so each op is one grep away.
// clang-format off
LOOM_LIBRARY_FRAGMENT(aten, m) {
  m.def("nll_loss_forward(Tensor self, Tensor target, Tensor? weight, int reduction, SymInt ignore_index) -> (Tensor output, Tensor total_weight)");
  m.def("nll_loss_backward(Tensor grad_output, Tensor self, Tensor target, Tensor? weight, int reduction, SymInt ignore_index, Tensor total_weight) -> Tensor");
  m.def("nll_loss2d_forward(Tensor self, Tensor target, Tensor? weight, int reduction, SymInt ignore_index) -> (Tensor output, Tensor total_weight)");
  m.def("nll_loss2d_backward(Tensor grad_output, Tensor self, Tensor target, Tensor? weight, int reduction, SymInt ignore_index, Tensor total_weight) -> Tensor");
  m.def("nll_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100) -> Tensor");
  m.def("nll_loss2d(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100) -> Tensor");
  m.def("nll_loss_nd(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100) -> Tensor");
  m.def("cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100, float label_smoothing=0.0) -> Tensor");

  m.def("mse_loss(Tensor self, Tensor target, int reduction=Mean) -> Tensor");
  m.def("mse_loss_backward(Tensor grad_output, Tensor self, Tensor target, int reduction) -> Tensor");
  m.def("l1_loss(Tensor self, Tensor target, int reduction=Mean) -> Tensor");
  m.def("smooth_l1_loss(Tensor self, Tensor target, int reduction=Mean, float beta=1.0) -> Tensor");
  m.def("smooth_l1_loss_backward(Tensor grad_output, Tensor self, Tensor target, int reduction, float beta) -> Tensor");
  m.def("huber_loss(Tensor self, Tensor target, int reduction=Mean, float delta=1.0) -> Tensor");
  m.def("huber_loss_backward(Tensor grad_output, Tensor self, Tensor target, int reduction, float delta) -> Tensor");

  m.def("binary_cross_entropy(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean) -> Tensor");
  m.def("binary_cross_entropy_backward(Tensor grad_output, Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean) -> Tensor");
  m.def("binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? weight=None, Tensor? pos_weight=None, int reduction=Mean) -> Tensor");
  m.def("kl_div(Tensor self, Tensor target, int reduction=Mean, *, bool log_target=False) -> Tensor");
  m.def("soft_margin_loss(Tensor self, Tensor target, int reduction=Mean) -> Tensor");
  m.def("soft_margin_loss_backward(Tensor grad_output, Tensor self, Tensor target, int reduction) -> Tensor");
  m.def("margin_ranking_loss(Tensor input1, Tensor input2, Tensor target, float margin=0.0, int reduction=Mean) -> Tensor");
}
// clang-format on
