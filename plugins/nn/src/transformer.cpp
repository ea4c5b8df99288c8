#include "loom/nn/transformer.h"

#include <cmath>
#include <limits>

#include "loom/nn/init.h"
#include "loom/ops/core.h"
#include "loom/ops/nn.h"
#include "loom/ops/tensor_methods.h"

namespace loom::nn {

namespace {
std::optional<Tensor> opt(const Tensor& t) {
  return t.defined() ? std::optional<Tensor>(t) : std::nullopt;
}
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// A bool mask (true = not allowed) as an additive float mask of dtype.
Tensor additive_mask(const Tensor& mask, DType dtype) {
  if (mask.dtype() == DType::Bool) {
    return loom::zeros(mask.sizes(), dtype, mask.device()).masked_fill(mask, kNegInf);
  }
  return mask.to(dtype);
}
}  // namespace

// ---------------------------------------------------------------------------- attention

MultiheadAttention::MultiheadAttention(int64_t e, int64_t h, double p, bool with_bias, bool bf)
    : embed_dim(e),
      num_heads(h),
      head_dim(h > 0 ? e / h : 0),
      dropout(p),
      batch_first(bf),
      in_proj_weight(register_parameter("in_proj_weight", loom::empty({3 * e, e}))),
      in_proj_bias(
          register_parameter("in_proj_bias", with_bias ? loom::empty({3 * e}) : Tensor())) {
  LOOM_CHECK(h > 0 && head_dim * h == e, "embed_dim must be divisible by num_heads");
  out_proj = register_module("out_proj", std::make_shared<Linear>(e, e, with_bias));
  reset_parameters();
}

void MultiheadAttention::reset_parameters() {
  init::xavier_uniform_(in_proj_weight);
  if (in_proj_bias.defined()) init::zeros_(in_proj_bias);
  if (out_proj->bias.defined()) init::zeros_(out_proj->bias);
}

std::tuple<Tensor, Tensor> MultiheadAttention::forward(
    const Tensor& query, const Tensor& key, const Tensor& value,
    const std::optional<Tensor>& key_padding_mask, bool need_weights,
    const std::optional<Tensor>& attn_mask, bool average_attn_weights, bool is_causal) {
  LOOM_CHECK(query.dim() == 2 || query.dim() == 3,
             "MultiheadAttention: query should be unbatched 2D or batched 3D tensor but received ",
             query.dim(), "-D query tensor");
  const bool batched = query.dim() == 3;
  LOOM_CHECK(key.dim() == query.dim() && value.dim() == query.dim(),
             "MultiheadAttention: key and value must have the dims of query (", query.dim(),
             "-D), got ", key.dim(), "-D and ", value.dim(), "-D");
  auto time_major = [&](const Tensor& t) {
    return !batched ? t.unsqueeze(1) : batch_first ? t.transpose(0, 1) : t;
  };
  const Tensor q_in = time_major(query);
  const Tensor k_in = time_major(key);
  const Tensor v_in = time_major(value);
  LOOM_CHECK(q_in.size(2) == embed_dim, "was expecting embedding dimension of ", embed_dim,
             ", but got ", q_in.size(2));
  LOOM_CHECK(k_in.sizes() == v_in.sizes(), "key shape ", sizes_str(key.sizes()),
             " does not match value shape ", sizes_str(value.sizes()));
  const int64_t L = q_in.size(0), N = q_in.size(1), S = k_in.size(0), H = num_heads;

  const std::vector<Tensor> w = in_proj_weight.chunk(3, 0);
  std::vector<Tensor> b(3);
  if (in_proj_bias.defined()) b = in_proj_bias.chunk(3, 0);
  auto heads = [&](const Tensor& x, const Tensor& wi, const Tensor& bi, int64_t len) {
    return loom::linear(x, wi, opt(bi)).reshape({len, N * H, head_dim}).transpose(0, 1);
  };
  const Tensor q = heads(q_in, w[0], b[0], L);  // [N*H, L, hd]
  const Tensor k = heads(k_in, w[1], b[1], S);  // [N*H, S, hd]
  const Tensor v = heads(v_in, w[2], b[2], S);

  Tensor mask;  // additive, [1 or N*H, L, S]
  if (attn_mask) {
    Tensor m = additive_mask(*attn_mask, q.dtype());
    if (m.dim() == 2) {
      LOOM_CHECK(m.size(0) == L && m.size(1) == S, "The shape of the 2D attn_mask is ",
                 sizes_str(m.sizes()), ", but should be ", sizes_str({L, S}), ".");
      m = m.unsqueeze(0);
    } else {
      LOOM_CHECK(m.dim() == 3 && m.size(0) == N * H && m.size(1) == L && m.size(2) == S,
                 "The shape of the 3D attn_mask is ", sizes_str(m.sizes()), ", but should be ",
                 sizes_str({N * H, L, S}), ".");
    }
    mask = m;
  } else if (is_causal) {
    mask = loom::full({L, S}, kNegInf, q.dtype()).triu(1).unsqueeze(0);
  }
  if (key_padding_mask) {
    Tensor kpm = additive_mask(*key_padding_mask, q.dtype());
    if (!batched) kpm = kpm.unsqueeze(0);
    LOOM_CHECK(kpm.dim() == 2 && kpm.size(0) == N && kpm.size(1) == S,
               "expecting key_padding_mask shape of ", sizes_str({N, S}), ", but got ",
               sizes_str(key_padding_mask->sizes()));
    kpm = kpm.view({N, 1, 1, S}).expand({N, H, 1, S}).reshape({N * H, 1, S});
    mask = mask.defined() ? mask.add(kpm) : kpm;
  }

  Tensor scores = q.mul(1.0 / std::sqrt(static_cast<double>(head_dim))).bmm(k.transpose(1, 2));
  if (mask.defined()) scores = scores.add(mask);
  Tensor attn = scores.softmax(-1);  // [N*H, L, S]
  if (dropout > 0.0 && is_training()) attn = loom::dropout(attn, dropout, true);
  Tensor out = attn.bmm(v).transpose(0, 1).reshape({L * N, embed_dim});
  out = (*out_proj)(out).view({L, N, embed_dim});
  out = !batched ? out.squeeze(1) : batch_first ? out.transpose(0, 1) : out;

  Tensor weights;
  if (need_weights) {
    weights = attn.view({N, H, L, S});
    if (average_attn_weights) weights = weights.mean({1});
    if (!batched) weights = weights.squeeze(0);
  }
  return {out, weights};
}

Tensor MultiheadAttention::forward(const Tensor& x) {
  return std::get<0>(forward(x, x, x, std::nullopt, false));
}

std::string MultiheadAttention::extra_repr() const {
  return str_cat("embed_dim=", embed_dim, ", num_heads=", num_heads,
                 batch_first ? ", batch_first=true" : "");
}

// ---------------------------------------------------------------------------- encoder layer

TransformerEncoderLayer::TransformerEncoderLayer(int64_t d_model, int64_t nhead,
                                                 TransformerEncoderLayerOptions o)
    : options(std::move(o)) {
  LOOM_CHECK(options.activation == "relu" || options.activation == "gelu",
             "activation should be relu/gelu, not ", options.activation);
  self_attn = register_module(
      "self_attn", std::make_shared<MultiheadAttention>(d_model, nhead, options.dropout,
                                                        options.bias, options.batch_first));
  linear1 = register_module(
      "linear1", std::make_shared<Linear>(d_model, options.dim_feedforward, options.bias));
  dropout = register_module("dropout", std::make_shared<Dropout>(options.dropout));
  linear2 = register_module(
      "linear2", std::make_shared<Linear>(options.dim_feedforward, d_model, options.bias));
  norm1 = register_module(
      "norm1", std::make_shared<LayerNorm>(d_model, options.layer_norm_eps, true, options.bias));
  norm2 = register_module(
      "norm2", std::make_shared<LayerNorm>(d_model, options.layer_norm_eps, true, options.bias));
  dropout1 = register_module("dropout1", std::make_shared<Dropout>(options.dropout));
  dropout2 = register_module("dropout2", std::make_shared<Dropout>(options.dropout));
}

Tensor TransformerEncoderLayer::forward(const Tensor& src, const std::optional<Tensor>& src_mask,
                                        const std::optional<Tensor>& src_key_padding_mask,
                                        bool is_causal) {
  auto sa = [&](const Tensor& x) {
    return (*dropout1)(std::get<0>(
        self_attn->forward(x, x, x, src_key_padding_mask, false, src_mask, true, is_causal)));
  };
  auto ff = [&](const Tensor& x) {
    const Tensor h = (*linear1)(x);
    const Tensor a = options.activation == "gelu" ? h.gelu() : h.relu();
    return (*dropout2)((*linear2)((*dropout)(a)));
  };
  Tensor x = src;
  if (options.norm_first) {
    x = x.add(sa((*norm1)(x)));
    x = x.add(ff((*norm2)(x)));
  } else {
    x = (*norm1)(x.add(sa(x)));
    x = (*norm2)(x.add(ff(x)));
  }
  return x;
}

Tensor TransformerEncoderLayer::forward(const Tensor& src) {
  return forward(src, std::nullopt, std::nullopt, false);
}

// ---------------------------------------------------------------------------- encoder

TransformerEncoder::TransformerEncoder(const std::shared_ptr<TransformerEncoderLayer>& layer,
                                       int64_t num_layers, std::shared_ptr<LayerNorm> final_norm) {
  LOOM_CHECK(layer != nullptr, "TransformerEncoder: encoder_layer is null");
  LOOM_CHECK(num_layers >= 1, "TransformerEncoder: num_layers must be at least 1, got ",
             num_layers);
  layers = register_module("layers", std::make_shared<ModuleList>());
  const StateDict state = layer->state_dict();
  for (int64_t i = 0; i < num_layers; ++i) {
    auto copy = std::make_shared<TransformerEncoderLayer>(
        layer->self_attn->embed_dim, layer->self_attn->num_heads, layer->options);
    copy->load_state_dict(state);
    copy->train(layer->is_training());
    layers->push_back(copy);
  }
  if (final_norm) norm = register_module("norm", std::move(final_norm));
}

Tensor TransformerEncoder::forward(const Tensor& src, const std::optional<Tensor>& mask,
                                   const std::optional<Tensor>& src_key_padding_mask,
                                   bool is_causal) {
  Tensor x = src;
  for (const auto& m : layers->items()) {
    x = std::static_pointer_cast<TransformerEncoderLayer>(m)->forward(x, mask, src_key_padding_mask,
                                                                      is_causal);
  }
  return norm ? (*norm)(x) : x;
}

Tensor TransformerEncoder::forward(const Tensor& src) {
  return forward(src, std::nullopt, std::nullopt, false);
}

}  // namespace loom::nn
