// The conformance harness's driver (docs/design/conformance.md). For every backend and
// every op it provides, on every sample: the oracle is the reference kernel on contiguous
// float64 (int64) inputs holding exactly the values the dtype under test holds; the backend
// then runs float64, float32, float16, bfloat16 (and int64, int32, int16, int8, uint8),
// contiguous and non-contiguous, and each result must match the oracle within the dtype's
// tolerance (backends.cpp). In-place and out= forms are checked through the functional op
// they mirror. One test per (backend, op).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <tuple>

#include "conformance.h"
#include "loom/core/str_cat.h"
#include "loom/dispatcher/boxing.h"
#include "loom/dispatcher/plugin_loader.h"
#include "loom/ops/pointwise.h"
#include "loom/ops/tensor_methods.h"
#include "ops_test_util.h"

namespace loom::conformance {
namespace {

/// Loads the first-party packs and every backend's plugin, once.
void load_plugins() {
  static std::once_flag once;
  std::call_once(once, [] {
    PluginLoader::instance().load("ops_core");
    PluginLoader::instance().load("ops_nn");
    for (const Backend& b : backends()) {
      if (b.plugin.empty()) continue;
      try {
        PluginLoader::instance().load(b.plugin);
      } catch (const Error&) {
        // Reported by the backend's tests as a skip.
      }
    }
  });
}

bool provides(const OperatorHandle& op, const Backend& b) {
  for (const KernelInfo& k : Dispatcher::instance().kernels(op)) {
    if (k.key == b.key && k.provider == b.provider) return true;
  }
  return false;
}

/// Sets a provider override on op for the guard's lifetime.
class ProviderGuard {
 public:
  ProviderGuard(const OperatorHandle& op, DispatchKey key, const std::string& provider)
      : name_(op.name()), key_(key) {
    Dispatcher::instance().set_provider_override(name_, key_, provider);
  }
  ~ProviderGuard() { Dispatcher::instance().set_provider_override(name_, key_, ""); }
  ProviderGuard(const ProviderGuard&) = delete;
  ProviderGuard& operator=(const ProviderGuard&) = delete;

