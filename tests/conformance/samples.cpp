// Sample inputs for the conformance harness: made from each op's schema, or from the
// explicit table below for ops whose arguments a schema cannot fill (shapes that must
// agree, sizes, index lists). See docs/design/conformance.md.
#include <functional>
#include <map>
#include <random>

#include "conformance.h"
#include "loom/core/str_cat.h"
#include "loom/dispatcher/boxing.h"
#include "loom/dispatcher/schema.h"

namespace loom::conformance {
namespace {

/// Float64 tensor with n uniform values in [lo, hi) (seeded by the shape, so every run and
/// every dtype sees the same values).
Tensor random_tensor(std::vector<int64_t> sizes, uint64_t seed, double lo = -2, double hi = 2) {
  Tensor t = Tensor::empty(sizes, TensorOptions{}.with(DType::Float64));
  std::mt19937_64 gen(seed * 7919 + static_cast<uint64_t>(t.numel()));
  std::uniform_real_distribution<double> dist(lo, hi);
  double* p = t.numel() ? t.data_ptr<double>() : nullptr;
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(gen);
  return t;
}

std::string label_of(const std::vector<std::vector<int64_t>>& shapes) {
  std::string s;
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (i) s += " x ";
    s += sizes_str(shapes[i]);
  }
  return s;
}

bool is_tensor_type(const Type& t) { return t.kind == TypeKind::Tensor; }
bool is_tensor_list_type(const Type& t) {
  return t.kind == TypeKind::List && t.element().kind == TypeKind::Tensor;
}
bool mentions_generator(const Type& t) {
  if (t.kind == TypeKind::Generator) return true;
  if (t.kind == TypeKind::Optional || t.kind == TypeKind::List)
    return mentions_generator(t.element());
  return false;
}

/// The shape sets a schema-made sample runs on, for ops with n tensor inputs: equal shapes,
/// broadcasting (when n > 1: against [4], [3, 1] and 0-d operands), a zero-size and a 0-d
/// case.
std::vector<std::vector<std::vector<int64_t>>> shape_sets(size_t n) {
  std::vector<std::vector<std::vector<int64_t>>> sets;
  sets.push_back(std::vector<std::vector<int64_t>>(n, {3, 4}));
  sets.push_back(std::vector<std::vector<int64_t>>(n, {2, 3, 5}));
  if (n > 1) {
    std::vector<std::vector<int64_t>> b(n, {4});
    b[0] = {3, 4};
    sets.push_back(b);
    std::vector<std::vector<int64_t>> c(n, {3, 1});
    c[0] = {3, 4};
    sets.push_back(c);
    std::vector<std::vector<int64_t>> z(n, std::vector<int64_t>{});  // a 0-d operand
    z[0] = {3, 4};
    sets.push_back(z);
  }
  sets.push_back(std::vector<std::vector<int64_t>>(n, {0, 4}));
  sets.push_back(std::vector<std::vector<int64_t>>(n, std::vector<int64_t>{}));
  return sets;
}

/// Samples made from the schema; an empty result with a reason when an argument cannot be
/// filled.
Samples from_schema(const FunctionSchema& s) {
  Samples out;
  size_t tensors = 0;
  std::vector<const Argument*> required;
  for (const Argument& a : s.arguments()) {
    if (mentions_generator(a.type)) {
      out.skip_reason = "random (takes a Generator)";
      return out;
    }
    if (a.default_value) continue;
    required.push_back(&a);
    if (is_tensor_type(a.type)) ++tensors;
    if (is_tensor_list_type(a.type)) tensors += 2;
  }
  if (tensors == 0) {
    out.skip_reason = "factory (no tensor input)";
    return out;
  }
  for (const Argument* a : required) {
    const Type& t = a->type;
    const Type& base = t.kind == TypeKind::Optional ? t.element() : t;
    const bool dim_name = a->name == "dim" || a->name == "dims" || a->name == "dim0" ||
                          a->name == "dim1" || a->name == "source" || a->name == "destination" ||
                          a->name == "axis0" || a->name == "axis1";
    const bool int_name = a->name == "reduction" || a->name == "decimals";
    const bool ok =
        is_tensor_type(t) || is_tensor_list_type(t) || t.kind == TypeKind::Scalar ||
        t.kind == TypeKind::Float || t.kind == TypeKind::Bool ||
        (t.kind == TypeKind::Optional && t.element().kind == TypeKind::Tensor) ||
        (int_name && t.kind == TypeKind::Int) ||
        (dim_name && (base.kind == TypeKind::Int ||
                      (base.kind == TypeKind::List && base.element().kind == TypeKind::Int)));
    if (!ok) {
      out.skip_reason =
          str_cat("argument '", a->name, "' (", t.str(), ") needs an explicit sample");
      return out;
    }
  }
  uint64_t seed = 1;
  for (const auto& shapes : shape_sets(tensors)) {
    Sample smp;
    smp.label = label_of(shapes);
    size_t ti = 0;
    const int64_t rank = static_cast<int64_t>(shapes[0].size());
    const int64_t dim = rank >= 2 ? 1 : -1;
    for (const Argument* a : required) {
      const Type& t = a->type;
      if (is_tensor_type(t)) {
        smp.args.emplace_back(random_tensor(shapes[ti++], seed++));
      } else if (is_tensor_list_type(t)) {
        std::vector<Tensor> list;
        list.push_back(random_tensor(shapes[ti++], seed++));
        list.push_back(random_tensor(shapes[ti++], seed++));
        smp.args.emplace_back(std::move(list));
      } else if (t.kind == TypeKind::Scalar || t.kind == TypeKind::Float) {
        smp.args.emplace_back(0.75);
      } else if (t.kind == TypeKind::Bool) {
        smp.args.emplace_back(false);
      } else if (t.kind == TypeKind::Optional && t.element().kind == TypeKind::Tensor) {
        smp.args.emplace_back(std::nullopt);  // an optional tensor (weight, bias) left out
      } else if (a->name == "reduction") {
        smp.args.emplace_back(int64_t{1});  // mean
      } else if (a->name == "decimals") {
        smp.args.emplace_back(int64_t{1});
      } else if (t.kind == TypeKind::Int) {
        const bool first = a->name == "dim1" || a->name == "source" || a->name == "axis0";
        smp.args.emplace_back(first && rank > 0 ? int64_t{0} : dim);
      } else {
        smp.args.emplace_back(rank == 0 ? std::vector<int64_t>{} : std::vector<int64_t>{dim});
      }
    }
    out.samples.push_back(std::move(smp));
  }
  return out;
}

using Maker = std::function<std::vector<Sample>()>;

Sample sample(std::string label, std::vector<IValue> args) {
  return {std::move(label), std::move(args)};
}
Tensor R(std::vector<int64_t> sizes, uint64_t seed = 1) {
  return random_tensor(std::move(sizes), seed);
}
Tensor P(std::vector<int64_t> sizes, uint64_t seed = 1) {  // positive values
  return random_tensor(std::move(sizes), seed, 0.5, 2);
}
Tensor I(std::vector<int64_t> sizes, int64_t hi, uint64_t seed = 3) {  // int64 in [0, hi)
  Tensor t = Tensor::empty(sizes, TensorOptions{}.with(DType::Int64));
  std::mt19937_64 gen(seed);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data_ptr<int64_t>()[i] = static_cast<int64_t>(gen() % hi);
  return t;
}
using IL = std::vector<int64_t>;
Tensor full(std::vector<int64_t> sizes, double v) {  // a float64 constant
  Tensor t = Tensor::empty(sizes, TensorOptions{}.with(DType::Float64));
  for (int64_t i = 0; i < t.numel(); ++i) t.data_ptr<double>()[i] = v;
  return t;
}

Tensor B(std::vector<int64_t> sizes, uint64_t seed = 5) {  // a bool mask, about half true
  Tensor t = Tensor::empty(sizes, TensorOptions{}.with(DType::Bool));
  std::mt19937_64 gen(seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_ptr<bool>()[i] = (gen() & 1) != 0;
  return t;
}

Tensor index_tensor(std::vector<int64_t> values, std::vector<int64_t> sizes) {  // int64
  Tensor t = Tensor::empty(sizes, TensorOptions{}.with(DType::Int64));
  for (size_t i = 0; i < values.size(); ++i) t.data_ptr<int64_t>()[i] = values[i];
  return t;
}

/// Runs an op (reference kernels) to make an input another op needs, e.g. pooling indices.
Stack call_op(const char* name, Stack args) {
  Dispatcher::instance().find_op_or_throw(name).call_boxed(args);
  return args;
}

/// Ops whose arguments the schema cannot fill.
const std::map<std::string, Maker>& table() {
  static const auto* t = new std::map<std::string, Maker>{
      {"aten::where.self",
       [] {
         Tensor cond = Tensor::empty({3, 4}, TensorOptions{}.with(DType::Bool));
         for (int64_t i = 0; i < 12; ++i) cond.data_ptr<bool>()[i] = (i * 5) % 3 == 0;
         return std::vector{sample("[3, 4] ? [3, 4] : [4]", {cond, R({3, 4}), R({4}, 2)})};
       }},
      {"aten::clamp",
       [] {
         return std::vector{sample("[3, 4] in [-0.5, 1]", {R({3, 4}), -0.5, 1.0})};
       }},
      {"aten::clamp.Tensor",
       [] {
         return std::vector{
             sample("[3, 4] in [[4], [3, 1]]", {R({3, 4}), R({4}, 2), R({3, 1}, 3)})};
       }},
      {"aten::nll_loss_forward",
       [] {
         return std::vector{sample(
             "[4, 5] by [4]", {R({4, 5}), I({4}, 5), std::nullopt, int64_t{1}, int64_t{-100}})};
       }},
      {"aten::one_hot",
       [] {
         // num_classes from the values (-1), and given (the only form meta can run).
         return std::vector{sample("[3, 4] in [0, 4), -1", {I({3, 4}, 4), int64_t{-1}}),
                            sample("[3, 4] in [0, 4), 5", {I({3, 4}, 4), int64_t{5}})};
       }},
      {"aten::div.Tensor_mode",
       [] {
         return std::vector{
             sample("[3, 4] / [3, 4] floor", {R({3, 4}), R({3, 4}, 2), std::string("floor")}),
             sample("[3, 4] / [4] trunc", {R({3, 4}), R({4}, 2), std::string("trunc")})};
       }},
      {"aten::div.Scalar_mode",
       [] {
         return std::vector{sample("[3, 4] / 0.75 floor", {R({3, 4}), 0.75, std::string("floor")})};
       }},
      {"aten::split_with_sizes",
       [] {
         return std::vector{sample("[5, 4] by [2, 3]", {R({5, 4}), IL{2, 3}})};
       }},
      {"aten::split.sizes",
       [] {
         return std::vector{sample("[5, 4] by [2, 3]", {R({5, 4}), IL{2, 3}})};
       }},
      {"aten::native_layer_norm",
       [] {
         return std::vector{
             sample("[2, 3, 5] over [5]", {R({2, 3, 5}), IL{5}, R({5}, 2), R({5}, 3), 1e-5}),
             sample("[2, 3, 5] over [3, 5], no affine",
                    {R({2, 3, 5}), IL{3, 5}, std::nullopt, std::nullopt, 1e-5})};
       }},
      {"aten::native_batch_norm",
       [] {
         return std::vector{
             sample("[4, 3, 5] training", {R({4, 3, 5}), R({3}, 2), R({3}, 3), std::nullopt,
                                           std::nullopt, true, 0.1, 1e-5}),
             sample("[4, 3, 2, 2] eval", {R({4, 3, 2, 2}), R({3}, 2), R({3}, 3), R({3}, 4),
                                          P({3}, 5), false, 0.1, 1e-5})};
       }},
      {"aten::native_group_norm",
       [] {
         return std::vector{
             sample("[2, 4, 3] in 2 groups", {R({2, 4, 3}), R({4}, 2), R({4}, 3), int64_t{2},
                                              int64_t{4}, int64_t{3}, int64_t{2}, 1e-5})};
       }},
      {"aten::reflection_pad1d",
       [] {
         return std::vector{sample("[2, 3, 5] pad [2, 1]", {R({2, 3, 5}), IL{2, 1}})};
       }},
      {"aten::replication_pad1d",
       [] {
         return std::vector{sample("[2, 3, 5] pad [2, 1]", {R({2, 3, 5}), IL{2, 1}})};
       }},
      {"aten::reflection_pad2d",
       [] {
         return std::vector{
             sample("[1, 2, 4, 5] pad [1, 2, 2, 1]", {R({1, 2, 4, 5}), IL{1, 2, 2, 1}})};
       }},
      {"aten::replication_pad2d",
       [] {
         return std::vector{
             sample("[1, 2, 4, 5] pad [1, 2, 2, 1]", {R({1, 2, 4, 5}), IL{1, 2, 2, 1}})};
       }},
      {"aten::reflection_pad1d_backward",
       [] {
         return std::vector{
             sample("[2, 3, 8] to [2, 3, 5]", {R({2, 3, 8}), R({2, 3, 5}, 2), IL{2, 1}})};
       }},
      {"aten::replication_pad1d_backward",
       [] {
         return std::vector{
             sample("[2, 3, 8] to [2, 3, 5]", {R({2, 3, 8}), R({2, 3, 5}, 2), IL{2, 1}})};
       }},
      {"aten::reflection_pad2d_backward",
       [] {
         return std::vector{sample("[1, 2, 7, 8] to [1, 2, 4, 5]",
                                   {R({1, 2, 7, 8}), R({1, 2, 4, 5}, 2), IL{1, 2, 2, 1}})};
       }},
      {"aten::replication_pad2d_backward",
       [] {
         return std::vector{sample("[1, 2, 7, 8] to [1, 2, 4, 5]",
                                   {R({1, 2, 7, 8}), R({1, 2, 4, 5}, 2), IL{1, 2, 2, 1}})};
       }},
      {"aten::pad",
       [] {
         return std::vector{
             sample("[2, 3, 4] reflect [1, 2]", {R({2, 3, 4}), IL{1, 2}, std::string("reflect")}),
             sample("[2, 3, 4] replicate [1, 2]",
                    {R({2, 3, 4}), IL{1, 2}, std::string("replicate")}),
             sample("[2, 3, 4] constant [1, 2, 0, 1]",
                    {R({2, 3, 4}), IL{1, 2, 0, 1}, std::string("constant"), 0.5})};
       }},
      {"aten::upsample_nearest2d",
       [] {
         return std::vector{sample("[1, 2, 3, 4] to [5, 7]", {R({1, 2, 3, 4}), IL{5, 7}})};
       }},
      {"aten::upsample_nearest1d",
       [] {
         return std::vector{sample("[1, 2, 4] to [7]", {R({1, 2, 4}), IL{7}})};
       }},
      {"aten::upsample_bilinear2d",
       [] {
         return std::vector{
             sample("[1, 2, 3, 4] to [5, 7]", {R({1, 2, 3, 4}), IL{5, 7}, false}),
             sample("[1, 2, 3, 4] to [5, 7] align_corners", {R({1, 2, 3, 4}), IL{5, 7}, true})};
       }},
      {"aten::upsample_linear1d",
       [] {
         return std::vector{sample("[1, 2, 4] to [7]", {R({1, 2, 4}), IL{7}, false})};
       }},
      {"aten::upsample_nearest2d_backward",
       [] {
         return std::vector{
             sample("[1, 2, 5, 7] to [1, 2, 3, 4]", {R({1, 2, 5, 7}), IL{5, 7}, IL{1, 2, 3, 4}})};
       }},
      {"aten::upsample_bilinear2d_backward",
       [] {
         return std::vector{sample("[1, 2, 5, 7] to [1, 2, 3, 4]",
                                   {R({1, 2, 5, 7}), IL{5, 7}, IL{1, 2, 3, 4}, false})};
       }},
      {"aten::embedding_dense_backward",
       [] {
         return std::vector{sample("[2, 4, 3] into 10 rows",
                                   {R({2, 4, 3}), I({2, 4}, 10), int64_t{10}, int64_t{-1}, false})};
       }},
      {"aten::nll_loss_nd",
       [] {
         return std::vector{sample("[4, 5, 3] by [4, 3]", {R({4, 5, 3}), I({4, 3}, 5)})};
       }},
      {"aten::nll_loss2d",
       [] {
         return std::vector{
             sample("[2, 5, 3, 2] by [2, 3, 2]", {R({2, 5, 3, 2}), I({2, 3, 2}, 5)})};
       }},
      {"aten::nll_loss_backward",
       [] {
         return std::vector{
             sample("[] into [4, 5] by [4], mean", {R({}), R({4, 5}, 2), I({4}, 5), std::nullopt,
                                                    int64_t{1}, int64_t{-100}, full({}, 4)}),
             sample("[4] into [4, 5] by [4], none", {R({4}), R({4, 5}, 2), I({4}, 5), std::nullopt,
                                                     int64_t{0}, int64_t{-100}, full({}, 4)})};
       }},
      {"aten::nll_loss2d_forward",
       [] {
         return std::vector{
             sample("[2, 5, 3, 2] by [2, 3, 2]",
                    {R({2, 5, 3, 2}), I({2, 3, 2}, 5), std::nullopt, int64_t{1}, int64_t{-100}})};
       }},
      {"aten::nll_loss2d_backward",
       [] {
         return std::vector{sample("[] into [2, 5, 3, 2] by [2, 3, 2], sum",
                                   {R({}), R({2, 5, 3, 2}, 2), I({2, 3, 2}, 5), std::nullopt,
                                    int64_t{2}, int64_t{-100}, full({}, 12)})};
       }},
      {"aten::max_pool2d_with_indices",
       [] {
         return std::vector{
             sample("[2, 3, 7, 6] k 3 s 2 p 1 ceil",
                    {R({2, 3, 7, 6}), IL{3, 3}, IL{2, 2}, IL{1, 1}, IL{1, 1}, true})};
       }},
      {"aten::max_pool2d_with_indices_backward",
       [] {
         const Tensor x = R({2, 3, 7, 6}, 2);
         const Tensor idx =
             call_op("aten::max_pool2d_with_indices", {x, IL{3, 3}, IL{2, 2}}).at(1).to_tensor();
         return std::vector{
             sample("[2, 3, 3, 2] into [2, 3, 7, 6]",
                    {R({2, 3, 3, 2}), x, IL{3, 3}, IL{2, 2}, IL{0, 0}, IL{1, 1}, false, idx})};
       }},
      {"aten::avg_pool2d_backward",
       [] {
         return std::vector{sample("[2, 3, 3, 2] into [2, 3, 7, 6]",
                                   {R({2, 3, 3, 2}), R({2, 3, 7, 6}, 2), IL{3, 3}, IL{2, 2},
                                    IL{0, 0}, false, true, std::nullopt})};
       }},
      {"aten::_adaptive_avg_pool2d",
       [] {
         return std::vector{sample("[2, 3, 7, 6] -> [3, 2]", {R({2, 3, 7, 6}), IL{3, 2}})};
       }},
      {"aten::adaptive_avg_pool1d",
       [] {
         return std::vector{sample("[2, 3, 7] -> [3]", {R({2, 3, 7}), IL{3}})};
       }},
      {"aten::adaptive_max_pool2d",
       [] {
         return std::vector{sample("[2, 3, 7, 6] -> [3, 2]", {R({2, 3, 7, 6}), IL{3, 2}})};
       }},
      {"aten::adaptive_max_pool1d",
       [] {
         return std::vector{sample("[2, 3, 7] -> [3]", {R({2, 3, 7}), IL{3}})};
       }},
      {"aten::avg_pool1d",
       [] {
         return std::vector{sample("[2, 3, 9] k 3 s 2", {R({2, 3, 9}), IL{3}, IL{2}})};
       }},
      {"aten::max_pool1d",
       [] {
         return std::vector{sample("[2, 3, 9] k 3 s 2", {R({2, 3, 9}), IL{3}, IL{2}})};
       }},
      {"aten::max_pool1d_with_indices",
       [] {
         return std::vector{sample("[2, 3, 9] k 3 s 2", {R({2, 3, 9}), IL{3}, IL{2}})};
       }},
      {"aten::conv_transpose2d.input",
       [] {
         return std::vector{sample("[2, 4, 5, 5] *T [4, 3, 3, 3] s 2",
                                   {R({2, 4, 5, 5}), R({4, 3, 3, 3}, 2), R({3}, 3), IL{2, 2},
                                    IL{1, 1}, IL{1, 1}, int64_t{1}, IL{1, 1}})};
       }},
      {"aten::conv_transpose1d",
       [] {
         return std::vector{sample("[2, 4, 5] *T [4, 3, 3]", {R({2, 4, 5}), R({4, 3, 3}, 2)})};
       }},
      {"aten::conv2d.padding",
       [] {
         return std::vector{sample(
             "[2, 3, 7, 6] * [4, 3, 3, 3] same",
             {R({2, 3, 7, 6}), R({4, 3, 3, 3}, 2), R({4}, 3), IL{1, 1}, std::string("same")})};
       }},
      {"aten::convolution_backward",
       [] {
         return std::vector{sample(
             "[2, 4, 5, 4] through [4, 3, 3, 3]",
             {R({2, 4, 5, 4}), R({2, 3, 7, 6}, 2), R({4, 3, 3, 3}, 3), IL{4}, IL{1, 1}, IL{0, 0},
              IL{1, 1}, false, IL{0, 0}, int64_t{1}, std::vector<bool>{true, true, true}})};
       }},
      {"aten::native_batch_norm_backward",
       [] {
         return std::vector{
             sample("[4, 3, 5] training",
                    {R({4, 3, 5}), R({4, 3, 5}, 2), R({3}, 3), std::nullopt, std::nullopt,
                     R({3}, 4), P({3}, 5), true, 1e-5, std::vector<bool>{true, true, true}})};
       }},
      {"aten::native_layer_norm_backward",
       [] {
         return std::vector{
             sample("[2, 3, 5] over [5]",
                    {R({2, 3, 5}), R({2, 3, 5}, 2), IL{5}, R({2, 3, 1}, 3), P({2, 3, 1}, 4),
                     R({5}, 5), R({5}, 6), std::vector<bool>{true, true, true}})};
       }},
      {"aten::native_group_norm_backward",
       [] {
         return std::vector{sample(
             "[2, 4, 3] in 2 groups",
             {R({2, 4, 3}), R({2, 4, 3}, 2), R({2, 2}, 3), P({2, 2}, 4), R({4}, 5), int64_t{2},
              int64_t{4}, int64_t{3}, int64_t{2}, std::vector<bool>{true, true, true}})};
       }},
      {"aten::batch_norm",
       [] {
         return std::vector{
             sample("[4, 3, 5] training", {R({4, 3, 5}), R({3}, 2), R({3}, 3), std::nullopt,
                                           std::nullopt, true, 0.1, 1e-5, false})};
       }},
      {"aten::topk",
       [] {
         return std::vector{
             sample("[3, 5] top 2", {R({3, 5}), int64_t{2}}),
             sample("[3, 5] bottom 3 of dim 0", {R({3, 5}), int64_t{3}, int64_t{0}, false})};
       }},
      {"aten::sort.stable",
       [] {
         return std::vector{sample("[3, 5] stable", {R({3, 5}), true})};
       }},
      {"aten::index.Tensor",
       [] {
         return std::vector{
             sample("[3, 4][:, [2]]",
                    {R({3, 4}), std::vector<std::optional<Tensor>>{std::nullopt, I({2}, 4)}}),
             sample("[3, 4][mask]", {R({3, 4}), std::vector<std::optional<Tensor>>{B({3, 4})}})};
       }},
      {"aten::index_put",
       [] {
         return std::vector{sample(
             "[3, 4][[5]] += [5, 4]",
             {R({3, 4}), std::vector<std::optional<Tensor>>{I({5}, 3)}, R({5, 4}, 2), true})};
       }},
      {"aten::masked_fill.Scalar",
       [] {
         return std::vector{sample("[3, 4] where [3, 4]", {R({3, 4}), B({3, 4}), 0.5})};
       }},
      {"aten::masked_fill.Tensor",
       [] {
         return std::vector{sample("[3, 4] where [4]", {R({3, 4}), B({4}), full({}, 0.5)})};
       }},
      {"aten::masked_select",
       [] {
         return std::vector{sample("[3, 4] where [4]", {R({3, 4}), B({4})})};
       }},
      {"aten::masked_scatter",
       [] {
         return std::vector{
             sample("[3, 4] where [3, 4] from [12]", {R({3, 4}), B({3, 4}), R({12}, 2)})};
       }},
      {"aten::scatter.reduce",
       [] {
         return std::vector{sample("[3, 4] dim 1 add", {R({3, 4}), int64_t{1}, I({3, 2}, 4),
                                                        R({3, 2}, 2), std::string("add")})};
       }},
      {"aten::scatter_reduce.two",
       [] {
         return std::vector{sample("[3, 4] dim 1 amax", {R({3, 4}), int64_t{1}, I({3, 2}, 4),
                                                         R({3, 2}, 2), std::string("amax")}),
                            sample("[3, 4] dim 0 sum", {R({3, 4}), int64_t{0}, I({5, 4}, 3),
                                                        R({5, 4}, 2), std::string("sum")})};
       }},
      {"aten::index_add",
       [] {
         return std::vector{
             sample("[5, 4] dim 0 by [3]", {R({5, 4}), int64_t{0}, I({3}, 5), R({3, 4}, 2)})};
       }},
      {"aten::norm.ScalarOpt_dim",
       [] {
         return std::vector{sample("[3, 4] p 3 dim 1", {R({3, 4}), 3.0, IL{1}})};
       }},
      {"aten::mm",
       [] {
         return std::vector{sample("[3, 5] x [5, 4]", {R({3, 5}), R({5, 4}, 2)}),
                            sample("[0, 5] x [5, 4]", {R({0, 5}), R({5, 4}, 2)})};
       }},
      {"aten::bmm",
       [] {
         return std::vector{sample("[2, 3, 5] x [2, 5, 4]", {R({2, 3, 5}), R({2, 5, 4}, 2)})};
       }},
      {"aten::matmul",
       [] {
         return std::vector{sample("[3, 5] x [5, 4]", {R({3, 5}), R({5, 4}, 2)}),
                            sample("[2, 1, 3, 5] x [4, 5, 2]", {R({2, 1, 3, 5}), R({4, 5, 2}, 2)}),
                            sample("[5] x [5, 4]", {R({5}), R({5, 4}, 2)}),
                            sample("[3, 5] x [5]", {R({3, 5}), R({5}, 2)})};
       }},
      {"aten::mv",
       [] {
         return std::vector{sample("[3, 5] x [5]", {R({3, 5}), R({5}, 2)})};
       }},
      {"aten::dot",
       [] {
         return std::vector{sample("[7] x [7]", {R({7}), R({7}, 2)})};
       }},
      {"aten::outer",
       [] {
         return std::vector{sample("[3] x [4]", {R({3}), R({4}, 2)})};
       }},
      {"aten::addmm",
       [] {
         return std::vector{sample("[4] + [3, 5] x [5, 4]", {R({4}), R({3, 5}, 2), R({5, 4}, 3)})};
       }},
      {"aten::addbmm",
       [] {
         return std::vector{sample("[3, 4] + [2, 3, 5] x [2, 5, 4]",
                                   {R({3, 4}), R({2, 3, 5}, 2), R({2, 5, 4}, 3)})};
       }},
      {"aten::baddbmm",
       [] {
         return std::vector{sample("[2, 3, 4] + [2, 3, 5] x [2, 5, 4]",
                                   {R({2, 3, 4}), R({2, 3, 5}, 2), R({2, 5, 4}, 3)})};
       }},
      {"aten::linear",
       [] {
         return std::vector{
             sample("[2, 3, 5] x [4, 5] + [4]", {R({2, 3, 5}), R({4, 5}, 2), R({4}, 3)})};
       }},
      {"aten::view",
       [] {
         return std::vector{sample("[3, 4] -> [4, 3]", {R({3, 4}), IL{4, 3}})};
       }},
      {"aten::reshape",
       [] {
         return std::vector{sample("[3, 4] -> [2, -1]", {R({3, 4}), IL{2, -1}})};
       }},
      {"aten::expand",
       [] {
         return std::vector{sample("[3, 1] -> [2, 3, 4]", {R({3, 1}), IL{2, 3, 4}})};
       }},
      {"aten::permute",
       [] {
         return std::vector{sample("[2, 3, 4] by [2, 0, 1]", {R({2, 3, 4}), IL{2, 0, 1}})};
       }},
      {"aten::repeat",
       [] {
         return std::vector{sample("[2, 3] by [2, 1, 2]", {R({2, 3}), IL{2, 1, 2}})};
       }},
      {"aten::tile",
       [] {
         return std::vector{sample("[2, 3] by [2]", {R({2, 3}), IL{2}})};
       }},
      {"aten::flip",
       [] {
         return std::vector{sample("[3, 4] dims [0, 1]", {R({3, 4}), IL{0, 1}})};
       }},
      {"aten::roll",
       [] {
         return std::vector{sample("[3, 4] by 1 on 1", {R({3, 4}), IL{1}, IL{1}})};
       }},
      {"aten::narrow",
       [] {
         return std::vector{sample("[5, 4] dim 0 from 1 length 3",
                                   {R({5, 4}), int64_t{0}, int64_t{1}, int64_t{3}})};
       }},
      {"aten::select.int",
       [] {
         return std::vector{sample("[5, 4] dim 1 index 2", {R({5, 4}), int64_t{1}, int64_t{2}})};
       }},
      {"aten::unflatten.int",
       [] {
         return std::vector{sample("[6, 4] dim 0 -> [2, 3]", {R({6, 4}), int64_t{0}, IL{2, 3}})};
       }},
      {"aten::split.Tensor",
       [] {
         return std::vector{sample("[5, 4] by 2", {R({5, 4}), int64_t{2}})};
       }},
      {"aten::chunk",
       [] {
         return std::vector{sample("[5, 4] in 2", {R({5, 4}), int64_t{2}})};
       }},
      {"aten::pow.Tensor_Tensor",
       [] {
         return std::vector{sample("[3, 4] ** [3, 4]", {P({3, 4}), R({3, 4}, 2)})};
       }},
      {"aten::pow.Tensor_Scalar",
       [] {
         return std::vector{sample("[3, 4] ** 2.5", {P({3, 4}), 2.5})};
       }},
      {"aten::log",
       [] {
         return std::vector{sample("[3, 4] positive", {P({3, 4})})};
       }},
      {"aten::sqrt",
       [] {
         return std::vector{sample("[3, 4] positive", {P({3, 4})})};
       }},
      {"aten::rsqrt",
       [] {
         return std::vector{sample("[3, 4] positive", {P({3, 4})})};
       }},
      {"aten::log2",
       [] {
         return std::vector{sample("[3, 4] positive", {P({3, 4})})};
       }},
      {"aten::log1p",
       [] {
         return std::vector{sample("[3, 4] positive", {P({3, 4})})};
       }},
      {"aten::einsum",
       [] {
         return std::vector{sample("ij,jk->ik", {std::string("ij,jk->ik"),
                                                 std::vector<Tensor>{R({3, 5}), R({5, 4}, 2)}})};
       }},
      {"aten::index_select",
       [] {
         return std::vector{sample("[5, 4] dim 0 by [3]", {R({5, 4}), int64_t{0}, I({3}, 5)})};
       }},
      {"aten::gather",
       [] {
         return std::vector{
             sample("[5, 4] dim 1 by [5, 3]", {R({5, 4}), int64_t{1}, I({5, 3}, 4)})};
       }},
      {"aten::embedding",
       [] {
         return std::vector{sample("[10, 3] by [2, 4]", {R({10, 3}), I({2, 4}, 10)})};
       }},
      {"aten::convolution",
       [] {
         return std::vector{sample("[2, 3, 7, 6] * [4, 3, 3, 3]",
                                   {R({2, 3, 7, 6}), R({4, 3, 3, 3}, 2), R({4}, 3), IL{1, 1},
                                    IL{1, 1}, IL{1, 1}, false, IL{0, 0}, int64_t{1}})};
       }},
      {"aten::conv2d",
       [] {
         return std::vector{sample("[2, 4, 6, 6] * [6, 2, 3, 3] groups 2",
                                   {R({2, 4, 6, 6}), R({6, 2, 3, 3}, 2), R({6}, 3), IL{2, 1},
                                    IL{1, 0}, IL{1, 1}, int64_t{2}})};
       }},
      {"aten::conv1d",
       [] {
         return std::vector{sample("[2, 3, 9] * [4, 3, 3]", {R({2, 3, 9}), R({4, 3, 3}, 2)})};
       }},
      {"aten::max_pool2d",
       [] {
         return std::vector{sample("[2, 3, 7, 6] k 3 s 2", {R({2, 3, 7, 6}), IL{3, 3}, IL{2, 2}})};
       }},
      {"aten::avg_pool2d",
       [] {
         return std::vector{sample("[2, 3, 7, 6] k 3 s 2", {R({2, 3, 7, 6}), IL{3, 3}, IL{2, 2}})};
       }},
      {"aten::adaptive_avg_pool2d",
       [] {
         return std::vector{sample("[2, 3, 7, 6] -> [3, 2]", {R({2, 3, 7, 6}), IL{3, 2}})};
       }},
      {"aten::layer_norm",
       [] {
         return std::vector{
             sample("[2, 3, 5] over [5]", {R({2, 3, 5}), IL{5}, R({5}, 2), R({5}, 3)})};
       }},
      {"aten::group_norm",
       [] {
         return std::vector{
             sample("[2, 4, 3] in 2 groups", {R({2, 4, 3}), int64_t{2}, R({4}, 2), R({4}, 3)})};
       }},
      {"aten::constant_pad_nd",
       [] {
         return std::vector{
             sample("[2, 3, 4] pad [1, 2, 0, 1]", {R({2, 3, 4}), IL{1, 2, 0, 1}, 0.5})};
       }},
      {"aten::mse_loss",
       [] {
         return std::vector{sample("[3, 4]", {R({3, 4}), R({3, 4}, 2)})};
       }},
      {"aten::nll_loss",
       [] {
         return std::vector{sample("[4, 5] by [4]", {R({4, 5}), I({4}, 5)})};
       }},
      {"aten::_pad_circular",
       [] {
         return std::vector<Sample>{
             {"[1, 2, 4] pad [1, 2]", {R({1, 2, 4}), IL{1, 2}}},
             {"[1, 1, 3, 4] pad [1, 1, 2, 0]", {R({1, 1, 3, 4}), IL{1, 1, 2, 0}}}};
       }},
      {"aten::_upsample_nearest_exact1d",
       [] {
         return std::vector<Sample>{{"[1, 2, 4] to [7]", {R({1, 2, 4}), IL{7}}}};
       }},
      {"aten::_upsample_nearest_exact2d",
       [] {
         return std::vector<Sample>{{"[1, 1, 3, 4] to [5, 7]", {R({1, 1, 3, 4}), IL{5, 7}}}};
       }},
      {"aten::_upsample_nearest_exact3d",
       [] {
         return std::vector<Sample>{
             {"[1, 1, 2, 2, 3] to [3, 4, 4]", {R({1, 1, 2, 2, 3}), IL{3, 4, 4}}}};
       }},
      {"aten::upsample_nearest3d",
       [] {
         return std::vector<Sample>{
             {"[1, 1, 2, 2, 3] to [3, 4, 4]", {R({1, 1, 2, 2, 3}), IL{3, 4, 4}}}};
       }},
      {"aten::upsample_trilinear3d",
       [] {
         return std::vector<Sample>{
             {"[1, 1, 2, 2, 3] to [3, 4, 4]", {R({1, 1, 2, 2, 3}), IL{3, 4, 4}, false}},
             {"[1, 1, 2, 2, 3] to [3, 4, 4] align_corners",
              {R({1, 1, 2, 2, 3}), IL{3, 4, 4}, true}}};
       }},
      {"aten::reflection_pad3d",
       [] {
         return std::vector<Sample>{{"[1, 1, 2, 3, 3] pad [1, 1, 2, 0, 1, 0]",
                                     {R({1, 1, 2, 3, 3}), IL{1, 1, 2, 0, 1, 0}}}};
       }},
      {"aten::replication_pad3d",
       [] {
         return std::vector<Sample>{{"[1, 1, 2, 3, 3] pad [1, 1, 2, 0, 1, 0]",
                                     {R({1, 1, 2, 3, 3}), IL{1, 1, 2, 0, 1, 0}}}};
       }},
      {"aten::index_select_backward",
       [] {
         return std::vector<Sample>{
             {"[3, 4] into [5, 4] dim 0", {R({3, 4}), IL{5, 4}, int64_t{0}, I({3}, 5)}}};
       }},
      {"aten::adaptive_max_pool2d_backward",
       [] {
         const Tensor x = R({1, 2, 5, 4}, 2);
         Stack st{x, IL{3, 2}};
         Dispatcher::instance().find_op_or_throw("aten::adaptive_max_pool2d").call_boxed(st);
         return std::vector<Sample>{
             {"[1, 2, 3, 2] into [1, 2, 5, 4]", {R({1, 2, 3, 2}), x, st.at(1).to_tensor()}}};
       }},
      {"aten::max_pool2d_backward",
       [] {
         return std::vector<Sample>{{"[1, 1, 2, 1] into [1, 1, 5, 4] k 3 s 2",
                                     {R({1, 1, 2, 1}), R({1, 1, 5, 4}, 2), IL{3, 3}, IL{2, 2}}}};
       }},
      {"aten::upsample_nearest1d_backward",
       [] {
         return std::vector<Sample>{{"[1, 2, 7] to [1, 2, 4]", {R({1, 2, 7}), IL{7}, IL{1, 2, 4}}}};
       }},
      {"aten::_upsample_nearest_exact1d_backward",
       [] {
         return std::vector<Sample>{{"[1, 2, 7] to [1, 2, 4]", {R({1, 2, 7}), IL{7}, IL{1, 2, 4}}}};
       }},
      {"aten::_upsample_nearest_exact2d_backward",
       [] {
         return std::vector<Sample>{
             {"[1, 1, 5, 7] to [1, 1, 3, 4]", {R({1, 1, 5, 7}), IL{5, 7}, IL{1, 1, 3, 4}}}};
       }},
      {"aten::upsample_nearest3d_backward",
       [] {
         return std::vector<Sample>{{"[1, 1, 3, 4, 4] to [1, 1, 2, 2, 3]",
                                     {R({1, 1, 3, 4, 4}), IL{3, 4, 4}, IL{1, 1, 2, 2, 3}}}};
       }},
      {"aten::_upsample_nearest_exact3d_backward",
       [] {
         return std::vector<Sample>{{"[1, 1, 3, 4, 4] to [1, 1, 2, 2, 3]",
                                     {R({1, 1, 3, 4, 4}), IL{3, 4, 4}, IL{1, 1, 2, 2, 3}}}};
       }},
      {"aten::upsample_linear1d_backward",
       [] {
         return std::vector<Sample>{
             {"[1, 2, 7] to [1, 2, 4]", {R({1, 2, 7}), IL{7}, IL{1, 2, 4}, false}}};
       }},
      {"aten::upsample_trilinear3d_backward",
       [] {
         return std::vector<Sample>{{"[1, 1, 3, 4, 4] to [1, 1, 2, 2, 3]",
                                     {R({1, 1, 3, 4, 4}), IL{3, 4, 4}, IL{1, 1, 2, 2, 3}, false}}};
       }},
      {"aten::reflection_pad3d_backward",
       [] {
         return std::vector<Sample>{
             {"[1, 1, 3, 5, 5] to [1, 1, 2, 3, 3]",
              {R({1, 1, 3, 5, 5}), R({1, 1, 2, 3, 3}, 2), IL{1, 1, 2, 0, 1, 0}}}};
       }},
      {"aten::replication_pad3d_backward",
       [] {
         return std::vector<Sample>{
             {"[1, 1, 3, 5, 5] to [1, 1, 2, 3, 3]",
              {R({1, 1, 3, 5, 5}), R({1, 1, 2, 3, 3}, 2), IL{1, 1, 2, 0, 1, 0}}}};
       }},
      {"aten::scatter.value_reduce",
       [] {
         return std::vector<Sample>{
             {"[3, 4] dim 1 by [3, 2] add 0.5",
              {R({3, 4}), int64_t{1}, index_tensor({0, 2, 3, 1, 1, 0}, {3, 2}), 0.5,
               std::string("add")}}};
       }},
      {"aten::cross_entropy_loss",
       [] {
         return std::vector{sample("[4, 5] by [4]", {R({4, 5}), I({4}, 5)})};
       }},
  };
  return *t;
}

}  // namespace

Samples samples_for(const OperatorHandle& op) {
  const auto& t = table();
  if (auto it = t.find(op.name()); it != t.end()) return Samples{it->second(), ""};
  const FunctionSchema& s = op.schema();
  // Ops whose values are not a function of their inputs.
  for (const char* prefix :
       {"aten::empty", "aten::rand", "aten::bernoulli", "aten::dropout", "aten::native_dropout",
        "aten::feature_dropout", "aten::alpha_dropout", "aten::normal", "aten::multinomial"}) {
    if (op.name().rfind(prefix, 0) == 0) return Samples{{}, "values are random or uninitialised"};
  }
  return from_schema(s);
}

std::vector<Sample> with_variants(const OperatorHandle& op, std::vector<Sample> samples) {
  const auto reduction = op.schema().argument_index("reduction");
  const auto keepdim = op.schema().argument_index("keepdim");
  if (!reduction && !keepdim) return samples;
  std::vector<Sample> out;
  for (const Sample& s : samples) {
    out.push_back(s);
    Stack full(s.args.begin(), s.args.end());
    try {
      normalize_boxed_arguments(op, full);
    } catch (const std::exception&) {
      continue;  // reported when the sample itself runs
    }
    if (reduction && full.at(*reduction).tag() == IValue::Tag::Int &&
        full.at(*reduction).to_int() == 1) {
      for (const auto& [r, name] : {std::pair{int64_t{0}, "none"}, std::pair{int64_t{2}, "sum"}}) {
        Sample v{str_cat(s.label, ", reduction ", name), full};
        v.args[*reduction] = r;
        out.push_back(std::move(v));
      }
    }
    if (keepdim && full.at(*keepdim).tag() == IValue::Tag::Bool && !full.at(*keepdim).to_bool()) {
      Sample v{str_cat(s.label, ", keepdim"), full};
      v.args[*keepdim] = true;
      out.push_back(std::move(v));
    }
  }
  return out;
}

}  // namespace loom::conformance
