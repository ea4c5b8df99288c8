#pragma once
/// @file
/// loom::opcheck, the op-check helper for extension authors: header-only, on loom/stable.hpp.
///
/// Given an op name and sample inputs it checks, per sample:
///   schema     the op exists and its schema is the expected text;
///   shape      each output's sizes and dtype (the expected ones, or the reference's), and
///              that it lives on the device of the first tensor argument;
///   forward    the outputs against a reference the author writes with built-in ops;
///   gradcheck  the op's backward (run through Backward, as training would) against central
///              finite differences, in float64, every input element against every output
///              element, reporting the worst one as gradcheck does;
///   error      inputs the op must refuse, and a piece of the message it must say.
///
/// @code
///     #include <loom/opcheck.hpp>
///     namespace ls = loom::stable;
///     auto report = loom::opcheck::OpCheck("custom::scaled_softplus")
///         .schema("custom::scaled_softplus(Tensor x, float beta) -> Tensor")
///         .reference([](const std::vector<ls::Value>& a) {
///           const ls::Tensor& x = a[0].to_tensor();
///           return (x * a[1].to_double()).exp().add(1.0).log() / a[1].to_double();
///         })
///         .sample({ls::Tensor::randn({3, 4}), 2.0})
///         .sample({ls::Tensor::randn({5}, ls::dtype::float64()), 0.5}, "float64")
///         .error({ls::Tensor::randn({2}), -1.0}, "beta > 0")
///         .run();
///     std::cout << report;                       // one line per check
///     return report.ok() ? 0 : 1;                // or report.throw_if_failed();
/// @endcode
///
/// From GoogleTest: `EXPECT_TRUE(report.ok()) << report;`.
///
/// Note [opcheck sizes]: gradcheck computes the whole Jacobian: 2 calls of the op per input
/// element and one Backward per output element. Keep gradcheck samples small (tens of
/// elements); larger samples can skip it with OpCheck::gradcheck(false) or Sample options.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "loom/stable.hpp"

/// The op-check helper (see the file comment).
namespace loom::opcheck {

/// One sample: the op's arguments in schema order, and what to expect of it.
struct Sample {
  std::vector<stable::Value> args;  ///< arguments in schema order (trailing defaults may go)
  std::string label;                ///< how the report names it ("" = "sample <i>")
  /// Sizes of each output, if known (otherwise the reference's are expected).
  std::optional<std::vector<std::vector<int64_t>>> expected_sizes;
  /// Dtype of each output, if known (otherwise the reference's are expected).
  std::optional<std::vector<stable::DType>> expected_dtypes;
  bool gradcheck = true;  ///< false: skip gradcheck for this sample (large ones)
};

/// Tolerances. Forward: |got - expected| <= atol + rtol * |expected|, with the defaults of
/// torch.testing per dtype unless set. Gradcheck: |analytical - numerical| <= grad_atol +
/// grad_rtol * |numerical|, numerical = (f(x + eps) - f(x - eps)) / (2 eps), in float64.
struct Tolerances {
  std::optional<double> rtol;  ///< forward; default 1.3e-6 (float32), 1e-7 (float64), 1e-3 (16-bit)
  std::optional<double> atol;  ///< forward; default 1e-5 (float32), 1e-7 (float64), 1e-5 (16-bit)
  double eps = 1e-6;           ///< gradcheck step
  double grad_rtol = 1e-3;     ///< gradcheck relative tolerance
  double grad_atol = 1e-5;     ///< gradcheck absolute tolerance
};

/// The outcome of one check on one sample.
struct CheckResult {
  std::string check;    ///< "schema", "shape", "forward", "gradcheck", "error"
  std::string sample;   ///< the sample's label ("" for the schema check)
  bool passed = false;  ///< whether it passed
  std::string message;  ///< what was compared, or why it failed (worst element, Loom's error)
};

/// All results of OpCheck::run.
class Report {
 public:
  /// The op checked.
  explicit Report(std::string op) : op_(std::move(op)) {}
  /// Adds a result.
  void add(CheckResult r) { results_.push_back(std::move(r)); }
  /// Every result, in the order they ran.
  const std::vector<CheckResult>& results() const noexcept { return results_; }
  /// True if every check passed (and there was at least one).
  bool ok() const noexcept {
    return !results_.empty() && std::all_of(results_.begin(), results_.end(),
                                            [](const CheckResult& r) { return r.passed; });
  }
  /// The number of failed checks.
  size_t failures() const noexcept {
    return static_cast<size_t>(std::count_if(results_.begin(), results_.end(),
                                             [](const CheckResult& r) { return !r.passed; }));
  }
  /// One line per check: "PASS forward  sample 0: ...", then a summary line.
  std::string str() const {
    std::ostringstream os;
    os << "opcheck " << op_ << "\n";
    for (const CheckResult& r : results_) {
      os << "  " << (r.passed ? "PASS " : "FAIL ") << r.check
         << std::string(r.check.size() < 10 ? 10 - r.check.size() : 1, ' ');
      if (!r.sample.empty()) os << r.sample << ": ";
      os << r.message << "\n";
    }
    os << "opcheck " << op_ << ": " << (results_.size() - failures()) << " of " << results_.size()
       << " checks passed" << (ok() ? "" : ", FAILED") << "\n";
    return os.str();
  }
  /// Throws std::runtime_error with str() unless ok().
  void throw_if_failed() const {
    if (!ok()) throw std::runtime_error(str());
  }
  /// Prints str().
  friend std::ostream& operator<<(std::ostream& os, const Report& r) { return os << r.str(); }

