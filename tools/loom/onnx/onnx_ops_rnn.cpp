// ONNX's recurrent layers RNN, GRU and LSTM, unrolled over time from core ops
// (Note [ONNX op mappings]): the input projection for every step is one matmul, then each
// step adds the recurrent projection and applies the gate activations.
#include "loom/core/str_cat.h"
#include "loom/ops/core.h"
#include "onnx_ops.h"

namespace loom::onnx {
namespace {

using Outputs = std::vector<Tensor>;

enum class Cell { Rnn, Gru, Lstm };

/// One activation of the `activations` attribute.
using Activation = Tensor (*)(const Tensor&);

Activation activation_named(const NodeContext& ctx, const std::string& name) {
  if (name == "Tanh") return [](const Tensor& x) { return tanh(x); };
  if (name == "Sigmoid") return [](const Tensor& x) { return sigmoid(x); };
  if (name == "Relu") return [](const Tensor& x) { return relu(x); };
  throw NotSupported(str_cat(ctx.where(), ": activation '", name, "'"));
}

/// The inputs and attributes shared by the three cells, with layout 1 turned into layout 0.
struct Recurrence {
  Cell cell;
  int64_t gates = 1;    ///< RNN 1, GRU 3 (z, r, h), LSTM 4 (i, o, f, c)
  int64_t hidden = 0;   ///< hidden_size
  int64_t dirs = 1;     ///< 2 when bidirectional
  bool reverse = false; ///< direction "reverse"
  bool batch_first = false;
  std::optional<double> clip;
  bool linear_before_reset = false;  ///< GRU
  std::vector<Activation> activations;  ///< per direction: f (, g (, h))
  Tensor x;             ///< [seq, batch, input]
};

Recurrence read_recurrence(const NodeContext& ctx, Cell cell) {
  Recurrence r;
  r.cell = cell;
  r.gates = cell == Cell::Rnn ? 1 : cell == Cell::Gru ? 3 : 4;
  r.hidden = ctx.attr_int("hidden_size", 0);
  const std::string direction = ctx.attr_string("direction", "forward");
  r.dirs = direction == "bidirectional" ? 2 : 1;
  r.reverse = direction == "reverse";
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    throw ValueError(str_cat(ctx.where(), ": unknown direction '", direction, "'"));
  }
  r.batch_first = ctx.attr_int("layout", 0) != 0;
  if (ctx.has_attr("clip")) r.clip = ctx.attr_float("clip", 0);
  if (cell == Cell::Gru) r.linear_before_reset = ctx.attr_int("linear_before_reset", 0) != 0;
  if (cell == Cell::Lstm && ctx.attr_int("input_forget", 0) != 0) {
    throw NotSupported(str_cat(ctx.where(), ": input_forget=1"));
  }
  if (ctx.has_attr("activation_alpha") || ctx.has_attr("activation_beta")) {
    throw NotSupported(str_cat(ctx.where(), ": activation_alpha / activation_beta"));
  }
  const std::vector<std::string> defaults =
      cell == Cell::Rnn   ? std::vector<std::string>{"Tanh"}
      : cell == Cell::Gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                          : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  const std::vector<std::string> given =
      ctx.attr_strings("activations").value_or(std::vector<std::string>{});
  for (int64_t d = 0; d < r.dirs; ++d) {
    for (size_t i = 0; i < defaults.size(); ++i) {
      const size_t k = static_cast<size_t>(d) * defaults.size() + i;
      const std::string& name = k < given.size() ? given[k] : defaults[i];
      r.activations.push_back(activation_named(ctx, name));
    }
  }
  r.x = ctx.input(0);
  if (r.batch_first) r.x = transpose(r.x, 0, 1);
  if (ctx.has_input(4)) {
    // Equal lengths covering the whole sequence change nothing; others would need masking.
    for (int64_t len : int_values(ctx.input(4))) {
      if (len != r.x.size(0)) {
        throw NotSupported(str_cat(ctx.where(), ": sequence_lens shorter than the sequence"));
      }
    }
  }
  return r;
}

/// Initial state of direction d ([dirs, batch, hidden], or [batch, dirs, hidden] in layout 1).
Tensor initial_state(const NodeContext& ctx, size_t input, const Recurrence& r, int64_t d) {
  const int64_t batch = r.x.size(1);
  if (!ctx.has_input(input)) return zeros({batch, r.hidden}, r.x.dtype());
  return select(ctx.input(input), r.batch_first ? 1 : 0, d);
}

Tensor clipped(const Recurrence& r, const Tensor& v) {
  return r.clip ? clamp(v, Scalar(-*r.clip), Scalar(*r.clip)) : v;
}

Outputs recurrent_op(const NodeContext& ctx, Cell cell) {
  const Recurrence r = read_recurrence(ctx, cell);
  const int64_t h = r.hidden, g = r.gates, steps = r.x.size(0);
  std::vector<Tensor> ys, final_h, final_c;
  for (int64_t d = 0; d < r.dirs; ++d) {
    const Tensor w = select(ctx.input(1), 0, d);  // [g*h, input]
    const Tensor rw = select(ctx.input(2), 0, d);  // [g*h, h]
    Tensor wb, rb;
    if (ctx.has_input(3)) {
      const Tensor b = select(ctx.input(3), 0, d);
      wb = narrow(b, 0, 0, g * h);
      rb = narrow(b, 0, g * h, g * h);
    } else {
      wb = rb = zeros({g * h}, r.x.dtype());
    }
    Tensor peep;
    if (cell == Cell::Lstm && ctx.has_input(7)) peep = select(ctx.input(7), 0, d);
    const Activation* act = &r.activations[static_cast<size_t>(d) * (r.activations.size() / r.dirs)];
    const Tensor projected = add(matmul(r.x, t(w)), wb);  // [seq, batch, g*h]
    Tensor state = initial_state(ctx, 5, r, d);
    Tensor cell_state = cell == Cell::Lstm ? initial_state(ctx, 6, r, d) : Tensor();
    std::vector<Tensor> outs(static_cast<size_t>(steps));
    const bool backwards = r.reverse || d == 1;
    for (int64_t s = 0; s < steps; ++s) {
      const int64_t step = backwards ? steps - 1 - s : s;
      const Tensor xp = select(projected, 0, step);
      auto gate = [&](const Tensor& v, int64_t k) { return narrow(v, 1, k * h, h); };
      if (cell == Cell::Rnn) {
        state = act[0](clipped(r, add(add(xp, matmul(state, t(rw))), rb)));
      } else if (cell == Cell::Gru) {
        // z, r from the full recurrent projection; h's depends on linear_before_reset.
        const Tensor rec = add(matmul(state, t(rw)), rb);
        const Tensor z = act[0](clipped(r, add(gate(xp, 0), gate(rec, 0))));
        const Tensor reset = act[0](clipped(r, add(gate(xp, 1), gate(rec, 1))));
        Tensor hh;
        if (r.linear_before_reset) {
          hh = add(gate(xp, 2), mul(reset, gate(rec, 2)));
        } else {
          const Tensor rh = narrow(rw, 0, 2 * h, h);
          hh = add(add(gate(xp, 2), matmul(mul(reset, state), t(rh))), narrow(rb, 0, 2 * h, h));
        }
        hh = act[1](clipped(r, hh));
        state = add(mul(sub(ones_like(z), z), hh), mul(z, state));
      } else {
        const Tensor pre = add(add(xp, matmul(state, t(rw))), rb);
        Tensor i = gate(pre, 0), o = gate(pre, 1), f = gate(pre, 2), c = gate(pre, 3);
        if (peep.defined()) {
          i = add(i, mul(narrow(peep, 0, 0, h), cell_state));
          f = add(f, mul(narrow(peep, 0, 2 * h, h), cell_state));
        }
        i = act[0](clipped(r, i));
        f = act[0](clipped(r, f));
        c = act[1](clipped(r, c));
        cell_state = add(mul(f, cell_state), mul(i, c));
        if (peep.defined()) o = add(o, mul(narrow(peep, 0, h, h), cell_state));
        o = act[0](clipped(r, o));
        state = mul(o, act[2](cell_state));
      }
      outs[static_cast<size_t>(step)] = state;
    }
    ys.push_back(stack(outs, 0));  // [seq, batch, h]
    final_h.push_back(state);
    if (cell == Cell::Lstm) final_c.push_back(cell_state);
  }
  Tensor y = stack(ys, 1);             // [seq, dirs, batch, h]
  Tensor y_h = stack(final_h, 0);      // [dirs, batch, h]
  Tensor y_c = cell == Cell::Lstm ? stack(final_c, 0) : Tensor();
  if (r.batch_first) {
    y = permute(y, {2, 0, 1, 3});      // [batch, seq, dirs, h]
    y_h = transpose(y_h, 0, 1);        // [batch, dirs, h]
    if (y_c.defined()) y_c = transpose(y_c, 0, 1);
  }
  if (cell == Cell::Lstm) return {y, y_h, y_c};
  return {y, y_h};
}

}  // namespace

void add_rnn_ops(OpTable& t) {
  t["RNN"] = [](const NodeContext& c) { return recurrent_op(c, Cell::Rnn); };
  t["GRU"] = [](const NodeContext& c) { return recurrent_op(c, Cell::Gru); };
  t["LSTM"] = [](const NodeContext& c) { return recurrent_op(c, Cell::Lstm); };
}

}  // namespace loom::onnx
