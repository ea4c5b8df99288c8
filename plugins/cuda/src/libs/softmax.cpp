// CUDA kernels of softmax, log_softmax, their _-prefixed forms and backward ops
// (_softmax_backward_data, _log_softmax_backward_data) on the own kernels of
// libs/softmax.cu, with the reference CPU kernels' checks (ops/core/cpu/softmax.cpp). Inputs
// are made contiguous and seen as [outer, len, inner] around the softmax dim.
#include <optional>
#include <string_view>

#include "libs/common.h"
#include "libs/kernels.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/meta/softmax.h"
#include "loom/ops/pointwise.h"

namespace loom::cuda::libs {
namespace {

namespace meta = loom::ops::meta;

/// [outer, len, inner] of t around dim (a 0-dim tensor is one line of one element).
struct Lines {
  int64_t outer = 1, len = 1, inner = 1;
};

Lines lines_of(const Tensor& t, int64_t dim) {
  Lines l;
  if (t.dim() == 0) return l;
  const int64_t w = wrap_dim(dim, t.dim());
  l.len = t.size(w);
  for (int64_t d = 0; d < w; ++d) l.outer *= t.size(d);
  for (int64_t d = w + 1; d < t.dim(); ++d) l.inner *= t.size(d);
  return l;
}

/// op names the op called: _softmax, or softmax.int's "softmax" (so that its messages name it).
template <bool kLog>
Tensor softmax_forward(const char* op, const Tensor& self, int64_t dim, DType out_dtype) {
  check_cuda_tensors(op, {{"self", self}});
  meta::check_softmax_input(op, self, dim);
  check_float_dtype(op, "self", self);
  const bool half_to_float = self.dtype() == DType::Float16 && out_dtype == DType::Float32;
  const Tensor src = half_to_float ? dense(self) : contiguous_as(self, out_dtype);
  OpGuard g(op, self);
  Tensor out = new_on(self, self.sizes(), out_dtype);
  if (out.numel() == 0) return out;
  const Lines l = lines_of(self, dim);
  launch_softmax(kind_of(src.dtype()), kind_of(out_dtype), kLog, ptr(src), ptr(out), l.outer,
                 l.len, l.inner, g.stream());
  check_launch(op);
  return out;
}

Tensor softmax_(const Tensor& self, int64_t dim, bool half_to_float) {
  return softmax_forward<false>(
      "_softmax", self, dim, meta::softmax_half_to_float_dtype("_softmax", self, half_to_float));
}
Tensor log_softmax_(const Tensor& self, int64_t dim, bool half_to_float) {
  return softmax_forward<true>("_log_softmax", self, dim,
                               meta::softmax_half_to_float_dtype("_log_softmax", self,
                                                                 half_to_float));
}
Tensor softmax_int(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  const DType d = dtype.value_or(self.dtype());
  return softmax_forward<false>("softmax", self.dtype() == d ? self : loom::to(self, d), dim, d);
}
Tensor log_softmax_int(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  const DType d = dtype.value_or(self.dtype());
  return softmax_forward<true>("log_softmax", self.dtype() == d ? self : loom::to(self, d), dim,
                              d);
}

template <bool kLog>
Tensor softmax_backward(const Tensor& grad, const Tensor& output, int64_t dim, DType input_dtype) {
  const char* op = kLog ? "_log_softmax_backward_data" : "_softmax_backward_data";
  check_cuda_tensors(op, {{"grad_output", grad}, {"output", output}});
  meta::check_softmax_backward(op, grad, output, dim);
  check_float_dtype(op, "grad_output", grad);
  OpGuard g(op, grad);
  Tensor result = new_on(grad, grad.sizes(), grad.dtype());
  if (result.numel() > 0) {
    const Tensor gc = dense(grad), yc = dense(output);
    const Lines l = lines_of(grad, dim);
    launch_softmax_backward(kind_of(grad.dtype()), kLog, ptr(gc), ptr(yc), ptr(result), l.outer,
                            l.len, l.inner, g.stream());
    check_launch(op);
  }
  return input_dtype == result.dtype() ? result : loom::to(result, input_dtype);
}

Tensor softmax_backward_data(const Tensor& grad, const Tensor& output, int64_t dim, DType dt) {
  return softmax_backward<false>(grad, output, dim, dt);
}
Tensor log_softmax_backward_data(const Tensor& grad, const Tensor& output, int64_t dim, DType dt) {
  return softmax_backward<true>(grad, output, dim, dt);
}

}  // namespace

LOOM_LIBRARY_IMPL(aten, CUDA, m) {
  m.set_provider("cuda");
  m.impl("softmax.int", &softmax_int);
  m.impl("log_softmax.int", &log_softmax_int);
  m.impl("_softmax", &softmax_);
  m.impl("_log_softmax", &log_softmax_);
  m.impl("_softmax_backward_data", &softmax_backward_data);
  m.impl("_log_softmax_backward_data", &log_softmax_backward_data);
}

}  // namespace loom::cuda::libs
