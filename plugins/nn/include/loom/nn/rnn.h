#pragma once
/// @file
/// Recurrent layers (torch.nn.RNN, LSTM, GRU): multi-layer, optionally bidirectional and
/// batch_first, with dropout between layers in training. Parameters per layer k and
/// direction (suffix "_reverse" for the backward one), as PyTorch names them:
/// weight_ih_l{k} [G*H, in], weight_hh_l{k} [G*H, H], bias_ih_l{k} and bias_hh_l{k} [G*H]
/// (G = 1, 4, 3 gates; LSTM's in the order i, f, g, o; GRU's r, z, n), all drawn from
/// U(-1/sqrt(H), 1/sqrt(H)). Inputs are [T, N, in] ([N, T, in] with batch_first) or
/// unbatched [T, in]; states are [layers * directions, N, H] (or [layers * directions, H]).

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "loom/nn/module.h"

namespace loom::nn {

/// The options every recurrent layer takes.
struct RNNOptions {
  int64_t num_layers = 1;      ///< stacked layers
  bool bias = true;            ///< bias_ih and bias_hh
  bool batch_first = false;    ///< input and output are [N, T, *]
  double dropout = 0.0;        ///< dropout on each layer's output but the last, in training
  bool bidirectional = false;  ///< a second pass from the end, concatenated
};

/// What RNN, LSTM and GRU share: the parameters and the layer/direction loop.
class RNNBase : public Module {
 public:
  /// Draws every parameter again from U(-1/sqrt(H), 1/sqrt(H)).
  void reset_parameters();
  std::string extra_repr() const override;
  /// The weights of layer k, direction d: {w_ih, w_hh, b_ih, b_hh} (biases may be undefined).
  std::vector<Tensor> layer_weights(int64_t layer, bool reverse = false) const;

  const int64_t input_size;   ///< features of the input
  const int64_t hidden_size;  ///< H
  const RNNOptions options;   ///< layers, bias, batch_first, dropout, bidirectional

 protected:
  /// @cond INTERNAL
  RNNBase(std::string mode, int64_t gates, int64_t input_size, int64_t hidden_size,
          RNNOptions options);
  /// Runs every layer; state holds one [L*D, N, H] tensor (two for LSTM) in batched form.
  /// Returns the output [T, N, D*H] (in the input's layout) and the final states.
  std::tuple<Tensor, std::vector<Tensor>> run(const Tensor& input, std::vector<Tensor> state);
  /// One time step of one direction: the new states from the projected input x_proj
  /// (x W_ih^T + b_ih) and the states.
  virtual std::vector<Tensor> cell(const Tensor& x_proj, const std::vector<Tensor>& state,
                                   const Tensor& w_hh, const Tensor& b_hh) const = 0;
  const std::string mode_;
  const int64_t gates_;
  int64_t num_states_ = 1;
  std::vector<std::vector<Tensor*>> weights_;  // per layer * directions + direction
  /// @endcond
};

/// Elman RNN: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu).
class RNN : public RNNBase {
 public:
  /// nonlinearity "tanh" or "relu".
  RNN(int64_t input_size, int64_t hidden_size, RNNOptions options = {},
      std::string nonlinearity = "tanh");
  /// (output, h_n); h0 zeros when absent.
  std::tuple<Tensor, Tensor> forward(const Tensor& input, const std::optional<Tensor>& h0);
  /// The output only, from zero state.
  Tensor forward(const Tensor& input) override;
  const std::string nonlinearity;  ///< "tanh" or "relu"

 protected:
  /// @cond INTERNAL
  std::vector<Tensor> cell(const Tensor& x_proj, const std::vector<Tensor>& state,
                           const Tensor& w_hh, const Tensor& b_hh) const override;
  /// @endcond
};

/// Long short-term memory: i, f, g, o gates; c' = f * c + i * g, h' = o * tanh(c').
class LSTM : public RNNBase {
 public:
  /// An LSTM of input_size to hidden_size.
  LSTM(int64_t input_size, int64_t hidden_size, RNNOptions options = {});
  /// (output, (h_n, c_n)); (h0, c0) zeros when absent.
  std::tuple<Tensor, std::tuple<Tensor, Tensor>> forward(
      const Tensor& input, const std::optional<std::tuple<Tensor, Tensor>>& hx);
  /// The output only, from zero state.
  Tensor forward(const Tensor& input) override;

 protected:
  /// @cond INTERNAL
  std::vector<Tensor> cell(const Tensor& x_proj, const std::vector<Tensor>& state,
                           const Tensor& w_hh, const Tensor& b_hh) const override;
  /// @endcond
};

/// Gated recurrent unit: r, z, n gates; n = tanh(x_n + r * (h W_hn^T + b_hn)),
/// h' = (1 - z) * n + z * h.
class GRU : public RNNBase {
 public:
  /// A GRU of input_size to hidden_size.
  GRU(int64_t input_size, int64_t hidden_size, RNNOptions options = {});
  /// (output, h_n); h0 zeros when absent.
  std::tuple<Tensor, Tensor> forward(const Tensor& input, const std::optional<Tensor>& h0);
  /// The output only, from zero state.
  Tensor forward(const Tensor& input) override;

 protected:
  /// @cond INTERNAL
  std::vector<Tensor> cell(const Tensor& x_proj, const std::vector<Tensor>& state,
                           const Tensor& w_hh, const Tensor& b_hh) const override;
  /// @endcond
};

}  // namespace loom::nn
