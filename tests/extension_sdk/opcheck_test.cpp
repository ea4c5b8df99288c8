// loom/opcheck.hpp, the op-check helper of the extension SDK: every check passes on a correct
// op and fails, saying where, on a wrong reference, a wrong schema, a wrong or missing backward,
// wrong output sizes, and an op that accepts what it should refuse. Links libloom.so only.
#include "loom/opcheck.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ls = loom::stable;
using loom::opcheck::CheckResult;
using loom::opcheck::OpCheck;
using loom::opcheck::Report;

namespace {

class OpCheckTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ls::init(); }
  void SetUp() override { ls::manual_seed(7); }
};

/// The results of one check ("forward", "gradcheck", ...).
std::vector<CheckResult> of(const Report& r, const std::string& check) {
  std::vector<CheckResult> out;
  for (const CheckResult& c : r.results()) {
    if (c.check == check) out.push_back(c);
  }
  return out;
}

/// softplus(beta x) / beta from exp and log: the reference of aten::softplus.
ls::Tensor softplus_reference(const std::vector<ls::Value>& a) {
  const double beta = a[1].to_double();
  return ((a[0].to_tensor() * beta).exp() + 1.0).log() / beta;
}

TEST_F(OpCheckTest, BuiltInOpPassesEveryCheck) {
  const Report r =
      OpCheck("aten::softplus")
          .schema("softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor")
          .reference(softplus_reference)
          .sample({ls::Tensor::randn({3, 4}), 2.0}, {3, 4}, ls::dtype::float32(), "f32")
          .sample({ls::Tensor::randn({5}, ls::dtype::float64()), 0.5})
          .sample({ls::Tensor::randn({4, 2}).t(), 1.0}, "transposed")
          .error({ls::Tensor::randn({2}), "two"}, "must be Scalar")
          .run();
  EXPECT_TRUE(r.ok()) << r;
  // schema + 3 x (shape, forward, gradcheck) + error
  EXPECT_EQ(r.results().size(), 11u) << r;
  ASSERT_EQ(of(r, "gradcheck").size(), 3u);
  // 12 outputs x 12 inputs: the whole Jacobian of the first sample.
  EXPECT_NE(of(r, "gradcheck")[0].message.find("144 Jacobian elements"), std::string::npos) << r;
  EXPECT_NO_THROW(r.throw_if_failed());
}

TEST_F(OpCheckTest, WrongReferenceFailsForwardNamingTheElement) {
  const Report r =
      OpCheck("aten::sigmoid")
          .reference([](const std::vector<ls::Value>& a) { return a[0].to_tensor().tanh(); })
          .sample({ls::Tensor::from_data({0.5f, 0.0f, -1.0f})})
          .run();
  EXPECT_FALSE(r.ok());
  ASSERT_EQ(of(r, "forward").size(), 1u) << r;
  const CheckResult f = of(r, "forward")[0];
  EXPECT_FALSE(f.passed);
  // sigmoid(0.5) = 0.622 against tanh(0.5) = 0.462 (element 1 agrees: both 0.5 vs 0).
  EXPECT_NE(f.message.find("element"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("exceeds"), std::string::npos) << f.message;
  EXPECT_THROW(r.throw_if_failed(), std::runtime_error);
  EXPECT_NE(r.str().find("FAIL forward"), std::string::npos) << r;
}

TEST_F(OpCheckTest, SchemaMismatchAndMissingOpAreReported) {
  const Report wrong = OpCheck("aten::sigmoid").schema("sigmoid(Tensor x) -> Tensor").run();
  ASSERT_EQ(wrong.results().size(), 1u);
  EXPECT_FALSE(wrong.results()[0].passed);
  EXPECT_NE(wrong.results()[0].message.find("aten::sigmoid(Tensor self) -> Tensor"),
            std::string::npos)
      << wrong;

  const Report missing = OpCheck("opcheck_test::no_such_op").sample({ls::Tensor::randn({2})}).run();
  ASSERT_EQ(missing.results().size(), 1u) << missing;  // nothing else can run
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.results()[0].message.find("opcheck_test::no_such_op"), std::string::npos)
      << missing;
}

TEST_F(OpCheckTest, ExpectedSizesAndDtypeAreChecked) {
  const Report r = OpCheck("aten::sigmoid")
                       .sample({ls::Tensor::randn({2, 3})}, {3, 2}, ls::dtype::float32())
                       .sample({ls::Tensor::randn({2})}, {2}, ls::dtype::float64(), "dtype")
                       .gradcheck(false)
                       .run();
  const auto shapes = of(r, "shape");
  ASSERT_EQ(shapes.size(), 2u) << r;
  EXPECT_FALSE(shapes[0].passed);
  EXPECT_NE(shapes[0].message.find("[2, 3], expected [3, 2]"), std::string::npos) << r;
  EXPECT_FALSE(shapes[1].passed);
  EXPECT_NE(shapes[1].message.find("dtype float32, expected float64"), std::string::npos) << r;
}

TEST_F(OpCheckTest, AcceptedBadInputAndWrongMessageFail) {
  const Report r = OpCheck("aten::sigmoid")
                       .error({ls::Tensor::randn({2})}, "anything")
                       .error({ls::Tensor::arange(3)}, "a message sigmoid does not give")
                       .run();
  const auto errors = of(r, "error");
  ASSERT_EQ(errors.size(), 2u) << r;
  EXPECT_FALSE(errors[0].passed);
  EXPECT_NE(errors[0].message.find("accepted"), std::string::npos) << r;
  // Whether sigmoid takes int64 or not, this message is not what it says.
  EXPECT_FALSE(errors[1].passed) << r;
}

// An op whose backward is wrong (3 instead of 2) and one with no backward at all: gradcheck
// must catch both, the first with the worst element's numbers.
TEST_F(OpCheckTest, GradcheckCatchesWrongAndMissingBackward) {
  ls::Library lib = ls::Library::create("opcheck_test");
  lib.def("twice(Tensor x) -> Tensor");
  lib.def("twice_nograd(Tensor x) -> Tensor");
  auto twice = [](const std::vector<ls::Value>& a) { return a[0].to_tensor() * 2.0; };
  lib.impl("twice", "CPU", twice);
  lib.impl("twice_nograd", "CPU", twice);
  lib.impl_backward(
      "twice", [](ls::BackwardContext& ctx) { ctx.set_grad_input(0, ctx.grad_output(0) * 3.0); });

  const Report wrong =
      OpCheck("opcheck_test::twice")
          .reference([](const std::vector<ls::Value>& a) { return a[0].to_tensor() * 2.0; })
          .sample({ls::Tensor::randn({3})})
          .run();
  ASSERT_EQ(of(wrong, "forward").size(), 1u) << wrong;
  EXPECT_TRUE(of(wrong, "forward")[0].passed) << wrong;
  ASSERT_EQ(of(wrong, "gradcheck").size(), 1u) << wrong;
  const CheckResult g = of(wrong, "gradcheck")[0];
  EXPECT_FALSE(g.passed) << wrong;
  EXPECT_NE(g.message.find("Jacobian mismatch"), std::string::npos) << g.message;
  EXPECT_NE(g.message.find("analytical (Backward) 3, numerical 2"), std::string::npos) << g.message;

  const Report none = OpCheck("opcheck_test::twice_nograd").sample({ls::Tensor::randn({3})}).run();
  ASSERT_EQ(of(none, "gradcheck").size(), 1u) << none;
  EXPECT_FALSE(of(none, "gradcheck")[0].passed);
  EXPECT_NE(of(none, "gradcheck")[0].message.find("derivative"), std::string::npos) << none;
}

}  // namespace
