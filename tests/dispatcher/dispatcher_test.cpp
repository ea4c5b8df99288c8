#include "loom/dispatcher/dispatcher.h"

#include <gtest/gtest.h>

#include "loom/core/warning.h"
#include "loom/dispatcher/library.h"
#include "test_util.h"

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

namespace loom {
namespace {

std::string message_of(const std::function<void()>& f) { return testing::message_of(f); }
using testing::contains;

Tensor tag_tensor(float v) { return Tensor::from_vector<float>({v}, std::vector<int64_t>{1}); }

LOOM_LIBRARY(dprov, m) {
  m.def("which(Tensor self) -> Tensor");
  m.def("scale(Tensor self, float factor=2, int[2] pair=1, *, bool flag=False) -> Tensor");
  m.def("boxed_only(Tensor self, int n) -> Tensor");
}

TEST(DispatcherProviders, PriorityPreferenceOverrideAndFallback) {
  Dispatcher& d = Dispatcher::instance();
  auto which = d.find_op_or_throw("dprov::which").typed<Tensor(const Tensor&)>();
  Library ref(Library::Kind::Impl, "dprov", DispatchKey::CPU);
  ref.set_provider("ref").impl("which", [](const Tensor&) { return tag_tensor(1); });
  auto fast = std::make_unique<Library>(Library::Kind::Impl, "dprov", DispatchKey::CPU);
  fast->set_provider("fast", 10).impl("which", [](const Tensor&) { return tag_tensor(2); });
  Tensor x = Tensor::empty({1});
  EXPECT_EQ(which(x).item<float>(), 2.f) << "higher priority wins";

  d.set_preferred_provider(DispatchKey::CPU, "ref");
  EXPECT_EQ(which(x).item<float>(), 1.f) << "the user's preferred provider wins";
  d.set_preferred_provider(DispatchKey::CPU, "");
  EXPECT_EQ(which(x).item<float>(), 2.f);

  d.set_provider_override("dprov::which", DispatchKey::CPU, "ref");
  EXPECT_EQ(which(x).item<float>(), 1.f) << "a per-op override wins";
  d.set_provider_override("dprov::which", DispatchKey::CPU, "");

  bool saw_active_fast = false;
  for (const KernelInfo& k : d.kernels(which.handle())) {
    if (k.provider == "fast") saw_active_fast = k.active;
    EXPECT_TRUE(contains(k.origin.str(), "tests/dispatcher/dispatcher_test.cpp:"))
        << "origin: " << k.origin.str();
  }
  EXPECT_TRUE(saw_active_fast);

  fast.reset();  // unregistering falls back to the next provider
  EXPECT_EQ(which(x).item<float>(), 1.f);
}

// Note [Next provider]: a provider's kernel hands calls outside its domain to the runner-up,
// whichever provider the policy made active.
TEST(DispatcherProviders, AKernelHandsACallToTheNextProvider) {
  Dispatcher& d = Dispatcher::instance();
  auto scale = d.find_op_or_throw("dprov::scale")
                   .typed<Tensor(const Tensor&, double, IntArrayRef, bool)>();
  const std::string lonely = message_of([&] { scale.call_next_provider(DispatchKey::CPU, Tensor::empty({1}), 2, {1, 1}, false); });
  EXPECT_TRUE(contains(lonely, "no other provider")) << lonely;

  Library ref(Library::Kind::Impl, "dprov", DispatchKey::CPU);
  ref.set_provider("ref").impl("scale", [](const Tensor&, double f, IntArrayRef, bool) {
    return tag_tensor(static_cast<float>(f));
  });
  auto partial = std::make_unique<Library>(Library::Kind::Impl, "dprov", DispatchKey::CPU);
  partial->set_provider("partial", 10)
      .impl("scale", [scale](const Tensor& x, double f, IntArrayRef p, bool flag) {
        if (f > 100) return scale.call_next_provider(DispatchKey::CPU, x, f, p, flag);
        return tag_tensor(-1);
      });
  Tensor x = Tensor::empty({1});
  EXPECT_EQ(scale(x, 2, {1, 1}, false).item<float>(), -1.f) << "the partial provider is active";
  EXPECT_EQ(scale(x, 500, {1, 1}, false).item<float>(), 500.f)
      << "a call outside its domain reaches the reference";

  // The active provider is the override's; its runner-up is the other one.
  d.set_preferred_provider(DispatchKey::CPU, "ref");
  EXPECT_EQ(scale(x, 2, {1, 1}, false).item<float>(), 2.f);
  d.set_provider_override("dprov::scale", DispatchKey::CPU, "partial");
  EXPECT_EQ(scale(x, 2, {1, 1}, false).item<float>(), -1.f);
  EXPECT_EQ(scale(x, 500, {1, 1}, false).item<float>(), 500.f);
  d.set_provider_override("dprov::scale", DispatchKey::CPU, "");
  d.set_preferred_provider(DispatchKey::CPU, "");

  partial.reset();  // unloaded: the reference is active and has no runner-up
  EXPECT_EQ(scale(x, 3, {1, 1}, false).item<float>(), 3.f);
  EXPECT_EQ(scale.handle().entry()->next_provider(DispatchKey::CPU), nullptr);
}

// With three providers, each hands on to the one after it, not to itself (the single
// runner-up slot made the middle provider hand calls to itself until the stack overflowed).
TEST(DispatcherProviders, HandingOnWalksEveryProviderInTurn) {
  Dispatcher& d = Dispatcher::instance();
  auto scale = d.find_op_or_throw("dprov::scale")
                   .typed<Tensor(const Tensor&, double, IntArrayRef, bool)>();
  auto ref = std::make_unique<Library>(Library::Kind::Impl, "dprov", DispatchKey::CPU);
  ref->set_provider("ref").impl("scale", [](const Tensor&, double f, IntArrayRef, bool) {
    return tag_tensor(static_cast<float>(f));
  });
  auto middle = std::make_unique<Library>(Library::Kind::Impl, "dprov", DispatchKey::CPU);
  middle->set_provider("middle", 10)
      .impl("scale", [scale](const Tensor& x, double f, IntArrayRef p, bool flag) {
        if (f > 1000) return scale.call_next_provider(DispatchKey::CPU, x, f, p, flag);
        return tag_tensor(-2);
      });
  auto top = std::make_unique<Library>(Library::Kind::Impl, "dprov", DispatchKey::CPU);
  top->set_provider("top", 20)
      .impl("scale", [scale](const Tensor& x, double f, IntArrayRef p, bool flag) {
        if (f > 100) return scale.call_next_provider(DispatchKey::CPU, x, f, p, flag);
        return tag_tensor(-1);
      });
  Tensor x = Tensor::empty({1});
  EXPECT_EQ(scale(x, 2, {1, 1}, false).item<float>(), -1.f) << "the top provider is active";
  EXPECT_EQ(scale(x, 500, {1, 1}, false).item<float>(), -2.f) << "handed to the middle one";
  EXPECT_EQ(scale(x, 5000, {1, 1}, false).item<float>(), 5000.f)
      << "handed on twice, to the reference";
  // Boxed callers take the same path.
  Stack stack{IValue(x), IValue(5000.0), IValue(std::vector<int64_t>{1, 1}), IValue(false)};
  scale.handle().call_boxed(stack);
  EXPECT_EQ(stack.back().to_tensor().item<float>(), 5000.f);
  // After a hand-off (even one that threw) the next call starts at the top again.
  EXPECT_EQ(scale(x, 2, {1, 1}, false).item<float>(), -1.f);

  // Preferring the middle provider makes top its runner-up, then the reference.
  d.set_preferred_provider(DispatchKey::CPU, "middle");
  EXPECT_EQ(scale(x, 500, {1, 1}, false).item<float>(), -2.f) << "middle is active";
  EXPECT_EQ(scale(x, 5000, {1, 1}, false).item<float>(), 5000.f)
      << "middle hands on to top, which hands on to the reference";
  d.set_preferred_provider(DispatchKey::CPU, "");

  // With the reference gone the last provider's hand-off is a clear error, not a crash.
  ref.reset();
  const std::string last = message_of([&] { scale(x, 5000, {1, 1}, false); });
  EXPECT_TRUE(contains(last, "provider 'middle' handed a call on")) << last;
  // And with one runner-up that hands on, too.
  top.reset();
  const std::string alone = message_of([&] { scale(x, 5000, {1, 1}, false); });
  EXPECT_TRUE(contains(alone, "handed a call on")) << alone;
  EXPECT_EQ(scale(x, 500, {1, 1}, false).item<float>(), -2.f);
}

TEST(DispatcherProviders, SameProviderTwiceIsAConflict) {
  Library a(Library::Kind::Impl, "dprov", DispatchKey::Meta);
  a.set_provider("p").impl("which", [](const Tensor& t) { return t; });
  Library b(Library::Kind::Impl, "dprov", DispatchKey::Meta);
  b.set_provider("p");
  const std::string msg = message_of([&] { b.impl("which", [](const Tensor& t) { return t; }); });
  EXPECT_TRUE(contains(msg, "provider 'p' already has a kernel")) << msg;
  EXPECT_TRUE(contains(msg, "dispatcher_test.cpp:")) << msg;
}

TEST(DispatcherRegistration, DefTwiceNamesTheFirstDefinition) {
  const std::string msg = message_of([] {
    Library lib(Library::Kind::Fragment, "dprov", std::nullopt);
    lib.def("which(Tensor self) -> Tensor");
  });
  EXPECT_TRUE(contains(msg, "already defined by static registration at tests/dispatcher/")) << msg;
}

TEST(DispatcherRegistration, KernelsWaitForTheirDef) {
  // Note [Kernels wait for their def]: a backend may load before the plugin that defines
  // the op; its kernel is kept until def() and then reached.
  Library early(Library::Kind::Impl, "dwait", DispatchKey::CPU);
  early.impl("later", [](const Tensor& t) { return t; });
  EXPECT_FALSE(Dispatcher::instance().find_op("dwait::later").has_value());
  {
    Library def(Library::Kind::Def, "dwait", std::nullopt);
    def.def("later(Tensor self) -> Tensor");
    auto typed =
        Dispatcher::instance().find_op_or_throw("dwait::later").typed<Tensor(const Tensor&)>();
    const Tensor x = Tensor::empty({2});
    EXPECT_TRUE(typed(x).is_same(x));
  }
  // The schema is checked against the waiting kernel when it arrives.
  Library wrong(Library::Kind::Impl, "dwait2", DispatchKey::CPU);
  wrong.impl("f", [](const Tensor& t, int64_t) { return t; });
  const std::string msg = testing::message_of<RegistrationError>([&] {
    Library def(Library::Kind::Def, "dwait2", std::nullopt);
    def.def("f(Tensor self) -> Tensor");
  });
  EXPECT_TRUE(contains(msg, "does not fit the schema")) << msg;
  EXPECT_FALSE(Dispatcher::instance().find_op("dwait2::f").has_value());
}

TEST(DispatcherRegistration, OverridingAnotherPluginsKernelWarns) {
  // Note [Overriding a kernel]: load order deciding which plugin's kernel runs is warned
  // about; a provider with a higher priority is an explicit choice.
  std::vector<std::string> seen;
  const WarningHandler old = set_warning_handler([&](const std::string& m) { seen.push_back(m); });
  Library def(Library::Kind::Def, "dwarn", std::nullopt);
  def.def("f(Tensor self) -> Tensor");
  auto impl_as = [](const char* plugin, const char* provider, int priority) {
    RegisteringPluginGuard as(plugin);
    Library lib(Library::Kind::Impl, "dwarn", DispatchKey::CPU);
    lib.set_provider(provider, priority).impl("f", [](const Tensor& t) { return t; });
    return lib;
  };
  Library first = impl_as("plug_a", "plain", 0);
  EXPECT_TRUE(seen.empty());
  Library faster = impl_as("plug_b", "fast", 10);
  EXPECT_TRUE(seen.empty()) << seen.front();
  Library later = impl_as("plug_c", "sneaky", 10);
  set_warning_handler(old);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_TRUE(contains(seen[0], "impl(dwarn::f, CPU) at plugin 'plug_c' at ")) << seen[0];
  EXPECT_TRUE(contains(seen[0], "(provider 'sneaky') overrides the kernel of provider 'fast' "
                                "registered at plugin 'plug_b'"))
      << seen[0];
}

TEST(DispatcherRegistration, ANamespaceIsAnIdentifier) {
  const std::string msg = message_of([] { Library lib(Library::Kind::Def, "a b", std::nullopt); });
  EXPECT_TRUE(contains(msg, "namespace 'a b' is not an identifier")) << msg;
  EXPECT_THROW(Library(Library::Kind::Def, "", std::nullopt), RegistrationError);
  EXPECT_NO_THROW(Library(Library::Kind::Fragment, "", std::nullopt));
}

TEST(DispatcherRegistration, UndoOfDef) {
  auto def = std::make_unique<Library>(Library::Kind::Def, "dundo", std::nullopt);
  def->def("gone(Tensor self) -> Tensor");
  Library impl(Library::Kind::Impl, "dundo", DispatchKey::CPU);
  impl.impl("gone", [](const Tensor& t) { return t; });
  auto typed =
      Dispatcher::instance().find_op_or_throw("dundo::gone").typed<Tensor(const Tensor&)>();
  EXPECT_NO_THROW(typed(Tensor::empty({1})));
  def.reset();
  EXPECT_FALSE(Dispatcher::instance().find_op("dundo::gone").has_value());
  const std::string after = message_of([&] { typed(Tensor::empty({1})); });
  EXPECT_TRUE(contains(after, "has no schema")) << after;
}

TEST(DispatcherTyped, WrongSignatureIsATypeError) {
  auto op = Dispatcher::instance().find_op_or_throw("dprov::which");
  const std::string msg = message_of([&] { op.typed<Tensor(const Tensor&, int64_t)>(); });
  EXPECT_TRUE(contains(msg, "the schema has 1 arguments but the C++ function takes 2")) << msg;
}

TEST(DispatcherBoxed, DefaultsConversionsAndTypeErrors) {
  Library lib(Library::Kind::Impl, "dprov", DispatchKey::CPU);
  std::vector<int64_t> seen_pair;
  double seen_factor = 0;
  lib.impl("scale", [&](const Tensor& t, double f, IntArrayRef pair, bool) {
    seen_factor = f;
    seen_pair = pair.vec();
    return t;
  });
  auto op = Dispatcher::instance().find_op_or_throw("dprov::scale");
  Stack s{Tensor::empty({1})};
  op.call_boxed(s);
  EXPECT_EQ(seen_factor, 2.0);
  EXPECT_EQ(seen_pair, (std::vector<int64_t>{1, 1})) << "int[2] pair=1 broadcasts";

  Stack s2{Tensor::empty({1}), int64_t{3}, int64_t{4}};  // int for float widens; int for int[2]
  op.call_boxed(s2);
  EXPECT_EQ(seen_factor, 3.0);
  EXPECT_EQ(seen_pair, (std::vector<int64_t>{4, 4}));

  Stack bad{Tensor::empty({1}), std::string("x")};
  std::string msg = message_of([&] { op.call_boxed(bad); });
  EXPECT_TRUE(contains(msg, "argument 'factor' (position 1) must be float, not str")) << msg;

  Stack none;
  msg = message_of([&] { op.call_boxed(none); });
  EXPECT_TRUE(contains(msg, "missing required argument 'self'")) << msg;

  Stack many{Tensor::empty({1}), 1.0, std::vector<int64_t>{1, 2}, false, 5};
  msg = message_of([&] { op.call_boxed(many); });
  EXPECT_TRUE(contains(msg, "takes 4 arguments but 5 were given")) << msg;
}

TEST(DispatcherBoxed, BoxedOnlyKernelReachedFromTypedCall) {
  Library lib(Library::Kind::Impl, "dprov", DispatchKey::CPU);
  lib.impl_kernel("boxed_only", std::nullopt,
                  KernelFunction::from_boxed([](const OperatorHandle&, Stack& s) {
                    const int64_t n = s.back().to_int();
                    s.clear();
                    s.emplace_back(tag_tensor(static_cast<float>(n)));
                  }));
  auto op = Dispatcher::instance()
                .find_op_or_throw("dprov::boxed_only")
                .typed<Tensor(const Tensor&, int64_t)>();
  EXPECT_EQ(op(Tensor::empty({1}), 41).item<float>(), 41.f);
}

LOOM_LIBRARY(dkeys, m) { m.def("id(Tensor self) -> Tensor"); }
LOOM_LIBRARY_IMPL(dkeys, CPU, m) {
  m.impl("id", [](const Tensor& t) { return t; });
}

TEST(DispatcherKeys, BoxedFallbackSeesEveryCallAndRedispatches) {
  int calls = 0;
  Library prof(Library::Kind::Impl, "_", DispatchKey::Profiling);
  prof.fallback(KernelFunction::from_boxed([&](const OperatorHandle& op, Stack& s) {
    ++calls;
    ExcludeDispatchKeyGuard below(DispatchKeySet(DispatchKey::Profiling));
    op.call_boxed(s);
  }));
  auto id = Dispatcher::instance().find_op_or_throw("dkeys::id").typed<Tensor(const Tensor&)>();
  Tensor x = Tensor::empty({2});
  EXPECT_TRUE(id(x).is_same(x));
  EXPECT_EQ(calls, 0) << "Profiling is not in a tensor's key set";
  {
    IncludeDispatchKeyGuard on(DispatchKeySet(DispatchKey::Profiling));
    EXPECT_TRUE(id(x).is_same(x));
    EXPECT_TRUE(id(x).is_same(x));
  }
  EXPECT_EQ(calls, 2);
}

TEST(DispatcherKeys, AutogradKernelRunsFirstOnlyForTensorsThatRequireGrad) {
  auto id = Dispatcher::instance().find_op_or_throw("dkeys::id").typed<Tensor(const Tensor&)>();
  Tensor x = Tensor::empty({2});
  EXPECT_FALSE(x.key_set().has(DispatchKey::Autograd)) << "Note [Autograd key]";
  EXPECT_TRUE(id(x).is_same(x));
  int autograd_calls = 0;
  Library ag(Library::Kind::Impl, "dkeys", DispatchKey::Autograd);
  ag.impl("id", [&](const Tensor& t) {
    ++autograd_calls;
    ExcludeDispatchKeyGuard below(DispatchKeySet(DispatchKey::Autograd));
    return Dispatcher::instance().find_op_or_throw("dkeys::id").typed<Tensor(const Tensor&)>()(t);
  });
  EXPECT_TRUE(id(x).is_same(x));
  EXPECT_EQ(autograd_calls, 0) << "a tensor that does not require grad skips the Autograd key";
  x.set_requires_grad(true);
  EXPECT_TRUE(x.key_set().has(DispatchKey::Autograd));
  EXPECT_TRUE(id(x).is_same(x));
  EXPECT_EQ(autograd_calls, 1);
}

TEST(DispatcherKeys, RuntimeDeviceTypeGetsItsOwnBackendKey) {
  const DeviceType t = DeviceType::register_type("dtestdev");
  const DispatchKey k = backend_key(t);
  EXPECT_TRUE(is_backend_key(k));
  EXPECT_EQ(dispatch_key_name(k), "DTESTDEV");
  EXPECT_EQ(parse_dispatch_key("dtestdev"), k);
  Library lib(Library::Kind::Impl, "dkeys", k);
  lib.impl("id", [](const Tensor& t) { return t; });
  bool found = false;
  for (const auto& info :
       Dispatcher::instance().kernels(Dispatcher::instance().find_op_or_throw("dkeys::id"))) {
    found |= info.key == k;
  }
  EXPECT_TRUE(found);
  const std::string msg = message_of([] { parse_dispatch_key("nosuchkey"); });
  EXPECT_TRUE(contains(msg, "known keys: ")) << msg;
}

TEST(DispatcherKeys, KeySetOrderAndPrinting) {
  DispatchKeySet ks = DispatchKeySet(DispatchKey::CPU).add(DispatchKey::Autograd);
  EXPECT_EQ(ks.highest(), DispatchKey::Autograd);
  EXPECT_EQ(ks.str(), "{Autograd, CPU}");
  EXPECT_EQ(ks.remove(DispatchKey::Autograd).highest(), DispatchKey::CPU);
  EXPECT_EQ(DispatchKeySet().highest(), DispatchKey::Undefined);
  EXPECT_GT(static_cast<int>(DispatchKey::Profiling), static_cast<int>(DispatchKey::Autocast));
  EXPECT_GT(static_cast<int>(DispatchKey::Autocast), static_cast<int>(DispatchKey::Autograd));
  EXPECT_GT(static_cast<int>(DispatchKey::CPU), static_cast<int>(DispatchKey::Meta));
}

TEST(DispatcherLookup, UnknownOpSuggestsOverloads) {
  const std::string msg = message_of([] { Dispatcher::instance().find_op_or_throw("dtest::add"); });
  EXPECT_TRUE(contains(msg, "overloads with that name: dtest::add.Tensor")) << msg;
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

TEST(DispatcherRegistration, OneLibraryPerNamespaceFragmentsAddToIt) {
  const std::string msg =
      message_of([] { Library again(Library::Kind::Def, "dkeys", std::nullopt); });
  EXPECT_TRUE(contains(msg,
                       "namespace 'dkeys' is already defined by the library at "
                       "static registration at tests/dispatcher/dispatcher_test.cpp:"))
      << msg;
  EXPECT_TRUE(contains(msg, "use LOOM_LIBRARY_FRAGMENT(dkeys, m)")) << msg;
  Library frag(Library::Kind::Fragment, "dkeys", std::nullopt);
  EXPECT_NO_THROW(frag.def("id2(Tensor self) -> Tensor"));
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

LOOM_LIBRARY(dfactory, m) {
  m.def("make(int n) -> Tensor");
  m.def("make_on(int n, *, Device? device=None) -> Tensor");
  m.def("pair(Tensor self, Tensor other) -> Tensor");
}
LOOM_LIBRARY_IMPL(dfactory, CPU, m) {
  m.impl("make", [](int64_t n) { return tag_tensor(static_cast<float>(n)); });
  m.impl("make_on", [](int64_t n, std::optional<Device>) { return tag_tensor(1); });
  m.impl("pair", [](const Tensor& a, const Tensor& b) { return a; });
}

TEST(DispatcherFactory, NoTensorArgumentsGoToTheCPU) {
  auto make = Dispatcher::instance().find_op_or_throw("dfactory::make").typed<Tensor(int64_t)>();
  EXPECT_EQ(make(5).item<float>(), 5.f);
  Stack s{int64_t{6}};
  Dispatcher::instance().find_op_or_throw("dfactory::make").call_boxed(s);
  EXPECT_EQ(s[0].to_tensor().item<float>(), 6.f);
}

TEST(DispatcherFactory, ADeviceArgumentSelectsItsBackend) {
  const DeviceType t = DeviceType::register_type("dfactorydev");
  Library lib(Library::Kind::Impl, "dfactory", backend_key(t));
  lib.impl("make_on", [](int64_t, std::optional<Device>) { return tag_tensor(2); });
  auto make_on = Dispatcher::instance()
                     .find_op_or_throw("dfactory::make_on")
                     .typed<Tensor(int64_t, std::optional<Device>)>();
  EXPECT_EQ(make_on(1, std::nullopt).item<float>(), 1.f);
  EXPECT_EQ(make_on(1, Device(t, 0)).item<float>(), 2.f);
  Stack s{int64_t{1}, Device(t, 0)};
  Dispatcher::instance().find_op_or_throw("dfactory::make_on").call_boxed(s);
  EXPECT_EQ(s[0].to_tensor().item<float>(), 2.f);
}

TEST(DispatcherFactory, UndefinedTensorsAreNamed) {
  auto op = Dispatcher::instance().find_op_or_throw("dfactory::pair");
  auto pair = op.typed<Tensor(const Tensor&, const Tensor&)>();
  std::string msg = message_of([&] { pair(Tensor(), Tensor()); });
  EXPECT_TRUE(contains(msg, "expected a proper Tensor but got an undefined Tensor for argument "
                            "#0 'self'"))
      << msg;
  Stack s{Tensor::empty({1}), Tensor()};
  msg = message_of([&] { op.call_boxed(s); });
  EXPECT_TRUE(contains(msg, "dfactory::pair(): expected a proper Tensor but got an undefined "
                            "Tensor for argument #1 'other'"))
      << msg;
}

}  // namespace
}  // namespace loom
