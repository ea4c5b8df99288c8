// The ONNX backend-test runner: loads a test folder, runs its graph node by node through
// the op mappings, and compares every output with the expected one.
#include "onnx_runner.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include "loom/core/str_cat.h"
#include "onnx_ops.h"
#include "onnx_proto.h"
#include "onnx_tensor.h"

namespace loom::onnx {
namespace fs = std::filesystem;

namespace {

/// Ends a test early with an outcome (thrown inside run_test only).
struct Verdict {
  Outcome outcome;
  std::string reason;
};

[[noreturn]] void fail(std::string reason) { throw Verdict{Outcome::Fail, std::move(reason)}; }
[[noreturn]] void skip(std::string reason) { throw Verdict{Outcome::Skip, std::move(reason)}; }

/// Reads a serialized TensorProto file as a tensor; a dtype Loom lacks skips the test.
Tensor load_tensor(const fs::path& path) {
  TensorProto proto;
  try {
    proto = parse_tensor(read_file(path.string()));
  } catch (const ProtoError& e) {
    fail(str_cat(path.filename().string(), ": ", e.what()));
  }
  try {
    return to_tensor(proto);
  } catch (const NotSupported& e) {
    skip(str_cat(path.filename().string(), ": ", e.what()));
  } catch (const ProtoError& e) {
    fail(str_cat(path.filename().string(), ": ", e.what()));
  }
}

/// Tests whose expected values disagree with their own model, by the ONNX version Debian
/// ships (1.12); each reason says how. They are skipped rather than failed.
struct KnownBadTest {
  std::string_view name;
  std::string_view reason;
};
constexpr KnownBadTest kKnownBadTests[] = {
    {"test_adam_multiple",
     "ONNX 1.12's expected values were computed with epsilon 1e-2, but the node carries no "
     "epsilon attribute (default 1e-6)"},
};

/// Refuses, before any data is read, a graph with an op or a feature the runner lacks.
void check_supported(const ModelProto& model) {
  std::set<std::string> unmapped;
  for (const NodeProto& node : model.graph.node) {
    if (!op_table().contains(op_key(node))) unmapped.insert(op_key(node));
    for (const AttributeProto& a : node.attribute) {
      if (a.has_graph) skip(str_cat(node.op_type, ": subgraph attribute '", a.name, "'"));
      if (a.has_sparse_tensor) skip(str_cat(node.op_type, ": sparse attribute '", a.name, "'"));
    }
  }
  if (!unmapped.empty()) {
    std::string list;
    for (const std::string& op : unmapped) list += (list.empty() ? "" : ", ") + op;
    skip(str_cat("unmapped op", unmapped.size() > 1 ? "s " : " ", list));
  }
  if (model.graph.has_sparse_initializer) skip("sparse initializers");
}

std::string index_str(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] == 0 ? 0 : flat % shape[d];
    flat = shape[d] == 0 ? 0 : flat / shape[d];
  }
  return sizes_str(index);
}

std::string number_str(double v) {
  std::ostringstream s;
  s.precision(9);
  s << v;
  return s.str();
}

