#pragma once
/// @file
/// MultiheadAttention and TransformerEncoderLayer (torch.nn), computed from linear,
/// softmax and batched products.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include "loom/nn/container.h"
#include "loom/nn/dropout.h"
#include "loom/nn/linear.h"
#include "loom/nn/module.h"
#include "loom/nn/normalization.h"

namespace loom::nn {

/// Scaled dot-product attention over num_heads heads (torch.nn.MultiheadAttention):
/// in_proj_weight [3E, E] from xavier_uniform_, in_proj_bias [3E] zeros, out_proj a Linear
/// whose bias starts at zero. Inputs are [L, N, E] ([N, L, E] with batch_first) or unbatched
/// [L, E]. Masks: attn_mask [L, S] or [N*heads, L, S], key_padding_mask [N, S]; a bool mask
/// is true where attention is not allowed, a float mask is added to the scores.
class MultiheadAttention : public Module {
 public:
  /// embed_dim must be divisible by num_heads; dropout applies to the attention weights in
  /// training.
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, double dropout = 0.0, bool bias = true,
                     bool batch_first = false);
  /// in_proj_weight from xavier_uniform_, biases to zero.
  void reset_parameters();
  /// (attn_output, attn_weights): the output like query; the weights [N, L, S] averaged over
  /// heads (or [N, heads, L, S] without average_attn_weights), undefined unless
  /// need_weights. is_causal without attn_mask masks every key after the query's position.
  std::tuple<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                     const std::optional<Tensor>& key_padding_mask = std::nullopt,
                                     bool need_weights = true,
                                     const std::optional<Tensor>& attn_mask = std::nullopt,
                                     bool average_attn_weights = true, bool is_causal = false);
  /// Self-attention: the output of forward(x, x, x).
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  const int64_t embed_dim;           ///< E
  const int64_t num_heads;           ///< heads
  const int64_t head_dim;            ///< E / heads
  const double dropout;              ///< on the attention weights, in training
  const bool batch_first;            ///< inputs are [N, L, E]
  Tensor& in_proj_weight;            ///< [3E, E]: q, k, v projections stacked
  Tensor& in_proj_bias;              ///< [3E] or undefined
  std::shared_ptr<Linear> out_proj;  ///< E -> E
};

/// The options of TransformerEncoderLayer beyond d_model and nhead (PyTorch's defaults).
struct TransformerEncoderLayerOptions {
  int64_t dim_feedforward = 2048;   ///< hidden size of the feed-forward block
  double dropout = 0.1;             ///< dropout everywhere
  std::string activation = "relu";  ///< "relu" or "gelu"
  double layer_norm_eps = 1e-5;     ///< LayerNorm eps
  bool batch_first = false;         ///< inputs are [N, L, E]
  bool norm_first = false;          ///< pre-norm (LayerNorm before each block)
  bool bias = true;                 ///< biases in the linear layers and norms
};

/// Self-attention then a feed-forward block, each with dropout, a residual connection and
/// LayerNorm (after each block, or before it with norm_first) (torch.nn.TransformerEncoderLayer).
/// Children: self_attn, linear1, dropout, linear2, norm1, norm2, dropout1, dropout2.
class TransformerEncoderLayer : public Module {
 public:
  /// A layer of width d_model with nhead heads.
  TransformerEncoderLayer(int64_t d_model, int64_t nhead,
                          TransformerEncoderLayerOptions options = {});
  /// The encoded src (same shape); masks as MultiheadAttention's.
  Tensor forward(const Tensor& src, const std::optional<Tensor>& src_mask,
                 const std::optional<Tensor>& src_key_padding_mask = std::nullopt,
                 bool is_causal = false);
  /// forward(src) without masks.
  Tensor forward(const Tensor& src) override;

  const TransformerEncoderLayerOptions options;   ///< the settings
  std::shared_ptr<MultiheadAttention> self_attn;  ///< the attention block
  std::shared_ptr<Linear> linear1;                ///< d_model -> dim_feedforward
  std::shared_ptr<Dropout> dropout;               ///< inside the feed-forward block
  std::shared_ptr<Linear> linear2;                ///< dim_feedforward -> d_model
  std::shared_ptr<LayerNorm> norm1;               ///< around the attention block
  std::shared_ptr<LayerNorm> norm2;               ///< around the feed-forward block
  std::shared_ptr<Dropout> dropout1;              ///< on the attention block's output
  std::shared_ptr<Dropout> dropout2;              ///< on the feed-forward block's output
};

/// A stack of num_layers encoder layers, each starting as a copy of encoder_layer's state
/// (PyTorch deep-copies it), then an optional final norm (torch.nn.TransformerEncoder).
/// Children: layers (a ModuleList: "layers.0.self_attn.in_proj_weight", ...) and norm.
class TransformerEncoder : public Module {
 public:
  /// num_layers >= 1 copies of encoder_layer (which is not itself registered).
  TransformerEncoder(const std::shared_ptr<TransformerEncoderLayer>& encoder_layer,
                     int64_t num_layers, std::shared_ptr<LayerNorm> norm = nullptr);
  /// src through every layer with the same masks, then norm.
  Tensor forward(const Tensor& src, const std::optional<Tensor>& mask,
                 const std::optional<Tensor>& src_key_padding_mask = std::nullopt,
                 bool is_causal = false);
  /// forward(src) without masks.
  Tensor forward(const Tensor& src) override;

  std::shared_ptr<ModuleList> layers;  ///< the encoder layers
  std::shared_ptr<LayerNorm> norm;     ///< the final norm, or null
};

}  // namespace loom::nn