 private:
  std::string name_;
  DispatchKey key_;
};

/// t copied to device (the target backend's copy_).
Tensor to_device(const Tensor& t, const Device& device) {
  if (t.device() == device) return t;
  Tensor out = Tensor::empty(t.sizes(), TensorOptions{}.with(t.dtype()).with(device));
  copy_(out, t);
  return out;
}

/// The two dtype families a sample runs in: floating dtypes against a float64 oracle, and
/// integer dtypes (on small non-negative integers, which no integer op overflows) against an
/// int64 oracle.
struct Family {
  DType oracle;
  std::vector<DType> dtypes;
};
const Family kFloats{DType::Float64,
                     {DType::Float64, DType::Float32, DType::Float16, DType::BFloat16}};
const Family kInts{DType::Int64,
                   {DType::Int64, DType::Int32, DType::Int16, DType::Int8, DType::UInt8}};

/// t's values in dtype d and the given layout, on device. Float64 sample tensors become d
/// (for an integer d: floor(v + 2), in [0, 4)); other tensors (indices) keep their dtype.
Tensor convert(const Tensor& t, DType d, Layout layout, const Device& device) {
  const bool sample_values = t.dtype() == DType::Float64;
  const DType to = sample_values ? d : t.dtype();
  std::vector<double> v = testing::to_doubles(t);
  if (sample_values && !is_floating_point(d)) {
    for (double& x : v) x = std::floor(x + 2);
  }
  const bool strided = layout == Layout::NonContiguous && t.dim() >= 1;
  return to_device(testing::make_tensor(v, t.sizes(), to, strided), device);
}

/// The sample's arguments, converted.
Stack convert_args(const Sample& s, DType d, Layout layout, const Device& device) {
  Stack st;
  for (const IValue& v : s.args) {
    if (v.is_tensor()) {
      st.emplace_back(convert(v.to_tensor(), d, layout, device));
    } else if (v.tag() == IValue::Tag::TensorList) {
      std::vector<Tensor> list;
      for (const Tensor& t : v.to_tensor_list()) list.push_back(convert(t, d, layout, device));
      st.emplace_back(std::move(list));
    } else if (v.tag() == IValue::Tag::Double && !is_floating_point(d)) {
      // Integer runs take integer scalars too (a float scalar would promote to float).
      st.emplace_back(static_cast<int64_t>(std::floor(v.to_double() + 2)));
    } else {
      st.push_back(v);
    }
  }
  return st;
}

/// t's values (exactly representable in dtype) as a contiguous CPU tensor of dtype.
Tensor retype(const Tensor& t, DType dtype) {
  return testing::make_tensor(testing::to_doubles(t), t.sizes(), dtype);
}

/// The oracle's arguments: the values dtype d holds, in the family's oracle dtype.
Stack oracle_args(const Sample& s, DType d, const Family& f) {
  Stack st = convert_args(s, d, Layout::Contiguous, kCPU);
  for (IValue& v : st) {
    if (v.is_tensor() && v.to_tensor().defined() && v.to_tensor().dtype() == d) {
      v = retype(v.to_tensor(), f.oracle);
    } else if (v.tag() == IValue::Tag::TensorList) {
      std::vector<Tensor> list;
      for (const Tensor& t : v.to_tensor_list()) {
        list.push_back(t.dtype() == d ? retype(t, f.oracle) : t);
      }
      v = std::move(list);
    }
  }
  return st;
}

Stack call(const OperatorHandle& op, Stack st, DispatchKey key, const std::string& provider) {
  ProviderGuard guard(op, key, provider);
  normalize_boxed_arguments(op, st);
  op.call_boxed(st);
  return st;
}

/// The tensors of a result stack, in order (lists flattened).
std::vector<Tensor> tensors_of(const Stack& st) {
  std::vector<Tensor> out;
  for (const IValue& v : st) {
    if (v.is_tensor()) out.push_back(v.to_tensor());
    if (v.tag() == IValue::Tag::TensorList) {
      for (const Tensor& t : v.to_tensor_list()) out.push_back(t);
    }
  }
  return out;
}

/// Compares got (computed from dtype-d inputs) with the oracle's want; "" when they agree.
/// values_only: an in-place result keeps self's dtype (eq_ writes 0/1 into a float self).
std::string compare(const Tensor& got, const Tensor& want, DType d, const Family& f, double scale,
                    bool values_only) {
  if (!got.defined() || !want.defined()) {
    return got.defined() == want.defined() ? "" : "one result is undefined";
  }
  if (sizes_str(got.sizes()) != sizes_str(want.sizes())) {
    return str_cat("sizes ", sizes_str(got.sizes()), ", oracle ", sizes_str(want.sizes()));
  }
  // A result in the oracle's dtype follows the inputs: float64 -> d; int64 -> an integer
  // dtype (sums widen to int64 as in PyTorch). Other results (bool, indices) match exactly.
  if (!values_only && want.dtype() == DType::Float64 && f.oracle == DType::Float64 &&
      got.dtype() != d) {
    return str_cat("dtype ", dtype_name(got.dtype()), ", expected ", dtype_name(d));
  }
  // PyTorch's all/any keep uint8 for uint8 inputs.
  const bool uint8_for_bool =
      d == DType::UInt8 && got.dtype() == DType::UInt8 && want.dtype() == DType::Bool;
  if (!values_only && !uint8_for_bool && want.dtype() != f.oracle && got.dtype() != want.dtype()) {
    return str_cat("dtype ", dtype_name(got.dtype()), ", oracle ", dtype_name(want.dtype()));
  }
  const std::vector<double> g = testing::to_doubles(to_device(got, kCPU));
  const std::vector<double> w = testing::to_doubles(want);
  const bool exact = !is_floating_point(got.dtype());
  const Tolerance tol = tolerance_for(is_floating_point(d) ? d : got.dtype());
  // An integer result wraps as C++ conversion does (uint8 -1 is 255); a 16-bit float result
  // beyond the dtype's range is an infinity of the same sign.
  const int bits = exact ? static_cast<int>(8 * element_size(got.dtype())) : 0;
  const double max_finite = d == DType::Float16 ? 65504.0 : d == DType::BFloat16 ? 3.39e38 : 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const bool wraps = exact && bits < 64 && got.dtype() != DType::Bool &&
                       std::fmod(g[i] - w[i], std::ldexp(1.0, bits)) == 0;
    const bool overflows = max_finite > 0 && std::isinf(g[i]) && std::fabs(w[i]) > max_finite &&
                           std::signbit(g[i]) == std::signbit(w[i]);
    const bool ok = (std::isnan(w[i]) && std::isnan(g[i])) || g[i] == w[i] || wraps || overflows ||
                    (!exact && !std::isinf(w[i]) &&
                     std::fabs(g[i] - w[i]) <= scale * (tol.atol + tol.rtol * std::fabs(w[i])));
    if (!ok) {
      return str_cat("element ", i, ": got ", g[i], ", oracle ", w[i], " (rtol ", scale * tol.rtol,
                     ", atol ", scale * tol.atol, ")");
    }
  }
  return "";
}

/// How an op is checked: called as it is, or (in-place and out= forms) through the
/// functional op it mirrors, whose samples and oracle it shares.
struct Plan {
  OperatorHandle op;
  std::optional<OperatorHandle> functional;  ///< set for in-place and out= forms
  bool in_place = false;
  std::string skip_reason;
};

bool writes(const Argument& a) { return a.alias && a.alias->is_write; }

/// The functional op an in-place (`add_.Tensor`) or out= (`add.out`) form mirrors: same
/// base name, no mutation, and exactly the form's non-written arguments.
std::optional<OperatorHandle> functional_of(const OperatorHandle& op, bool* in_place) {
  const FunctionSchema& s = op.schema();
  std::vector<const Argument*> inputs;
  for (const Argument& a : s.arguments()) {
    if (!writes(a)) inputs.push_back(&a);
  }
  *in_place = !s.arguments().empty() && writes(s.arguments()[0]) && s.name().back() == '_';
  std::string base = s.name();
  if (*in_place) base.pop_back();
  for (const OperatorHandle& f : Dispatcher::instance().ops()) {
    if (!f.has_schema() || f.schema().is_mutable() || f.schema().name() != base ||
        f.schema().ns() != s.ns()) {
      continue;
    }
    const auto& fa = f.schema().arguments();
    const size_t skip = *in_place ? 1 : 0;  // self is the written argument of an in-place form
    if (fa.size() != inputs.size() + skip) continue;
    bool same = *in_place ? fa[0].type == s.arguments()[0].type : true;
    for (size_t i = 0; same && i < inputs.size(); ++i) {
      same = fa[i + skip].name == inputs[i]->name && fa[i + skip].type == inputs[i]->type;
    }
    if (same) return f;
  }
  return std::nullopt;
}

Plan plan_for(const OperatorHandle& op) {
  Plan p{op, std::nullopt, false, ""};
  if (!op.schema().is_mutable()) return p;
  p.functional = functional_of(op, &p.in_place);
  if (!p.functional) p.skip_reason = "mutates its inputs and mirrors no functional op";
  return p;
}

/// The out= form's stack: the functional's (normalized) arguments by name, plus fresh
/// outputs shaped like the functional's results.
Stack out_form_args(const OperatorHandle& out_op, const OperatorHandle& functional,
                    const Stack& fargs, const std::vector<Tensor>& like) {
  Stack st;
  size_t k = 0;
  for (const Argument& a : out_op.schema().arguments()) {
    if (writes(a)) {
      const Tensor& l = like.at(k++);
      st.emplace_back(Tensor::empty(l.sizes(), TensorOptions{}.with(l.dtype()).with(l.device())));
    } else {
      st.push_back(fargs.at(*functional.schema().argument_index(a.name)));
    }
  }
  return st;
}

struct Case {
  Backend backend;
  std::string op;
};

std::vector<Case> all_cases() {
  load_plugins();
  std::vector<Case> cases;
  for (const Backend& b : backends()) {
    for (const OperatorHandle& op : Dispatcher::instance().ops()) {
      if (op.has_schema() && provides(op, b)) cases.push_back({b, op.name()});
    }
  }
  std::sort(cases.begin(), cases.end(), [](const Case& a, const Case& b) {
    return std::tie(a.backend.name, a.op) < std::tie(b.backend.name, b.op);
  });
  return cases;
}

/// gtest's name for a case in its messages.
void PrintTo(const Case& c, std::ostream* os) { *os << c.backend.name << " " << c.op; }

/// LOOM_CONFORMANCE_VERBOSE=1 lists every (op, sample, dtype, layout) checked.
bool verbose() {
  static const bool v = std::getenv("LOOM_CONFORMANCE_VERBOSE") != nullptr;
  return v;
}

class OpConformance : public ::testing::TestWithParam<Case> {};

TEST_P(OpConformance, MatchesOracle) {
  const Case& c = GetParam();
  const Plan plan = plan_for(*Dispatcher::instance().find_op(c.op));
  if (!plan.skip_reason.empty()) GTEST_SKIP() << c.op << ": " << plan.skip_reason;
  const OperatorHandle oracle_op = plan.functional.value_or(plan.op);
  const Samples samples = samples_for(oracle_op);
  if (samples.samples.empty()) GTEST_SKIP() << c.op << ": " << samples.skip_reason;
  const Device device(c.backend.device);
  int checked = 0;
  std::string first_na;
  for (const Sample& s : samples.samples) {
    for (const Family* f : {&kFloats, &kInts}) {
      for (DType d : f->dtypes) {
        // The oracle: the reference kernel on the values dtype d holds, in the oracle dtype.
        Stack want;
        try {
          want = call(oracle_op, oracle_args(s, d, *f), DispatchKey::CPU, "reference");
        } catch (const Error& e) {
          if (first_na.empty()) first_na = str_cat(s.label, ": ", e.what());
          break;  // the op does not take this sample in this family
        }
        const std::vector<Tensor> w = tensors_of(want);
        for (Layout layout : {Layout::Contiguous, Layout::NonContiguous}) {
          const char* lname = layout == Layout::Contiguous ? "contiguous" : "non-contiguous";
          std::vector<Tensor> g;
          try {
            Stack args = convert_args(s, d, layout, device);
            if (plan.in_place) {
              const Tensor self = args.at(0).to_tensor();
              call(plan.op, std::move(args), c.backend.key, c.backend.provider);
              g = {self};
            } else if (plan.functional) {
              normalize_boxed_arguments(*plan.functional, args);
              const Stack fres = call(*plan.functional, args, c.backend.key, c.backend.provider);
              Stack oargs = out_form_args(plan.op, *plan.functional, args, tensors_of(fres));
              std::vector<Tensor> outs;
              for (size_t i = 0; i < oargs.size(); ++i) {
                if (writes(plan.op.schema().arguments()[i])) outs.push_back(oargs[i].to_tensor());
              }
              call(plan.op, std::move(oargs), c.backend.key, c.backend.provider);
              g = outs;
            } else {
              g = tensors_of(call(plan.op, std::move(args), c.backend.key, c.backend.provider));
            }
          } catch (const Error& e) {
            // PyTorch too refuses some dtypes (16-bit floats, some integer widths) and some
            // in-place forms (a result type self cannot hold); a refusal of the oracle's own
            // dtype by the plain op is a failure.
            if (d != f->oracle || plan.functional) break;
            ADD_FAILURE() << c.op << " on " << s.label << " " << dtype_name(d) << " " << lname
                          << " threw, but the oracle did not: " << e.what();
            continue;
          }
          if (plan.in_place && w.size() != 1) break;
          ASSERT_EQ(g.size(), plan.in_place ? 1 : w.size()) << c.op << ": number of results";
          for (size_t i = 0; i < g.size(); ++i) {
            const std::string why =
                compare(g[i], w[i], d, *f, c.backend.tolerance_scale, plan.in_place);
            EXPECT_EQ(why, "") << c.op << " on " << s.label << ", " << dtype_name(d) << ", "
                               << lname << ", result " << i;
          }
          if (verbose()) {
            std::printf("  checked %s on %s, %s, %s: %s vs oracle %s\n", c.op.c_str(),
                        s.label.c_str(), std::string(dtype_name(d)).c_str(), lname,
                        g.empty() ? "-" : g[0].describe().c_str(),
                        w.empty() ? "-" : w[0].describe().c_str());
          }
          ++checked;
        }
      }
    }
  }
  if (checked == 0) GTEST_SKIP() << c.op << ": no sample applies (" << first_na << ")";
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string n = info.param.backend.name + "_" + info.param.op;
  for (char& ch : n) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return n;
}

INSTANTIATE_TEST_SUITE_P(Backends, OpConformance, ::testing::ValuesIn(all_cases()), case_name);

// ---- The Meta key (Note [Meta kernels share the reference's setup] in ops/core/cpu/meta.h) ---
// Every op with a Meta kernel, on every sample, dtype (float32, float16, int64) and layout:
// the Meta call must give what the reference gives on the cpu, in sizes, dtype and strides
// (of the dims longer than 1) and on the meta device, an in-place form must return self, and
// an input the reference refuses must be refused on meta too (with an error, not a crash).

/// A meta tensor with t's sizes, strides, storage offset and dtype.
Tensor meta_twin(const Tensor& t) {
  if (!t.defined()) return t;
  int64_t extent = t.numel() == 0 ? 0 : t.storage_offset() + 1;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.numel() > 0) extent += (t.size(d) - 1) * t.stride(d);
  }
  return Tensor::empty({extent}, TensorOptions{}.with(t.dtype()).with(Device(DeviceType::meta())))
      .as_strided_view(t.sizes(), t.strides(), t.storage_offset());
}