 private:
  std::string op_;
  std::vector<CheckResult> results_;
};

/// A reference implementation: the expected outputs for the op's arguments.
using Reference = std::function<std::vector<stable::Value>(const std::vector<stable::Value>&)>;

/// @cond INTERNAL
namespace detail {

/// "%.6g" of a double.
inline std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

/// "[2, 3]".
inline std::string sizes_text(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

/// How a sample argument reads in the report.
inline std::string value_text(const stable::Value& v) {
  switch (v.kind()) {
    case stable::ValueKind::None:
      return "None";
    case stable::ValueKind::Tensor:
      return v.to_tensor().describe();
    case stable::ValueKind::Int:
      return std::to_string(v.to_int());
    case stable::ValueKind::Float:
      return num(v.to_double());
    case stable::ValueKind::Bool:
      return v.to_bool() ? "True" : "False";
    case stable::ValueKind::String:
      return "\"" + v.to_string() + "\"";
    case stable::ValueKind::IntList:
      return sizes_text(v.to_int_list());
    case stable::ValueKind::DType:
      return v.to_dtype().name();
    default:
      return stable::kind_name(v.kind());
  }
}

inline std::string args_text(const std::vector<stable::Value>& args) {
  std::string out = "(";
  for (size_t i = 0; i < args.size(); ++i) out += (i ? ", " : "") + value_text(args[i]);
  return out + ")";
}

/// Calls op with owned Values.
inline std::vector<stable::Value> call(const stable::Op& op,
                                       const std::vector<stable::Value>& args) {
  std::vector<LoomValue> boxed(args.size() == 0 ? 1 : args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    stable::detail::clear(boxed[i]);
    args[i].box(boxed[i]);
  }
  return op.call_boxed(boxed.data(), args.size());
}

inline bool is_floating(stable::DType d) {
  namespace dt = stable::dtype;
  return d == dt::float32() || d == dt::float64() || d == dt::float16() || d == dt::bfloat16();
}

/// The elements of t as doubles, in row-major order (any dtype, device, strides).
inline std::vector<double> to_doubles(const stable::Tensor& t) {
  return t.to(stable::dtype::float64()).contiguous().to_vector<double>();
}

/// Default forward tolerances of a dtype (those of torch.testing.assert_close).
inline std::pair<double, double> default_tolerances(stable::DType d) {
  namespace dt = stable::dtype;
  if (d == dt::float64()) return {1e-7, 1e-7};
  if (d == dt::float16() || d == dt::bfloat16()) return {1e-3, 1e-5};
  if (d == dt::float32()) return {1.3e-6, 1e-5};
  return {0, 0};  // integers and bool: exact
}

/// The result of a check run in a try block: a Loom error becomes a failure with its message.
template <typename F>
CheckResult guarded(const std::string& check, const std::string& sample, F&& f) {
  try {
    CheckResult r = f();
    r.check = check;
    r.sample = sample;
    return r;
  } catch (const std::exception& e) {
    return {check, sample, false, std::string("threw: ") + e.what()};
  }
}

}  // namespace detail
/// @endcond

/// Checks one op: schema, output shapes and dtypes, forward against a reference, gradients
/// against finite differences, and refused inputs (see the file comment). Build it with the
/// chained setters, then run().
class OpCheck {
 public:
  /// Checks the op named name ("custom::scaled_softplus", "aten::add.Tensor").
  explicit OpCheck(std::string name) : name_(std::move(name)) {}

