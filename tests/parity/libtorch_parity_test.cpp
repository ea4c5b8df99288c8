// PyTorch parity: every Loom op that libtorch also has under the same schema name is called
// on the conformance harness's samples (tests/conformance/samples.cpp) through both
// dispatchers, boxed, with the same arguments, and where both accept the call the results
// must agree: sizes, dtype and values (float32 within 1e-4 relative). Differences in which
// inputs are accepted are listed ("[accepts]" lines). Built only where libtorch is installed
// (LOOM_WITH_LIBTORCH); it is how Loom's semantics are checked against PyTorch's own.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <gtest/gtest.h>
#include <torch/version.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "conformance.h"
#include "loom/core/str_cat.h"
#include "loom/dispatcher/boxing.h"
#include "loom/dispatcher/plugin_loader.h"
#include "ops_test_util.h"
#include "torch_interop.h"

namespace loom::parity {
namespace {


using conformance::Sample;


/// Loom's tensors as doubles next to libtorch's; "" when they agree.
std::string compare(const Tensor& got, const at::Tensor& want) {
  if (!got.defined() || !want.defined()) return got.defined() == want.defined() ? "" : "undefined";
  std::vector<int64_t> gs(got.sizes().begin(), got.sizes().end());
  if (gs != want.sizes().vec()) {
    return str_cat("sizes ", sizes_str(got.sizes()), ", libtorch ", c10::str(want.sizes()));
  }
  if (torch_dtype(got.dtype()) != want.scalar_type()) {
    return str_cat("dtype ", dtype_name(got.dtype()), ", libtorch ",
                   c10::toString(want.scalar_type()));
  }
  const std::vector<double> g = testing::to_doubles(got);
  const at::Tensor w64 = want.to(at::kDouble).contiguous();
  const double* w = w64.data_ptr<double>();
  const bool exact = !is_floating_point(got.dtype());
  for (size_t i = 0; i < g.size(); ++i) {
    const bool ok = (std::isnan(g[i]) && std::isnan(w[i])) || g[i] == w[i] ||
                    (!exact && std::fabs(g[i] - w[i]) <= 1e-5 + 1e-4 * std::fabs(w[i]));
    if (!ok) return str_cat("element ", i, ": loom ", g[i], ", libtorch ", w[i]);
  }
  return "";
}

std::vector<std::string> all_ops() {
  load_plugins();
  std::vector<std::string> names;
  for (const OperatorHandle& op : Dispatcher::instance().ops()) {
    if (op.has_schema() && op.schema().ns() == "aten" && !op.schema().is_mutable()) {
      names.push_back(op.name());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

class LibtorchParity : public ::testing::TestWithParam<std::string> {};

TEST_P(LibtorchParity, MatchesLibtorch) {
  const OperatorHandle op = *Dispatcher::instance().find_op(GetParam());
  const FunctionSchema& s = op.schema();
  const std::string torch_name = s.ns() + "::" + s.name();
  const auto torch_op = c10::Dispatcher::singleton().findSchema({torch_name, s.overload_name()});
  if (!torch_op) GTEST_SKIP() << GetParam() << ": not in libtorch " << TORCH_VERSION;
  const conformance::Samples samples = conformance::samples_for(op);
  if (samples.samples.empty()) GTEST_SKIP() << GetParam() << ": " << samples.skip_reason;
  int checked = 0;
  for (const Sample& smp : samples.samples) {
    for (DType d : {DType::Float32, DType::Float64, DType::Int64}) {
      // Loom's side: the sample in dtype d, as the conformance harness converts it.
      Stack args;
      for (const IValue& v : smp.args) {
        if (v.is_tensor() && v.to_tensor().defined() && v.to_tensor().dtype() == DType::Float64) {
          std::vector<double> x = testing::to_doubles(v.to_tensor());
          if (d == DType::Int64) {
            for (double& e : x) e = std::floor(e + 2);
          }
          args.emplace_back(testing::make_tensor(x, v.to_tensor().sizes(), d));
        } else if (v.tag() == IValue::Tag::TensorList) {
          std::vector<Tensor> list;
          for (const Tensor& t : v.to_tensor_list()) {
            list.push_back(t.dtype() == DType::Float64
                               ? testing::make_tensor(testing::to_doubles(t), t.sizes(), d)
                               : t);
          }
          args.emplace_back(std::move(list));
        } else if (v.tag() == IValue::Tag::Double && d == DType::Int64) {
          args.emplace_back(static_cast<int64_t>(std::floor(v.to_double() + 2)));
        } else {
          args.push_back(v);
        }
      }
      // libtorch's boxed calls want every argument: take Loom's defaults (the same schema).
      try {
        normalize_boxed_arguments(op, args);
      } catch (const std::exception&) {
        continue;
      }
      torch::jit::Stack tstack;
      bool convertible = true;
      for (const IValue& v : args) {
        auto tv = to_torch(v);
        if (!tv) convertible = false;
        if (tv) tstack.push_back(*tv);
      }
      if (!convertible) continue;
      std::string torch_error, loom_error;
      try {
        torch_op->callBoxed(&tstack);
      } catch (const std::exception& e) {
        torch_error = e.what();
      }
      Stack lstack = args;
      try {
        op.call_boxed(lstack);
      } catch (const std::exception& e) {
        loom_error = e.what();
      }
      if (!torch_error.empty() || !loom_error.empty()) {
        // Which inputs an op accepts differs between PyTorch versions (libtorch 1.13 has no
        // integer max_pool2d, accepts integer masks in masked_fill, resizes mis-shaped
        // gradients with a warning), so a refusal on one side is listed, not failed.
        if (torch_error.empty() != loom_error.empty()) {
          std::printf("  [accepts] %s on %s %s: libtorch %s, Loom %s\n", GetParam().c_str(),
                      smp.label.c_str(), std::string(dtype_name(d)).c_str(),
                      torch_error.empty() ? "accepts" : "refuses",
                      loom_error.empty() ? "accepts" : loom_error.substr(0, 120).c_str());
        }
        continue;
      }
      std::vector<at::Tensor> want;
      for (const c10::IValue& v : tstack) {
        if (v.isTensor()) want.push_back(v.toTensor());
        if (v.isTensorList()) {
          for (const at::Tensor& t : v.toTensorVector()) want.push_back(t);
        }
        if (v.isTuple()) {
          for (const c10::IValue& e : v.toTupleRef().elements()) {
            if (e.isTensor()) want.push_back(e.toTensor());
          }
        }
      }
      std::vector<Tensor> got;
      for (const IValue& v : lstack) {
        if (v.is_tensor()) got.push_back(v.to_tensor());
        if (v.tag() == IValue::Tag::TensorList) {
          for (const Tensor& t : v.to_tensor_list()) got.push_back(t);
        }
      }
      ASSERT_EQ(got.size(), want.size()) << GetParam() << ": number of results";
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(compare(got[i], want[i]), "")
            << GetParam() << " on " << smp.label << ", " << dtype_name(d) << ", result " << i;
      }
      ++checked;
    }
  }
  if (checked == 0) GTEST_SKIP() << GetParam() << ": no sample converts to libtorch";
}

INSTANTIATE_TEST_SUITE_P(Ops, LibtorchParity, ::testing::ValuesIn(all_ops()), case_name);

}  // namespace
}  // namespace loom::parity
