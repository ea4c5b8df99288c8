// Note [An input returned as the output] (core/src/autograd/derivative.cpp): a kernel that hands
// back one of its inputs for a return its schema does not declare an alias still gets its
// derivative. It used to be skipped: y = op(x) was x itself, so backward never ran the formula
// and x.grad came out as if op were the identity.
#include <gtest/gtest.h>

#include <vector>

#include "loom/autograd/autograd.h"
#include "loom/autograd/derivative.h"
#include "loom/dispatcher/library.h"
#include "loom/loom.h"
#include "ops_test_util.h"
#include "test_util.h"

namespace loom {
namespace {

using autograd::BackwardContext;
using autograd::variable_list;
using testing::make_tensor;
using testing::to_doubles;
using Values = std::vector<double>;

int g_formula_calls = 0;

LOOM_LIBRARY(retin, m) {
  m.def("same(Tensor x) -> Tensor");
  m.def("same_list(Tensor[] xs) -> Tensor[]");
  m.def("first_and_copy(Tensor x) -> (Tensor, Tensor)");
  m.def("view_same(Tensor(a) x) -> Tensor(a)");
}

// Each kernel hands back its input itself, as a C kernel returning TensorRetain(args[0]) does.
LOOM_LIBRARY_IMPL(retin, CPU, m) {
  m.impl("same", [](const Tensor& x) { return x; });
  m.impl("same_list", [](TensorList xs) { return std::vector<Tensor>(xs.begin(), xs.end()); });
  m.impl("first_and_copy", [](const Tensor& x) { return std::make_tuple(x, x * 1.0); });
  m.impl("view_same", [](const Tensor& x) { return x; });
}

// Formulas that are not the identity, so a skipped formula shows in the gradient.
LOOM_LIBRARY_IMPL(retin, Autograd, m) {
  autograd::derivative(m, "same", {}, [](BackwardContext& c) -> variable_list {
    ++g_formula_calls;
    return {c.grad() * 3.0};
  });
  autograd::derivative(m, "same_list", {}, [](BackwardContext& c) -> variable_list {
    ++g_formula_calls;
    variable_list grads;
    for (size_t i = 0; i < c.num_slots(); ++i) grads.push_back(c.grad(i) * (i + 2.0));
    return grads;
  });
  autograd::derivative(m, "first_and_copy", {}, [](BackwardContext& c) -> variable_list {
    ++g_formula_calls;
    return {c.grad(0) * 5.0 + c.grad(1) * 7.0};
  });
  autograd::derivative(m, "view_same", {}, [](BackwardContext& c) -> variable_list {
    ++g_formula_calls;
    return {c.grad()};
  });
}

class ReturnedInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    init();
    g_formula_calls = 0;
  }
  static Tensor leaf(Values v) {
    Tensor x = make_tensor(v, std::vector<int64_t>{static_cast<int64_t>(v.size())});
    x.set_requires_grad(true);
    return x;
  }
  static OperatorHandle op(const char* name) {
    return Dispatcher::instance().find_op_or_throw(name);
  }
};

TEST_F(ReturnedInputTest, TheFormulaRunsAndTheOutputIsANewTensorAliasingTheInput) {
  Tensor x = leaf({1, 2, 3});
  Tensor y = op("retin::same").typed<Tensor(const Tensor&)>()(x);
  EXPECT_FALSE(y.is_same(x)) << "the output is a tensor of its own, with the node as history";
  EXPECT_EQ(y.data_ptr(), x.data_ptr()) << "that aliases the input's memory";
  EXPECT_FALSE(y.is_leaf());
  ASSERT_NE(y.grad_fn(), nullptr);
  EXPECT_EQ(y.grad_fn()->name(), "SameBackward0");
  EXPECT_TRUE(x.is_leaf()) << "the input keeps its own history";
  EXPECT_EQ(x.grad_fn(), nullptr);

  y.sum().backward();
  EXPECT_EQ(g_formula_calls, 1);
  EXPECT_EQ(to_doubles(x.grad()), (Values{3, 3, 3}));
}

TEST_F(ReturnedInputTest, WritesThroughTheOutputAreSeenByTheInputsSavedTensors) {
  // The alias shares the input's version counter: a saved x modified through y is caught.
  Tensor x = leaf({1, 2, 3});
  Tensor h = x * 1.0;  // a non-leaf, so that y may be modified in place
  Tensor y = op("retin::same").typed<Tensor(const Tensor&)>()(h);
  Tensor z = h * h;  // saves h
  y.add_(1.0);
  EXPECT_THROW(z.sum().backward(), AutogradError);
}

TEST_F(ReturnedInputTest, ListReturnsAndTupleReturns) {
  Tensor a = leaf({1, 2});
  Tensor b = leaf({3, 4});
  std::vector<Tensor> ys =
      op("retin::same_list").typed<std::vector<Tensor>(TensorList)>()(std::vector<Tensor>{a, b});
  ASSERT_EQ(ys.size(), 2u);
  EXPECT_FALSE(ys[0].is_same(a));
  EXPECT_FALSE(ys[1].is_same(b));
  (ys[0].sum() + ys[1].sum()).backward();
  EXPECT_EQ(g_formula_calls, 1);
  EXPECT_EQ(to_doubles(a.grad()), (Values{2, 2}));
  EXPECT_EQ(to_doubles(b.grad()), (Values{3, 3}));

  Tensor x = leaf({1, 2});
  auto [first, copy] =
      op("retin::first_and_copy").typed<std::tuple<Tensor, Tensor>(const Tensor&)>()(x);
  EXPECT_FALSE(first.is_same(x));
  (first.sum() + copy.sum()).backward();
  EXPECT_EQ(g_formula_calls, 2);
  EXPECT_EQ(to_doubles(x.grad()), (Values{12, 12}));
}

TEST_F(ReturnedInputTest, ADeclaredAliasHandingBackItsInputStaysTheInput) {
  // `Tensor(a) x -> Tensor(a)`: a view, which may be the input itself (as contiguous() of a
  // contiguous tensor); its derivative is the identity, so nothing is recorded for it.
  Tensor x = leaf({1, 2, 3});
  Tensor y = op("retin::view_same").typed<Tensor(const Tensor&)>()(x);
  EXPECT_TRUE(y.is_same(x));
  y.sum().backward();
  EXPECT_EQ(to_doubles(x.grad()), (Values{1, 1, 1}));
}

TEST_F(ReturnedInputTest, WithoutGradTheInputComesBackAsItIs) {
  Tensor x = make_tensor(Values{1, 2, 3}, std::vector<int64_t>{3});
  Tensor y = op("retin::same").typed<Tensor(const Tensor&)>()(x);
  EXPECT_TRUE(y.is_same(x)) << "nothing to record: the Autograd key is not reached";
}

}  // namespace
}  // namespace loom
