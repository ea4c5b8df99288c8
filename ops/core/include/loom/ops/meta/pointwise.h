#pragma once
/// @file
/// Pointwise ops (the TensorIterator-like engines, binary, unary, compare, ternary and activation
/// ops): argument checks, parameter parsing and output shapes every backend of these ops shares,
/// so that error messages are word for word the same on every device. This holds PyTorch's
/// broadcasting, type promotion (result_type), the output checks of out= and in-place forms,
/// dimension coalescing, and the per-op argument checks. Header-only, no state, no
/// device-specific code.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loom/core/error.h"
#include "loom/core/half.h"
#include "loom/core/memory_overlap.h"
#include "loom/core/scalar.h"
#include "loom/core/str_cat.h"
#include "loom/core/tensor.h"
#include "loom/core/tensor_impl.h"
#include "loom/ops/meta/scalar_conversion.h"

namespace loom::ops::meta {

// ---- dtypes ------------------------------------------------------------------------------------

// Dtype categories a kernel accepts (bitmask).
/// The bool category.
inline constexpr unsigned kBool = 1;
/// The integer categories (uint8, int8 ... int64).
inline constexpr unsigned kInts = 2;
/// The floating categories (float16, bfloat16, float32, float64).
inline constexpr unsigned kFloats = 4;
/// Every category.
inline constexpr unsigned kAllTypes = kBool | kInts | kFloats;

/// The category (kBool, kInts or kFloats) of dtype d.
inline unsigned dtype_category(DType d) {
  return d == DType::Bool ? kBool : is_floating_point(d) ? kFloats : kInts;
}

/// PyTorch's legacy names, used in its dtype messages ("Float", "Long", "Bool").
inline std::string_view torch_type_name(DType d) {
  switch (d) {
    case DType::Bool:
      return "Bool";
    case DType::UInt8:
      return "Byte";
    case DType::Int8:
      return "Char";
    case DType::Int16:
      return "Short";
    case DType::Int32:
      return "Int";
    case DType::Int64:
      return "Long";
    case DType::Float16:
      return "Half";
    case DType::BFloat16:
      return "BFloat16";
    case DType::Float32:
      return "Float";
    case DType::Float64:
      break;
  }
  return "Double";
}

/// The C type name PyTorch prints for a dtype ("float", "double", "long int", "c10::Half").
inline std::string_view c_type_name(DType t) {
  switch (t) {
    case DType::Bool:
      return "bool";
    case DType::UInt8:
      return "unsigned char";
    case DType::Int8:
      return "signed char";
    case DType::Int16:
      return "short int";
    case DType::Int32:
      return "int";
    case DType::Int64:
      return "long int";
    case DType::Float16:
      return "c10::Half";
    case DType::BFloat16:
      return "c10::BFloat16";
    case DType::Float32:
      return "float";
    case DType::Float64:
      return "double";
  }
  return "?";
}

/// Throws PyTorch's "not implemented for" TypeError: `"silu" not implemented for 'Long'`.
[[noreturn]] inline void throw_dtype_unsupported(std::string_view op, DType d) {
  LOOM_THROW(TypeError, "\"", op, "\" not implemented for '", torch_type_name(d), "'");
}

/// Throws throw_dtype_unsupported's error unless d's category is in cats.
inline void check_dtype_category(std::string_view op, DType d, unsigned cats) {
  if ((cats & dtype_category(d)) == 0) throw_dtype_unsupported(op, d);
}

/// The largest finite value of a floating dtype, in double (nan_to_num's default posinf).
inline double max_finite(DType t) {
  switch (t) {
    case DType::Float16:
      return 65504.0;
    case DType::BFloat16:
      return static_cast<double>(bfloat16_to_float(0x7f7f));
    case DType::Float32:
      return static_cast<double>(std::numeric_limits<float>::max());
    default:
      return std::numeric_limits<double>::max();
  }
}

// ---- names
// ---------------------------------------------------------------------------------------

/// The names of an op's variants for messages, built once: variant_name<Op>("") is Op::kName,
/// variant_name<Op>("_") its in-place form, variant_name<Op>(".out") its out= form.
template <typename Op>
std::string_view variant_name(std::string_view suffix) {
  static const std::string fn(Op::kName), inplace = str_cat(Op::kName, "_"),
                                          out = str_cat(Op::kName, ".out");
  return suffix.empty() ? std::string_view(fn) : suffix == "_" ? inplace : out;
}

// ---- inputs ------------------------------------------------------------------------------------

/// A pointwise op's tensor input must be defined.
inline void check_input_defined(std::string_view op, std::string_view name, const Tensor& t) {
  LOOM_CHECK_T(TypeError, t.defined(), op,
               ": expected a proper Tensor but got an undefined Tensor for argument '", name, "'");
}

// ---- broadcasting and type promotion
// -------------------------------------------------------------

/// The broadcast of two shapes with PyTorch's rule and message: "The size of tensor a (3)
/// must match the size of tensor b (4) at non-singleton dimension 1".
inline DimVector broadcast_shapes(std::string_view op, IntArrayRef a, IntArrayRef b) {
  const size_t n = std::max(a.size(), b.size());
  DimVector out(n, 1);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    LOOM_CHECK(da == db || da == 1 || db == 1, op, ": The size of tensor a (", da,
               ") must match the size of tensor b (", db, ") at non-singleton dimension ", i);
    out[i] = da == 1 ? db : da;
  }
  return out;
}