Stack meta_args(const Stack& cpu) {
  Stack st;
  for (const IValue& v : cpu) {
    if (v.is_tensor()) {
      st.emplace_back(meta_twin(v.to_tensor()));
    } else if (v.tag() == IValue::Tag::TensorList) {
      std::vector<Tensor> list;
      for (const Tensor& t : v.to_tensor_list()) list.push_back(meta_twin(t));
      st.emplace_back(std::move(list));
    } else if (v.tag() == IValue::Tag::OptionalTensorList) {
      std::vector<std::optional<Tensor>> list;
      for (const auto& t : v.to_optional_tensor_list()) {
        list.push_back(t ? std::optional<Tensor>(meta_twin(*t)) : std::nullopt);
      }
      st.emplace_back(std::move(list));
    } else {
      st.push_back(v);
    }
  }
  return st;
}

/// "" when meta carries want's metadata.
std::string compare_metadata(const Tensor& meta, const Tensor& want) {
  if (!meta.defined() || !want.defined()) {
    return meta.defined() == want.defined() ? "" : "one result is undefined";
  }
  if (!meta.device().is_meta()) return str_cat("result on ", meta.device().str(), ", not meta");
  if (sizes_str(meta.sizes()) != sizes_str(want.sizes())) {
    return str_cat("sizes ", sizes_str(meta.sizes()), ", reference ", sizes_str(want.sizes()));
  }
  if (meta.dtype() != want.dtype()) {
    return str_cat("dtype ", dtype_name(meta.dtype()), ", reference ", dtype_name(want.dtype()));
  }
  for (int64_t d = 0; d < want.dim(); ++d) {
    if (want.size(d) > 1 && meta.stride(d) != want.stride(d)) {
      return str_cat("strides ", sizes_str(meta.strides()), ", reference ",
                     sizes_str(want.strides()));
    }
  }
  return "";
}