  /// The schema text the op must have, exactly as OpSchema gives it (whitespace runs are
  /// compared as one space).
  OpCheck& schema(std::string expected) {
    expected_schema_ = std::move(expected);
    return *this;
  }
  /// The reference: f(args) returns the expected outputs as a Tensor (one output) or a
  /// std::vector<Value>. It runs in no-grad mode on the sample's own arguments.
  template <typename F>
  OpCheck& reference(F f) {
    reference_ = [f = std::move(f)](const std::vector<stable::Value>& args) {
      using R = std::decay_t<decltype(f(args))>;
      if constexpr (std::is_same_v<R, std::vector<stable::Value>>) {
        return f(args);
      } else {
        return std::vector<stable::Value>{stable::Value(f(args))};
      }
    };
    return *this;
  }
  /// Adds a sample.
  OpCheck& sample(Sample s) {
    samples_.push_back(std::move(s));
    return *this;
  }
  /// Adds a sample from its arguments, optionally labelled.
  OpCheck& sample(std::vector<stable::Value> args, std::string label = "") {
    Sample s;
    s.args = std::move(args);
    s.label = std::move(label);
    return sample(std::move(s));
  }
  /// Adds a sample with the sizes and dtype its single output must have.
  OpCheck& sample(std::vector<stable::Value> args, std::vector<int64_t> expected_sizes,
                  stable::DType expected_dtype, std::string label = "") {
    Sample s;
    s.args = std::move(args);
    s.label = std::move(label);
    s.expected_sizes = std::vector<std::vector<int64_t>>{std::move(expected_sizes)};
    s.expected_dtypes = std::vector<stable::DType>{expected_dtype};
    return sample(std::move(s));
  }
  /// Arguments the op must refuse, with a piece of the message it must give ("" = any).
  OpCheck& error(std::vector<stable::Value> args, std::string message_part,
                 std::string label = "") {
    errors_.push_back({std::move(args), std::move(message_part), std::move(label)});
    return *this;
  }
  /// Tolerances of the forward and gradient checks.
  OpCheck& tolerances(Tolerances t) {
    tol_ = t;
    return *this;
  }
  /// Turns gradcheck on (default) or off for every sample.
  OpCheck& gradcheck(bool enabled) {
    gradcheck_ = enabled;
    return *this;
  }

  /// Runs every check; never throws for a failing op (the report says what failed).
  Report run() const {
    Report report(name_);
    stable::Op op;
    report.add(detail::guarded("schema", "", [&]() -> CheckResult {
      op = stable::Op::find(name_);
      return check_schema(op);
    }));
    if (!op) return report;  // nothing else can run
    for (size_t i = 0; i < samples_.size(); ++i) {
      const Sample& s = samples_[i];
      const std::string label = (s.label.empty() ? "sample " + std::to_string(i) : s.label) + " " +
                                detail::args_text(s.args);
      run_sample(op, s, label, report);
    }
    for (size_t i = 0; i < errors_.size(); ++i) {
      const ErrorCase& e = errors_[i];
      const std::string label = (e.label.empty() ? "error case " + std::to_string(i) : e.label) +
                                " " + detail::args_text(e.args);
      report.add(check_error(op, e, label));
    }
    return report;
  }

