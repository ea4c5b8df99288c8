#include "loom/dispatcher/dispatcher.h"

#include <gtest/gtest.h>

#include "loom/dispatcher/library.h"

namespace loom {
namespace {

Tensor fill_like(const Tensor& self, double v) {
  Tensor out = Tensor::empty(self.sizes(), TensorOptions{}.with(self.dtype()));
  float* p = out.data_ptr<float>();
  for (int64_t i = 0; i < out.numel(); ++i) p[i] = static_cast<float>(v);
  return out;
}

Tensor add_cpu(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  Tensor out = Tensor::empty(self.sizes(), TensorOptions{}.with(self.dtype()));
  const float* a = self.data_ptr<float>();
  const float* b = other.data_ptr<float>();
  float* o = out.data_ptr<float>();
  const float s = alpha.to<float>();
  for (int64_t i = 0; i < out.numel(); ++i) o[i] = a[i] + s * b[i];
  return out;
}

LOOM_LIBRARY(dtest, m) {
  m.def("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  m.def("fill_like(Tensor self, float value) -> Tensor");
}

LOOM_LIBRARY_IMPL(dtest, CPU, m) {
  m.impl("add.Tensor", &add_cpu);
  m.impl("fill_like", [](const Tensor& self, double v) { return fill_like(self, v); });
}

TEST(DispatcherTest, TypedAndBoxedCallsReachTheKernel) {
  auto op = Dispatcher::instance().find_op_or_throw("dtest::add.Tensor");
  auto add = op.typed<Tensor(const Tensor&, const Tensor&, const Scalar&)>();
  Tensor a = Tensor::from_vector<float>({1, 2, 3}, std::vector<int64_t>{3});
  Tensor b = Tensor::from_vector<float>({10, 20, 30}, std::vector<int64_t>{3});
  Tensor c = add(a, b, Scalar(2));
  EXPECT_EQ(c.data_ptr<float>()[2], 63.f);

  Stack stack{a, b};  // alpha omitted: the default fills in
  op.call_boxed(stack);
  ASSERT_EQ(stack.size(), 1u);
  EXPECT_EQ(stack[0].to_tensor().data_ptr<float>()[1], 22.f);
}

TEST(DispatcherTest, MismatchedSignatureIsRefusedAtRegistration) {
  Library lib(Library::Kind::Impl, "dtest", DispatchKey::Meta);
  try {
    lib.impl("add.Tensor", [](const Tensor& a, const Tensor& b, double alpha) { return a; });
    FAIL() << "expected a RegistrationError";
  } catch (const RegistrationError& e) {
    EXPECT_NE(std::string(e.what()).find("argument 2 'alpha' is Scalar in the schema"),
              std::string::npos)
        << e.what();
  }
}

TEST(DispatcherTest, MissingKernelNamesKeysAndProviders) {
  auto op = Dispatcher::instance().find_op_or_throw("dtest::add.Tensor");
  Stack stack{Tensor::empty({2}), Tensor::empty({2})};
  ExcludeDispatchKeyGuard no_cpu(DispatchKeySet(DispatchKey::CPU));
  try {
    op.call_boxed(stack);
    FAIL();
  } catch (const NotImplementedError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("Could not run 'dtest::add.Tensor'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("CPU: default"), std::string::npos) << msg;
    EXPECT_NE(msg.find("self: [2] cpu float32"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace loom
