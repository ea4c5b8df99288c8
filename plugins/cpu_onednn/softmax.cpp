// oneDNN kernels of the softmax family: _softmax, _log_softmax, softmax.int and
// log_softmax.int (without a dtype change), _softmax_backward_data and
// _log_softmax_backward_data, along any dim.
//
// Taken: float32 tensors of at least one dim along their innermost dim (see takes_softmax),
// without half_to_float or a dtype change, forward inputs of kMinForwardElements without
// NaN lines (has_nan_line), backward with input_dtype float32 and matching sizes.
// Results are contiguous, as the reference's (ops/core/cpu/softmax.cpp); a non-contiguous
// input is copied contiguous first (oneDNN's fast kernels want a dense layout). Every other
// call, malformed ones included, goes to the reference.
#include <cstdint>
#include <limits>
#include <optional>

#include "loom/dispatcher/library.h"
#include "loom/ops/tensor_methods.h"
#include "onednn.h"

namespace loom::onednn {
namespace {

using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;

/// Measured here (2 cores, AVX-512, one thread; onednn / reference, DISABLED_Timing in
/// tests/plugins/cpu_onednn/softmax_test.cpp), along the last dim: the backward is faster
/// at every size ([4096, 1024] 1.4 / 6.9 ms, log 2.9 / 14.9 ms; [32, 128] 1.5 / 5.3 us;
/// [64, 10] 1.3 / 1.2 us), so it has no size threshold. The forward, with the scan of
/// has_nan_line (one read of the input), is faster from about 4096 elements ([4096, 1024]
/// 3.1 / 3.4 ms, [8, 8, 128, 128] 0.53 / 0.96 ms, [32, 128] 3.5 / 4.0 us) and slower below
/// ([16, 64] 1.9 / 1.4 us), so it takes from 4096. Along any other dim (lines strided in
/// memory) oneDNN 2.6 runs its reference loop, 7 to 25 times slower than ours
/// ([64, 10, 26, 26] along dim 1: 25 / 2.8 ms), so those calls are handed on.
constexpr int64_t kMinForwardElements = 4096;

struct Softmax {
  dnnl::softmax_v2_forward::primitive_desc fwd_pd;
  dnnl::softmax_v2_forward fwd;
  dnnl::softmax_v2_backward::primitive_desc bwd_pd;
  dnnl::softmax_v2_backward bwd;
};

/// The cached softmax (log: log-softmax) of a contiguous float32 tensor of sizes along axis.
std::shared_ptr<const Softmax> softmax_prims(IntArrayRef sizes, int axis, bool log, bool backward) {
  Key key("softmax");
  key.add(sizes).add(int64_t{axis}).add(int64_t{log}).add(int64_t{backward});
  auto entry = cached(key, [&] {
    // Row-major strides, for any rank.
    memory::dims strides(sizes.size(), 1);
    for (size_t d = sizes.size() - 1; d > 0; --d) strides[d - 1] = strides[d] * sizes[d];
    const memory::desc plain(memory::dims(sizes.begin(), sizes.end()), memory::data_type::f32,
                             strides);
    const algorithm alg = log ? algorithm::softmax_log : algorithm::softmax_accurate;
    auto sm = std::make_shared<Softmax>();
    sm->fwd_pd = dnnl::softmax_v2_forward::primitive_desc(
        {backward ? prop_kind::forward_training : prop_kind::forward_inference, alg, plain, plain,
         axis},
        engine());
    sm->fwd = dnnl::softmax_v2_forward(sm->fwd_pd);
    if (backward) {
      sm->bwd_pd = dnnl::softmax_v2_backward::primitive_desc({alg, plain, plain, plain, axis},
                                                             engine(), sm->fwd_pd);
      sm->bwd = dnnl::softmax_v2_backward(sm->bwd_pd);
    }
    return CachedPrimitive{sm->fwd, sm->fwd_pd, sm};
  });
  return std::static_pointer_cast<const Softmax>(entry->extra);
}

/// The axis of dim in a tensor of ndim dims, or -1 when out of range.
int axis_of(int64_t dim, int64_t ndim) {
  if (dim < -ndim || dim >= ndim) return -1;
  return static_cast<int>(dim < 0 ? dim + ndim : dim);
}

Tensor contiguous_of(const Tensor& t) { return t.is_contiguous() ? t : t.contiguous(); }

/// True when oneDNN takes a softmax of self along dim: its innermost dim (every later dim of
/// size 1, so each line is contiguous in a contiguous tensor).
bool takes_softmax(const Tensor& self, int64_t dim) {
  const int axis = axis_of(dim, self.dim());
  if (!takes({self}) || self.dim() < 1 || axis < 0) return false;
  for (int64_t d = axis + 1; d < self.dim(); ++d) {
    if (self.size(d) != 1) return false;
  }
  return true;
}

/// True when a line of x (contiguous lines of len) holds a NaN or +inf or only -inf. The
/// reference's softmax of such a line is NaN throughout (x - max is NaN somewhere); oneDNN's
/// vectorised exp clamps its argument, so it gives zeros there instead. Such inputs go to
/// the reference; a lone -inf (an attention mask) is computed alike by both and stays here.
bool has_nan_line(const float* x, int64_t lines, int64_t len) {
  int bad = 0;
#pragma omp parallel for reduction(| : bad) schedule(static) if (lines * len >= 65536)
  for (int64_t l = 0; l < lines; ++l) {
    const float* p = x + l * len;
    float m = -std::numeric_limits<float>::infinity();
    int b = 0;
#pragma omp simd reduction(max : m) reduction(| : b)
    for (int64_t i = 0; i < len; ++i) {
      m = p[i] > m ? p[i] : m;
      b |= !(p[i] < std::numeric_limits<float>::infinity());
    }
    bad |= b | !(m > -std::numeric_limits<float>::infinity());
  }
  return bad != 0;
}

/// The softmax of self along dim, or an undefined tensor when self has a line oneDNN does
/// not compute as the reference does (has_nan_line).
Tensor softmax_forward(const Tensor& self, int64_t dim, bool log) {
  const Tensor x = contiguous_of(self);
  const int64_t len = x.size(axis_of(dim, x.dim()));
  if (has_nan_line(static_cast<const float*>(x.data_ptr()), x.numel() / len, len)) return Tensor();
  const auto sm = softmax_prims(x.sizes(), axis_of(dim, x.dim()), log, false);
  Tensor out = Tensor::empty(x.sizes(), TensorOptions{}.with(DType::Float32));
  const memory::desc& md = sm->fwd_pd.src_desc();
  execute(sm->fwd, {{DNNL_ARG_SRC, memory_of(x, md)}, {DNNL_ARG_DST, memory_of(out, md)}});
  return out;
}

Tensor softmax_backward(const Tensor& grad_output, const Tensor& output, int64_t dim, bool log) {
  const Tensor g = contiguous_of(grad_output), y = contiguous_of(output);
  const auto sm = softmax_prims(y.sizes(), axis_of(dim, y.dim()), log, true);
  Tensor gi = Tensor::empty(y.sizes(), TensorOptions{}.with(DType::Float32));
  const memory::desc& md = sm->fwd_pd.src_desc();
  execute(sm->bwd, {{DNNL_ARG_DST, memory_of(y, md)},
                    {DNNL_ARG_DIFF_DST, memory_of(g, md)},
                    {DNNL_ARG_DIFF_SRC, memory_of(gi, md)}});
  return gi;
}

template <bool kLog>
Tensor softmax_(const Tensor& self, int64_t dim, bool half_to_float) {
  static const auto op = onednn::op<Tensor(const Tensor&, int64_t, bool)>(
      kLog ? "aten::_log_softmax" : "aten::_softmax");
  Tensor out;
  if (!half_to_float && takes_softmax(self, dim) && self.numel() >= kMinForwardElements) {
    out = softmax_forward(self, dim, kLog);
  }
  if (!out.defined()) return op.call_next_provider(kCPU, self, dim, half_to_float);
  return out;
}

template <bool kLog>
Tensor softmax_int(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  static const auto op = onednn::op<Tensor(const Tensor&, int64_t, std::optional<DType>)>(
      kLog ? "aten::log_softmax.int" : "aten::softmax.int");
  Tensor out;
  if ((!dtype || *dtype == DType::Float32) && takes_softmax(self, dim) &&
      self.numel() >= kMinForwardElements) {
    out = softmax_forward(self, dim, kLog);
  }
  if (!out.defined()) return op.call_next_provider(kCPU, self, dim, dtype);
  return out;
}

template <bool kLog>
Tensor softmax_backward_data(const Tensor& grad_output, const Tensor& output, int64_t dim,
                             DType input_dtype) {
  static const auto op = onednn::op<Tensor(const Tensor&, const Tensor&, int64_t, DType)>(
      kLog ? "aten::_log_softmax_backward_data" : "aten::_softmax_backward_data");
  if (input_dtype != DType::Float32 || !grad_output.defined() || !output.defined() ||
      !takes({grad_output, output}) || grad_output.sizes() != output.sizes() ||
      !takes_softmax(output, dim)) {
    return op.call_next_provider(kCPU, grad_output, output, dim, input_dtype);
  }
  return softmax_backward(grad_output, output, dim, kLog);
}

}  // namespace

LOOM_LIBRARY_IMPL(aten, CPU, m) {
  m.set_provider("onednn", /*priority=*/10);
  m.impl("_softmax", &softmax_<false>);
  m.impl("_log_softmax", &softmax_<true>);
  m.impl("softmax.int", &softmax_int<false>);
  m.impl("log_softmax.int", &softmax_int<true>);
  m.impl("_softmax_backward_data", &softmax_backward_data<false>);
  m.impl("_log_softmax_backward_data", &softmax_backward_data<true>);
}

}  // namespace loom::onednn
