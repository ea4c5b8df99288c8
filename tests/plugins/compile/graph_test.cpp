// loom::graph: capture at the Tracing key, the printed graph, and the interpreter against the
// function it was captured from (values, gradients, guards).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <thread>

#include "compile_test_util.h"
#include "loom/graph/capture.h"
#include "loom/loom.h"
#include "ops_test_util.h"
#include "test_util.h"

namespace loom::graph {
namespace {

using loom::graph::testing::ramp;
using loom::testing::contains;
using loom::testing::make_tensor;
using loom::testing::message_of;
using loom::testing::to_doubles;

// An op of this test's own, registered by schema as an SDK extension would be: captured like
// aten's ops.
LOOM_LIBRARY(graphtest, m) { m.def("twice(Tensor x) -> Tensor"); }
LOOM_LIBRARY_IMPL(graphtest, CPU, m) {
  m.impl("twice", [](const Tensor& x) { return x * 2.0; });
}

class GraphTest : public ::testing::Test {
 protected:
  void SetUp() override { loom::init(); }
};

TEST_F(GraphTest, CapturesTheOpsAndPrintsThem) {
  const Tensor w = ramp({4, 3});  // closed over: a captured value
  auto fn = [&](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{sum(relu(add(matmul(in[0], w), in[1])))};
  };
  std::vector<Tensor> eager;
  const Graph g = capture(fn, {ramp({2, 4}), ramp({3})}, &eager);
  EXPECT_EQ(g.str(),
            "graph(%0 : f32[2, 4], %1 : f32[3]):\n"
            "  %2 : f32[4, 3] = captured\n"
            "  %3 : f32[2, 3] = aten::matmul(%0, %2)\n"
            "  %4 : f32[2, 3] = aten::add.Tensor(%3, %1, 1)\n"
            "  %5 : f32[2, 3] = aten::relu(%4)\n"
            "  %6 : f32[] = aten::sum(%5, None)\n"
            "  return [%6]\n");
  ASSERT_EQ(eager.size(), 1u);
  // Replayed on other values: what the function gives.
  const Tensor a = ramp({2, 4}, -0.3), b = ramp({3}, 0.7);
  const std::vector<Tensor> got = g.run({a, b});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(to_doubles(got[0]), to_doubles(fn({a, b})[0]));
  // Every value carries its metadata on the meta device.
  for (const Value& v : g.values()) EXPECT_TRUE(v.meta.device().is_meta()) << v.id;
}

TEST_F(GraphTest, RecordsWhatTheProgramCalledNotWhatKernelsCallInside) {
  // linear's reference kernel and autograd's formulas call other ops: they run below Tracing.
  const Tensor w = ramp({3, 4}), bias = ramp({3});
  auto fn = [&](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{linear(in[0], w, bias)};
  };
  Tensor x = ramp({2, 4});
  x.set_requires_grad(true);
  const Graph g = capture(fn, {x});
  ASSERT_EQ(g.nodes().size(), 1u) << g.str();
  EXPECT_EQ(g.nodes()[0].op.name(), "aten::linear");
}

TEST_F(GraphTest, ViewsInPlaceOpsListsAndCustomOpsReplayAsEager) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor y = in[0].clone();
    y.mul_(3.0);                                 // in place, returns self
    Tensor t = transpose(y, 0, 1);               // a view
    std::vector<Tensor> parts = split(t, 2, 0);  // a Tensor[] result
    Tensor c = cat({parts[1], parts[0]}, 0);     // a Tensor[] argument
    Tensor z = Dispatcher::instance()
                   .find_op_or_throw("graphtest::twice")
                   .typed<Tensor(const Tensor&)>()(c);
    return std::vector<Tensor>{z, t};
  };
  const Graph g = capture(fn, {ramp({3, 4})});
  const std::string text = g.str();
  EXPECT_TRUE(contains(text, "aten::mul_.Scalar")) << text;
  EXPECT_TRUE(contains(text, "aten::split.Tensor")) << text;
  EXPECT_TRUE(contains(text, "graphtest::twice")) << text;
  const Tensor other = ramp({3, 4}, 0.37);
  const std::vector<Tensor> got = g.run({other});
  const std::vector<Tensor> want = fn({other});
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(got[i].sizes().vec(), want[i].sizes().vec()) << i;
    EXPECT_EQ(got[i].strides().vec(), want[i].strides().vec()) << i;
    EXPECT_EQ(to_doubles(got[i]), to_doubles(want[i])) << i;
  }
}