/// PyTorch's result_type bookkeeping: tensors with dims outrank 0-d tensors, which outrank
/// wrapped numbers (Scalars), except that a lower rank in a higher category (bool < int <
/// float) lifts the category: int tensor + 2.5 -> float32, int32 tensor + 2 -> int32.
struct ResultTypeState {
  std::optional<DType> dim_result;      ///< promoted dtype of the tensors with dims
  std::optional<DType> zero_result;     ///< promoted dtype of the 0-d tensors
  std::optional<DType> wrapped_result;  ///< promoted dtype of the wrapped numbers

  /// Takes part a tensor argument.
  void add(const Tensor& t) { update(t.dim() == 0 ? zero_result : dim_result, t.dtype()); }
  /// Takes part a wrapped number (float -> the default float dtype, int -> int64).
  void add(const Scalar& s) {
    update(wrapped_result, s.is_floating_point() ? default_float_dtype()
                           : s.is_bool()         ? DType::Bool
                                                 : DType::Int64);
  }
  /// The result; the default float dtype if nothing took part.
  DType result() const {
    return combine(dim_result, combine(zero_result, wrapped_result))
        .value_or(default_float_dtype());
  }

 private:
  static void update(std::optional<DType>& slot, DType d) {
    slot = slot ? promote_types(*slot, d) : d;
  }
  // c10's combine_categories: the higher-priority result wins unless the lower one is of a
  // higher category.
  static std::optional<DType> combine(std::optional<DType> higher, std::optional<DType> lower) {
    if (!higher) return lower;
    if (!lower) return higher;
    if (is_floating_point(*higher)) return higher;
    if (*higher == DType::Bool || is_floating_point(*lower)) return promote_types(*higher, *lower);
    return higher;
  }
};

/// How the result dtype follows from the common (promoted) dtype of the inputs.
enum class ResultRule {
  Common,      ///< the common dtype (add, mul, neg)
  IntToFloat,  ///< the common dtype, but integral and bool inputs compute in float32 (exp)
  Bool,        ///< computed in the common dtype, written as bool (eq, logical_and)
};

/// Where the result goes.
enum class OutputKind {
  New,      ///< a new tensor of the broadcast shape
  Out,      ///< an out= tensor: same shape, and the result dtype must be castable to it
  InPlace,  ///< self: the broadcast shape must be self's, the result castable to its dtype
  Copy,     ///< copy_: like InPlace, but any dtype conversion is allowed
};

/// The dtype a kernel computes in: the promoted dtype, lifted to the default float by
/// ResultRule::IntToFloat.
inline DType computation_dtype(DType promoted, ResultRule rule) {
  return rule == ResultRule::IntToFloat && !is_floating_point(promoted) ? default_float_dtype()
                                                                        : promoted;
}