 private:
  struct ErrorCase {
    std::vector<stable::Value> args;
    std::string message_part;
    std::string label;
  };

  static std::string squeeze_spaces(const std::string& s) {
    std::string out;
    bool space = false;
    for (char c : s) {
      if (c == ' ' || c == '\t' || c == '\n') {
        space = true;
        continue;
      }
      if (space && !out.empty()) out += ' ';
      space = false;
      out += c;
    }
    return out;
  }

  CheckResult check_schema(const stable::Op& op) const {
    const std::string have = op.schema();
    std::optional<std::string> want = expected_schema_;
    if (want) {
      // "softplus(Tensor self, ...)" names aten's op, as OpFind does.
      const size_t paren = want->find('('), colons = want->find("::");
      if (colons == std::string::npos || colons > paren) *want = "aten::" + *want;
    }
    if (want && squeeze_spaces(*want) != squeeze_spaces(have)) {
      return {"schema", "", false,
              "expected \"" + *expected_schema_ + "\", the op has \"" + have + "\""};
    }
    return {"schema", "", true, have};
  }

  void run_sample(const stable::Op& op, const Sample& s, const std::string& label,
                  Report& report) const {
    std::vector<stable::Value> got;
    try {
      stable::NoGradGuard no_grad;
      got = detail::call(op, s.args);
    } catch (const std::exception& e) {
      report.add({"forward", label, false, std::string("the op threw: ") + e.what()});
      return;
    }
    std::vector<stable::Value> expected;
    bool have_reference = false;
    if (reference_) {
      try {
        stable::NoGradGuard no_grad;
        expected = reference_(s.args);
        have_reference = true;
      } catch (const std::exception& e) {
        report.add({"forward", label, false, std::string("the reference threw: ") + e.what()});
      }
    }
    report.add(detail::guarded("shape", label, [&] {
      return check_shapes(s, got, have_reference ? &expected : nullptr);
    }));
    if (have_reference) {
      report.add(detail::guarded("forward", label, [&] { return check_forward(got, expected); }));
    }
    if (gradcheck_ && s.gradcheck) {
      report.add(detail::guarded("gradcheck", label, [&] { return check_gradients(op, s); }));
    }
  }

  // ---- shape: sizes, dtypes, device ----
  CheckResult check_shapes(const Sample& s, const std::vector<stable::Value>& got,
                           const std::vector<stable::Value>* expected) const {
    std::string device;
    for (const stable::Value& a : s.args) {
      if (a.is_tensor() && a.to_tensor().defined()) {
        device = a.to_tensor().device();
        break;
      }
    }
    const size_t n_expected = s.expected_sizes ? s.expected_sizes->size()
                              : expected       ? expected->size()
                                               : got.size();
    if (got.size() != n_expected) {
      return {"shape", "", false,
              "the op returned " + std::to_string(got.size()) + " values, expected " +
                  std::to_string(n_expected)};
    }
    std::string seen;
    for (size_t i = 0; i < got.size(); ++i) {
      if (!got[i].is_tensor()) continue;
      const stable::Tensor& t = got[i].to_tensor();
      const std::string out = "output " + std::to_string(i);
      if (!t.defined()) return {"shape", "", false, out + " is an undefined tensor"};
      std::vector<int64_t> want_sizes;
      std::optional<stable::DType> want_dtype;
      if (s.expected_sizes)
        want_sizes = (*s.expected_sizes)[i];
      else if (expected && (*expected)[i].is_tensor())
        want_sizes = (*expected)[i].to_tensor().sizes();
      else
        want_sizes = t.sizes();
      if (s.expected_dtypes)
        want_dtype = (*s.expected_dtypes)[i];
      else if (expected && (*expected)[i].is_tensor())
        want_dtype = (*expected)[i].to_tensor().dtype();
      if (t.sizes() != want_sizes) {
        return {"shape", "", false,
                out + " has sizes " + detail::sizes_text(t.sizes()) + ", expected " +
                    detail::sizes_text(want_sizes)};
      }
      if (want_dtype && t.dtype() != *want_dtype) {
        return {"shape", "", false,
                out + " has dtype " + t.dtype().name() + ", expected " + want_dtype->name()};
      }
      if (!device.empty() && t.device() != device) {
        return {"shape", "", false, out + " is on " + t.device() + ", the inputs on " + device};
      }
      seen += (seen.empty() ? "" : "; ") + out + " " + t.describe();
    }
    return {"shape", "", true, seen.empty() ? "no tensor outputs" : seen};
  }