TEST_F(GraphTest, GradientsThroughTheReplayEqualEager) {
  Tensor w = ramp({4, 3});
  w.set_requires_grad(true);
  auto fn = [&](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{sum(mul(tanh(matmul(in[0], w)), sum(in[0], {1}, true)))};
  };
  Tensor x = ramp({2, 4});
  x.set_requires_grad(true);
  const Graph g = capture(fn, {x});
  Tensor x1 = ramp({2, 4}, 0.2);
  x1.set_requires_grad(true);
  g.run({x1})[0].backward();
  const std::vector<double> gx = to_doubles(x1.grad()), gw = to_doubles(w.grad());
  w.set_grad(Tensor());
  Tensor x2 = ramp({2, 4}, 0.2);
  x2.set_requires_grad(true);
  fn({x2})[0].backward();
  EXPECT_EQ(gx, to_doubles(x2.grad()));
  EXPECT_EQ(gw, to_doubles(w.grad()));
}

TEST_F(GraphTest, PropagatesMetadataThroughTheMetaKernels) {
  const Tensor w = ramp({4, 3});
  auto fn = [&](const std::vector<Tensor>& in) {
    Tensor h = relu(add(matmul(in[0], w), in[1]));
    return std::vector<Tensor>{h, softmax(h, 1), sum(h, {0}, true), transpose(h, 0, 1)};
  };
  const Graph g = capture(fn, {ramp({2, 4}), ramp({3})});
  // Other sizes (a batch of 5) and dtype-preserving inputs: the outputs' metadata, no data,
  // equal to what eager computes on real tensors of those sizes.
  const Tensor a = ramp({5, 4}), b = ramp({3});
  const std::vector<Tensor> meta = g.propagate({a, b});
  const std::vector<Tensor> want = fn({a, b});
  ASSERT_EQ(meta.size(), want.size());
  for (size_t i = 0; i < meta.size(); ++i) {
    EXPECT_TRUE(meta[i].device().is_meta()) << i;
    EXPECT_EQ(meta[i].sizes().vec(), want[i].sizes().vec()) << i;
    EXPECT_EQ(meta[i].strides().vec(), want[i].strides().vec()) << i;
    EXPECT_EQ(meta[i].dtype(), want[i].dtype()) << i;
  }
  // Shapes the ops refuse are refused on meta as on the cpu.
  EXPECT_THROW(g.propagate({ramp({5, 7}), b}), Error);
}

// The backward's ops reach the tracer too (the engine calls the derivative formulas on the
// capturing thread): a function that computes its own gradients captures the joint
// forward+backward graph, whose replay gives eager's gradients without autograd.
TEST_F(GraphTest, AFunctionThatTakesGradientsCapturesTheJointGraph) {
  const Tensor w = ramp({3, 4}, 0.05);
  auto fn = [&](const std::vector<Tensor>& in) {
    Tensor x = in[0].detach();
    x.set_requires_grad(true);
    Tensor loss = sum(tanh(mul(matmul(x, w), 2.0)));
    std::vector<Tensor> g = autograd::grad({loss}, {x});
    return std::vector<Tensor>{loss.detach(), g[0]};
  };
  const Graph g = capture(fn, {ramp({2, 3})});
  const std::string text = g.str();
  // Captured: w, and a 0-dim constant a formula makes outside ops (then filled by a recorded
  // fill_); the detached input and the saved tanh output are the forward's values (Note
  // [Aliases made outside ops]).
  size_t captured_arrays = 0;
  for (const auto& [id, t] : g.captured()) captured_arrays += t.dim() > 0;
  EXPECT_EQ(captured_arrays, 1u) << text;
  EXPECT_TRUE(g.captured()[0].second.is_same(w)) << text;
  EXPECT_GT(g.nodes().size(), 4u) << text;
  const Tensor other = ramp({2, 3}, 0.21);
  const std::vector<Tensor> got = g.run({other});
  const std::vector<Tensor> want = fn({other});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(to_doubles(got[0]), to_doubles(want[0]));
  EXPECT_EQ(to_doubles(got[1]), to_doubles(want[1])) << text;
}

