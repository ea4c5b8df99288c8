// Reference CPU kernels: batch, layer and group normalization, their backward ops, and the
// composites batch_norm, layer_norm and group_norm (which call the native ops through the
// dispatcher, so a backend that provides native_* gets them too).
//
// Statistics accumulate in double with two passes (mean, then squared deviations), so
// float32 inputs of large mean lose nothing to cancellation; float16 and bfloat16 load as
// float. Inputs of any strides are read through a contiguous copy; outputs are contiguous.
#include "loom/ops/nn/normalization.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>
#include <vector>

#include "cpu/meta.h"
#include "cpu/reduce_engine.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/nn/meta/normalization.h"
#include "loom/ops/pointwise.h"

namespace loom::ops::cpu::nn {
namespace {

namespace meta = loom::ops::meta;

using reduction::cast_contiguous;
using reduction::data_of;
using reduction::DimVec;
using reduction::kGrain;
using reduction::load;
using reduction::offset_of;
using reduction::store;
using reduction::tensor_from_values;
using Tensor3 = std::tuple<Tensor, Tensor, Tensor>;

bool present(const std::optional<Tensor>& t) { return t && t->defined(); }

/// The elements of an optional parameter (weight, bias, running stats) as doubles in
/// row-major order; n copies of fill when it is absent, and copies of fill, one per element,
/// when it is a meta tensor (which has no values; a meta call computes no statistics).
std::vector<double> param_values(const std::optional<Tensor>& t, int64_t n, double fill) {
  if (!present(t)) return std::vector<double>(static_cast<size_t>(n), fill);
  if (is_meta(*t)) return std::vector<double>(static_cast<size_t>(t->numel()), fill);
  const Tensor c = cast_contiguous(*t, DType::Float64);
  const double* p = data_of<double>(c);
  return std::vector<double>(p, p + c.numel());
}

/// Writes v into t element by element (row-major, any strides and floating dtype) and bumps
/// its version, as an in-place op does.
void write_values(std::string_view op, const Tensor& t, const std::vector<double>& v) {
  const DimVec sizes(t.sizes().begin(), t.sizes().end());
  const DimVec strides(t.strides().begin(), t.strides().end());
  dispatch_floats(op, t, [&]<typename T>(T*) {
    T* p = data_of<T>(t);
    for (int64_t i = 0; i < t.numel(); ++i) store(p + offset_of(i, sizes, strides), v[i]);
  });
  t.bump_version();
}

/// A contiguous tensor of sizes and dtype t holding v (a saved statistic or a parameter
/// gradient), on like's device (meta: no values).
Tensor vector_tensor(IntArrayRef sizes, const Tensor& like, DType t, const std::vector<double>& v) {
  return tensor_from_values(sizes, t, like.device(), v.data());
}

void check_floating(std::string_view op, std::string_view name, const Tensor& t) {
  LOOM_CHECK_T(TypeError, is_floating_point(t.dtype()), op, ": expected a floating point ", name,
               ", got ", t.describe());
}

/// The product of sizes[first, last) (last < 0: to the end).
int64_t prod(IntArrayRef sizes, size_t first, int64_t last = -1) {
  const size_t end = last < 0 ? sizes.size() : static_cast<size_t>(last);
  int64_t n = 1;
  for (size_t d = first; d < end; ++d) n *= sizes[d];
  return n;
}

/// The sum of p[0, n) in double.
template <typename T>
double sum_of(const T* p, int64_t n) {
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += load(p + i);
  return s;
}

/// The sum of (p[i] - m)^2 over [0, n) in double: the second pass of the two-pass variance.
template <typename T>
double sq_dev_of(const T* p, int64_t n, double m) {
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) {
    const double d = load(p + i) - m;
    s += d * d;
  }
  return s;
}

// ---- batch norm ----

/// Geometry of input [N, C, *] viewed as [N, C, S].
struct NCS {
  int64_t n, c, s;
};
NCS ncs_of(const Tensor& input) { return {input.size(0), input.size(1), prod(input.sizes(), 2)}; }

Tensor3 native_batch_norm(const Tensor& input, const std::optional<Tensor>& weight,
                          const std::optional<Tensor>& bias,
                          const std::optional<Tensor>& running_mean,
                          const std::optional<Tensor>& running_var, bool training, double momentum,
                          double eps) {
  constexpr const char* op = "native_batch_norm";
  check_defined(op, {{"input", input}});
  meta::check_norm_at_least_2d(op, input);
  check_floating(op, "input", input);
  meta::check_native_batch_norm(input, weight, bias, running_mean, running_var, training);
  const NCS geo = ncs_of(input);
  const int64_t N = geo.n, C = geo.c, S = geo.s;
  const Tensor x = cast_contiguous(input, input.dtype());
  Tensor out = Tensor::empty(input.sizes(), options_like(input, input.dtype()));
  const std::vector<double> w = param_values(weight, C, 1.0);
  const std::vector<double> b = param_values(bias, C, 0.0);
  std::vector<double> mean(static_cast<size_t>(C)), invstd(static_cast<size_t>(C));
  const bool big = input.numel() >= kGrain;
  dispatch_floats(op, input, [&]<typename T>(T*) {
    if (is_meta(out)) return;  // no statistics, and the running ones stay untouched
    const T* px = data_of<T>(x);
    T* po = data_of<T>(out);
    if (training) {
      const auto count = static_cast<double>(N * S);
      std::vector<double> var_sum(static_cast<size_t>(C));
#pragma omp parallel for schedule(static) if (big && C > 1)
      for (int64_t c = 0; c < C; ++c) {
        double sum = 0;
        for (int64_t n = 0; n < N; ++n) sum += sum_of(px + (n * C + c) * S, S);
        const double m = sum / count;
        double ss = 0;
        for (int64_t n = 0; n < N; ++n) ss += sq_dev_of(px + (n * C + c) * S, S, m);
        mean[c] = m;
        var_sum[c] = ss;
        invstd[c] = 1.0 / std::sqrt(ss / count + eps);
      }
      if (present(running_mean)) {
        std::vector<double> rm = param_values(running_mean, C, 0.0);
        for (int64_t c = 0; c < C; ++c) rm[c] = momentum * mean[c] + (1 - momentum) * rm[c];
        write_values(op, *running_mean, rm);
      }
      if (present(running_var)) {
        // The running variance is the unbiased one (count - 1), as PyTorch's.
        std::vector<double> rv = param_values(running_var, C, 1.0);
        for (int64_t c = 0; c < C; ++c) {
          rv[c] = momentum * (var_sum[c] / (count - 1)) + (1 - momentum) * rv[c];
        }
        write_values(op, *running_var, rv);
      }
    } else {
      mean = param_values(running_mean, C, 0.0);
      const std::vector<double> rv = param_values(running_var, C, 1.0);
      for (int64_t c = 0; c < C; ++c) invstd[c] = 1.0 / std::sqrt(rv[c] + eps);
    }
    // y = x * alpha + beta per channel, alpha = invstd * w, beta = b - mean * alpha.
#pragma omp parallel for schedule(static) if (big && N * C > 1)
    for (int64_t nc = 0; nc < N * C; ++nc) {
      const int64_t c = nc % C;
      const double alpha = invstd[c] * w[c];
      const double beta = b[c] - mean[c] * alpha;
      const T* xi = px + nc * S;
      T* yo = po + nc * S;
      for (int64_t s = 0; s < S; ++s) store(yo + s, load(xi + s) * alpha + beta);
    }
  });
  const TensorOptions opts = options_like(input, input.dtype());
  if (!training) return {out, Tensor::empty({0}, opts), Tensor::empty({0}, opts)};
  return {out, vector_tensor({C}, input, input.dtype(), mean),
          vector_tensor({C}, input, input.dtype(), invstd)};
}

Tensor3 native_batch_norm_backward(const Tensor& grad_out, const Tensor& input,
                                   const std::optional<Tensor>& weight,
                                   const std::optional<Tensor>& running_mean,
                                   const std::optional<Tensor>& running_var,
                                   const std::optional<Tensor>& save_mean,
                                   const std::optional<Tensor>& save_invstd, bool train, double eps,
                                   const std::vector<bool>& output_mask) {
  constexpr const char* op = "native_batch_norm_backward";
  check_defined(op, {{"grad_out", grad_out}, {"input", input}});
  meta::check_norm_output_mask(op, output_mask);
  meta::check_norm_at_least_2d(op, input);
  check_floating(op, "input", input);
  check_same_dtype(op, {{"grad_out", grad_out}, {"input", input}});
  meta::check_norm_grad_sizes(op, grad_out, input);
  const NCS geo = ncs_of(input);
  const int64_t N = geo.n, C = geo.c, S = geo.s;
  meta::check_batch_norm_backward_stats(op, C, train, running_mean, running_var, save_mean,
                                        save_invstd, weight);
  std::vector<double> mean, invstd;
  if (train) {
    mean = param_values(save_mean, C, 0.0);
    invstd = param_values(save_invstd, C, 1.0);
  } else {
    mean = param_values(running_mean, C, 0.0);
    invstd = param_values(running_var, C, 1.0);
    for (double& v : invstd) v = 1.0 / std::sqrt(v + eps);
  }
  const std::vector<double> w = param_values(weight, C, 1.0);
  const Tensor x = cast_contiguous(input, input.dtype());
  const Tensor g = cast_contiguous(grad_out, input.dtype());
  std::vector<double> sum_g(static_cast<size_t>(C)), dotp(static_cast<size_t>(C));
  Tensor grad_input;
  if (output_mask[0]) grad_input = Tensor::empty(input.sizes(), options_like(input, input.dtype()));
  const bool big = input.numel() >= kGrain;
  dispatch_floats(op, input, [&]<typename T>(T*) {
    if (is_meta(x)) return;
    const T* px = data_of<T>(x);
    const T* pg = data_of<T>(g);
#pragma omp parallel for schedule(static) if (big && C > 1)
    for (int64_t c = 0; c < C; ++c) {
      double sg = 0, dp = 0;
      for (int64_t n = 0; n < N; ++n) {
        const int64_t base = (n * C + c) * S;
        for (int64_t s = 0; s < S; ++s) {
          const double gv = load(pg + base + s);
          sg += gv;
          dp += (load(px + base + s) - mean[c]) * gv;
        }
      }
      sum_g[c] = sg;
      dotp[c] = dp;
    }
    if (!grad_input.defined()) return;
    T* pr = data_of<T>(grad_input);
    const auto count = static_cast<double>(N * S);
#pragma omp parallel for schedule(static) if (big && N * C > 1)
    for (int64_t nc = 0; nc < N * C; ++nc) {
      const int64_t c = nc % C;
      const int64_t base = nc * S;
      if (train) {
        // dx = (g - mean(g) - (x - mean) * dotp * invstd^2 / count) * invstd * w
        const double k = dotp[c] * invstd[c] * invstd[c] / count;
        const double gm = sum_g[c] / count;
        for (int64_t s = 0; s < S; ++s) {
          const double xm = load(px + base + s) - mean[c];
          store(pr + base + s, (load(pg + base + s) - xm * k - gm) * invstd[c] * w[c]);
        }
      } else {
        for (int64_t s = 0; s < S; ++s)
          store(pr + base + s, load(pg + base + s) * invstd[c] * w[c]);
      }
    }
  });
  const DType param_dtype = present(weight) ? weight->dtype() : input.dtype();
  Tensor grad_weight, grad_bias;
  if (output_mask[1]) {
    std::vector<double> gw(static_cast<size_t>(C));
    for (int64_t c = 0; c < C; ++c) gw[c] = dotp[c] * invstd[c];
    grad_weight = vector_tensor({C}, input, param_dtype, gw);
  }
  if (output_mask[2]) grad_bias = vector_tensor({C}, input, param_dtype, sum_g);
  return {grad_input, grad_weight, grad_bias};
}

Tensor batch_norm(const Tensor& input, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, const std::optional<Tensor>& running_mean,
                  const std::optional<Tensor>& running_var, bool training, double momentum,
                  double eps, bool /*cudnn_enabled*/) {
  check_defined("batch_norm", {{"input", input}});
  meta::check_norm_at_least_2d("batch_norm", input);
  meta::check_batch_norm_params("batch_norm", input, weight, bias, running_mean, running_var,
                                training);
  meta::check_batch_norm_values_per_channel("batch_norm", input, training);
  // As PyTorch: an empty batch is a copy of the input, the running stats stay as they are.
  if (input.numel() == 0) return loom::clone(input);
  return std::get<0>(loom::native_batch_norm(input, weight, bias, running_mean, running_var,
                                             training, momentum, eps));
}

// ---- layer norm ----

Tensor3 native_layer_norm(const Tensor& input, IntArrayRef normalized_shape,
                          const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                          double eps) {
  constexpr const char* op = "native_layer_norm";
  check_defined(op, {{"input", input}});
  check_floating(op, "input", input);
  const auto rows = meta::check_layer_norm_inputs(op, input, normalized_shape, weight, bias);
  const int64_t M = rows.first, N = rows.second;
  const Tensor x = cast_contiguous(input, input.dtype());
  Tensor out = Tensor::empty(input.sizes(), options_like(input, input.dtype()));
  const std::vector<double> w = param_values(weight, N, 1.0);
  const std::vector<double> b = param_values(bias, N, 0.0);
  std::vector<double> mean(static_cast<size_t>(M)), rstd(static_cast<size_t>(M));
  dispatch_floats(op, input, [&]<typename T>(T*) {
    if (is_meta(out)) return;
    const T* px = data_of<T>(x);
    T* po = data_of<T>(out);
#pragma omp parallel for schedule(static) if (M * N >= kGrain && M > 1)
    for (int64_t i = 0; i < M; ++i) {
      const T* row = px + i * N;
      const double m = N > 0 ? sum_of(row, N) / static_cast<double>(N) : 0.0;
      const double ss = sq_dev_of(row, N, m);
      const double r = 1.0 / std::sqrt((N > 0 ? ss / static_cast<double>(N) : 0.0) + eps);
      mean[i] = m;
      rstd[i] = r;
      T* y = po + i * N;
      for (int64_t j = 0; j < N; ++j) store(y + j, (load(row + j) - m) * r * w[j] + b[j]);
    }
  });
  const std::vector<int64_t> stat = meta::layer_norm_stat_sizes(input, normalized_shape.size());
  return {out, vector_tensor(stat, input, input.dtype(), mean),
          vector_tensor(stat, input, input.dtype(), rstd)};
}

Tensor3 native_layer_norm_backward(const Tensor& grad_out, const Tensor& input,
                                   IntArrayRef normalized_shape, const Tensor& mean_t,
                                   const Tensor& rstd_t, const std::optional<Tensor>& weight,
                                   const std::optional<Tensor>& bias,
                                   const std::vector<bool>& output_mask) {
  constexpr const char* op = "native_layer_norm_backward";
  check_defined(op, {{"grad_out", grad_out}, {"input", input}, {"mean", mean_t}, {"rstd", rstd_t}});
  meta::check_norm_output_mask(op, output_mask);
  check_floating(op, "input", input);
  check_same_dtype(op, {{"grad_out", grad_out}, {"input", input}});
  const auto rows = meta::check_layer_norm_inputs(op, input, normalized_shape, weight, bias);
  const int64_t M = rows.first, N = rows.second;
  meta::check_layer_norm_backward(op, grad_out, input, mean_t, rstd_t, M);
  const std::vector<double> mean = param_values(mean_t, M, 0.0);
  const std::vector<double> rstd = param_values(rstd_t, M, 1.0);
  const std::vector<double> w = param_values(weight, N, 1.0);
  const Tensor x = cast_contiguous(input, input.dtype());
  const Tensor g = cast_contiguous(grad_out, input.dtype());
  const bool big = M * N >= kGrain;
  const TensorOptions opts = options_like(input, input.dtype());
  Tensor grad_input;
  std::vector<double> gw, gb;
  if (output_mask[0]) grad_input = Tensor::empty(input.sizes(), opts);
  if (output_mask[1]) gw.assign(static_cast<size_t>(N), 0.0);
  if (output_mask[2]) gb.assign(static_cast<size_t>(N), 0.0);
  dispatch_floats(op, input, [&]<typename T>(T*) {
    if (is_meta(x)) return;
    const T* px = data_of<T>(x);
    const T* pg = data_of<T>(g);
    if (grad_input.defined()) {
      T* pr = data_of<T>(grad_input);
      // dx = rstd * (g*w - mean(g*w) - xhat * mean(g*w * xhat)), xhat = (x - mean) * rstd.
#pragma omp parallel for schedule(static) if (big && M > 1)
      for (int64_t i = 0; i < M; ++i) {
        const T* xr = px + i * N;
        const T* gr = pg + i * N;
        double a = 0, c = 0;
        for (int64_t j = 0; j < N; ++j) {
          const double gwj = load(gr + j) * w[j];
          a += gwj;
          c += gwj * (load(xr + j) - mean[i]) * rstd[i];
        }
        a /= static_cast<double>(N);
        c /= static_cast<double>(N);
        T* dr = pr + i * N;
        for (int64_t j = 0; j < N; ++j) {
          const double xhat = (load(xr + j) - mean[i]) * rstd[i];
          store(dr + j, rstd[i] * (load(gr + j) * w[j] - a - xhat * c));
        }
      }
    }
    if (gw.empty() && gb.empty()) return;
    // Column sums over the rows, a tile of neighbouring columns at a time so loads stay
    // contiguous.
    constexpr int64_t kTile = 64;
    const int64_t tiles = (N + kTile - 1) / kTile;
#pragma omp parallel for schedule(static) if (big && tiles > 1)
    for (int64_t t = 0; t < tiles; ++t) {
      const int64_t j0 = t * kTile;
      const int64_t nb = std::min(kTile, N - j0);
      double aw[kTile] = {}, ab[kTile] = {};
      for (int64_t i = 0; i < M; ++i) {
        const T* xr = px + i * N + j0;
        const T* gr = pg + i * N + j0;
        for (int64_t j = 0; j < nb; ++j) {
          const double gv = load(gr + j);
          aw[j] += gv * (load(xr + j) - mean[i]) * rstd[i];
          ab[j] += gv;
        }
      }
      for (int64_t j = 0; j < nb; ++j) {
        if (!gw.empty()) gw[j0 + j] = aw[j];
        if (!gb.empty()) gb[j0 + j] = ab[j];
      }
    }
  });
  Tensor grad_weight, grad_bias;
  if (output_mask[1]) {
    grad_weight = vector_tensor(normalized_shape, input,
                                present(weight) ? weight->dtype() : input.dtype(), gw);
  }
  if (output_mask[2]) {
    grad_bias =
        vector_tensor(normalized_shape, input, present(bias) ? bias->dtype() : input.dtype(), gb);
  }
  return {grad_input, grad_weight, grad_bias};
}

Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape,
                  const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                  double eps, bool /*cudnn_enable*/) {
  check_defined("layer_norm", {{"input", input}});
  // Checked here too, so that a bad shape names the op the caller called.
  meta::check_layer_norm_inputs("layer_norm", input, normalized_shape, weight, bias);
  return std::get<0>(loom::native_layer_norm(input, normalized_shape, weight, bias, eps));
}