bool has_meta_kernel(const OperatorHandle& op) {
  for (const KernelInfo& k : Dispatcher::instance().kernels(op)) {
    if (k.key == DispatchKey::Meta) return true;
  }
  return false;
}

std::vector<std::string> meta_ops() {
  load_plugins();
  std::vector<std::string> names;
  for (const OperatorHandle& op : Dispatcher::instance().ops()) {
    if (op.has_schema() && has_meta_kernel(op)) names.push_back(op.name());
  }
  std::sort(names.begin(), names.end());
  return names;
}

/// Whether the reference runs the call when every dtype-d tensor argument holds ones, or else
/// zeros, instead: then its refusal was about the values (an integer division by zero, an
/// index out of range), which meta does not have.
bool runs_on_other_values(const Plan& plan, const OperatorHandle& base, const Stack& cpu_args,
                          DType d) {
  for (double value : {1.0, 0.0}) {
    Stack st;
    for (const IValue& v : cpu_args) {
      if (v.is_tensor() && v.to_tensor().defined() && v.to_tensor().dtype() == d) {
        const Tensor& t = v.to_tensor();
        st.emplace_back(testing::make_tensor(
            std::vector<double>(static_cast<size_t>(t.numel()), value), t.sizes(), d));
      } else {
        st.push_back(v);
      }
    }
    try {
      call(plan.in_place ? plan.op : base, std::move(st), DispatchKey::CPU, "reference");
      return true;
    } catch (const Error&) {
    }
  }
  return false;
}

