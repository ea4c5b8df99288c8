#pragma once
// What the loss kernels (loss_nll.cpp, loss_pointwise.cpp) share: the reduction argument,
// the reduction of an unreduced loss, and a deterministic parallel sum.
//
// Note [Loss composites]: nll_loss, nll_loss2d, nll_loss_nd, cross_entropy_loss, l1_loss,
// kl_div and margin_ranking_loss are CompositeImplicitAutograd in PyTorch: their kernels
// only call other ops (through the dispatcher, never touching data), so they serve every
// backend and need no derivative formula of their own, the gradient coming from their
// parts. They are registered at Loom's CompositeImplicitAutograd alias key too, which
// serves every backend key and the Autograd key, so a call records their parts.

#include <cstdint>
#include <string_view>
#include <vector>

#include "cpu/reduce_engine.h"
#include "loom/core/tensor.h"
#include "loom/ops/nn/meta/loss.h"
#include "loom/ops/reduction.h"

namespace loom::ops::cpu::loss {

/// at::Reduction's values, which the ops' `int reduction` argument takes.
inline constexpr int64_t kNone = meta::kReductionNone, kMean = meta::kReductionMean,
                         kSum = meta::kReductionSum;

using meta::check_reduction;

/// The mean, the sum, or the loss itself: PyTorch's apply_loss_reduction.
inline Tensor apply_loss_reduction(const Tensor& loss, int64_t reduction) {
  if (reduction == kMean) return loom::mean(loss);
  if (reduction == kSum) return loom::sum(loss);
  return loss;
}

/// Calls f(begin, end) on fixed chunks of reduction::kChunk covering [0, n), in parallel
/// when n is large. f must not throw.
template <typename F>
void parallel_chunks(int64_t n, F&& f) {
  using reduction::kChunk;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (n >= reduction::kGrain && chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) f(c * kChunk, std::min(n, (c + 1) * kChunk));
}

/// The sum over [0, n) of f(begin, end) (an Acc with +=) in fixed chunks of
/// reduction::kChunk, in parallel when n is large. Partial sums merge in chunk order, so the
/// result does not depend on the number of threads. f must not throw.
template <typename Acc, typename F>
Acc chunked_sum(int64_t n, F&& f) {
  using reduction::kChunk;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  if (chunks <= 1) return n > 0 ? f(int64_t{0}, n) : Acc{};
  std::vector<Acc> parts(static_cast<size_t>(chunks));
#pragma omp parallel for schedule(static) if (n >= reduction::kGrain)
  for (int64_t c = 0; c < chunks; ++c) parts[c] = f(c * kChunk, std::min(n, (c + 1) * kChunk));
  Acc total = parts[0];
  for (int64_t c = 1; c < chunks; ++c) total += parts[c];
  return total;
}

}  // namespace loom::ops::cpu::loss