// ---- group norm ----

Tensor3 native_group_norm(const Tensor& input, const std::optional<Tensor>& weight,
                          const std::optional<Tensor>& bias, int64_t N, int64_t C, int64_t HxW,
                          int64_t group, double eps) {
  constexpr const char* op = "native_group_norm";
  check_defined(op, {{"input", input}});
  check_floating(op, "input", input);
  meta::check_group_norm_inputs(op, input, weight, bias, C, group);
  meta::check_group_norm_geometry(op, input, N, C, HxW);
  const int64_t D = C / group;
  const int64_t block = D * HxW;
  const Tensor x = cast_contiguous(input, input.dtype());
  Tensor out = Tensor::empty(input.sizes(), options_like(input, input.dtype()));
  const std::vector<double> w = param_values(weight, C, 1.0);
  const std::vector<double> b = param_values(bias, C, 0.0);
  std::vector<double> mean(static_cast<size_t>(N * group)), rstd(mean.size());
  dispatch_floats(op, input, [&]<typename T>(T*) {
    if (is_meta(out)) return;
    const T* px = data_of<T>(x);
    T* po = data_of<T>(out);
#pragma omp parallel for schedule(static) if (input.numel() >= kGrain && N * group > 1)
    for (int64_t ng = 0; ng < N * group; ++ng) {
      const T* blk = px + ng * block;
      const double m = block > 0 ? sum_of(blk, block) / static_cast<double>(block) : 0.0;
      const double ss = sq_dev_of(blk, block, m);
      const double r = 1.0 / std::sqrt((block > 0 ? ss / static_cast<double>(block) : 0.0) + eps);
      mean[ng] = m;
      rstd[ng] = r;
      const int64_t c0 = (ng % group) * D;
      for (int64_t d = 0; d < D; ++d) {
        const double alpha = r * w[c0 + d];
        const double beta = b[c0 + d] - m * alpha;
        const T* xi = blk + d * HxW;
        T* yo = po + ng * block + d * HxW;
        for (int64_t s = 0; s < HxW; ++s) store(yo + s, load(xi + s) * alpha + beta);
      }
    }
  });
  return {out, vector_tensor({N, group}, input, input.dtype(), mean),
          vector_tensor({N, group}, input, input.dtype(), rstd)};
}