/// An op of the Meta tests: how it is called (Plan), the op its samples come from, the samples,
/// and why it has none to run ("" when it has).
struct MetaCase {
  Plan plan;
  OperatorHandle base;
  Samples samples;
  std::string skip_reason;
};
MetaCase meta_case(const std::string& name) {
  Plan plan = plan_for(*Dispatcher::instance().find_op(name));
  const OperatorHandle base = plan.functional.value_or(plan.op);
  if (!plan.skip_reason.empty()) return {plan, base, {}, plan.skip_reason};
  Samples samples = samples_for(base);
  std::string why = samples.samples.empty() ? samples.skip_reason : "";
  return {std::move(plan), base, std::move(samples), std::move(why)};
}

class MetaKernels : public ::testing::TestWithParam<std::string> {};

TEST_P(MetaKernels, MatchReferenceMetadata) {
  const MetaCase c = meta_case(GetParam());
  if (!c.skip_reason.empty()) GTEST_SKIP() << GetParam() << ": " << c.skip_reason;
  const Plan& plan = c.plan;
  const OperatorHandle& base = c.base;
  const Samples& samples = c.samples;
  int checked = 0, value_dependent = 0;
  for (const Sample& s : samples.samples) {
    for (DType d : {DType::Float32, DType::Float16, DType::Int64}) {
      for (Layout layout : {Layout::Contiguous, Layout::NonContiguous}) {
        const std::string where =
            str_cat(GetParam(), " on ", s.label, ", ", dtype_name(d),
                    layout == Layout::Contiguous ? ", contiguous" : ", non-contiguous");
        // The same call on the cpu (reference) and on meta; out= forms get outputs shaped by
        // their functional's cpu result, and their meta twins.
        Stack cpu_args = convert_args(s, d, layout, kCPU);
        normalize_boxed_arguments(base, cpu_args);
        Stack meta_in = meta_args(cpu_args);
        std::vector<Tensor> want, got;
        std::string cpu_error;
        try {
          if (plan.functional && !plan.in_place) {
            const Stack fres = call(base, cpu_args, DispatchKey::CPU, "reference");
            Stack oargs = out_form_args(plan.op, base, cpu_args, tensors_of(fres));
            Stack margs = meta_args(oargs);
            for (size_t i = 0; i < oargs.size(); ++i) {
              if (writes(plan.op.schema().arguments()[i])) {
                want.push_back(oargs[i].to_tensor());
                got.push_back(margs[i].to_tensor());
              }
            }
            call(plan.op, std::move(oargs), DispatchKey::CPU, "reference");
            meta_in = std::move(margs);
          } else {
            want = tensors_of(call(plan.op, cpu_args, DispatchKey::CPU, "reference"));
          }
        } catch (const Error& e) {
          cpu_error = e.what();
        }
        std::vector<Tensor> meta_results;
        std::string meta_error;
        bool needs_values = false;
        try {
          const Tensor self = plan.in_place ? meta_in.at(0).to_tensor() : Tensor();
          meta_results = tensors_of(call(plan.op, meta_in, DispatchKey::Meta, "reference"));
          if (plan.in_place) {
            ASSERT_EQ(meta_results.size(), 1u) << where;
            EXPECT_TRUE(meta_results[0].is_same(self)) << where << ": in-place result is not self";
          }
        } catch (const NotImplementedError& e) {
          // A result whose sizes come from the values (one_hot with num_classes=-1).
          meta_error = e.what();
          needs_values = true;
        } catch (const Error& e) {
          meta_error = e.what();
        }
        if (!cpu_error.empty()) {
          // A refusal of the values (an integer division by zero) is not one meta can make:
          // the same call on ones must then run.
          if (meta_error.empty() && !runs_on_other_values(plan, base, cpu_args, d)) {
            ADD_FAILURE() << where << ": the reference refused (" << cpu_error
                          << ") but meta did not";
          }
          continue;
        }
        if (needs_values) {
          ++value_dependent;
          continue;
        }
        ASSERT_EQ(meta_error, "") << where << ": meta refused what the reference ran";
        if (!(plan.functional && !plan.in_place)) got = meta_results;
        ASSERT_EQ(got.size(), want.size()) << where << ": number of results";
        for (size_t i = 0; i < got.size(); ++i) {
          EXPECT_EQ(compare_metadata(got[i], want[i]), "") << where << ", result " << i;
        }
        ++checked;
      }
    }
  }
  // Meta may refuse a sample whose result's sizes need the values, not every sample.
  if (value_dependent > 0) {
    EXPECT_GT(checked, 0) << GetParam() << ": meta refused every sample (NotImplementedError)";
  }
  if (checked == 0) GTEST_SKIP() << GetParam() << ": no sample runs on the reference";
}

