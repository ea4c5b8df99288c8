// Module: registration, names, walks, state dicts and their errors, train/eval, to(), hooks,
// zero_grad, containers, and the unregistered-child trap (Note [Unregistered children]).
#include <gtest/gtest.h>

#include <cstdio>

#include "loom/nn/nn.h"
#include "nn_test_util.h"

namespace loom::nn {
namespace {

using testing::contains;
using testing::message_of;
using testing::NnTest;
using testing::to_doubles;

class Net : public Module {
 public:
  Net() {
    fc1 = register_module("fc1", std::make_shared<Linear>(4, 3));
    bn = register_module("bn", std::make_shared<BatchNorm1d>(3));
    fc2 = register_module("fc2", std::make_shared<Linear>(3, 2, false));
    scale = register_parameter("scale", loom::ones({1}));
    register_buffer("steps", loom::zeros({}), /*persistent=*/false);
  }
  Tensor forward(const Tensor& x) override { return (*fc2)((*bn)((*fc1)(x)).relu()).mul(scale); }
  std::shared_ptr<Linear> fc1;
  std::shared_ptr<BatchNorm1d> bn;
  std::shared_ptr<Linear> fc2;
  Tensor scale;
};

using ModuleTest = NnTest;

TEST_F(ModuleTest, NamesAreClassNames) {
  auto net = std::make_shared<Net>();
  EXPECT_EQ(net->name(), "Net");
  EXPECT_EQ(net->fc1->name(), "Linear");
  EXPECT_EQ(Module("Custom").name(), "Custom");
}

TEST_F(ModuleTest, NamedParametersAreDottedInRegistrationOrder) {
  auto net = std::make_shared<Net>();
  const auto named = net->named_parameters();
  EXPECT_EQ(named.keys(), (std::vector<std::string>{"scale", "fc1.weight", "fc1.bias", "bn.weight",
                                                    "bn.bias", "fc2.weight"}));
  EXPECT_EQ(net->parameters().size(), 6u);
  EXPECT_EQ(net->parameters(/*recurse=*/false).size(), 1u);
  for (const Tensor& p : net->parameters()) {
    EXPECT_TRUE(p.requires_grad());
    EXPECT_TRUE(p.is_leaf());
  }
  // Buffers, non-persistent ones included.
  EXPECT_EQ(net->named_buffers().keys(),
            (std::vector<std::string>{"steps", "bn.running_mean", "bn.running_var",
                                      "bn.num_batches_tracked"}));
  EXPECT_EQ(net->named_children().keys(), (std::vector<std::string>{"fc1", "bn", "fc2"}));
  EXPECT_EQ(net->named_modules().keys(), (std::vector<std::string>{"", "fc1", "bn", "fc2"}));
  EXPECT_EQ(net->modules().size(), 4u);
}

TEST_F(ModuleTest, MemberReferencesAreTheRegisteredSlots) {
  auto fc = std::make_shared<Linear>(4, 3);
  EXPECT_TRUE(fc->weight.is_same(fc->named_parameters()["weight"]));
  // Assigning the member replaces the registered parameter (Note [Parameter slots]).
  fc->weight = loom::zeros({3, 4}).requires_grad_();
  EXPECT_TRUE(fc->weight.is_same(fc->named_parameters()["weight"]));
  auto no_bias = std::make_shared<Linear>(4, 3, false);
  EXPECT_FALSE(no_bias->bias.defined());
  EXPECT_EQ(no_bias->named_parameters().keys(), (std::vector<std::string>{"weight"}));
  EXPECT_FALSE(no_bias->state_dict().contains("bias"));
}

TEST_F(ModuleTest, SharedParametersAppearOnceInParametersButUnderEachNameInStateDict) {
  auto a = std::make_shared<Linear>(2, 2);
  auto seq = std::make_shared<Sequential>(a, a);
  EXPECT_EQ(seq->parameters().size(), 2u);
  EXPECT_EQ(seq->state_dict().size(), 4u);
}

TEST_F(ModuleTest, RegistrationNameErrors) {
  Module m;
  EXPECT_TRUE(contains(message_of([&] { m.register_parameter("a.b", loom::ones({1})); }),
                       "parameter name can't contain \".\""));
  EXPECT_TRUE(contains(message_of([&] { m.register_buffer("", loom::ones({1})); }),
                       "buffer name can't be empty string"));
  m.register_parameter("w", loom::ones({1}));
  EXPECT_TRUE(contains(message_of([&] { m.register_buffer("w", loom::ones({1})); }),
                       "attribute 'w' already exists"));
  EXPECT_TRUE(contains(message_of([&] { m.register_module("x.y", std::make_shared<ReLU>()); }),
                       "module name can't contain \".\", got: x.y"));
  EXPECT_TRUE(
      contains(message_of([&] { m.register_module("n", std::shared_ptr<ReLU>()); }), "is null"));
}

TEST_F(ModuleTest, StateDictOrderAndRoundTrip) {
  auto net = std::make_shared<Net>();
  const StateDict sd = net->state_dict();
  // Per module: parameters, then persistent buffers; non-persistent "steps" is absent.
  EXPECT_EQ(sd.keys(), (std::vector<std::string>{"scale", "fc1.weight", "fc1.bias", "bn.weight",
                                                 "bn.bias", "bn.running_mean", "bn.running_var",
                                                 "bn.num_batches_tracked", "fc2.weight"}));
  EXPECT_FALSE(sd["fc1.weight"].requires_grad());
  EXPECT_TRUE(sd["fc1.weight"].is_alias_of(net->fc1->weight));

  auto other = std::make_shared<Net>();
  EXPECT_NE(to_doubles(other->fc1->weight), to_doubles(net->fc1->weight));
  const LoadStateDictResult r = other->load_state_dict(sd);
  EXPECT_TRUE(r.missing_keys.empty());
  EXPECT_TRUE(r.unexpected_keys.empty());
  for (const auto& [k, v] : other->state_dict()) {
    EXPECT_EQ(to_doubles(v), to_doubles(sd[k])) << k;
  }
  // Loading copies: the tensors stay the module's own leaves.
  EXPECT_FALSE(other->fc1->weight.is_alias_of(net->fc1->weight));
  EXPECT_TRUE(other->fc1->weight.requires_grad());
  EXPECT_TRUE(other->fc1->weight.is_leaf());
  const Tensor x = loom::randn({5, 4});
  net->eval();
  other->eval();
  EXPECT_EQ(to_doubles((*net)(x)), to_doubles((*other)(x)));
}

TEST_F(ModuleTest, LoadStateDictMissingKeyMessage) {
  auto net = std::make_shared<Net>();
  StateDict sd = net->state_dict();
  sd.erase("fc1.bias");
  const std::string msg = message_of([&] { net->load_state_dict(sd); });
  EXPECT_EQ(msg,
            "Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: "
            "\"fc1.bias\". ");
}

TEST_F(ModuleTest, LoadStateDictUnexpectedAndSizeMismatchMessage) {
  auto net = std::make_shared<Net>();
  StateDict sd = net->state_dict();
  sd.erase("scale");
  sd.erase("fc2.weight");
  sd.insert("extra", loom::ones({1}));
  sd.insert("fc1.weight", loom::ones({3, 5}));
  const std::string msg = message_of([&] { net->load_state_dict(sd); });
  EXPECT_EQ(msg,
            "Error(s) in loading state_dict for Net:\n"
            "\tMissing key(s) in state_dict: \"scale\", \"fc2.weight\". \n"
            "\tUnexpected key(s) in state_dict: \"extra\". \n"
            "\tsize mismatch for fc1.weight: copying a param with shape [3, 5] from checkpoint, "
            "the shape in current model is [3, 4].");
}

TEST_F(ModuleTest, LoadStateDictNonStrictSkipsKeysButNotSizeMismatches) {
  auto net = std::make_shared<Net>();
  StateDict sd;
  sd.insert("fc1.bias", loom::full({3}, 7.0));
  sd.insert("unused", loom::ones({2}));
  const LoadStateDictResult r = net->load_state_dict(sd, /*strict=*/false);
  EXPECT_EQ(r.unexpected_keys, (std::vector<std::string>{"unused"}));
  EXPECT_EQ(r.missing_keys.size(), 8u);
  EXPECT_EQ(to_doubles(net->fc1->bias), (std::vector<double>{7, 7, 7}));
  sd.insert("fc1.bias", loom::ones({4}));
  const std::string msg = message_of([&] { net->load_state_dict(sd, false); });
  EXPECT_EQ(msg,
            "Error(s) in loading state_dict for Net:\n\tsize mismatch for fc1.bias: copying a "
            "param with shape [4] from checkpoint, the shape in current model is [3].");
  // Nothing was copied by the failed load.
  EXPECT_EQ(to_doubles(net->fc1->bias), (std::vector<double>{7, 7, 7}));
}

TEST_F(ModuleTest, TrainEvalPropagatesAndChangesDropout) {
  auto seq =
      std::make_shared<Sequential>(std::make_shared<Linear>(4, 4), std::make_shared<Dropout>(0.5));
  EXPECT_TRUE(seq->is_training());
  const Tensor x = loom::ones({64, 4});
  auto drop = seq->at<Dropout>(1);
  const std::vector<double> train_out = to_doubles((*drop)(x));
  int zeros = 0;
  for (double v : train_out) {
    zeros += v == 0.0;
    EXPECT_TRUE(v == 0.0 || v == 2.0);
  }
  EXPECT_GT(zeros, 64);
  EXPECT_LT(zeros, 192);
  seq->eval();
  EXPECT_FALSE(seq->is_training());
  EXPECT_FALSE((*seq)[0]->is_training());
  EXPECT_EQ(to_doubles((*drop)(x)), to_doubles(x));
  seq->train();
  EXPECT_TRUE(drop->is_training());
}

TEST_F(ModuleTest, ToDtypeKeepsLeavesThatRequireGradAndIntegerBuffers) {
  auto net = std::make_shared<Net>();
  const std::vector<double> w = to_doubles(net->fc1->weight);
  net->to(DType::Float64);
  for (const auto& [name, p] : net->named_parameters()) {
    EXPECT_EQ(p.dtype(), DType::Float64) << name;
    EXPECT_TRUE(p.requires_grad()) << name;
    EXPECT_TRUE(p.is_leaf()) << name;
  }
  EXPECT_EQ(net->fc1->weight.dtype(), DType::Float64);
  EXPECT_EQ(net->bn->running_mean.dtype(), DType::Float64);
  EXPECT_EQ(net->bn->num_batches_tracked.dtype(), DType::Int64);
  const std::vector<double> w64 = to_doubles(net->fc1->weight);
  for (size_t i = 0; i < w.size(); ++i) EXPECT_EQ(w64[i], w[i]);
  // The converted model computes and trains in float64.
  const Tensor y = (*net)(loom::randn({3, 4}, DType::Float64));
  EXPECT_EQ(y.dtype(), DType::Float64);
  y.sum().backward();
  EXPECT_EQ(net->fc1->weight.grad().dtype(), DType::Float64);
  EXPECT_TRUE(contains(message_of<TypeError>([&] { net->to(DType::Int32); }),
                       "only accepts floating point dtypes"));
}

TEST_F(ModuleTest, ToChannelsLastConvertsFourDimensionalTensorsOnly) {
  auto seq = std::make_shared<Sequential>();
  seq->push_back(std::make_shared<Conv2d>(3, 4, 3));
  seq->push_back(std::make_shared<BatchNorm2d>(4));
  seq->push_back(std::make_shared<ReLU>());
  seq->push_back(std::make_shared<Flatten>());
  seq->push_back(std::make_shared<Linear>(4 * 4 * 4, 2));
  auto conv = std::dynamic_pointer_cast<Conv2d>((*seq)[0]);
  const std::vector<double> w = to_doubles(conv->weight);
  const Tensor x = loom::randn({2, 3, 6, 6});
  const std::vector<double> before = to_doubles((*seq)(x));
  seq->to(MemoryFormat::ChannelsLast);
  for (const auto& [name, p] : seq->named_parameters()) {
    EXPECT_TRUE(p.requires_grad()) << name;
    EXPECT_TRUE(p.is_leaf()) << name;
    EXPECT_EQ(suggests_channels_last(p), p.dim() == 4) << name;
    if (p.dim() != 4) {
      EXPECT_TRUE(p.is_contiguous()) << name;
    }
  }
  EXPECT_EQ(conv->weight.strides().vec(), (std::vector<int64_t>{27, 1, 9, 3}));
  EXPECT_EQ(to_doubles(conv->weight), w);
  // The model computes the same, channels-last from its first layer, and trains.
  const Tensor conv_out = (*conv)(x);
  EXPECT_TRUE(suggests_channels_last(conv_out));
  const Tensor y = (*seq)(x);
  const std::vector<double> after = to_doubles(y);
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) EXPECT_NEAR(after[i], before[i], 1e-4) << i;
  y.sum().backward();
  EXPECT_TRUE(conv->weight.grad().defined());
  // Back to contiguous.
  seq->to(MemoryFormat::Contiguous);
  EXPECT_TRUE(conv->weight.is_contiguous());
  EXPECT_FALSE(suggests_channels_last(conv->weight));
  EXPECT_EQ(to_doubles(conv->weight), w);
  // channels_last on a 5-d parameter is PyTorch's error.
  struct Kernel5d : Module {
    Kernel5d() { register_parameter("kernel", loom::zeros({1, 1, 1, 1, 1})); }
  };
  auto conv3d = std::make_shared<Kernel5d>();
  EXPECT_TRUE(contains(message_of([&] { conv3d->to(MemoryFormat::ChannelsLast); }),
                       "required rank 4 tensor to use channels_last format"));
}

TEST_F(ModuleTest, ApplyVisitsChildrenFirstThenSelf) {
  auto net = std::make_shared<Net>();
  std::vector<std::string> seen;
  net->apply([&](Module& m) {
    seen.push_back(m.name());
    if (auto* fc = dynamic_cast<Linear*>(&m)) init::zeros_(fc->weight);
  });
  EXPECT_EQ(seen, (std::vector<std::string>{"Linear", "BatchNorm1d", "Linear", "Net"}));
  EXPECT_EQ(net->fc2->weight.abs().sum().item<double>(), 0.0);
}

TEST_F(ModuleTest, ToDeviceOnTheCpuKeepsTheTensors) {
  auto fc = std::make_shared<Linear>(2, 2);
  const Tensor w = fc->weight;
  fc->to(Device());
  EXPECT_TRUE(fc->weight.is_same(w));
}

TEST_F(ModuleTest, SaveAndLoadThroughSafetensors) {
  auto net = std::make_shared<Net>();
  (*net)(loom::randn({4, 4}));  // moves the running statistics
  const std::string path = ::testing::TempDir() + "nn_module_test_state.safetensors";
  save(*net, path);
  auto other = std::make_shared<Net>();
  const LoadStateDictResult r = load(*other, path);
  EXPECT_TRUE(r.missing_keys.empty());
  for (const auto& [k, v] : net->state_dict()) {
    EXPECT_EQ(to_doubles(other->state_dict()[k]), to_doubles(v)) << k;
  }
  auto wrong = std::make_shared<Linear>(4, 3);
  EXPECT_TRUE(contains(message_of([&] { load(*wrong, path); }),
                       "Error(s) in loading state_dict for Linear:\n\tMissing key(s) in "
                       "state_dict: \"weight\", \"bias\". \n\tUnexpected key(s)"));
  std::remove(path.c_str());
}

TEST_F(ModuleTest, ZeroGrad) {
  auto fc = std::make_shared<Linear>(3, 2);
  (*fc)(loom::ones({1, 3})).sum().backward();
  ASSERT_TRUE(fc->weight.grad().defined());
  fc->zero_grad(/*set_to_none=*/false);
  EXPECT_EQ(to_doubles(fc->weight.grad()), std::vector<double>(6, 0.0));
  fc->zero_grad();
  EXPECT_FALSE(fc->weight.grad().defined());
}

TEST_F(ModuleTest, ForwardHooksRunInOrderAndCanReplaceValues) {
  auto fc = std::make_shared<Linear>(2, 2);
  std::vector<std::string> calls;
  auto h1 = fc->register_forward_pre_hook([&](Module& m, const Tensor& x) -> std::optional<Tensor> {
    calls.push_back("pre:" + m.name());
    return x.mul(2.0);
  });
  auto h2 = fc->register_forward_hook(
      [&](Module&, const Tensor& in, const Tensor& out) -> std::optional<Tensor> {
        calls.push_back("post");
        EXPECT_EQ(to_doubles(in), (std::vector<double>{2, 2}));
        return out.add(100.0);
      });
  const Tensor x = loom::ones({1, 2});
  const Tensor y = (*fc)(x);
  EXPECT_EQ(calls, (std::vector<std::string>{"pre:Linear", "post"}));
  const Tensor want = fc->forward(x.mul(2.0)).add(100.0);
  EXPECT_EQ(to_doubles(y), to_doubles(want));
  h1.remove();
  h2.remove();
  h2.remove();  // twice is harmless
  calls.clear();
  EXPECT_EQ(to_doubles((*fc)(x)), to_doubles(fc->forward(x)));
  EXPECT_TRUE(calls.empty());
}

TEST_F(ModuleTest, HookHandleOutlivingTheModuleIsHarmless) {
  RemovableHandle h;
  {
    auto fc = std::make_shared<Linear>(2, 2);
    h = fc->register_forward_hook(
        [](Module&, const Tensor&, const Tensor&) { return std::optional<Tensor>(); });
  }
  h.remove();
}

TEST_F(ModuleTest, BaseForwardIsMissing) {
  auto m = std::make_shared<Module>();
  EXPECT_EQ(message_of<NotImplementedError>([&] { (*m)(loom::ones({1})); }),
            "Module [Module] is missing the required \"forward\" function");
}

TEST_F(ModuleTest, StrPrintsTheTree) {
  auto seq = std::make_shared<Sequential>(std::make_shared<Linear>(4, 3), std::make_shared<ReLU>());
  EXPECT_EQ(
      seq->str(),
      "Sequential(\n  (0): Linear(in_features=4, out_features=3, bias=true)\n  (1): ReLU()\n)");
}

// ---------------------------------------------------------------------------- containers

TEST_F(ModuleTest, SequentialChainsAndIndexes) {
  auto seq = std::make_shared<Sequential>(std::make_shared<Linear>(4, 3), std::make_shared<ReLU>(),
                                          std::make_shared<Linear>(3, 2));
  EXPECT_EQ(seq->size(), 3u);
  const Tensor x = loom::randn({5, 4});
  auto l0 = seq->at<Linear>(0);
  auto l2 = seq->at<Linear>(-1);
  const Tensor want = l2->forward(l0->forward(x).relu());
  EXPECT_EQ(to_doubles((*seq)(x)), to_doubles(want));
  EXPECT_EQ(seq->named_parameters().keys(),
            (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  EXPECT_TRUE(contains(message_of<IndexError>([&] { (*seq)[3]; }), "out of range"));
  EXPECT_TRUE(contains(message_of<TypeError>([&] { seq->at<Linear>(1); }), "ReLU"));
  seq->push_back(std::make_shared<Tanh>());
  EXPECT_EQ(seq->size(), 4u);
  auto named = std::make_shared<Sequential>(
      std::initializer_list<std::pair<std::string, std::shared_ptr<Module>>>{
          {"fc", std::make_shared<Linear>(2, 2)}, {"act", std::make_shared<ReLU>()}});
  EXPECT_EQ(named->named_parameters().keys(), (std::vector<std::string>{"fc.weight", "fc.bias"}));
  // An empty Sequential is the identity.
  EXPECT_EQ(to_doubles((*std::make_shared<Sequential>())(x)), to_doubles(x));
}

TEST_F(ModuleTest, ModuleListAndDictRegisterWhatTheyHold) {
  auto list = std::make_shared<ModuleList>();
  for (int i = 0; i < 3; ++i) list->push_back(std::make_shared<Linear>(2, 2));
  list->extend({std::make_shared<ReLU>()});
  EXPECT_EQ(list->size(), 4u);
  EXPECT_EQ(list->parameters().size(), 6u);
  EXPECT_EQ(list->named_parameters().keys()[4], "2.weight");
  EXPECT_EQ((*list)[-1]->name(), "ReLU");
  EXPECT_EQ(message_of<NotImplementedError>([&] { (*list)(loom::ones({2})); }),
            "Module [ModuleList] is missing the required \"forward\" function");

  auto dict = std::make_shared<ModuleDict>();
  dict->insert("enc", std::make_shared<Linear>(2, 3));
  dict->insert("dec", std::make_shared<Linear>(3, 2));
  EXPECT_TRUE(dict->contains("enc"));
  EXPECT_EQ(dict->keys(), (std::vector<std::string>{"enc", "dec"}));
  EXPECT_EQ(dict->at<Linear>("dec")->in_features, 3);
  EXPECT_EQ(dict->state_dict().keys()[2], "dec.weight");
  EXPECT_TRUE(contains(message_of<IndexError>([&] { (*dict)["nope"]; }), "no module \"nope\""));
}

// ---------------------------------------------------------------------------- the trap

class HiddenLayers : public Module {
 public:
  HiddenLayers() {
    for (int i = 0; i < 2; ++i) layers.push_back(std::make_shared<Linear>(2, 2));  // not registered
  }
  Tensor forward(const Tensor& x) override {
    Tensor y = x;
    for (auto& l : layers) y = (*l)(y);
    return y;
  }
  std::vector<std::shared_ptr<Linear>> layers;
};

class ListedLayers : public Module {
 public:
  ListedLayers() {
    layers = register_module("layers", std::make_shared<ModuleList>());
    for (int i = 0; i < 2; ++i) layers->push_back(std::make_shared<Linear>(2, 2));
    auto tmp = std::make_shared<Linear>(1, 1);  // a temporary that dies: not reported
    head = register_module("head", std::make_shared<Linear>(2, 1));
  }
  std::shared_ptr<ModuleList> layers;
  std::shared_ptr<Linear> head;
};

TEST_F(ModuleTest, UnregisteredChildIsReported) {
  auto net = std::make_shared<HiddenLayers>();
  const std::string want =
      "HiddenLayers holds a Linear that is not registered: its parameters are hidden from "
      "parameters() and state_dict(); use register_module or a ModuleList";
  EXPECT_EQ(message_of<ValueError>([&] { net->parameters(); }), want);
  EXPECT_EQ(message_of<ValueError>([&] { net->state_dict(); }), want);
  EXPECT_EQ(message_of<ValueError>([&] { net->named_modules(); }), want);
  // Also from a parent that registers the offender.
  auto outer = std::make_shared<Sequential>(net);
  EXPECT_EQ(message_of<ValueError>([&] { outer->parameters(); }), want);
  // Registering the children afterwards fixes it.
  for (size_t i = 0; i < net->layers.size(); ++i) {
    net->register_module("l" + std::to_string(i), net->layers[i]);
  }
  EXPECT_EQ(net->parameters().size(), 4u);
}

TEST_F(ModuleTest, RegisteredChildrenAndSiblingsAreNotReported) {
  auto net = std::make_shared<ListedLayers>();
  EXPECT_EQ(net->parameters().size(), 6u);
  // Top-level siblings made one after another are nobody's children.
  auto a = std::make_shared<Linear>(2, 2);
  auto b = std::make_shared<Linear>(2, 2);
  EXPECT_EQ(a->parameters().size(), 2u);
  EXPECT_EQ(b->parameters().size(), 2u);
  // Modules on the stack are not checked, nor do they adopt later ones.
  Linear c(2, 2);
  auto d = std::make_shared<Linear>(2, 2);
  EXPECT_EQ(c.parameters().size(), 2u);
  EXPECT_EQ(d->parameters().size(), 2u);
}

}  // namespace
}  // namespace loom::nn
