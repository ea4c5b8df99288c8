// Dropout, Embedding and the pooling modules: thin layers over the nn pack's functions.
#include <cmath>

#include "loom/autograd/grad_mode.h"
#include "loom/nn/dropout.h"
#include "loom/nn/embedding.h"
#include "loom/nn/init.h"
#include "loom/nn/pooling.h"
#include "loom/ops/core.h"
#include "loom/ops/nn.h"
#include "loom/ops/tensor_methods.h"

namespace loom::nn {

namespace {
double checked_p(double p) {
  LOOM_CHECK(p >= 0.0 && p <= 1.0, "dropout probability has to be between 0 and 1, but got ", p);
  return p;
}
std::string list_str(const std::vector<int64_t>& v) {
  if (v.size() == 1) return str_cat(v[0]);
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) str_append(&s, i == 0 ? "" : ", ", v[i]);
  return s + ")";
}
std::vector<int64_t> stride_or_kernel(const std::optional<IntList>& stride, const IntList& kernel,
                                      size_t n) {
  return stride ? stride->expand(n, "stride") : kernel.expand(n, "kernel_size");
}
std::string yes_no(bool b) { return b ? "true" : "false"; }
}  // namespace

// ---------------------------------------------------------------------------- dropout

Dropout::Dropout(double p) : p(checked_p(p)) {}
Tensor Dropout::forward(const Tensor& input) { return loom::dropout(input, p, is_training()); }
std::string Dropout::extra_repr() const { return str_cat("p=", p, ", inplace=false"); }

Dropout2d::Dropout2d(double p) : p(checked_p(p)) {}
Tensor Dropout2d::forward(const Tensor& input) {
  return loom::feature_dropout(input, p, is_training());
}
std::string Dropout2d::extra_repr() const { return str_cat("p=", p, ", inplace=false"); }

// ---------------------------------------------------------------------------- embedding

namespace {
std::optional<int64_t> wrap_padding_idx(std::optional<int64_t> idx, int64_t n) {
  if (!idx) return idx;
  if (*idx >= 0) {
    LOOM_CHECK(*idx < n, "Padding_idx must be within num_embeddings");
    return idx;
  }
  LOOM_CHECK(*idx >= -n, "Padding_idx must be within num_embeddings");
  return *idx + n;
}
}  // namespace

Embedding::Embedding(int64_t n, int64_t d, std::optional<int64_t> pad, bool scale)
    : num_embeddings(n),
      embedding_dim(d),
      padding_idx(wrap_padding_idx(pad, n)),
      scale_grad_by_freq(scale),
      weight(register_parameter("weight", loom::empty({n, d}))) {
  reset_parameters();
}

void Embedding::reset_parameters() {
  init::normal_(weight);
  if (padding_idx) {
    autograd::NoGradGuard no_grad;
    weight.select(0, *padding_idx).fill_(0);
  }
}

Tensor Embedding::forward(const Tensor& indices) {
  return loom::embedding(weight, indices, padding_idx.value_or(-1), scale_grad_by_freq);
}

std::string Embedding::extra_repr() const {
  std::string s = str_cat(num_embeddings, ", ", embedding_dim);
  if (padding_idx) str_append(&s, ", padding_idx=", *padding_idx);
  return s;
}

// ---------------------------------------------------------------------------- pooling

MaxPool1d::MaxPool1d(IntList k, std::optional<IntList> s, IntList p, IntList d, bool ceil)
    : kernel_size(k.expand(1, "kernel_size")),
      stride(stride_or_kernel(s, k, 1)),
      padding(p.expand(1, "padding")),
      dilation(d.expand(1, "dilation")),
      ceil_mode(ceil) {}

Tensor MaxPool1d::forward(const Tensor& input) {
  return loom::max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode);
}