// A call that mixes meta and cpu tensors would select the CPU kernel (the higher key) and read
// the meta tensor's missing data: the dispatcher refuses it first (Note [Meta mixed with a
// device] in loom/dispatcher/dispatcher.h); copy_, which moves data between devices, is
// exempt (and has no samples here).
TEST_P(MetaKernels, MixedWithCpuTensorsAreRefused) {
  const MetaCase c = meta_case(GetParam());
  if (!c.skip_reason.empty()) GTEST_SKIP() << GetParam() << ": " << c.skip_reason;
  const Plan& plan = c.plan;
  const OperatorHandle& base = c.base;
  const Samples& samples = c.samples;
  for (const Sample& s : samples.samples) {
    Stack cpu_args = convert_args(s, DType::Float32, Layout::Contiguous, kCPU);
    normalize_boxed_arguments(base, cpu_args);
    size_t tensors = 0;
    for (const IValue& v : cpu_args) tensors += v.is_tensor() && v.to_tensor().defined();
    if (tensors < 2) continue;  // one tensor on meta is a meta call, not a mix
    for (size_t k = 0; k < cpu_args.size(); ++k) {
      if (!cpu_args[k].is_tensor() || !cpu_args[k].to_tensor().defined()) continue;
      Stack mixed = cpu_args;
      for (IValue& v : mixed) {
        if (v.is_tensor() && v.to_tensor().defined()) v = IValue(v.to_tensor().clone());
      }
      mixed[k] = IValue(meta_twin(cpu_args[k].to_tensor()));
      try {
        (void)call(base, std::move(mixed), DispatchKey::CPU, "reference");
        ADD_FAILURE() << GetParam() << " on " << s.label << " ran with argument " << k
                      << " on meta and the others on the cpu";
      } catch (const DeviceError& e) {
        EXPECT_TRUE(std::string(e.what()).find("found at least two devices, cpu and meta") !=
                    std::string::npos)
            << e.what();
      }
    }
  }
}