/// Compares one output with its expected value (Note [ONNX result tolerance]); the problem,
/// or "" if they match.
std::string compare(const Tensor& actual, const Tensor& expected, const RunOptions& o) {
  if (actual.dtype() != expected.dtype()) {
    return str_cat("dtype ", dtype_name(actual.dtype()), ", expected ",
                   dtype_name(expected.dtype()));
  }
  const IntArrayRef as = actual.sizes(), es = expected.sizes();
  if (!std::equal(as.begin(), as.end(), es.begin(), es.end())) {
    return str_cat("shape ", sizes_str(actual.sizes()), ", expected ",
                   sizes_str(expected.sizes()));
  }
  const std::vector<int64_t> shape = shape_of(expected);
  int64_t mismatches = 0, first = -1;
  double first_actual = 0, first_expected = 0, max_diff = 0;
  std::string detail;
  auto note = [&](int64_t i, double a, double e) {
    if (mismatches++ == 0) {
      first = i;
      first_actual = a;
      first_expected = e;
    }
    if (o.verbose && mismatches <= 8) {
      detail += str_cat("\n      at ", index_str(i, shape), ": got ", number_str(a), ", expected ",
                        number_str(e));
    }
  };
  if (is_floating_point(expected.dtype())) {
    const std::vector<double> a = to_doubles(actual), e = to_doubles(expected);
    for (size_t i = 0; i < e.size(); ++i) {
      bool ok;
      if (std::isnan(e[i])) {
        ok = std::isnan(a[i]);
      } else if (std::isinf(e[i])) {
        ok = a[i] == e[i];
      } else {
        const double diff = std::abs(a[i] - e[i]);
        ok = diff <= o.atol + o.rtol * std::abs(e[i]);  // false for a NaN
        if (!std::isnan(diff)) max_diff = std::max(max_diff, diff);
      }
      if (!ok) note(static_cast<int64_t>(i), a[i], e[i]);
    }
  } else {
    const std::vector<int64_t> a = to_int64s(actual), e = to_int64s(expected);
    for (size_t i = 0; i < e.size(); ++i) {
      if (a[i] != e[i]) {
        note(static_cast<int64_t>(i), static_cast<double>(a[i]), static_cast<double>(e[i]));
      }
    }
  }
  if (mismatches == 0) return "";
  std::string message = str_cat(mismatches, " of ", expected.numel(), " values differ; first at ",
                                index_str(first, shape), ": got ", number_str(first_actual),
                                ", expected ", number_str(first_expected));
  if (is_floating_point(expected.dtype())) {
    message += str_cat(" (max abs diff ", number_str(max_diff), ", rtol ", o.rtol, ", atol ",
                       o.atol, ")");
  }
  return message + detail;
}

/// "node N (Op): message", or "node N: message" when the message names the op already.
std::string with_node(const std::string& where, const NodeProto& node, std::string_view message) {
  if (message.starts_with(node.op_type + " ")) {
    return str_cat(where.substr(0, where.find(" (")), ": ", message);
  }
  return str_cat(where, ": ", message);
}

/// Runs the nodes in order; env maps value names to tensors.
void run_graph(const ModelProto& model, std::map<std::string, Tensor>& env) {
  const std::vector<NodeProto>& nodes = model.graph.node;
  for (size_t n = 0; n < nodes.size(); ++n) {
    const NodeProto& node = nodes[n];
    const std::string where = str_cat("node ", n, " (", node.op_type, ")");
    std::vector<Tensor> inputs;
    for (const std::string& name : node.input) {
      if (name.empty()) {
        inputs.emplace_back();
        continue;
      }
      auto it = env.find(name);
      if (it == env.end()) fail(str_cat(where, ": input '", name, "' is not defined"));
      inputs.push_back(it->second);
    }
    const std::optional<int64_t> opset = opset_version(model, node.domain);
    if (!opset) fail(str_cat(where, ": the model imports no opset of domain '", node.domain, "'"));
    NodeContext ctx(node, *opset, std::move(inputs));
    std::vector<Tensor> outputs;
    try {
      outputs = op_table().find(op_key(node))->second(ctx);
      ctx.check_all_attributes_read();
    } catch (const NotSupported& e) {
      skip(with_node(where, node, e.what()));
    } catch (const NotImplementedError& e) {
      // A kernel that refuses a configuration it does not implement (3-D convolution), or a
      // missing kernel: unsupported, not wrong.
      skip(with_node(where, node, e.what()));
    } catch (const std::exception& e) {
      fail(with_node(where, node, e.what()));
    }
    for (size_t i = 0; i < node.output.size(); ++i) {
      if (node.output[i].empty()) continue;
      if (i >= outputs.size() || !outputs[i].defined()) {
        skip(str_cat(where, ": output ", i, " ('", node.output[i], "') is not produced"));
      }
      env[node.output[i]] = outputs[i];
    }
  }
}

/// One line, for the `FAIL name: reason` format (the verbose detail keeps its own lines).
std::string one_line(std::string s, bool keep_detail) {
  if (keep_detail) return s;
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

}  // namespace