Tensor3 native_group_norm_backward(const Tensor& grad_out, const Tensor& input,
                                   const Tensor& mean_t, const Tensor& rstd_t,
                                   const std::optional<Tensor>& weight, int64_t N, int64_t C,
                                   int64_t HxW, int64_t group,
                                   const std::vector<bool>& output_mask) {
  constexpr const char* op = "native_group_norm_backward";
  check_defined(op, {{"grad_out", grad_out}, {"input", input}, {"mean", mean_t}, {"rstd", rstd_t}});
  meta::check_norm_output_mask(op, output_mask);
  check_floating(op, "input", input);
  check_same_dtype(op, {{"grad_out", grad_out}, {"input", input}});
  meta::check_group_norm_inputs(op, input, weight, std::nullopt, C, group);
  meta::check_group_norm_geometry(op, input, N, C, HxW);
  meta::check_group_norm_backward(op, grad_out, input, mean_t, rstd_t, N, group);
  const int64_t D = C / group;
  const int64_t block = D * HxW;
  const std::vector<double> mean = param_values(mean_t, N * group, 0.0);
  const std::vector<double> rstd = param_values(rstd_t, N * group, 1.0);
  const std::vector<double> w = param_values(weight, C, 1.0);
  const Tensor x = cast_contiguous(input, input.dtype());
  const Tensor g = cast_contiguous(grad_out, input.dtype());
  const bool big = input.numel() >= kGrain;
  Tensor grad_input;
  if (output_mask[0]) grad_input = Tensor::empty(input.sizes(), options_like(input, input.dtype()));
  std::vector<double> gw(static_cast<size_t>(C)), gb(static_cast<size_t>(C));
  dispatch_floats(op, input, [&]<typename T>(T*) {
    if (is_meta(x)) return;
    const T* px = data_of<T>(x);
    const T* pg = data_of<T>(g);
    if (grad_input.defined()) {
      T* pr = data_of<T>(grad_input);
      // Per group: dx = rstd * (g*w - mean(g*w) - xhat * mean(g*w * xhat)).
#pragma omp parallel for schedule(static) if (big && N * group > 1)
      for (int64_t ng = 0; ng < N * group; ++ng) {
        const int64_t c0 = (ng % group) * D;
        const int64_t base = ng * block;
        const double m = mean[ng], r = rstd[ng];
        double a = 0, c = 0;
        for (int64_t d = 0; d < D; ++d) {
          for (int64_t s = 0; s < HxW; ++s) {
            const int64_t k = base + d * HxW + s;
            const double gwk = load(pg + k) * w[c0 + d];
            a += gwk;
            c += gwk * (load(px + k) - m) * r;
          }
        }
        a /= static_cast<double>(block);
        c /= static_cast<double>(block);
        for (int64_t d = 0; d < D; ++d) {
          for (int64_t s = 0; s < HxW; ++s) {
            const int64_t k = base + d * HxW + s;
            const double xhat = (load(px + k) - m) * r;
            store(pr + k, r * (load(pg + k) * w[c0 + d] - a - xhat * c));
          }
        }
      }
    }
    if (!output_mask[1] && !output_mask[2]) return;
#pragma omp parallel for schedule(static) if (big && C > 1)
    for (int64_t c = 0; c < C; ++c) {
      double aw = 0, ab = 0;
      for (int64_t n = 0; n < N; ++n) {
        const int64_t ng = n * group + c / D;
        const int64_t base = (n * C + c) * HxW;
        for (int64_t s = 0; s < HxW; ++s) {
          const double gv = load(pg + base + s);
          aw += gv * (load(px + base + s) - mean[ng]) * rstd[ng];
          ab += gv;
        }
      }
      gw[c] = aw;
      gb[c] = ab;
    }
  });
  const DType param_dtype = present(weight) ? weight->dtype() : input.dtype();
  Tensor grad_weight, grad_bias;
  if (output_mask[1]) grad_weight = vector_tensor({C}, input, param_dtype, gw);
  if (output_mask[2]) grad_bias = vector_tensor({C}, input, param_dtype, gb);
  return {grad_input, grad_weight, grad_bias};
}