  // ---- forward: outputs against the reference ----
  CheckResult check_forward(const std::vector<stable::Value>& got,
                            const std::vector<stable::Value>& expected) const {
    if (got.size() != expected.size()) {
      return {"forward", "", false,
              "the op returned " + std::to_string(got.size()) + " values, the reference " +
                  std::to_string(expected.size())};
    }
    std::string summary;
    for (size_t i = 0; i < got.size(); ++i) {
      const std::string out = "output " + std::to_string(i);
      if (!got[i].is_tensor() || !expected[i].is_tensor()) {
        const double a = got[i].to_double(), b = expected[i].to_double();
        if (a != b) {
          return {"forward", "", false,
                  out + " is " + detail::num(a) + ", expected " + detail::num(b)};
        }
        continue;
      }
      const stable::Tensor& t = got[i].to_tensor();
      const stable::Tensor& r = expected[i].to_tensor();
      if (t.numel() != r.numel()) {
        return {"forward", "", false,
                out + " has " + std::to_string(t.numel()) + " elements, the reference " +
                    std::to_string(r.numel())};
      }
      const auto defaults = detail::default_tolerances(t.dtype());
      const double rtol = tol_.rtol.value_or(defaults.first);
      const double atol = tol_.atol.value_or(defaults.second);
      const std::vector<double> a = detail::to_doubles(t), b = detail::to_doubles(r);
      double worst_ratio = -1;
      size_t worst = 0;
      for (size_t k = 0; k < a.size(); ++k) {
        const double diff = std::fabs(a[k] - b[k]);
        const bool both_nan = std::isnan(a[k]) && std::isnan(b[k]);
        const bool same_inf = std::isinf(a[k]) && a[k] == b[k];
        const double tol = atol + rtol * std::fabs(b[k]);
        const double ratio = both_nan || same_inf ? 0
                             : std::isnan(diff)   ? INFINITY
                             : tol > 0            ? diff / tol
                             : diff > 0           ? INFINITY
                                                  : 0;
        if (ratio > worst_ratio) {
          worst_ratio = ratio;
          worst = k;
        }
      }
      const std::string tol_text =
          "(rtol " + detail::num(rtol) + ", atol " + detail::num(atol) + ")";
      if (a.empty()) {
        summary += (summary.empty() ? "" : "; ") + out + " has no elements";
        continue;
      }
      const std::string at = "element " + std::to_string(worst) + " is " + detail::num(a[worst]) +
                             ", the reference says " + detail::num(b[worst]) + ", |diff| " +
                             detail::num(std::fabs(a[worst] - b[worst]));
      if (worst_ratio > 1) {
        return {"forward", "", false,
                out + ": " + at + " exceeds atol + rtol * |expected| " + tol_text};
      }
      summary += (summary.empty() ? "" : "; ") + out + " worst " + at + " = " +
                 detail::num(worst_ratio) + " of the tolerance " + tol_text;
    }
    return {"forward", "", true, summary.empty() ? "no outputs" : summary};
  }