/// The dtype of the result: bool for ResultRule::Bool, the computation dtype otherwise, and
/// out's dtype for a copy.
inline DType result_dtype(DType common, ResultRule rule, OutputKind kind, const Tensor& out) {
  if (kind == OutputKind::Copy) return out.dtype();
  return rule == ResultRule::Bool ? DType::Bool : common;
}

// ---- outputs -----------------------------------------------------------------------------------

/// An in-place or copy output must already have the broadcast shape of the inputs; returns the
/// shape the op runs over (out's).
inline DimVector check_inplace_shape(std::string_view op, const Tensor& out, IntArrayRef shape) {
  const DimVector full = broadcast_shapes(op, out.sizes(), shape);
  LOOM_CHECK(IntArrayRef(full.data(), full.size()) == out.sizes(), op, ": output with shape ",
             sizes_str(out.sizes()), " doesn't match the broadcast shape ",
             sizes_str({full.data(), full.size()}));
  return DimVector(out.sizes().begin(), out.sizes().end());
}

/// The checks of a written-to tensor (out= or self): the result dtype must be castable to it
/// (but for copy_), and with tensor inputs no two of its elements may share memory.
inline void check_written_output(std::string_view op, const Tensor& out, DType result,
                                 OutputKind kind, bool has_tensor_input) {
  if (kind != OutputKind::Copy) {
    LOOM_CHECK_T(TypeError, can_cast(result, out.dtype()), op, ": result type ",
                 torch_type_name(result), " can't be cast to the desired output type ",
                 torch_type_name(out.dtype()));
  }
  // A written-to tensor with a broadcast (stride 0) dim would have several results race
  // for one element; PyTorch refuses it the same way. fill_ (no inputs) is idempotent, so
  // there it is allowed, as in PyTorch.
  if (has_tensor_input) assert_no_internal_overlap(op, out);
}

/// Note [Memory overlap]: whether an elementwise op must read input from a copy. Throws for a
/// partial overlap with the written-to tensor (PyTorch's error); true for an undecided
/// overlap; false when the input can be read in place (none, or the same elements).
inline bool input_needs_copy(std::string_view op, const Tensor& written, std::string_view name,
                             const Tensor& input) {
  return check_input_overlap(op, written, name, input, /*allow_full=*/true);
}

/// Note [Output layout follows the input]: as in PyTorch, a new output takes the dimension
/// order of an input of the full shape that is dense but not row-major (channels-last, a
/// transposed matrix), so that relu of a channels-last activation is channels-last and the
/// loop stays one contiguous sweep. The strides of such an input, if it is one; else empty.
inline std::vector<int64_t> dense_layout_of(const Tensor& t, IntArrayRef shape) {
  if (t.sizes() != shape || t.dim() < 2 || t.is_contiguous()) return {};
  const auto n = static_cast<size_t>(t.dim());
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  // Innermost first: smaller stride, and for equal strides (size-1 dims) the later dim.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int64_t sa = t.stride(static_cast<int64_t>(a)), sb = t.stride(static_cast<int64_t>(b));
    return sa != sb ? sa < sb : a > b;
  });
  std::vector<int64_t> strides(n);
  int64_t run = 1;
  for (size_t i : order) {
    const int64_t size = t.size(static_cast<int64_t>(i));
    if (size != 1 && t.stride(static_cast<int64_t>(i)) != run) return {};
    strides[i] = run;
    run *= std::max<int64_t>(size, 1);
  }
  return strides;
}