TEST_F(GraphTest, LoomLogsGraphPrintsTheCapturedGraph) {
  auto fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{neg(in[0])}; };
  auto printed = [&](const char* logs) {
    setenv("LOOM_LOGS", logs, 1);
    ::testing::internal::CaptureStderr();
    capture(fn, {ramp({2})});
    unsetenv("LOOM_LOGS");
    return ::testing::internal::GetCapturedStderr();
  };
  EXPECT_TRUE(contains(printed("recompiles,graph"), "[loom graph] captured:\ngraph(%0 : f32[2])"));
  EXPECT_EQ(printed("graph_breaks"), "") << "a topic is a whole item of the list";
  EXPECT_EQ(printed(""), "");
}

TEST_F(GraphTest, GuardsRefuseOtherMetadataNamingTheInput) {
  auto fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{exp(in[0])}; };
  const Graph g = capture(fn, {ramp({2, 3})});
  EXPECT_TRUE(contains(message_of<ValueError>([&] {
                         g.run({ramp({3, 3})});
                       }),
                       "graph.run: input 0 does not match the capture: sizes [3, 3], captured "
                       "[2, 3]"));
  const Tensor d = make_tensor({1, 2, 3, 4, 5, 6}, {2, 3}, DType::Float64);
  EXPECT_TRUE(contains(message_of<ValueError>([&] { g.run({d}); }),
                       "dtype float64, captured "
                       "float32"));
  const Tensor t = ramp({3, 2});
  EXPECT_TRUE(contains(message_of<ValueError>([&] { g.run({transpose(t, 0, 1)}); }),
                       "strides [1, 2], captured [3, 1]"));
  EXPECT_TRUE(contains(message_of<ValueError>([&] { g.run({}); }), "expected 1 inputs"));
}

TEST_F(GraphTest, CaptureIsPerThreadAndNotNested) {
  std::atomic<bool> stop{false};
  std::thread other([&] {
    const Tensor a = ramp({8});
    while (!stop.load()) (void)neg(a);  // never recorded: another thread
  });
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor y = in[0];
    for (int i = 0; i < 50; ++i) y = add(y, 1.0);
    return std::vector<Tensor>{y};
  };
  const Graph g = capture(fn, {ramp({8})});
  stop = true;
  other.join();
  EXPECT_EQ(g.nodes().size(), 50u);
  for (const Node& n : g.nodes()) EXPECT_EQ(n.op.name(), "aten::add.Scalar");
  EXPECT_FALSE(is_capturing());
  auto nested = [](const std::vector<Tensor>& in) {
    capture([](const std::vector<Tensor>& x) { return x; }, in);
    return in;
  };
  EXPECT_TRUE(contains(message_of<ValueError>([&] { capture(nested, {ramp({2})}); }),
                       "a capture inside a capture"));
  EXPECT_FALSE(is_capturing()) << "a failed capture leaves the thread untraced";
  EXPECT_EQ(capture(fn, {ramp({8})}).nodes().size(), 50u) << "and ready to capture again";
}

}  // namespace
}  // namespace loom::graph
