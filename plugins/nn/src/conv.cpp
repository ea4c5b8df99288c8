#include "loom/nn/conv.h"

#include <cmath>

#include "loom/nn/init.h"
#include "loom/ops/core.h"
#include "loom/ops/nn.h"
#include "loom/ops/tensor_methods.h"

namespace loom::nn {

namespace {
std::vector<int64_t> weight_sizes(size_t dims, int64_t in, int64_t out, const IntList& k,
                                  int64_t groups, bool transposed) {
  LOOM_CHECK(groups > 0, "groups must be a positive integer");
  LOOM_CHECK(in % groups == 0, "in_channels must be divisible by groups");
  LOOM_CHECK(out % groups == 0, "out_channels must be divisible by groups");
  std::vector<int64_t> s =
      transposed ? std::vector<int64_t>{in, out / groups} : std::vector<int64_t>{out, in / groups};
  for (int64_t v : k.expand(dims, "kernel_size")) s.push_back(v);
  return s;
}

std::string list_str(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) str_append(&s, i == 0 ? "" : ", ", v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}
}  // namespace

ConvNd::ConvNd(size_t dims, int64_t in, int64_t out, const IntList& k, const IntList& s,
               const IntList& p, std::string mode, const IntList& d, const IntList& op, int64_t g,
               bool with_bias, bool tr)
    : in_channels(in),
      out_channels(out),
      kernel_size(k.expand(dims, "kernel_size")),
      stride(s.expand(dims, "stride")),
      padding(mode.empty() ? p.expand(dims, "padding") : std::vector<int64_t>{}),
      padding_mode(std::move(mode)),
      dilation(d.expand(dims, "dilation")),
      output_padding(op.expand(dims, "output_padding")),
      groups(g),
      transposed(tr),
      weight(register_parameter("weight", loom::empty(weight_sizes(dims, in, out, k, g, tr)))),
      bias(register_parameter("bias", with_bias ? loom::empty({out}) : Tensor())) {
  LOOM_CHECK(padding_mode.empty() || padding_mode == "same" || padding_mode == "valid",
             "Invalid padding string '", padding_mode, "', should be one of {'valid', 'same'}");
  if (padding_mode == "same") {
    for (int64_t v : stride) {
      LOOM_CHECK(v == 1, "padding='same' is not supported for strided convolutions");
    }
  }
  reset_parameters();
}

void ConvNd::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const auto [fan_in, fan_out] = init::calculate_fan_in_and_fan_out(weight);
    if (fan_in != 0) {
      const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
      init::uniform_(bias, -bound, bound);
    }
  }
}

std::string ConvNd::extra_repr() const {
  std::string s = str_cat(in_channels, ", ", out_channels, ", kernel_size=", list_str(kernel_size),
                          ", stride=", list_str(stride));
  // As PyTorch prints them: settings at their defaults are left out.
  auto all_are = [](const std::vector<int64_t>& v, int64_t x) {
    for (int64_t e : v) {
      if (e != x) return false;
    }
    return true;
  };
  if (!padding_mode.empty()) {
    str_append(&s, ", padding=", padding_mode);
  } else if (!all_are(padding, 0)) {
    str_append(&s, ", padding=", list_str(padding));
  }
  if (!all_are(dilation, 1)) str_append(&s, ", dilation=", list_str(dilation));
  if (transposed && !all_are(output_padding, 0)) {
    str_append(&s, ", output_padding=", list_str(output_padding));
  }
  if (groups != 1) str_append(&s, ", groups=", groups);
  if (!bias.defined()) str_append(&s, ", bias=false");
  return s;
}

Conv1d::Conv1d(int64_t in, int64_t out, IntList k, IntList s, IntList p, IntList d, int64_t g,
               bool b)
    : ConvNd(1, in, out, k, s, p, "", d, 0, g, b, false) {}

Tensor Conv1d::forward(const Tensor& input) {
  if (!padding_mode.empty()) {
    return loom::conv1d(input, weight, bias_or_none(), stride, padding_mode, dilation, groups);
  }
  return loom::conv1d(input, weight, bias_or_none(), stride, padding, dilation, groups);
}

Conv2d::Conv2d(int64_t in, int64_t out, IntList k, IntList s, IntList p, IntList d, int64_t g,
               bool b)
    : ConvNd(2, in, out, k, s, p, "", d, 0, g, b, false) {}

Tensor Conv2d::forward(const Tensor& input) {
  if (!padding_mode.empty()) {
    return loom::conv2d(input, weight, bias_or_none(), stride, padding_mode, dilation, groups);
  }
  return loom::conv2d(input, weight, bias_or_none(), stride, padding, dilation, groups);
}

ConvTranspose1d::ConvTranspose1d(int64_t in, int64_t out, IntList k, IntList s, IntList p,
                                 IntList op, int64_t g, bool b, IntList d)
    : ConvNd(1, in, out, k, s, p, "", d, op, g, b, true) {}

Tensor ConvTranspose1d::forward(const Tensor& input) {
  return loom::conv_transpose1d(input, weight, bias_or_none(), stride, padding, output_padding,
                                groups, dilation);
}

ConvTranspose2d::ConvTranspose2d(int64_t in, int64_t out, IntList k, IntList s, IntList p,
                                 IntList op, int64_t g, bool b, IntList d)
    : ConvNd(2, in, out, k, s, p, "", d, op, g, b, true) {}

Tensor ConvTranspose2d::forward(const Tensor& input) {
  return loom::conv_transpose2d(input, weight, bias_or_none(), stride, padding, output_padding,
                                groups, dilation);
}

}  // namespace loom::nn