/// Dimension coalescing of a strided loop over shape, outermost to innermost: size-1 dims are
/// dropped and dim d merges into the previous kept dim when every operand steps through both as
/// one. full[k][d] is operand k's stride (elements or bytes, 0 where broadcast) over shape;
/// sizes and strides (one list per operand, outermost first) receive the result, at least one
/// dim (size 1, strides 0).
template <typename FullLists, typename StrideLists>
void coalesce_dims(IntArrayRef shape, const FullLists& full, DimVector& sizes,
                   StrideLists& strides) {
  const size_t nops = full.size();
  const auto ndim = static_cast<int64_t>(shape.size());
  sizes.clear();
  strides.assign(nops, DimVector{});
  for (int64_t d = 0; d < ndim; ++d) {
    if (shape[d] == 1) continue;
    if (!sizes.empty()) {
      bool mergeable = true;
      for (size_t k = 0; k < nops; ++k)
        mergeable = mergeable && strides[k].back() == full[k][d] * shape[d];
      if (mergeable) {
        sizes.back() *= shape[d];
        for (size_t k = 0; k < nops; ++k) strides[k].back() = full[k][d];
        continue;
      }
    }
    sizes.push_back(shape[d]);
    for (size_t k = 0; k < nops; ++k) strides[k].push_back(full[k][d]);
  }
  if (sizes.empty()) {
    sizes.push_back(1);
    for (size_t k = 0; k < nops; ++k) strides[k].push_back(0);
  }
}

// ---- arithmetic
// ----------------------------------------------------------------------------------

/// add/sub: alpha must suit the result dtype (no float alpha for integers, bool only for bool).
inline void check_alpha(std::string_view op, DType result, const Scalar& alpha) {
  LOOM_CHECK_T(TypeError, !(is_integral(result) && alpha.is_floating_point()), op,
               ": For integral input tensors, argument alpha must not be a floating point number.");
  LOOM_CHECK_T(TypeError, result == DType::Bool || !alpha.is_bool(), op,
               ": Boolean alpha only supported for Boolean results.");
  // Note [Checked scalar conversion]: alpha is converted to the type the kernel computes in
  // (float for the 16-bit floats), so an int8 add refuses alpha=1000 rather than wrapping it.
  const bool half = result == DType::Float16 || result == DType::BFloat16;
  check_scalar_fits(op, alpha, half ? DType::Float32 : result);
}

