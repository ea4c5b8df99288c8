#pragma once
// Float64 hand computations of torch.optim's published update rules (the pseudo-code of the
// SGD, Adam, AdamW, RMSprop and Adagrad pages), element by element on std::vector<double>,
// written from the formulas rather than from the kernels, for the suites to check the fused
// ops and the optimizers against.
//
// One reading of the pages: SGD's pseudo-code applies maximize at the end (theta + lr * g), the
// other pages negate the gradient first; PyTorch's implementation negates first for SGD too, so
// these do (they differ only when maximize and weight_decay are both set).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace loom::optim::testing {

using Vec = std::vector<double>;

/// SGD: g += wd*theta; b = mu*b + (1 - tau)*g (b = g at t = 1); g = nesterov ? g + mu*b : b;
/// theta -= lr*g.
struct SgdRule {
  double lr, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false, maximize = false;
  Vec b{};
  int64_t t = 0;
  void step(Vec& theta, const Vec& grad) {
    ++t;
    if (b.empty()) b.assign(theta.size(), 0.0);
    for (size_t i = 0; i < theta.size(); ++i) {
      double g = maximize ? -grad[i] : grad[i];
      if (weight_decay != 0) g += weight_decay * theta[i];
      if (momentum != 0) {
        b[i] = t > 1 ? momentum * b[i] + (1 - dampening) * g : g;
        g = nesterov ? g + momentum * b[i] : b[i];
      }
      theta[i] -= lr * g;
    }
  }
};

/// Adam / AdamW: m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g^2; m^ = m/(1-b1^t);
/// v^ = (amsgrad ? max(vmax, v) : v)/(1-b2^t); theta -= lr*m^/(sqrt(v^)+eps); weight decay as
/// an L2 term (Adam) or theta *= 1 - lr*wd first (AdamW).
struct AdamRule {
  double lr, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  bool amsgrad = false, maximize = false, decoupled = false;
  Vec m{}, v{}, vmax{};
  int64_t t = 0;
  void step(Vec& theta, const Vec& grad) {
    ++t;
    if (m.empty()) m = v = vmax = Vec(theta.size(), 0.0);
    for (size_t i = 0; i < theta.size(); ++i) {
      double g = maximize ? -grad[i] : grad[i];
      if (decoupled) {
        theta[i] -= lr * weight_decay * theta[i];
      } else if (weight_decay != 0) {
        g += weight_decay * theta[i];
      }
      m[i] = beta1 * m[i] + (1 - beta1) * g;
      v[i] = beta2 * v[i] + (1 - beta2) * g * g;
      const double m_hat = m[i] / (1 - std::pow(beta1, static_cast<double>(t)));
      double v_use = v[i];
      if (amsgrad) {
        vmax[i] = std::max(vmax[i], v[i]);
        v_use = vmax[i];
      }
      const double v_hat = v_use / (1 - std::pow(beta2, static_cast<double>(t)));
      theta[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
    }
  }
};

/// RMSprop: v = a*v + (1-a)*g^2; centered: g_ave = a*g_ave + (1-a)*g, v~ = v - g_ave^2;
/// momentum: b = mu*b + g/(sqrt(v~)+eps), theta -= lr*b; else theta -= lr*g/(sqrt(v~)+eps).
struct RmspropRule {
  double lr, alpha = 0.99, eps = 1e-8, weight_decay = 0, momentum = 0;
  bool centered = false, maximize = false;
  Vec v{}, g_ave{}, b{};
  void step(Vec& theta, const Vec& grad) {
    if (v.empty()) v = g_ave = b = Vec(theta.size(), 0.0);
    for (size_t i = 0; i < theta.size(); ++i) {
      double g = maximize ? -grad[i] : grad[i];
      if (weight_decay != 0) g += weight_decay * theta[i];
      v[i] = alpha * v[i] + (1 - alpha) * g * g;
      double v_tilde = v[i];
      if (centered) {
        g_ave[i] = g_ave[i] * alpha + (1 - alpha) * g;
        v_tilde -= g_ave[i] * g_ave[i];
      }
      if (momentum > 0) {
        b[i] = momentum * b[i] + g / (std::sqrt(v_tilde) + eps);
        theta[i] -= lr * b[i];
      } else {
        theta[i] -= lr * g / (std::sqrt(v_tilde) + eps);
      }
    }
  }
};

/// Adagrad: lr~ = lr/(1 + (t-1)*lr_decay); g += wd*theta; sum += g^2;
/// theta -= lr~*g/(sqrt(sum)+eps); sum starts at initial_accumulator_value.
struct AdagradRule {
  double lr, lr_decay = 0, weight_decay = 0, initial_accumulator_value = 0, eps = 1e-10;
  bool maximize = false;
  Vec sum{};
  int64_t t = 0;
  void step(Vec& theta, const Vec& grad) {
    ++t;
    if (sum.empty()) sum.assign(theta.size(), initial_accumulator_value);
    const double clr = lr / (1 + static_cast<double>(t - 1) * lr_decay);
    for (size_t i = 0; i < theta.size(); ++i) {
      double g = maximize ? -grad[i] : grad[i];
      if (weight_decay != 0) g += weight_decay * theta[i];
      sum[i] += g * g;
      theta[i] -= clr * g / (std::sqrt(sum[i]) + eps);
    }
  }
};

}  // namespace loom::optim::testing
