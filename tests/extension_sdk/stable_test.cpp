// loom/stable.hpp, the header-only C++ wrapper over the stable C ABI, used as an app or an
// extension uses it: only the SDK headers and libloom.so (never libloom_core).
#include "loom/stable.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace ls = loom::stable;

namespace {

/// Init once for the suite (loads ops_core and the other installed plugins).
class StableTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ls::init(); }
};

/// The message and code of what f throws as ls::Error ("" / LOOM_OK if nothing).
template <typename F>
std::pair<LoomErrorCode, std::string> error_of(F&& f) {
  try {
    f();
  } catch (const ls::Error& e) {
    return {e.code(), e.what()};
  }
  return {LOOM_OK, ""};
}

/// The message of OpCall made directly on the C table (the status text the C++ API's
/// exception carried, which the wrapper must pass on unchanged).
std::string raw_call_message(const char* op_name, std::vector<LoomValue> args) {
  const LoomApi* a = ls::api();
  const LoomOp* op = nullptr;
  LoomStatus* st = a->OpFind(op_name, &op);
  EXPECT_EQ(st, nullptr);
  LoomValue ret[2] = {};
  ret[0].struct_size = ret[1].struct_size = sizeof(LoomValue);
  size_t n = 0;
  st = a->OpCall(op, args.data(), args.size(), ret, 2, &n);
  if (st == nullptr) {
    a->ValuesRelease(ret, n);
    return "";
  }
  std::string m = a->StatusMessage(st);
  a->StatusRelease(st);
  return m;
}