  // ---- gradcheck: Backward against central differences, in float64 ----
  CheckResult check_gradients(const stable::Op& op, const Sample& s) const {
    namespace ls = stable;
    const ls::DType f64 = ls::dtype::float64();
    // The differentiable inputs: floating-point tensors, as float64 leaves.
    std::vector<ls::Value> args = s.args;
    std::vector<size_t> inputs;      // positions in args
    std::vector<ls::Tensor> leaves;  // args[inputs[a]] as a mutable handle
    for (size_t i = 0; i < args.size(); ++i) {
      if (!args[i].is_tensor() || !args[i].to_tensor().defined()) continue;
      const ls::Tensor& t = args[i].to_tensor();
      if (!detail::is_floating(t.dtype())) continue;
      ls::Tensor leaf = t.detach().to(f64).contiguous().clone().detach();
      leaf.set_requires_grad(true);
      args[i] = ls::Value(leaf);
      inputs.push_back(i);
      leaves.push_back(leaf);
    }
    if (inputs.empty()) return {"gradcheck", "", true, "no floating-point tensor inputs"};

    // Analytical Jacobian, one Backward per output element.
    std::vector<ls::Value> outs = detail::call(op, args);
    std::vector<size_t> outputs;  // floating tensor outputs
    for (size_t j = 0; j < outs.size(); ++j) {
      if (outs[j].is_tensor() && outs[j].to_tensor().defined() &&
          detail::is_floating(outs[j].to_tensor().dtype())) {
        if (!outs[j].to_tensor().requires_grad()) {
          return {
              "gradcheck", "", false,
              "output " + std::to_string(j) +
                  " does not require grad although its inputs "
                  "do: the op has no derivative (LibraryImplBackward / Library::impl_backward)"};
        }
        outputs.push_back(j);
      }
    }
    if (outputs.empty()) return {"gradcheck", "", true, "no floating-point outputs"};

    // jac[in][out] is a row-major (numel_out x numel_in) matrix.
    auto numel = [](const ls::Value& v) { return static_cast<size_t>(v.to_tensor().numel()); };
    std::vector<std::vector<std::vector<double>>> analytical(inputs.size()),
        numerical(inputs.size());
    for (size_t a = 0; a < inputs.size(); ++a) {
      for (size_t o = 0; o < outputs.size(); ++o) {
        const size_t n = numel(outs[outputs[o]]) * numel(args[inputs[a]]);
        analytical[a].emplace_back(n, 0.0);
        numerical[a].emplace_back(n, 0.0);
      }
    }
    for (size_t o = 0; o < outputs.size(); ++o) {
      const ls::Tensor& y = outs[outputs[o]].to_tensor();
      const size_t ny = static_cast<size_t>(y.numel());
      std::vector<double> seed(ny, 0.0);
      for (size_t k = 0; k < ny; ++k) {
        for (ls::Tensor& leaf : leaves) leaf.set_grad(ls::Tensor());
        seed[k] = 1.0;
        const ls::Tensor grad =
            ls::Tensor::from_data(seed.data(), y.sizes(), f64, "cpu").to(y.device());
        seed[k] = 0.0;
        y.backward(grad, /*retain_graph=*/true);
        for (size_t a = 0; a < inputs.size(); ++a) {
          const ls::Tensor g = leaves[a].grad();
          if (!g.defined()) continue;  // no gradient: zeros
          const std::vector<double> gv = detail::to_doubles(g);
          const size_t nx = numel(args[inputs[a]]);
          if (gv.size() != nx) {
            throw std::runtime_error("the gradient of input " + std::to_string(inputs[a]) + " is " +
                                     g.describe() + ", the input " +
                                     args[inputs[a]].to_tensor().describe());
          }
          std::copy(gv.begin(), gv.end(), analytical[a][o].begin() + k * nx);
        }
      }
    }

    // Numerical Jacobian: perturb one input element at a time (no grad recorded).
    {
      ls::NoGradGuard no_grad;
      for (size_t a = 0; a < inputs.size(); ++a) {
        const ls::Tensor x0 = args[inputs[a]].to_tensor();
        std::vector<double> xv = detail::to_doubles(x0);
        const std::vector<int64_t> sizes = x0.sizes();
        const std::string device = x0.device();
        std::vector<ls::Value> probe = args;
        auto eval = [&](double value, size_t i) {
          const double saved = xv[i];
          xv[i] = value;
          probe[inputs[a]] =
              ls::Value(ls::Tensor::from_data(xv.data(), sizes, f64, "cpu").to(device));
          xv[i] = saved;
          std::vector<ls::Value> r = detail::call(op, probe);
          std::vector<std::vector<double>> ys;
          for (size_t j : outputs) ys.push_back(detail::to_doubles(r[j].to_tensor()));
          return ys;
        };
        for (size_t i = 0; i < xv.size(); ++i) {
          const auto plus = eval(xv[i] + tol_.eps, i);
          const auto minus = eval(xv[i] - tol_.eps, i);
          for (size_t o = 0; o < outputs.size(); ++o) {
            for (size_t k = 0; k < plus[o].size(); ++k) {
              numerical[a][o][k * xv.size() + i] = (plus[o][k] - minus[o][k]) / (2 * tol_.eps);
            }
          }
        }
      }
    }

    // The worst element over every (input, output) pair: the largest |diff| / tolerance
    // (> 1 fails), so a passing report still shows how close it came.
    double worst_ratio = -1, worst_an = 0, worst_nu = 0;
    size_t worst_a = 0, worst_o = 0, worst_k = 0, worst_i = 0, checked = 0;
    for (size_t a = 0; a < inputs.size(); ++a) {
      const size_t nx = numel(args[inputs[a]]);
      for (size_t o = 0; o < outputs.size(); ++o) {
        for (size_t e = 0; e < analytical[a][o].size(); ++e) {
          const double an = analytical[a][o][e], nu = numerical[a][o][e];
          const double diff = std::fabs(an - nu);
          const double ratio = std::isnan(diff)
                                   ? INFINITY
                                   : diff / (tol_.grad_atol + tol_.grad_rtol * std::fabs(nu));
          ++checked;
          if (ratio > worst_ratio) {
            worst_ratio = ratio;
            worst_an = an;
            worst_nu = nu;
            worst_a = a;
            worst_o = o;
            worst_k = e / nx;
            worst_i = e % nx;
          }
        }
      }
    }
    if (checked == 0) return {"gradcheck", "", true, "no elements"};
    const std::string where = "d output " + std::to_string(outputs[worst_o]) + "[" +
                              std::to_string(worst_k) + "] / d input " +
                              std::to_string(inputs[worst_a]) + "[" + std::to_string(worst_i) + "]";
    const std::string values = "analytical (Backward) " + detail::num(worst_an) + ", numerical " +
                               detail::num(worst_nu) + ", |diff| " +
                               detail::num(std::fabs(worst_an - worst_nu));
    const std::string tol_text = "(eps " + detail::num(tol_.eps) + ", atol " +
                                 detail::num(tol_.grad_atol) + ", rtol " +
                                 detail::num(tol_.grad_rtol) + ")";
    if (worst_ratio > 1) {
      return {"gradcheck", "", false,
              "Jacobian mismatch at " + where + ": " + values +
                  " exceeds atol + rtol * |numerical| " + tol_text};
    }
    return {"gradcheck", "", true,
            std::to_string(checked) + " Jacobian elements in float64; worst at " + where + ": " +
                values + " = " + detail::num(worst_ratio) + " of the tolerance " + tol_text};
  }

  // ---- error: inputs the op must refuse ----
  CheckResult check_error(const stable::Op& op, const ErrorCase& e,
                          const std::string& label) const {
    try {
      stable::NoGradGuard no_grad;
      detail::call(op, e.args);
    } catch (const std::exception& ex) {
      const std::string what = ex.what();
      if (what.find(e.message_part) == std::string::npos) {
        return {"error", label, false,
                "refused, but the message \"" + what + "\" does not contain \"" + e.message_part +
                    "\""};
      }
      return {"error", label, true, "refused: " + what};
    }
    return {"error", label, false,
            "the op accepted these arguments; expected an error saying \"" + e.message_part + "\""};
  }

  std::string name_;
  std::optional<std::string> expected_schema_;
  Reference reference_;
  std::vector<Sample> samples_;
  std::vector<ErrorCase> errors_;
  Tolerances tol_;
  bool gradcheck_ = true;
};

}  // namespace loom::opcheck