std::string meta_case_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  for (char& ch : n) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return n;
}

INSTANTIATE_TEST_SUITE_P(Meta, MetaKernels, ::testing::ValuesIn(meta_ops()), meta_case_name);

/// The ops the samples cannot reach (random values, mutation without a functional twin,
/// ScalarType arguments), called by hand on both keys: same metadata.
TEST(MetaKernelsByHand, MatchReferenceMetadata) {
  load_plugins();
  using IL = std::vector<int64_t>;
  const Tensor x = testing::make_tensor({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {3, 4})
                       .as_strided_view({4, 3}, {1, 4}, 0);  // a transposed [4, 3]
  const Tensor y = testing::make_tensor({0.1, 0.2, 0.3, 0.4, 0.5, 0.6}, {2, 3});
  const Tensor keep = testing::make_tensor({1, 0, 1, 1, 0, 1}, {2, 3}, DType::Bool);
  struct Call {
    const char* op;
    Stack args;
  };
  const std::vector<Call> calls = {
      {"aten::bernoulli", {y, std::nullopt}},
      {"aten::bernoulli.p", {x, 0.5, std::nullopt}},
      {"aten::rand_like", {x}},
      {"aten::randn_like", {x}},
      {"aten::randint_like", {x, int64_t{7}}},
      {"aten::randint_like.low_dtype", {x, int64_t{2}, int64_t{7}}},
      {"aten::empty_like", {x}},
      {"aten::native_dropout", {y, 0.25, true}},
      {"aten::native_dropout_backward", {y, keep, 2.0}},
      {"aten::copy_", {y.clone(), x.as_strided_view({2, 3}, {1, 4}, 0), false}},
      {"aten::fill_.Scalar", {y.clone(), 2.5}},
      {"aten::fill_.Tensor", {y.clone(), testing::make_tensor({3}, {})}},
      {"aten::zero_", {x.clone()}},
      {"aten::to.dtype", {x, DType::Float16}},
      {"aten::to.dtype", {x, DType::Int64}},
      {"aten::as_strided", {x.clone(), IL{2, 2}, IL{1, 3}, int64_t{1}}},
      {"aten::_softmax_backward_data", {y, y, int64_t{1}, DType::Float32}},
      {"aten::_log_softmax_backward_data", {y, y, int64_t{0}, DType::Float32}},
      {"aten::norm.ScalarOpt_dtype", {x, 2.0, DType::Float64}},
      {"aten::norm.ScalarOpt_dim_dtype", {x, 1.0, IL{1}, true, DType::Float64}},
  };
  for (const Call& c : calls) {
    const OperatorHandle op = *Dispatcher::instance().find_op(c.op);
    Stack cpu_args = c.args;
    normalize_boxed_arguments(op, cpu_args);
    const Stack meta_in = meta_args(cpu_args);
    const std::vector<Tensor> want = tensors_of(call(op, cpu_args, DispatchKey::CPU, "reference"));
    std::vector<Tensor> got;
    ASSERT_NO_THROW(got = tensors_of(call(op, meta_in, DispatchKey::Meta, "reference"))) << c.op;
    ASSERT_EQ(got.size(), want.size()) << c.op;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(compare_metadata(got[i], want[i]), "") << c.op << ", result " << i;
    }
    if (op.schema().is_mutable()) {
      EXPECT_TRUE(got.at(0).is_same(meta_in.at(0).to_tensor())) << c.op << " returns self";
    }
  }
}

