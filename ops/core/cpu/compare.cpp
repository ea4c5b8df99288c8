// Reference CPU kernels: comparisons (eq ne lt le gt ge), logical and bitwise ops.
#include <string_view>

#include "cpu/meta.h"
#include "cpu/tensor_iterator.h"
#include "loom/dispatcher/library.h"

namespace loom::ops::cpu {
namespace {

// Comparisons compute in the common dtype of the inputs and write bool.
#define LOOM_COMPARISON(Name, name, expr)                 \
  struct Name {                                           \
    static constexpr std::string_view kName = name;       \
    static constexpr unsigned kCats = kAllTypes;          \
    static constexpr ResultRule kRule = ResultRule::Bool; \
    template <typename C>                                 \
    bool operator()(C a, C b) const {                     \
      return expr;                                        \
    }                                                     \
  }
LOOM_COMPARISON(Eq, "eq", a == b);
LOOM_COMPARISON(Ne, "ne", a != b);
LOOM_COMPARISON(Lt, "lt", a < b);
LOOM_COMPARISON(Le, "le", a <= b);
LOOM_COMPARISON(Gt, "gt", a > b);
LOOM_COMPARISON(Ge, "ge", a >= b);
LOOM_COMPARISON(LogicalAnd, "logical_and", (a != C(0)) && (b != C(0)));
LOOM_COMPARISON(LogicalOr, "logical_or", (a != C(0)) || (b != C(0)));
LOOM_COMPARISON(LogicalXor, "logical_xor", (a != C(0)) != (b != C(0)));
#undef LOOM_COMPARISON

struct LogicalNot {
  static constexpr std::string_view kName = "logical_not";
  static constexpr unsigned kCats = kAllTypes;
  static constexpr ResultRule kRule = ResultRule::Bool;
  template <typename C>
  bool operator()(C a) const {
    return a == C(0);
  }
};

// Bitwise ops: integers and bool only (PyTorch refuses floats).
#define LOOM_BITWISE(Name, name, op)                        \
  struct Name {                                             \
    static constexpr std::string_view kName = name;         \
    static constexpr unsigned kCats = kBool | kInts;        \
    static constexpr ResultRule kRule = ResultRule::Common; \
    template <typename C>                                   \
    C operator()(C a, C b) const {                          \
      return static_cast<C>(a op b);                        \
    }                                                       \
  }
LOOM_BITWISE(BitwiseAnd, "bitwise_and", &);
LOOM_BITWISE(BitwiseOr, "bitwise_or", |);
LOOM_BITWISE(BitwiseXor, "bitwise_xor", ^);
#undef LOOM_BITWISE

struct BitwiseNot {
  static constexpr std::string_view kName = "bitwise_not";
  static constexpr unsigned kCats = kBool | kInts;
  static constexpr ResultRule kRule = ResultRule::Common;
  template <typename C>
  C operator()(C a) const {
    if constexpr (std::is_same_v<C, bool>) {
      return !a;
    } else {
      return static_cast<C>(~a);
    }
  }
};

// The six registrations of an op with Tensor and Scalar overloads (eq.Tensor, eq_.Scalar...).
template <typename Op>
void register_tensor_scalar(Library& m, std::string_view base) {
  m.impl(str_cat(base, ".Tensor"), &binary_fn<Op>);
  m.impl(str_cat(base, "_.Tensor"), &binary_inplace<Op>);
  m.impl(str_cat(base, ".Tensor_out"), &binary_out<Op>);
  m.impl(str_cat(base, ".Scalar"), &binary_scalar_fn<Op>);
  m.impl(str_cat(base, "_.Scalar"), &binary_scalar_inplace<Op>);
  m.impl(str_cat(base, ".Scalar_out"), &binary_scalar_out<Op>);
}

}  // namespace

LOOM_REFERENCE_KERNELS(aten, m) {
  m.set_provider("reference");
  register_tensor_scalar<Eq>(m, "eq");
  register_tensor_scalar<Ne>(m, "ne");
  register_tensor_scalar<Lt>(m, "lt");
  register_tensor_scalar<Le>(m, "le");
  register_tensor_scalar<Gt>(m, "gt");
  register_tensor_scalar<Ge>(m, "ge");
  register_tensor_scalar<BitwiseAnd>(m, "bitwise_and");
  register_tensor_scalar<BitwiseOr>(m, "bitwise_or");
  register_tensor_scalar<BitwiseXor>(m, "bitwise_xor");
  m.impl("bitwise_not", &unary_fn<BitwiseNot>);
  m.impl("bitwise_not_", &unary_inplace<BitwiseNot>);
  m.impl("bitwise_not.out", &unary_out<BitwiseNot>);
  m.impl("logical_and", &binary_fn<LogicalAnd>);
  m.impl("logical_and_", &binary_inplace<LogicalAnd>);
  m.impl("logical_and.out", &binary_out<LogicalAnd>);
  m.impl("logical_or", &binary_fn<LogicalOr>);
  m.impl("logical_or_", &binary_inplace<LogicalOr>);
  m.impl("logical_or.out", &binary_out<LogicalOr>);
  m.impl("logical_xor", &binary_fn<LogicalXor>);
  m.impl("logical_xor_", &binary_inplace<LogicalXor>);
  m.impl("logical_xor.out", &binary_out<LogicalXor>);
  m.impl("logical_not", &unary_fn<LogicalNot>);
  m.impl("logical_not_", &unary_inplace<LogicalNot>);
  m.impl("logical_not.out", &unary_out<LogicalNot>);
}

}  // namespace loom::ops::cpu