Tensor group_norm(const Tensor& input, int64_t num_groups, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, double eps, bool /*cudnn_enabled*/) {
  check_defined("group_norm", {{"input", input}});
  meta::check_norm_at_least_2d("group_norm", input);
  const int64_t N = input.size(0), C = input.size(1);
  meta::check_group_norm_inputs("group_norm", input, weight, bias, C, num_groups);
  const int64_t HxW = prod(input.sizes(), 2);
  return std::get<0>(loom::native_group_norm(input, weight, bias, N, C, HxW, num_groups, eps));
}

}  // namespace

LOOM_REFERENCE_KERNELS(aten, m) {
  m.set_provider("reference");
  m.impl("native_batch_norm", &native_batch_norm);
  m.impl("native_batch_norm_backward", &native_batch_norm_backward);
  m.impl("native_layer_norm", &native_layer_norm);
  m.impl("native_layer_norm_backward", &native_layer_norm_backward);
  m.impl("native_group_norm", &native_group_norm);
  m.impl("native_group_norm_backward", &native_group_norm_backward);
}

// The composites: one kernel for every backend and for autograd, which records the native
// ops they call.
LOOM_LIBRARY_IMPL(aten, CompositeImplicitAutograd, m) {
  m.set_provider("reference");
  m.impl("batch_norm", &batch_norm);
  m.impl("layer_norm", &layer_norm);
  m.impl("group_norm", &group_norm);
}

}  // namespace loom::ops::cpu::nn
