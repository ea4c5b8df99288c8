#include "loom/nn/rnn.h"

#include <cmath>

#include "loom/nn/init.h"
#include "loom/ops/core.h"
#include "loom/ops/nn.h"
#include "loom/ops/tensor_methods.h"

namespace loom::nn {

namespace {
std::optional<Tensor> opt(const Tensor& t) {
  return t.defined() ? std::optional<Tensor>(t) : std::nullopt;
}
}  // namespace

RNNBase::RNNBase(std::string mode, int64_t gates, int64_t in, int64_t hidden, RNNOptions o)
    : input_size(in), hidden_size(hidden), options(o), mode_(std::move(mode)), gates_(gates) {
  LOOM_CHECK(hidden > 0, "hidden_size must be greater than zero");
  LOOM_CHECK(o.num_layers > 0, "num_layers must be greater than zero");
  LOOM_CHECK(o.dropout >= 0.0 && o.dropout <= 1.0,
             "dropout should be a number in range [0, 1] representing the probability of an "
             "element being zeroed");
  const int64_t dirs = o.bidirectional ? 2 : 1;
  for (int64_t layer = 0; layer < o.num_layers; ++layer) {
    const int64_t layer_in = layer == 0 ? in : hidden * dirs;
    for (int64_t d = 0; d < dirs; ++d) {
      const std::string suffix = str_cat("_l", layer, d == 1 ? "_reverse" : "");
      std::vector<Tensor*> w;
      w.push_back(
          &register_parameter("weight_ih" + suffix, loom::empty({gates * hidden, layer_in})));
      w.push_back(&register_parameter("weight_hh" + suffix, loom::empty({gates * hidden, hidden})));
      w.push_back(&register_parameter("bias_ih" + suffix,
                                      o.bias ? loom::empty({gates * hidden}) : Tensor()));
      w.push_back(&register_parameter("bias_hh" + suffix,
                                      o.bias ? loom::empty({gates * hidden}) : Tensor()));
      weights_.push_back(std::move(w));
    }
  }
  reset_parameters();
}

void RNNBase::reset_parameters() {
  const double bound = 1.0 / std::sqrt(static_cast<double>(hidden_size));
  for (const auto& w : weights_) {
    for (Tensor* t : w) {
      if (t->defined()) init::uniform_(*t, -bound, bound);
    }
  }
}

std::vector<Tensor> RNNBase::layer_weights(int64_t layer, bool reverse) const {
  const int64_t dirs = options.bidirectional ? 2 : 1;
  LOOM_CHECK_T(IndexError, layer >= 0 && layer < options.num_layers && (!reverse || dirs == 2),
               mode_, ": no weights for layer ", layer, reverse ? " (reverse)" : "");
  std::vector<Tensor> out;
  for (Tensor* t : weights_[static_cast<size_t>(layer * dirs + (reverse ? 1 : 0))]) {
    out.push_back(*t);
  }
  return out;
}

std::string RNNBase::extra_repr() const {
  std::string s = str_cat(input_size, ", ", hidden_size);
  if (options.num_layers != 1) str_append(&s, ", num_layers=", options.num_layers);
  if (!options.bias) str_append(&s, ", bias=false");
  if (options.batch_first) str_append(&s, ", batch_first=true");
  if (options.dropout != 0.0) str_append(&s, ", dropout=", options.dropout);
  if (options.bidirectional) str_append(&s, ", bidirectional=true");
  return s;
}

std::tuple<Tensor, std::vector<Tensor>> RNNBase::run(const Tensor& input,
                                                     std::vector<Tensor> state) {
  LOOM_CHECK(input.dim() == 2 || input.dim() == 3, mode_, ": Expected input to be 2D or 3D, got ",
             input.dim(), "D tensor instead");
  const bool batched = input.dim() == 3;
  LOOM_CHECK(input.size(-1) == input_size, mode_,
             ": input.size(-1) must be equal to input_size. Expected ", input_size, ", got ",
             input.size(-1));
  // Time-major [T, N, in] inside.
  Tensor x = !batched ? input.unsqueeze(1) : options.batch_first ? input.transpose(0, 1) : input;
  const int64_t steps = x.size(0);
  const int64_t batch = x.size(1);
  const int64_t dirs = options.bidirectional ? 2 : 1;
  const std::vector<int64_t> state_sizes =
      batched ? std::vector<int64_t>{options.num_layers * dirs, batch, hidden_size}
              : std::vector<int64_t>{options.num_layers * dirs, hidden_size};
  for (Tensor& s : state) {
    if (!s.defined()) {
      s = loom::zeros({options.num_layers * dirs, batch, hidden_size}, x.dtype(), x.device());
      continue;
    }
    LOOM_CHECK(s.sizes() == IntArrayRef(state_sizes), mode_, ": Expected hidden size ",
               sizes_str(state_sizes), ", got ", sizes_str(s.sizes()));
    if (!batched) s = s.unsqueeze(1);
  }

  std::vector<std::vector<Tensor>> finals(state.size());
  Tensor layer_input = x;
  for (int64_t layer = 0; layer < options.num_layers; ++layer) {
    std::vector<Tensor> dir_outputs;
    for (int64_t d = 0; d < dirs; ++d) {
      const std::vector<Tensor*>& w = weights_[static_cast<size_t>(layer * dirs + d)];
      const Tensor proj = loom::linear(layer_input, *w[0], opt(*w[2]));  // [T, N, G*H]
      std::vector<Tensor> st;
      for (const Tensor& s : state) st.push_back(s.select(0, layer * dirs + d));
      std::vector<Tensor> outs(static_cast<size_t>(steps));
      for (int64_t i = 0; i < steps; ++i) {
        const int64_t t = d == 0 ? i : steps - 1 - i;
        st = cell(proj.select(0, t), st, *w[1], *w[3]);
        outs[static_cast<size_t>(t)] = st[0];
      }
      for (size_t k = 0; k < st.size(); ++k) finals[k].push_back(st[k]);
      dir_outputs.push_back(steps > 0 ? loom::stack(outs, 0)
                                      : loom::zeros({0, batch, hidden_size}, x.dtype()));
    }
    layer_input = dirs == 2 ? loom::cat(dir_outputs, 2) : dir_outputs[0];
    if (options.dropout > 0.0 && is_training() && layer + 1 < options.num_layers) {
      layer_input = loom::dropout(layer_input, options.dropout, true);
    }
  }
  Tensor output = layer_input;
  std::vector<Tensor> out_states;
  for (auto& f : finals) {
    Tensor s = loom::stack(f, 0);
    out_states.push_back(batched ? s : s.squeeze(1));
  }
  if (!batched) {
    output = output.squeeze(1);
  } else if (options.batch_first) {
    output = output.transpose(0, 1);
  }
  return {output, out_states};
}

// ---------------------------------------------------------------------------- RNN

RNN::RNN(int64_t in, int64_t hidden, RNNOptions o, std::string nl)
    : RNNBase(nl == "relu" ? "RNN_RELU" : "RNN_TANH", 1, in, hidden, o),
      nonlinearity(std::move(nl)) {
  LOOM_CHECK(nonlinearity == "tanh" || nonlinearity == "relu", "Unknown nonlinearity '",
             nonlinearity, "'. Select from 'tanh' or 'relu'.");
}

std::vector<Tensor> RNN::cell(const Tensor& x_proj, const std::vector<Tensor>& state,
                              const Tensor& w_hh, const Tensor& b_hh) const {
  const Tensor pre = x_proj.add(loom::linear(state[0], w_hh, opt(b_hh)));
  return {nonlinearity == "relu" ? pre.relu() : pre.tanh()};
}

std::tuple<Tensor, Tensor> RNN::forward(const Tensor& input, const std::optional<Tensor>& h0) {
  auto [out, st] = run(input, {h0 ? *h0 : Tensor()});
  return {out, st[0]};
}

Tensor RNN::forward(const Tensor& input) { return std::get<0>(forward(input, std::nullopt)); }

// ---------------------------------------------------------------------------- LSTM

LSTM::LSTM(int64_t in, int64_t hidden, RNNOptions o) : RNNBase("LSTM", 4, in, hidden, o) {
  num_states_ = 2;
}

std::vector<Tensor> LSTM::cell(const Tensor& x_proj, const std::vector<Tensor>& state,
                               const Tensor& w_hh, const Tensor& b_hh) const {
  const Tensor gates = x_proj.add(loom::linear(state[0], w_hh, opt(b_hh)));
  const std::vector<Tensor> g = gates.chunk(4, -1);
  const Tensor i = g[0].sigmoid();
  const Tensor f = g[1].sigmoid();
  const Tensor cand = g[2].tanh();
  const Tensor o = g[3].sigmoid();
  const Tensor c = f.mul(state[1]).add(i.mul(cand));
  return {o.mul(c.tanh()), c};
}

std::tuple<Tensor, std::tuple<Tensor, Tensor>> LSTM::forward(
    const Tensor& input, const std::optional<std::tuple<Tensor, Tensor>>& hx) {
  std::vector<Tensor> state = hx ? std::vector<Tensor>{std::get<0>(*hx), std::get<1>(*hx)}
                                 : std::vector<Tensor>{Tensor(), Tensor()};
  auto [out, st] = run(input, std::move(state));
  return {out, {st[0], st[1]}};
}

Tensor LSTM::forward(const Tensor& input) { return std::get<0>(forward(input, std::nullopt)); }

// ---------------------------------------------------------------------------- GRU

GRU::GRU(int64_t in, int64_t hidden, RNNOptions o) : RNNBase("GRU", 3, in, hidden, o) {}

std::vector<Tensor> GRU::cell(const Tensor& x_proj, const std::vector<Tensor>& state,
                              const Tensor& w_hh, const Tensor& b_hh) const {
  const Tensor& h = state[0];
  const std::vector<Tensor> xg = x_proj.chunk(3, -1);
  const std::vector<Tensor> hg = loom::linear(h, w_hh, opt(b_hh)).chunk(3, -1);
  const Tensor r = xg[0].add(hg[0]).sigmoid();
  const Tensor z = xg[1].add(hg[1]).sigmoid();
  const Tensor n = xg[2].add(r.mul(hg[2])).tanh();
  return {n.add(z.mul(h.sub(n)))};
}

std::tuple<Tensor, Tensor> GRU::forward(const Tensor& input, const std::optional<Tensor>& h0) {
  auto [out, st] = run(input, {h0 ? *h0 : Tensor()});
  return {out, st[0]};
}

Tensor GRU::forward(const Tensor& input) { return std::get<0>(forward(input, std::nullopt)); }

}  // namespace loom::nn