MaxPool2d::MaxPool2d(IntList k, std::optional<IntList> s, IntList p, IntList d, bool ceil)
    : kernel_size(k.expand(2, "kernel_size")),
      stride(stride_or_kernel(s, k, 2)),
      padding(p.expand(2, "padding")),
      dilation(d.expand(2, "dilation")),
      ceil_mode(ceil) {}

Tensor MaxPool2d::forward(const Tensor& input) {
  return loom::max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode);
}

std::string MaxPool2d::extra_repr() const {
  return str_cat("kernel_size=", list_str(kernel_size), ", stride=", list_str(stride),
                 ", padding=", list_str(padding), ", dilation=", list_str(dilation),
                 ", ceil_mode=", yes_no(ceil_mode));
}

AvgPool1d::AvgPool1d(IntList k, std::optional<IntList> s, IntList p, bool ceil, bool include)
    : kernel_size(k.expand(1, "kernel_size")),
      stride(stride_or_kernel(s, k, 1)),
      padding(p.expand(1, "padding")),
      ceil_mode(ceil),
      count_include_pad(include) {}

Tensor AvgPool1d::forward(const Tensor& input) {
  return loom::avg_pool1d(input, kernel_size, stride, padding, ceil_mode, count_include_pad);
}

AvgPool2d::AvgPool2d(IntList k, std::optional<IntList> s, IntList p, bool ceil, bool include,
                     std::optional<int64_t> divisor)
    : kernel_size(k.expand(2, "kernel_size")),
      stride(stride_or_kernel(s, k, 2)),
      padding(p.expand(2, "padding")),
      ceil_mode(ceil),
      count_include_pad(include),
      divisor_override(divisor) {}

Tensor AvgPool2d::forward(const Tensor& input) {
  return loom::avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                          divisor_override);
}

std::string AvgPool2d::extra_repr() const {
  return str_cat("kernel_size=", list_str(kernel_size), ", stride=", list_str(stride),
                 ", padding=", list_str(padding));
}

AdaptiveAvgPool2d::AdaptiveAvgPool2d(IntList output_size)
    : output_size(output_size.expand(2, "output_size")) {}

Tensor AdaptiveAvgPool2d::forward(const Tensor& input) {
  return loom::adaptive_avg_pool2d(input, output_size);
}

std::string AdaptiveAvgPool2d::extra_repr() const {
  return str_cat("output_size=", list_str(output_size));
}

Tensor AdaptiveAvgPool1d::forward(const Tensor& input) {
  return loom::adaptive_avg_pool1d(input, {output_size});
}

AdaptiveMaxPool2d::AdaptiveMaxPool2d(IntList output_size)
    : output_size(output_size.expand(2, "output_size")) {}

Tensor AdaptiveMaxPool2d::forward(const Tensor& input) {
  return std::get<0>(forward_with_indices(input));
}

std::tuple<Tensor, Tensor> AdaptiveMaxPool2d::forward_with_indices(const Tensor& input) {
  return loom::adaptive_max_pool2d(input, output_size);
}

Upsample::Upsample(std::vector<int64_t> sz, std::vector<double> scale, std::string m,
                   std::optional<bool> align)
    : size(std::move(sz)),
      scale_factor(std::move(scale)),
      mode(std::move(m)),
      align_corners(align) {
  LOOM_CHECK(size.empty() != scale_factor.empty(),
             "Upsample: give exactly one of size and scale_factor");
}

Tensor Upsample::forward(const Tensor& input) {
  InterpolateOptions o;
  o.size = size;
  o.scale_factor = scale_factor;
  o.mode = mode;
  o.align_corners = align_corners;
  return loom::interpolate(input, o);
}

std::string Upsample::extra_repr() const {
  std::string s;
  if (!size.empty()) {
    s = "size=" + list_str(size);
  } else {
    s = "scale_factor=";
    for (size_t i = 0; i < scale_factor.size(); ++i) {
      str_append(&s, i == 0 ? "" : ", ", scale_factor[i]);
    }
  }
  return str_cat(s, ", mode='", mode, "'");
}

}  // namespace loom::nn