/// How far the Meta key reaches: prints the ops that have a kernel at CPU but none at Meta
/// (and no composite one), so that a run shows what shape propagation cannot cross yet.
TEST(MetaKernelsCoverage, ListsTheOpsWithoutOne) {
  load_plugins();
  int with = 0;
  std::vector<std::string> without;
  for (const OperatorHandle& op : Dispatcher::instance().ops()) {
    if (!op.has_schema()) continue;
    bool cpu = false, meta = false;
    for (const KernelInfo& k : Dispatcher::instance().kernels(op)) {
      cpu = cpu || k.key == DispatchKey::CPU;
      meta = meta || k.key == DispatchKey::Meta || k.key == DispatchKey::CompositeImplicitAutograd;
    }
    // An op without tensor arguments (profiler ranges) dispatches to the CPU whatever the
    // inputs' devices; a factory has its Meta kernel for device="meta".
    bool takes_tensors = false;
    for (const Argument& a : op.schema().arguments()) {
      takes_tensors = takes_tensors || a.type.str().find("Tensor") != std::string::npos;
    }
    if (!cpu || !takes_tensors) continue;
    if (meta) {
      ++with;
    } else {
      without.push_back(op.name());
    }
  }
  std::sort(without.begin(), without.end());
  std::string list;
  for (const std::string& n : without) list += str_cat("  ", n, "\n");
  std::printf("Meta kernels: %d of %zu ops with a CPU kernel; without one:\n%s", with,
              with + without.size(), list.c_str());
  EXPECT_GT(with, 0);
}

}  // namespace
}  // namespace loom::conformance