TestResult run_test(const fs::path& folder, const RunOptions& options) {
  TestResult result;
  result.name = folder.filename().string();
  try {
    ModelProto model;
    try {
      model = parse_model(read_file((folder / "model.onnx").string()));
    } catch (const ProtoError& e) {
      fail(str_cat("model.onnx: ", e.what()));
    }
    for (const NodeProto& node : model.graph.node) result.op_types.push_back(node.op_type);
    if (!model.has_graph) fail("model.onnx has no graph");
    for (const KnownBadTest& bad : kKnownBadTests) {
      if (bad.name == result.name) skip(str_cat("bad test data: ", bad.reason));
    }
    check_supported(model);

    std::map<std::string, Tensor> env;
    std::set<std::string> initialized;
    for (const TensorProto& init : model.graph.initializer) {
      try {
        env[init.name] = to_tensor(init);
      } catch (const NotSupported& e) {
        skip(str_cat("initializer: ", e.what()));
      } catch (const ProtoError& e) {
        fail(str_cat("initializer: ", e.what()));
      }
      initialized.insert(init.name);
    }
    const fs::path data = folder / "test_data_set_0";
    size_t input_index = 0;
    for (const ValueInfoProto& in : model.graph.input) {
      if (initialized.contains(in.name)) continue;
      if (in.kind != ValueKind::Tensor && in.kind != ValueKind::Unknown) {
        skip(str_cat("input '", in.name, "' is not a tensor"));
      }
      const fs::path file = data / str_cat("input_", input_index++, ".pb");
      if (!fs::exists(file)) fail(str_cat("missing ", file.filename().string()));
      env[in.name] = load_tensor(file);
    }
    std::vector<Tensor> expected;
    for (size_t i = 0; i < model.graph.output.size(); ++i) {
      const ValueInfoProto& out = model.graph.output[i];
      if (out.kind != ValueKind::Tensor && out.kind != ValueKind::Unknown) {
        skip(str_cat("output '", out.name, "' is not a tensor"));
      }
      const fs::path file = data / str_cat("output_", i, ".pb");
      if (!fs::exists(file)) fail(str_cat("missing ", file.filename().string()));
      expected.push_back(load_tensor(file));
    }

    run_graph(model, env);

    for (size_t i = 0; i < expected.size(); ++i) {
      const std::string& name = model.graph.output[i].name;
      auto it = env.find(name);
      if (it == env.end()) fail(str_cat("output '", name, "' was not computed"));
      const std::string problem = compare(it->second, expected[i], options);
      if (!problem.empty()) fail(str_cat("output '", name, "': ", problem));
    }
    result.outcome = Outcome::Pass;
  } catch (const Verdict& v) {
    result.outcome = v.outcome;
    result.reason = v.reason;
  } catch (const std::exception& e) {
    // Anything else (a file system error, an allocation failure) fails this test only.
    result.outcome = Outcome::Fail;
    result.reason = e.what();
  }
  return result;
}

std::vector<fs::path> list_tests(const RunOptions& options) {
  if (!fs::is_directory(options.dir)) {
    throw std::runtime_error(str_cat(options.dir.string(), " is not a folder"));
  }
  std::vector<fs::path> tests;
  for (const fs::directory_entry& e : fs::directory_iterator(options.dir)) {
    const std::string name = e.path().filename().string();
    if (!e.is_directory() || !name.starts_with("test_")) continue;
    if (!options.filter.empty() && name.find(options.filter) == std::string::npos) continue;
    tests.push_back(e.path());
  }
  std::sort(tests.begin(), tests.end());
  return tests;
}

Summary run_all(const RunOptions& options, std::ostream& out, bool quiet) {
  Summary summary;
  for (const fs::path& folder : list_tests(options)) {
    TestResult r = run_test(folder, options);
    switch (r.outcome) {
      case Outcome::Pass: ++summary.passed; break;
      case Outcome::Fail: ++summary.failed; break;
      case Outcome::Skip: ++summary.skipped; break;
    }
    if (!quiet) {
      static constexpr const char* kWord[] = {"PASS", "FAIL", "SKIP"};
      out << kWord[static_cast<int>(r.outcome)] << " " << r.name;
      if (!r.reason.empty()) out << ": " << one_line(r.reason, options.verbose);
      if (options.verbose) {
        std::string ops;
        for (const std::string& op : r.op_types) ops += (ops.empty() ? "" : " ") + op;
        out << "\n      ops: " << ops;
      }
      out << "\n" << std::flush;
    }
    summary.results.push_back(std::move(r));
  }
  return summary;
}

std::string summary_line(const Summary& s) {
  return str_cat(s.passed, " passed, ", s.failed, " failed, ", s.skipped, " skipped");
}

std::vector<std::string> mapped_op_types() {
  std::vector<std::string> ops;
  for (const auto& [name, mapping] : op_table()) ops.push_back(name);
  return ops;
}

}  // namespace loom::onnx