LoomValue tensor_value(const ls::Tensor& t) {
  LoomValue v{};
  v.struct_size = sizeof(LoomValue);
  v.kind = LOOM_VALUE_TENSOR;
  v.u.tensor = t.get();
  return v;
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

TEST_F(StableTest, ApiTableAndVersion) {
  ASSERT_NE(ls::api(), nullptr);
  EXPECT_GE(ls::api()->version, 1u);
  EXPECT_FALSE(ls::version().empty());
  EXPECT_TRUE(ls::plugins::is_loaded("ops_core"));
}

TEST_F(StableTest, ListsOpsAndTakesEnumsByName) {
  const std::vector<ls::OpInfo> ops = ls::list_ops();
  const auto add = std::find_if(ops.begin(), ops.end(),
                                [](const ls::OpInfo& o) { return o.name == "aten::add.Tensor"; });
  ASSERT_NE(add, ops.end());
  EXPECT_EQ(add->schema, ls::Op::find("add.Tensor").schema());
  EXPECT_EQ(ls::Op::find("add.Tensor").name(), "aten::add.Tensor");

  const ls::Op mse = ls::Op::find("mse_loss");
  EXPECT_EQ(mse.enum_names("reduction"), (std::vector<std::string>{"none", "mean", "sum"}));
  EXPECT_TRUE(mse.enum_names("self").empty());
  EXPECT_THROW(mse.enum_names("nope"), ls::ValueError);
  auto a = ls::Tensor::from_data({1.f, 2.f}, {2});
  auto b = ls::Tensor::zeros({2});
  EXPECT_EQ(mse.call_tensor(a, b, "sum").item(), 5.0);
  EXPECT_EQ(mse.call_tensor(a, b, std::string("mean")).item(), 2.5);
  EXPECT_THROW(mse.call_tensor(a, b, "avg"), ls::ValueError);
}

TEST_F(StableTest, DTypesByName) {
  EXPECT_STREQ(ls::dtype::float32().name(), "float32");
  EXPECT_EQ(ls::DType::from_name("float"), ls::dtype::float32());
  EXPECT_EQ(ls::DType::from_name("long"), ls::dtype::int64());
  EXPECT_EQ(ls::dtype::float64().itemsize(), 8u);
  EXPECT_EQ(ls::dtype_of<int64_t>(), ls::dtype::int64());
  EXPECT_EQ(ls::dtype_of<bool>(), ls::dtype::bool_());
  EXPECT_NE(ls::dtype::float32(), ls::dtype::float64());
  auto [code, msg] = error_of([] { ls::DType::from_name("float33"); });
  EXPECT_NE(code, LOOM_OK);
  EXPECT_NE(msg.find("float33"), std::string::npos) << msg;
}

TEST_F(StableTest, TensorRoundTrip) {
  auto x = ls::Tensor::from_data({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, {2, 3});
  EXPECT_TRUE(x.defined());
  EXPECT_EQ(x.dim(), 2);
  EXPECT_EQ(x.numel(), 6);
  EXPECT_EQ(x.sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(x.strides(), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(x.size(-1), 3);
  EXPECT_EQ(x.dtype(), ls::dtype::float32());
  EXPECT_EQ(x.device(), "cpu");
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(x.data_ptr<float>()[4], 5.f);
  EXPECT_NE(x.describe().find("float32"), std::string::npos) << x.describe();

  // A transposed view copies out in row-major order of the view.
  auto xt = x.t();
  EXPECT_EQ(xt.strides(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(xt.to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));

  std::vector<int64_t> iv = {7, -8, 9};
  auto i = ls::Tensor::from_data(iv);
  EXPECT_EQ(i.dtype(), ls::dtype::int64());
  EXPECT_EQ(i.to_vector<int64_t>(), iv);
  EXPECT_EQ(ls::Tensor::scalar(2.5).item(), 2.5);
  EXPECT_EQ(ls::Tensor::scalar(int64_t{3}).item<int64_t>(), 3);
  const int64_t big = (int64_t{1} << 60) + 1;  // not a double
  EXPECT_EQ(ls::Tensor::scalar(big).item<int64_t>(), big);
  EXPECT_THROW(x.item(), ls::Error);  // six elements

  auto z = ls::Tensor::zeros({2, 2}, ls::dtype::float64());
  EXPECT_EQ(z.to_vector<double>(), (std::vector<double>(4, 0.0)));
  EXPECT_EQ(ls::Tensor::ones({3}).to_vector<float>(), (std::vector<float>(3, 1.f)));
  EXPECT_EQ(ls::Tensor::full({2}, 7, ls::dtype::int64()).to_vector<int64_t>(),
            (std::vector<int64_t>{7, 7}));
  EXPECT_EQ(ls::Tensor::arange(4).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(ls::Tensor::empty({0, 3}).numel(), 0);

  auto b = x.gt(3);
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{false, false, false, true, true, true}));

  // Wrong element type and wrong element count are errors, not garbage.
  EXPECT_THROW(x.to_vector<double>(), ls::TypeError);
  EXPECT_THROW(x.data_ptr<int64_t>(), ls::TypeError);
  EXPECT_THROW(ls::Tensor::from_data({1.f, 2.f, 3.f}, {2, 2}), ls::ValueError);
  EXPECT_THROW(x.size(2), ls::IndexError);
}

TEST_F(StableTest, CopyMoveAndRelease) {
  auto x = ls::Tensor::from_data({1.0, 2.0});
  LoomTensor* raw = x.get();
  ls::Tensor y = x;  // retain
  EXPECT_EQ(y.get(), raw);
  ls::Tensor z = std::move(y);  // steal
  EXPECT_FALSE(y.defined());    // NOLINT(bugprone-use-after-move): moved-from is undefined
  EXPECT_EQ(z.get(), raw);
  y = z;
  z = ls::Tensor();
  x = ls::Tensor();
  // y holds the last reference: still valid.
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{1, 2}));
  LoomTensor* handed = y.release();
  EXPECT_FALSE(y.defined());
  ls::Tensor back = ls::Tensor::adopt(handed);
  EXPECT_EQ(back.numel(), 2);
  ls::Tensor shared = ls::Tensor::borrow(back.get());
  back = ls::Tensor();
  EXPECT_EQ(shared.numel(), 2);
}

TEST_F(StableTest, OperatorsAndMethods) {
  auto a = ls::Tensor::from_data({1.0, 2.0, 3.0, 4.0}, {2, 2});
  auto b = ls::Tensor::from_data({0.5, -1.0, 2.0, 0.25}, {2, 2});
  expect_near((a + b).to_vector<double>(), {1.5, 1.0, 5.0, 4.25}, 0);
  expect_near((a - b).to_vector<double>(), {0.5, 3.0, 1.0, 3.75}, 0);
  expect_near((a * b).to_vector<double>(), {0.5, -2.0, 6.0, 1.0}, 0);
  expect_near((a / b).to_vector<double>(), {2.0, -2.0, 1.5, 16.0}, 0);
  expect_near((a + 1).to_vector<double>(), {2, 3, 4, 5}, 0);
  expect_near((2.0 * a - 1).to_vector<double>(), {1, 3, 5, 7}, 0);
  expect_near((10 - a).to_vector<double>(), {9, 8, 7, 6}, 0);
  expect_near((1.0 / a).to_vector<double>(), {1, 0.5, 1.0 / 3, 0.25}, 1e-15);
  expect_near((-a).to_vector<double>(), {-1, -2, -3, -4}, 0);
  expect_near(a.matmul(b).to_vector<double>(), {4.5, -0.5, 9.5, -2.0}, 1e-12);
  expect_near(ls::mm(a, b.t()).to_vector<double>(), {-1.5, 2.5, -2.5, 7.0}, 1e-12);
  EXPECT_DOUBLE_EQ(a.sum().item(), 10.0);
  EXPECT_DOUBLE_EQ(a.mean().item(), 2.5);
  expect_near(a.sum({0}).to_vector<double>(), {4, 6}, 0);
  EXPECT_EQ(a.mean({1}, /*keepdim=*/true).sizes(), (std::vector<int64_t>{2, 1}));
  expect_near(a.exp().log().to_vector<double>(), {1, 2, 3, 4}, 1e-12);
  expect_near(b.relu().to_vector<double>(), {0.5, 0, 2, 0.25}, 0);
  expect_near(ls::Tensor::from_data({0.0}).sigmoid().to_vector<double>(), {0.5}, 0);
  expect_near(a.reshape({4}).to_vector<double>(), {1, 2, 3, 4}, 0);
  EXPECT_EQ(a.reshape({1, 4}).unsqueeze(0).sizes(), (std::vector<int64_t>{1, 1, 4}));
  expect_near(a.pow(2).to_vector<double>(), {1, 4, 9, 16}, 0);
  expect_near(a.clamp(2, 3).to_vector<double>(), {2, 2, 3, 3}, 0);
  EXPECT_DOUBLE_EQ(a.max().item(), 4);
  EXPECT_EQ(a.argmax().item<int64_t>(), 3);
  expect_near(ls::cat({a, b}, 0).to_vector<double>(), {1, 2, 3, 4, 0.5, -1, 2, 0.25}, 0);
  EXPECT_DOUBLE_EQ(a.prod().item(), 24);
  EXPECT_NEAR(a.var().item(), 5.0 / 3, 1e-12);
  EXPECT_NEAR(a.std(false).item(), std::sqrt(1.25), 1e-12);
  expect_near(a.logsumexp({1}).to_vector<double>(),
              {std::log(std::exp(1.0) + std::exp(2.0)), std::log(std::exp(3.0) + std::exp(4.0))},
              1e-12);
  expect_near(a.reshape({4}).cumsum(0).to_vector<double>(), {1, 3, 6, 10}, 0);
  auto idx = ls::Tensor::from_data(std::vector<int64_t>{1, 0});
  expect_near(a.index_select(0, idx).to_vector<double>(), {3, 4, 1, 2}, 0);
  expect_near(a.gather(1, ls::Tensor::from_data(std::vector<int64_t>{1, 1, 0, 1}, {2, 2}))
                  .to_vector<double>(),
              {2, 2, 3, 4}, 0);
  expect_near(a.masked_fill(a.gt(2), 0).to_vector<double>(), {1, 2, 0, 0}, 0);
  std::vector<ls::Tensor> rows = a.chunk(2);
  ASSERT_EQ(rows.size(), 2u);
  expect_near(rows[1].to_vector<double>(), {3, 4}, 0);
  EXPECT_EQ(a.reshape({4}).split(3).back().sizes(), (std::vector<int64_t>{1}));
  expect_near(ls::addmm(ls::Tensor::from_data({10.0, 20.0}), a, b).to_vector<double>(),
              {14.5, 19.5, 19.5, 18.0}, 1e-12);

  auto ints = ls::Tensor::from_data(std::vector<int64_t>{1, 2, 3});
  EXPECT_EQ((ints + 1).dtype(), ls::dtype::int64());  // an int Scalar keeps int tensors int
  EXPECT_EQ(ints.to(ls::dtype::float32()).to_vector<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(a.to("cpu").get(), a.get());  // already there: the same tensor

  auto c = a.clone();
  c += b;
  c *= 2;
  expect_near(c.to_vector<double>(), {3, 2, 10, 8.5}, 0);
  c.zero_();
  expect_near(c.to_vector<double>(), {0, 0, 0, 0}, 0);
  expect_near(a.to_vector<double>(), {1, 2, 3, 4}, 0);  // clone did not share
}

TEST_F(StableTest, OpsByName) {
  auto a = ls::Tensor::from_data({1.f, 2.f, 3.f, 4.f}, {2, 2});
  ls::Op mm = ls::Op::find("aten::mm");
  EXPECT_NE(mm.schema().find("mm(Tensor self, Tensor mat2) -> Tensor"), std::string::npos)
      << mm.schema();
  EXPECT_EQ(mm.call_tensor(a, a).to_vector<float>(), (std::vector<float>{7, 10, 15, 22}));

  // Every kind of argument: int list, bool, None, DType.
  auto s = ls::Op::find("sum.dim_IntList")
               .call_tensor(a, std::vector<int64_t>{1}, true, ls::dtype::float64());
  EXPECT_EQ(s.dtype(), ls::dtype::float64());
  EXPECT_EQ(s.sizes(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(s.to_vector<double>(), (std::vector<double>{3, 7}));
  auto g = ls::Op::find("aten::gelu").call_tensor(a, "tanh");
  EXPECT_EQ(g.numel(), 4);
  auto argmax = ls::Op::find("aten::argmax").call_tensor(a, std::nullopt);
  EXPECT_EQ(argmax.item<int64_t>(), 3);

  // Several returns.
  std::vector<ls::Value> mx = ls::Op::find("aten::max.dim").call(a, 1);
  ASSERT_EQ(mx.size(), 2u);
  EXPECT_EQ(mx[0].to_tensor().to_vector<float>(), (std::vector<float>{2, 4}));
  EXPECT_EQ(mx[1].to_tensor().to_vector<int64_t>(), (std::vector<int64_t>{1, 1}));
  // A Tensor[] return and a Tensor[] argument.
  std::vector<ls::Value> parts = ls::Op::find("aten::chunk").call(a, 2, 0);
  ASSERT_EQ(parts.size(), 1u);
  const std::vector<ls::Tensor>& chunks = parts[0].to_tensor_list();
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[1].to_vector<float>(), (std::vector<float>{3, 4}));
  EXPECT_EQ(ls::stack(chunks, 0).sizes(), (std::vector<int64_t>{2, 1, 2}));

  EXPECT_THROW(ls::Op::find("aten::max.dim").call_tensor(), ls::Error);
  EXPECT_THROW(mx[0].to_int(), ls::TypeError);
  auto [code, msg] = error_of([] { ls::Op::find("aten::not_an_op"); });
  EXPECT_EQ(code, LOOM_NOT_IMPLEMENTED);
  EXPECT_NE(msg.find("not_an_op"), std::string::npos) << msg;
}

TEST_F(StableTest, ErrorsCarryTheLibraryMessage) {
  auto a = ls::Tensor::ones({2, 3});
  auto b = ls::Tensor::ones({4});
  const std::string expected =
      raw_call_message("aten::add.Tensor", {tensor_value(a), tensor_value(b)});
  ASSERT_FALSE(expected.empty());
  auto [code, msg] = error_of([&] { (void)(a + b); });
  EXPECT_EQ(code, LOOM_VALUE_ERROR);
  EXPECT_EQ(msg, expected);
  EXPECT_NE(msg.find("add"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(3)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(4)"), std::string::npos) << msg;
  EXPECT_THROW((void)(a + b), ls::ValueError);

  // An undefined tensor is a misuse of the API.
  ls::Tensor undefined;
  EXPECT_THROW(undefined.numel(), ls::InvalidArgumentError);
  EXPECT_EQ(undefined.describe(), "undefined tensor");
  // The process stays usable.
  EXPECT_DOUBLE_EQ((a + 1).sum().item(), 12.0);
}

TEST_F(StableTest, BackwardMatchesHandGradients) {
  std::vector<double> av = {0.3, -1.2, 2.0, 0.7};
  std::vector<double> bv = {1.5, 0.4, -0.6, 2.2};
  auto a = ls::Tensor::from_data(av, {2, 2}).set_requires_grad();
  auto b = ls::Tensor::from_data(bv, {2, 2});
  b.set_requires_grad(true);
  EXPECT_TRUE(a.requires_grad());
  // L = sum(sigmoid(a * b) + a^2) / 2 + mean(a @ b)
  auto loss = ((a * b).sigmoid() + a * a).sum() / 2 + a.matmul(b).mean();
  EXPECT_TRUE(loss.requires_grad());
  loss.backward();
  std::vector<double> ga(4), gb(4);
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      const int k = i * 2 + j;
      const double s = 1 / (1 + std::exp(-av[k] * bv[k]));
      // d mean(a@b)/d a[i][j] = sum_n b[j][n] / 4; / d b[i][j] = sum_m a[m][i] / 4.
      ga[k] = (s * (1 - s) * bv[k] + 2 * av[k]) / 2 + (bv[j * 2] + bv[j * 2 + 1]) / 4;
      gb[k] = s * (1 - s) * av[k] / 2 + (av[i] + av[2 + i]) / 4;
    }
  }
  expect_near(a.grad().to_vector<double>(), ga, 1e-12);
  expect_near(b.grad().to_vector<double>(), gb, 1e-12);

  // Gradients accumulate; set_grad(undefined) clears them.
  auto l2 = (a * 3).sum();
  l2.backward();
  std::vector<double> ga3 = ga;
  for (double& g : ga3) g += 3;
  expect_near(a.grad().to_vector<double>(), ga3, 1e-12);
  a.set_grad(ls::Tensor());
  EXPECT_FALSE(a.grad().defined());

  // An explicit gradient and retain_graph.
  auto y = a * a;  // saves a: a second backward through the freed graph fails
  y.backward(ls::Tensor::ones({2, 2}, ls::dtype::float64()), /*retain_graph=*/true);
  y.backward(ls::Tensor::ones({2, 2}, ls::dtype::float64()));
  std::vector<double> four_a;
  for (double v : av) four_a.push_back(4 * v);
  expect_near(a.grad().to_vector<double>(), four_a, 1e-12);
  EXPECT_THROW(y.backward(ls::Tensor::ones({2, 2}, ls::dtype::float64())), ls::Error);

  EXPECT_FALSE(a.detach().requires_grad());
  {
    ls::NoGradGuard no_grad;
    EXPECT_FALSE(ls::grad_enabled());
    EXPECT_FALSE((a * 2).requires_grad());
  }
  EXPECT_TRUE(ls::grad_enabled());
  EXPECT_TRUE((a * 2).requires_grad());
}

/// f(x) = k * x^3, whose kernel reads and writes the data itself.
ls::Tensor cube_forward(const std::vector<ls::Value>& args) {
  const ls::Tensor& x = args.at(0).to_tensor();
  const double k = args.at(1).to_double();
  ls::Tensor xc = x.contiguous();
  ls::Tensor out = ls::Tensor::empty(x.sizes(), x.dtype(), x.device());
  const double* in = xc.data_ptr<double>();
  double* o = out.data_ptr<double>();
  for (int64_t i = 0; i < x.numel(); ++i) o[i] = k * in[i] * in[i] * in[i];
  return out;
}

TEST_F(StableTest, CustomOpWithBackwardPassesGradcheck) {
  auto released = std::make_shared<int>(0);
  {
    ls::Library lib = ls::Library::create("hastable");
    lib.def("cube(Tensor x, float k) -> Tensor");
    lib.impl("cube", "CPU",
             [keep = released](const std::vector<ls::Value>& a) { return cube_forward(a); });
    lib.impl_backward("cube", [](ls::BackwardContext& ctx) {
      ASSERT_EQ(ctx.num_inputs(), 1u);
      ASSERT_EQ(ctx.num_outputs(), 1u);
      if (!ctx.needs_input_grad(0)) return;
      const double k = ctx.argument(1).to_double();
      ls::Tensor x = ctx.input(0);
      ctx.set_grad_input(0, ctx.grad_output(0) * x * x * (3 * k));
    });
    EXPECT_EQ(released.use_count(), 2);  // the library holds the kernel's copy

    ls::Op cube = ls::Op::find("hastable::cube");
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> u(-1.5, 1.5);
    std::vector<double> xv(6), wv(6);
    for (double& v : xv) v = u(rng);
    for (double& v : wv) v = u(rng);
    const double k = 0.75;
    auto x = ls::Tensor::from_data(xv, {2, 3}).set_requires_grad();
    auto w = ls::Tensor::from_data(wv, {2, 3});
    auto y = cube.call_tensor(x, k);
    expect_near(
        y.to_vector<double>(),
        [&] {
          std::vector<double> r;
          for (double v : xv) r.push_back(k * v * v * v);
          return r;
        }(),
        1e-15);
    (y * w).sum().backward();
    std::vector<double> analytic = x.grad().to_vector<double>();

    // Central differences of L(x) = sum(w * cube(x, k)) in float64.
    const double eps = 1e-6;
    for (size_t i = 0; i < xv.size(); ++i) {
      auto loss_at = [&](double delta) {
        std::vector<double> xp = xv;
        xp[i] += delta;
        ls::NoGradGuard no_grad;
        return (cube.call_tensor(ls::Tensor::from_data(xp, {2, 3}), k) * w).sum().item();
      };
      const double numeric = (loss_at(eps) - loss_at(-eps)) / (2 * eps);
      EXPECT_NEAR(analytic[i], numeric, 1e-6) << "element " << i;
    }
  }
  // Releasing the library freed the kernel (and with it the lambda's captures).
  EXPECT_EQ(released.use_count(), 1);
  auto [code, msg] = error_of([] {
    ls::Op::find("hastable::cube").call_tensor(ls::Tensor::ones({1}, ls::dtype::float64()), 1.0);
  });
  EXPECT_NE(code, LOOM_OK);
}

TEST_F(StableTest, KernelExceptionsBecomeStatuses) {
  ls::Library lib = ls::Library::create("hastable_err");
  lib.def("picky(Tensor x, int mode) -> Tensor");
  lib.impl("picky", "CPU", [](const std::vector<ls::Value>& a) -> ls::Tensor {
    switch (a[1].to_int()) {
      case 0:
        return a[0].to_tensor();
      case 1:
        throw ls::ValueError("picky: mode 1 wants a 2-d tensor, got " +
                             a[0].to_tensor().describe());
      case 2:
        throw std::runtime_error("picky: something else");
      case 3:
        throw 42;
      default:
        return a[1].to_tensor();  // wrong kind: a TypeError from the wrapper
    }
  });
  ls::Op picky = ls::Op::find("hastable_err::picky");
  auto x = ls::Tensor::ones({3});
  EXPECT_EQ(picky.call_tensor(x, 0).get(), x.get());

  auto [c1, m1] = error_of([&] { picky.call_tensor(x, 1); });
  EXPECT_EQ(c1, LOOM_VALUE_ERROR);
  EXPECT_NE(m1.find("picky: mode 1 wants a 2-d tensor, got " + x.describe()), std::string::npos)
      << m1;
  EXPECT_THROW(picky.call_tensor(x, 1), ls::ValueError);
  auto [c2, m2] = error_of([&] { picky.call_tensor(x, 2); });
  EXPECT_EQ(c2, LOOM_ERROR);
  EXPECT_NE(m2.find("picky: something else"), std::string::npos) << m2;
  auto [c3, m3] = error_of([&] { picky.call_tensor(x, 3); });
  EXPECT_EQ(c3, LOOM_ERROR);
  EXPECT_NE(m3.find("unknown type"), std::string::npos) << m3;
  auto [c4, m4] = error_of([&] { picky.call_tensor(x, 4); });
  EXPECT_EQ(c4, LOOM_TYPE_ERROR);
  EXPECT_NE(m4.find("expected Tensor, got int"), std::string::npos) << m4;

  // Registration errors are exceptions too.
  EXPECT_THROW(lib.def("picky(Tensor x, int mode) -> Tensor"), ls::Error);
  EXPECT_THROW(lib.def("not a schema ((("), ls::Error);
  EXPECT_THROW(ls::Library::create("hastable_err"), ls::Error);  // the namespace is taken
}

TEST_F(StableTest, KernelsSeeEveryArgumentKindAndReturnSeveralValues) {
  ls::Library lib = ls::Library::create("hastable_kinds");
  lib.def(
      "echo(Tensor x, int i, float f, bool b, str s, int[] l, float[] fl, ScalarType d, "
      "Tensor[] ts, int? none=None, int dflt=5) -> (Tensor, Tensor[], int)");
  std::vector<ls::Value> seen;
  lib.impl("echo", "CPU", [&seen](const std::vector<ls::Value>& a) {
    seen = a;
    std::vector<ls::Tensor> ts = a[8].to_tensor_list();
    ts.push_back(a[0].to_tensor());
    return std::vector<ls::Value>{a[0].to_tensor() * 2, ts, a[1].to_int() + 1};
  });
  auto x = ls::Tensor::from_data({1.0, 2.0});
  auto y = ls::Tensor::from_data({3.0});
  std::vector<ls::Value> r =
      ls::Op::find("hastable_kinds::echo")
          .call(x, 41, 0.5, true, std::string("hi"), std::vector<int64_t>{1, 2, 3},
                std::vector<double>{0.25}, ls::dtype::int32(), std::vector<ls::Tensor>{y, x});
  ASSERT_EQ(seen.size(), 11u);  // trailing defaults filled in
  EXPECT_EQ(seen[0].to_tensor().get(), x.get());
  EXPECT_EQ(seen[1].to_int(), 41);
  EXPECT_EQ(seen[2].to_double(), 0.5);
  EXPECT_TRUE(seen[3].to_bool());
  EXPECT_EQ(seen[4].to_string(), "hi");
  EXPECT_EQ(seen[5].to_int_list(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(seen[6].to_double_list(), (std::vector<double>{0.25}));
  EXPECT_EQ(seen[7].to_dtype(), ls::dtype::int32());
  ASSERT_EQ(seen[8].to_tensor_list().size(), 2u);
  EXPECT_EQ(seen[8].to_tensor_list()[0].get(), y.get());
  EXPECT_TRUE(seen[9].is_none());
  EXPECT_EQ(seen[10].to_int(), 5);
  seen.clear();

  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].to_tensor().to_vector<double>(), (std::vector<double>{2, 4}));
  ASSERT_EQ(r[1].to_tensor_list().size(), 3u);
  EXPECT_EQ(r[1].to_tensor_list()[0].get(), y.get());
  EXPECT_EQ(r[1].to_tensor_list()[2].get(), x.get());
  EXPECT_EQ(r[2].to_int(), 42);
}

TEST_F(StableTest, TypedKernels) {
  ls::Library lib = ls::Library::create("hastable_typed");
  lib.def("axpb(Tensor x, float a, int b, Tensor? bias=None) -> (Tensor, int)");
  lib.impl("axpb", "CPU", [](const ls::Tensor& x, double a, int64_t b, const ls::Tensor& bias) {
    ls::Tensor y = x * a + b;
    if (bias.defined()) y = y + bias;
    return std::make_tuple(y, b * 2);
  });
  lib.def("norm2(Tensor x, int[] dims, bool keepdim=False) -> Tensor");
  lib.impl("norm2", "CPU", [](ls::Tensor x, std::vector<int64_t> dims, bool keepdim) {
    return (x * x).sum(dims, keepdim);
  });
  lib.def("wrong(Tensor x, str s) -> Tensor");
  lib.impl("wrong", "CPU", [](const ls::Tensor& x, double) { return x; });

  auto x = ls::Tensor::from_data({1.0, 2.0, 3.0});
  std::vector<ls::Value> r = ls::Op::find("hastable_typed::axpb").call(x, 2.0, 1);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].to_tensor().to_vector<double>(), (std::vector<double>{3, 5, 7}));
  EXPECT_EQ(r[1].to_int(), 2);
  r = ls::Op::find("hastable_typed::axpb").call(x, 1.0, 0, x);
  EXPECT_EQ(r[0].to_tensor().to_vector<double>(), (std::vector<double>{2, 4, 6}));
  auto n = ls::Op::find("hastable_typed::norm2")
               .call_tensor(ls::Tensor::from_data({1.0, 2.0, 3.0, 4.0}, {2, 2}),
                            std::vector<int64_t>{1});
  EXPECT_EQ(n.to_vector<double>(), (std::vector<double>{5, 25}));

  auto [code, msg] =
      error_of([&] { ls::Op::find("hastable_typed::wrong").call_tensor(x, "text"); });
  EXPECT_EQ(code, LOOM_TYPE_ERROR);
  EXPECT_NE(msg.find("wrong: argument 1: Value: expected float, got str"), std::string::npos)
      << msg;
}

TEST_F(StableTest, KernelForAnExistingOpThroughANamespacelessLibrary) {
  // Overrides no existing kernel: a new op of our own namespace, and a library of no
  // namespace adding a second dispatch key's kernel to it by qualified name.
  ls::Library defs = ls::Library::create("hastable_frag");
  defs.def("twice(Tensor x) -> Tensor");
  defs.impl("twice", "CPU", [](const std::vector<ls::Value>& a) { return a[0].to_tensor() * 2; });
  {
    ls::Library frag = ls::Library::create(nullptr);
    auto [code, msg] = error_of([&] {
      frag.impl("hastable_frag::twice", "CPU",
                [](const std::vector<ls::Value>& a) { return a[0].to_tensor(); });
    });
    EXPECT_EQ(code, LOOM_REGISTRATION_ERROR) << msg;  // CPU already has a kernel
  }
  EXPECT_EQ(
      ls::Op::find("hastable_frag::twice").call_tensor(ls::Tensor::ones({2})).to_vector<float>(),
      (std::vector<float>{2, 2}));
}

TEST_F(StableTest, PluginsAndSeeds) {
  std::vector<ls::plugins::PluginInfo> loaded = ls::plugins::list();
  bool core = false;
  for (const auto& p : loaded) core = core || p.name == "ops_core";
  EXPECT_TRUE(core);
  auto [code, msg] = error_of([] { ls::plugins::load("no_such_plugin_hastable"); });
  EXPECT_EQ(code, LOOM_PLUGIN_ERROR);
  EXPECT_NE(msg.find("no_such_plugin_hastable"), std::string::npos) << msg;
  EXPECT_EQ(ls::plugins::list().size(), loaded.size());  // a refused load changes nothing

  ls::manual_seed(123);
  auto r1 = ls::Tensor::randn({8}).to_vector<float>();
  ls::manual_seed(123);
  auto r2 = ls::Tensor::randn({8}).to_vector<float>();
  EXPECT_EQ(r1, r2);
  EXPECT_GE(ls::device::count("cpu"), 1);
}

TEST_F(StableTest, CudaTensorsWhenADeviceIsThere) {
  if (!ls::device::is_available("cuda")) {
    GTEST_SKIP() << "no usable CUDA device: " << ls::device::unavailable_reason("cuda");
  }
  auto a = ls::Tensor::from_data({1.f, 2.f, 3.f, 4.f}, {2, 2});
  auto g = a.to("cuda:0");
  EXPECT_EQ(g.device(), "cuda:0");
  EXPECT_TRUE(g.is_cuda());
  EXPECT_NE(ls::device::current_stream("cuda:0"), nullptr);
  auto h = ls::Tensor::from_data({1.f, 2.f, 3.f, 4.f}, {2, 2}, "cuda:0");
  auto y = (g.matmul(h) + 1).relu();
  ls::device::synchronize("cuda:0");
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{8, 11, 16, 23}));  // copies to the host
  EXPECT_EQ(y.cpu().device(), "cpu");
  EXPECT_THROW((void)(a + g), ls::DeviceError);

  // Gradients flow back across the copy to the device.
  auto x = ls::Tensor::from_data({0.5, -1.0, 2.0}).set_requires_grad();
  (x.to("cuda:0") * x.to("cuda:0")).sum().backward();
  EXPECT_EQ(x.grad().device(), "cpu");
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{1.0, -2.0, 4.0}));
}

