#pragma once
/// @file
/// Embedding (torch.nn.Embedding): a lookup table of num_embeddings rows of embedding_dim,
/// initialised from N(0, 1) with the padding row zeroed.

#include <cstdint>
#include <optional>

#include "loom/nn/module.h"

namespace loom::nn {

/// Rows of weight picked by integer indices.
class Embedding : public Module {
 public:
  /// padding_idx (negative counts from the end) gets a zero row that receives no gradient.
  Embedding(int64_t num_embeddings, int64_t embedding_dim,
            std::optional<int64_t> padding_idx = std::nullopt, bool scale_grad_by_freq = false);
  /// N(0, 1), padding row zeroed.
  void reset_parameters();
  /// indices (int32/int64, any shape) -> indices.sizes() + [embedding_dim].
  Tensor forward(const Tensor& indices) override;
  std::string extra_repr() const override;

  const int64_t num_embeddings;              ///< rows
  const int64_t embedding_dim;               ///< columns
  const std::optional<int64_t> padding_idx;  ///< the padding row (wrapped to >= 0), if any
  const bool scale_grad_by_freq;             ///< scale gradients by inverse index frequency
  Tensor& weight;                            ///< [num_embeddings, embedding_dim]
};

}  // namespace loom::nn
