#pragma once
/// @file
/// Launchers of the own kernels under plugins/cuda/src/libs (pooling.cu, softmax.cu, channel.cu,
/// normalization.cu, loss.cu, embedding.cu): POD arguments only, so this header is shared by
/// the .cu files (nvcc) and the .cpp files (g++) without Loom headers in device code.
///
/// `kind` names the floating element type: 0 float32, 1 float64, 2 float16, 3 bfloat16
/// (libs::kind_of). float16 and bfloat16 compute in float, float64 in double. Every launcher
/// enqueues on `stream` and returns; the caller checks the launch (cuda::check_launch).
/// No kernel here uses floating-point atomics: each result is summed by one thread or one
/// block in a fixed order, so results are bit-identical run to run (deterministic mode needs
/// nothing more from them).

#include <cuda_runtime_api.h>

#include <cstdint>

namespace loom::cuda::libs {

// ---- pooling (pooling.cu) ----

/// A 2-d pooling over planes of [planes, H, W] (plane p at (p / C) * sn + (p % C) * sc).
struct PoolGeometry {
  int64_t planes = 0, C = 1, H = 0, W = 0;
  int64_t sn = 0, sc = 0, sh = 0, sw = 0;  ///< input strides, in elements
  int64_t oH = 0, oW = 0;
  int64_t kH = 1, kW = 1, sH = 1, sW = 1, pH = 0, pW = 0, dH = 1, dW = 1;
};

/// out [planes, oH, oW] contiguous and, if idx, each maximum's h * W + w (NaN wins).
void launch_max_pool2d(int kind, const void* in, const PoolGeometry& g, void* out, int64_t* idx,
                       cudaStream_t stream);
/// grad_input [planes, H, W] from contiguous grad_output and indices [planes, oH, oW]: each
/// input element sums the gradients of the windows whose index names it.
void launch_max_pool2d_backward(int kind, const void* grad_output, const int64_t* idx,
                                const PoolGeometry& g, void* grad_input, cudaStream_t stream);
/// divisor_override 0: none.
void launch_avg_pool2d(int kind, const void* in, const PoolGeometry& g, bool count_include_pad,
                       int64_t divisor_override, void* out, cudaStream_t stream);
/// grad_output contiguous [planes, oH, oW]; grad_input contiguous [planes, H, W].
void launch_avg_pool2d_backward(int kind, const void* grad_output, const PoolGeometry& g,
                                bool count_include_pad, int64_t divisor_override,
                                void* grad_input, cudaStream_t stream);
void launch_adaptive_avg_pool2d(int kind, const void* in, const PoolGeometry& g, void* out,
                                cudaStream_t stream);
void launch_adaptive_avg_pool2d_backward(int kind, const void* grad_output, const PoolGeometry& g,
                                         void* grad_input, cudaStream_t stream);
/// Adaptive max pooling: out and idx [planes, oH, oW] contiguous (NaN wins).
void launch_adaptive_max_pool2d(int kind, const void* in, const PoolGeometry& g, void* out,
                                int64_t* idx, cudaStream_t stream);
/// grad_input [planes, H, W] from contiguous grad_output and indices [planes, oH, oW].
void launch_adaptive_max_pool2d_backward(int kind, const void* grad_output, const int64_t* idx,
                                         const PoolGeometry& g, void* grad_input,
                                         cudaStream_t stream);

// ---- softmax (softmax.cu) ----

/// Softmax or log-softmax over the middle dim of a contiguous [outer, len, inner] tensor.
/// in_kind == out_kind, or float16 in and float32 out (half_to_float).
void launch_softmax(int in_kind, int out_kind, bool log, const void* in, void* out, int64_t outer,
                    int64_t len, int64_t inner, cudaStream_t stream);
/// softmax: gi = y * (g - sum(g * y)); log-softmax: gi = g - exp(y) * sum(g); contiguous.
void launch_softmax_backward(int kind, bool log, const void* grad, const void* output,
                             void* grad_input, int64_t outer, int64_t len, int64_t inner,
                             cudaStream_t stream);

// ---- per-channel helpers of the convolutions (channel.cu); tensors contiguous [N, C, S] ----

/// y[n, c, s] += bias[c].
void launch_add_channel_bias(int kind, void* y, const void* bias, int64_t N, int64_t C, int64_t S,
                             cudaStream_t stream);
/// out[c] = the sum over n and s of g[n, c, s] (in double, one block per channel).
void launch_channel_sum(int kind, const void* g, int64_t N, int64_t C, int64_t S, void* out,
                        cudaStream_t stream);

// ---- batch norm (normalization.cu); x contiguous [N, C, S] ----

/// Per channel: mean and invstd = 1 / sqrt(biased var + eps) into save_mean / save_invstd
/// (kind, [C]); running stats (kind, [C], contiguous, or null) updated with momentum, the
/// variance unbiased.
void launch_batch_norm_stats(int kind, const void* x, int64_t N, int64_t C, int64_t S, double eps,
                             double momentum, void* save_mean, void* save_invstd,
                             void* running_mean, void* running_var, cudaStream_t stream);
/// y = (x - mean) * invstd * w + b; with is_var, `scale` is a variance and invstd is
/// 1 / sqrt(scale + eps). weight / bias may be null (1 / 0).
void launch_batch_norm_apply(int kind, const void* x, int64_t N, int64_t C, int64_t S,
                             const void* mean, const void* scale, bool is_var, double eps,
                             const void* weight, const void* bias, void* y, cudaStream_t stream);
/// Per channel sums of g and of (x - mean) * g into sum_g and dotp (double, [C]);
/// grad_weight = dotp * invstd and grad_bias = sum_g (kind, or null).
void launch_batch_norm_backward_reduce(int kind, const void* g, const void* x, int64_t N, int64_t C,
                                       int64_t S, const void* mean, const void* scale, bool is_var,
                                       double eps, double* sum_g, double* dotp, void* grad_weight,
                                       void* grad_bias, cudaStream_t stream);
/// grad_input: train: (g - sum_g / count - (x - mean) * dotp * invstd^2 / count) * invstd * w;
/// eval: g * invstd * w.
void launch_batch_norm_backward_input(int kind, const void* g, const void* x, int64_t N,
                                      int64_t C, int64_t S, const void* mean, const void* scale,
                                      bool is_var, double eps, const void* weight,
                                      const double* sum_g, const double* dotp, bool train,
                                      void* grad_input, cudaStream_t stream);

// ---- layer norm (normalization.cu); x contiguous [M, K] ----

/// y = (x - mean) * rstd * w + b per row; mean and rstd (kind, [M]).
void launch_layer_norm(int kind, const void* x, int64_t M, int64_t K, double eps,
                       const void* weight, const void* bias, void* y, void* mean, void* rstd,
                       cudaStream_t stream);
/// grad_input per row (may be null), and grad_weight / grad_bias (kind, [K], or null)
/// summed over the rows by one thread per column.
void launch_layer_norm_backward(int kind, const void* g, const void* x, int64_t M, int64_t K,
                                const void* mean, const void* rstd, const void* weight,
                                void* grad_input, void* grad_weight, void* grad_bias,
                                cudaStream_t stream);

// ---- group norm (normalization.cu); x contiguous [N, C, HxW], G groups of C / G channels ----

/// y = (x - mean) * rstd * w[c] + b[c] per (n, group) block; mean and rstd (kind, [N, G]).
void launch_group_norm(int kind, const void* x, int64_t N, int64_t C, int64_t HxW, int64_t G,
                       double eps, const void* weight, const void* bias, void* y, void* mean,
                       void* rstd, cudaStream_t stream);
/// grad_input per (n, group) block (may be null), and grad_weight / grad_bias (kind, [C], or
/// null) per channel.
void launch_group_norm_backward(int kind, const void* g, const void* x, int64_t N, int64_t C,
                                int64_t HxW, int64_t G, const void* mean, const void* rstd,
                                const void* weight, void* grad_input, void* grad_weight,
                                void* grad_bias, cudaStream_t stream);

// ---- losses (loss.cu) ----

/// The nll geometry: input as [n, c, h, w] and target as [n, h, w] with element strides.
struct NllGeometry {
  int64_t n = 1, c = 1, h = 1, w = 1;
  int64_t xn = 0, xc = 0, xh = 0, xw = 0;
  int64_t tn = 0, th = 0, tw = 0;
};

/// Forward of nll_loss / nll_loss2d. unreduced: out [pairs], total_weight set to 0; else out
/// and total_weight are scalars (mean divides by the weight sum). bad: two int64 on the
/// device, zeroed by the caller: set to {1, target} for a target outside [0, c).
void launch_nll_forward(int kind, bool target_u8, const void* x, const void* target,
                        const NllGeometry& g, const void* weight, int64_t ignore_index,
                        bool mean, bool unreduced, void* out, void* total_weight, int64_t* bad,
                        cudaStream_t stream);
/// grad_input (contiguous [n, c, h, w], zeroed by the caller) at each pair's target class:
/// -w * grad (unreduced: grad_output [pairs] contiguous; else the scalar, divided by
/// total_weight for mean).
void launch_nll_backward(int kind, bool target_u8, const void* target, const NllGeometry& g,
                         const void* weight, int64_t ignore_index, bool mean, bool unreduced,
                         const void* grad_output, const void* total_weight, void* grad_input,
                         int64_t* bad, cudaStream_t stream);

/// The pointwise losses of launch_pointwise_loss (the reference's formulas,
/// ops/nn/cpu/loss_pointwise.cpp); param is beta (smooth L1) or delta (Huber).
enum class PointwiseLoss : int { Mse, SmoothL1, Huber, SoftMargin, Bce, BceWithLogits };

/// The number of partial sums launch_pointwise_loss needs for n elements.
int64_t loss_partials(int64_t n);
/// The loss of n contiguous elements x, y, with weight w and pos_weight pw (n contiguous
/// elements each, or null for 1): unreduced into out [n], else summed (mean: / n) into the
/// scalar out through partials (double, loss_partials(n) of them). For Bce, flags (two int64
/// on the device, zeroed by the caller) are set to 1 for an input / target outside [0, 1].
void launch_pointwise_loss(int kind, PointwiseLoss loss, const void* x, const void* y,
                           const void* w, const void* pw, double param, int64_t n, bool reduce,
                           bool mean, void* out, double* partials, int64_t* flags,
                           cudaStream_t stream);
/// The gradient with respect to x of the loss times g (a scalar when g_scalar, else n
/// contiguous elements), norm folded in (1 / n for the mean). Not for BceWithLogits.
void launch_pointwise_loss_backward(int kind, PointwiseLoss loss, const void* g, bool g_scalar,
                                    const void* x, const void* y, const void* w, double param,
                                    int64_t n, double norm, void* grad_input, cudaStream_t stream);

// ---- embedding (embedding.cu) ----

/// out [n, D] = rows idx[i] of weight (row stride ws0, unit column stride), elem_size 1, 2, 4
/// or 8 bytes. bad (device, zeroed): {1, index} for an index outside [0, V).
void launch_embedding(int elem_size, const void* weight, int64_t V, int64_t D, int64_t ws0,
                      const void* idx, bool idx32, int64_t n, void* out, int64_t* bad,
                      cudaStream_t stream);
/// acc [V, D] (float, or double for float64; zeroed by the caller) += rows of grad
/// [n, D] (contiguous) at idx (padding_idx skipped; scale_grad_by_freq divides by the
/// index's count, counts: int [V] scratch zeroed by the caller); then out (kind) = acc.
void launch_embedding_backward(int kind, const void* grad, const void* idx, bool idx32, int64_t n,
                               int64_t D, int64_t V, int64_t padding_idx, bool scale_grad_by_freq,
                               void* acc, int* counts, void* out, int64_t* bad,
                               cudaStream_t stream);

}  // namespace loom::cuda::libs