// The manifest LOOM_STABLE_EXTENSION writes, and its register function's error path: the
// loader gives it a context; without one PluginLibrary fails, and the exception must come
// back as text in the error buffer, not cross the C boundary.
void register_hastable_plugin(ls::PluginRegistrar& r) {
  ls::Library& m = r.library("hastable_plugin");
  m.def("ident(Tensor x) -> Tensor");
}
}  // namespace

LOOM_STABLE_EXTENSION("hastable_plugin", "1.2.3", "stable_test's manifest",
                      register_hastable_plugin)

namespace {
TEST_F(StableTest, ExtensionManifest) {
  const LoomPluginManifest* m = loom_plugin_manifest();
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->struct_size, sizeof(LoomPluginManifest));
  EXPECT_EQ(m->abi_major, static_cast<uint32_t>(LOOM_PLUGIN_ABI_MAJOR));
  EXPECT_STREQ(m->name, "hastable_plugin");
  EXPECT_STREQ(m->version, "1.2.3");
  EXPECT_STREQ(m->description, "stable_test's manifest");
  ASSERT_NE(m->dependencies, nullptr);
  EXPECT_EQ(m->dependencies[0], nullptr);
  EXPECT_NE(std::string(m->build_info).find("stable ABI v" + std::to_string(LOOM_API_VERSION)),
            std::string::npos);
  char error[256] = "untouched";
  EXPECT_NE(m->register_plugin(nullptr, error, sizeof(error)), 0);
  EXPECT_NE(std::string(error).find("PluginLibrary"), std::string::npos) << error;
  char tiny[8] = "xxxxxxx";
  EXPECT_NE(m->register_plugin(nullptr, tiny, sizeof(tiny)), 0);
  EXPECT_EQ(std::strlen(tiny), 7u);  // truncated, NUL-terminated
}

}  // namespace