/// sub: PyTorch refuses bool operands (b is other's dtype, or bool for a bool Scalar).
inline void check_sub_bool(std::string_view op, DType a, std::optional<DType> b) {
  LOOM_CHECK_T(TypeError, !(a == DType::Bool && b == DType::Bool), op,
               ": Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
               "`^` or `logical_xor()` operator instead.");
  LOOM_CHECK_T(TypeError, a != DType::Bool && b != DType::Bool, op,
               ": Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
               "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
}

/// Bool for a bool Scalar, none otherwise (check_sub_bool's b for sub.Scalar).
inline std::optional<DType> bool_if(const Scalar& s) {
  return s.is_bool() ? std::optional<DType>(DType::Bool) : std::nullopt;
}

/// div's rounding_mode.
enum class Rounding {
  None,   ///< true division
  Trunc,  ///< rounded toward zero
  Floor,  ///< rounded down (Python's //)
};

/// Parses div's rounding_mode: none, "trunc" or "floor".
inline Rounding parse_rounding(std::string_view op, std::optional<std::string_view> mode) {
  if (!mode) return Rounding::None;
  if (*mode == "trunc") return Rounding::Trunc;
  if (*mode == "floor") return Rounding::Floor;
  LOOM_THROW(ValueError, op,
             ": div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '",
             *mode, "'");
}

/// div's result rule: true division computes integers in float, the rounding modes keep the
/// common dtype.
inline ResultRule div_result_rule(Rounding mode) {
  return mode == Rounding::None ? ResultRule::IntToFloat : ResultRule::Common;
}

/// The error of an integer division (div, remainder, fmod) by zero.
[[noreturn]] inline void throw_zero_division(std::string_view op) {
  LOOM_THROW(ValueError, op, ": ZeroDivisionError (integer division by zero)");
}

/// pow with a Scalar exponent: integers to negative integer powers are refused.
inline void check_pow_exponent(std::string_view op, DType common, const Scalar* scalar_exp) {
  LOOM_CHECK(!(scalar_exp != nullptr && is_integral(common, false) && scalar_exp->is_integral() &&
               scalar_exp->to_int() < 0),
             op, ": Integers to negative integer powers are not allowed.");
}

/// neg: PyTorch refuses bool tensors.
inline void check_neg(std::string_view op, const Tensor& self) {
  LOOM_CHECK_T(TypeError, !self.defined() || self.dtype() != DType::Bool, op,
               ": Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
               "to invert a mask, use the `~` or `logical_not()` operator instead.");
}

/// clamp: at least one bound.
inline void check_clamp_bounds(std::string_view op, bool has_min, bool has_max) {
  LOOM_CHECK(has_min || has_max, op,
             ": torch.clamp: At least one of 'min' or 'max' must not be None");
}

/// clamp with Scalar bounds: each bound must fit the dtype the op computes in (Note [Checked
/// scalar conversion]); an int8 tensor clamped at 1000 is refused rather than clamped at -24.
inline void check_clamp_scalar_bounds(std::string_view op, DType common,
                                      const std::optional<Scalar>& min,
                                      const std::optional<Scalar>& max) {
  if (min) check_scalar_fits(op, *min, common);
  if (max) check_scalar_fits(op, *max, common);
}

// ---- ternary
// -------------------------------------------------------------------------------------

/// where: the condition must be a bool tensor.
inline void check_where_condition(std::string_view op, const Tensor& condition) {
  LOOM_CHECK_T(TypeError, condition.defined() && condition.dtype() == DType::Bool, op,
               ": where expected condition to be a boolean tensor, but got a tensor with dtype ",
               condition.defined() ? torch_type_name(condition.dtype()) : "undefined");
}

/// lerp: end (and a tensor weight) must have self's dtype.
inline void check_lerp(std::string_view op, const Tensor& self, const Tensor& end,
                       const Tensor* weight) {
  LOOM_CHECK_T(TypeError, self.dtype() == end.dtype(), op, ": expected dtype ",
               dtype_name(self.dtype()), " for `end` but got dtype ", dtype_name(end.dtype()));
  if (weight != nullptr) {
    LOOM_CHECK_T(TypeError, self.dtype() == weight->dtype(), op, ": expected dtype ",
                 dtype_name(self.dtype()), " for `weight` but got dtype ",
                 dtype_name(weight->dtype()));
  }
}

/// addcdiv: PyTorch refuses two integer tensors (the historic integer division).
inline void check_addcdiv_operands(std::string_view op, const Tensor& t1, const Tensor& t2) {
  LOOM_CHECK_T(TypeError, !is_integral(t1.dtype()) || !is_integral(t2.dtype()), op,
               ": Integer division with addcdiv is no longer supported, and in a future release "
               "addcdiv will perform a true division of tensor1 and tensor2. The historic "
               "addcdiv behavior can be implemented as (input + value * torch.trunc(tensor1 / "
               "tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / "
               "tensor2) for float inputs. The future addcdiv behavior is just the latter "
               "implementation: (input + value * tensor1 / tensor2), for all dtypes.");
}

/// addcmul/addcdiv: value must not be floating for an integral common dtype, and must fit the
/// type the kernel computes in.
inline void check_addc_value(std::string_view op, DType common, const Scalar& value) {
  LOOM_CHECK_T(TypeError, !(is_integral(common) && value.is_floating_point()), op,
               ": For integral input tensors, argument value must not be a floating point number.");
  const bool half = common == DType::Float16 || common == DType::BFloat16;
  check_scalar_fits(op, value, half ? DType::Float32 : common);  // Note [Checked scalar conversion]
}

// ---- activations
// ---------------------------------------------------------------------------------

/// hardtanh: PyTorch refuses negative limits on uint8, where they would wrap.
inline void check_hardtanh_limits(const Tensor& self, const Scalar& lo, const Scalar& hi) {
  LOOM_CHECK_T(ValueError,
               self.dtype() != DType::UInt8 || (lo.to_double() >= 0 && hi.to_double() >= 0),
               "cannot do hardtanh on an unsigned type with negative limits");
}

/// gelu: parses approximate ("none" or "tanh"); true for the tanh approximation.
inline bool parse_gelu_approximate(std::string_view op, std::string_view approximate) {
  LOOM_CHECK(approximate == "none" || approximate == "tanh", op,
             ": approximate argument must be either none or tanh, got '", approximate, "'");
  return approximate == "tanh";
}

}  // namespace loom::ops::meta
