#pragma once
/// @file
/// Operator schemas: the data model of PyTorch's schema language (a faithful subset), its
/// canonical printer and the parse entry points.
///
/// A schema is one line such as
/// `add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor`. Every operator Loom
/// knows is declared by such a line (`m.def(...)`); kernels, autograd and the boxed C layer all
/// read the parsed FunctionSchema rather than re-deriving signatures.
///
/// Note [Schema canonical form]
/// ----------------------------
/// Decisions that the dispatcher, the registration code and the C ABI rely on:
///  * `SymInt` parses to TypeKind::Int with `Type::symbolic` set. It compares equal to `int`
///    (Loom has no symbolic shapes; the spelling is kept only so that schemas copied from
///    PyTorch print back unchanged). Likewise `SymBool` is a Bool with `symbolic` set, and
///    `DeviceIndex` (PyTorch parses it to `int` too) an Int with `Type::device_index` set; each
///    compares equal to the plain type and prints back as written.
///  * `QScheme` (the quantization scheme, an int-backed enum in PyTorch) is a kind of its own.
///  * An alias annotation belongs to the `Tensor` it is written after and is stored on the
///    Argument, not on the Type: in `Tensor(a!)[] out` the list's elements are written to.
///    Alias annotations are accepted only directly after `Tensor`.
///  * Default values keep the literal's own kind (`Scalar alpha=1` is an int, `Scalar
///    alpha=1.0` a double), except that an integer literal given to a `float` (or `float[]`)
///    argument becomes a double, because that is the only value such an argument can hold.
///    A scalar default of a fixed-size list (`int[2] stride=1`) stays a scalar; broadcasting it
///    to the list length is the consumer's job.
///  * A default must fit its argument's type, or parsing fails at the default's column: None
///    only for optional types (`Tensor? w=None`, never `Tensor w=None`); `int` takes integers
///    and `Mean`/`Sum`; `float` any number; `bool` True/False; `Scalar` a number or a bool; `str`
///    a string; ScalarType, Layout and MemoryFormat their names (`long`, `strided`,
///    `contiguous_format`); int/float/bool lists a list of fitting elements, and a fixed-size
///    int list (`int[2]`) also a single int; Tensor, Generator, Device and the other object
///    types nothing but None. Every default in native_functions.yaml fits.
///  * Printing is canonical: `parse_schema(s.str()) == s`, and printing a re-parsed schema
///    gives the same text again. Doubles print in their shortest round-trip form and always
///    carry a `.` or an exponent (`1e-05`, `0.5`, `1.`) so they re-parse as doubles; strings
///    print double-quoted with C escapes; lists print as `[0, 1]`.

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace loom {

/// The kinds of types the schema language knows. `List` and `Optional` wrap an element type.
enum class TypeKind {
  Tensor,
  Int,
  Float,
  Bool,
  Str,
  Scalar,
  ScalarType,
  Device,
  Generator,
  Layout,
  MemoryFormat,
  QScheme,
  Dimname,
  Storage,
  Stream,
  Complex,
  Any,
  List,
  Optional,
};

/// The type of an argument or return, e.g. `Tensor`, `int[2]`, `Tensor?[]`, `SymInt[]`,
/// `int[1]?`. A small value type: the element of a List or Optional is shared, so copies are
/// cheap and never deep.
struct Type {
  /// What kind of type this is.
  TypeKind kind = TypeKind::Any;
  /// The element type of a List or Optional; null for every other kind.
  std::shared_ptr<const Type> elem;
  /// The length of a fixed-size list (`int[2]`); unset for `int[]` and for non-lists.
  std::optional<int64_t> fixed_size;
  /// True when an Int was spelled `SymInt` or a Bool `SymBool`. See Note [Schema canonical
  /// form].
  bool symbolic = false;
  /// True when an Int was spelled `DeviceIndex`. See Note [Schema canonical form].
  bool device_index = false;

  /// The plain `Tensor` type.
  static Type tensor();
  /// A type without an element (every kind except List and Optional).
  static Type of(TypeKind kind);
  /// `SymInt`: an Int that prints back as `SymInt`.
  static Type sym_int();
  /// `SymBool`: a Bool that prints back as `SymBool`.
  static Type sym_bool();
  /// `DeviceIndex`: an Int that prints back as `DeviceIndex`.
  static Type device_index_type();
  /// `elem[]`, or `elem[n]` when `n` is given.
  static Type list(Type elem, std::optional<int64_t> n = std::nullopt);
  /// `elem?`.
  static Type optional(Type elem);

  /// True for the types that carry tensors the dispatcher looks at: `Tensor`, `Tensor?`,
  /// `Tensor[]` and `Tensor?[]` (with or without a fixed size).
  bool is_tensor_like() const;
  /// The element type of a List or Optional. Only valid when `elem` is set.
  const Type& element() const { return *elem; }
  /// Canonical spelling without alias annotations: "Tensor", "int[2]", "Tensor?[]", "SymInt[]",
  /// "int[1]?".
  std::string str() const;

  /// Structural equality; `SymInt` and `DeviceIndex` equal `int`, `SymBool` equals `bool` (see
  /// Note [Schema canonical form]).
  friend bool operator==(const Type& a, const Type& b);
};

/// The alias annotation on a Tensor: `Tensor(a)` (a view of alias set a), `Tensor(a!)` (writes
/// to a), `Tensor(a -> *)` (a before the call, anything after), `Tensor(a|b)` (may alias either).
struct AliasInfo {
  /// Alias sets the value may belong to before the call; "*" is the wildcard.
  std::vector<std::string> before_set;
  /// Alias sets after the call; equal to `before_set` unless the annotation has `->`.
  std::vector<std::string> after_set;
  /// True for `!`: the operator writes to the memory.
  bool is_write = false;

  /// Canonical spelling including the parentheses: "(a)", "(a!)", "(a -> *)", "(a|b)".
  std::string str() const;
  /// Equality of the sets (order-insensitive) and of the write flag.
  friend bool operator==(const AliasInfo& a, const AliasInfo& b);
};

/// A bare identifier used as a default value (`Mean`, `contiguous_format`, `long`). The schema
/// language does not give these a meaning; whoever binds the argument resolves them.
struct Identifier {
  /// The identifier as written.
  std::string name;
  /// Name equality.
  friend bool operator==(const Identifier& a, const Identifier& b) = default;
};

/// A literal default value of an argument: `None`, `True`/`False`, integers (`-100`), doubles
/// (`1e-05`, `0.5`, `inf`, `-inf`, `nan`), strings (`"constant"`, `'mean'`), int/float/bool lists
/// (`[]`, `[0,1]`) and identifiers (`Mean`).
struct DefaultValue {
  /// The literal. std::monostate is `None`; std::string is a string literal (unescaped).
  using Value =
      std::variant<std::monostate, bool, int64_t, double, std::string, std::vector<int64_t>,
                   std::vector<double>, std::vector<bool>, Identifier>;
  /// The literal's value.
  Value value;

  /// True for `None`.
  bool is_none() const { return std::holds_alternative<std::monostate>(value); }
  /// Canonical spelling; a double always re-parses to the identical double and stays a double
  /// ("1e-05", "1.", "0.5", "inf"); strings are double-quoted with C escapes.
  std::string str() const;
  /// Value equality; doubles compare bit for bit, except that all NaNs are equal.
  friend bool operator==(const DefaultValue& a, const DefaultValue& b);
};

/// One argument of an operator; returns are Arguments too (their name may be empty and they
/// never have a default or the keyword-only flag).
struct Argument {
  /// An unnamed argument of type Any; a placeholder for containers.
  Argument() = default;
  /// An argument from its parts; the trailing ones default so that `Argument("self",
  /// Type::tensor())` is enough for the common case.
  Argument(std::string name, Type type, std::optional<AliasInfo> alias = std::nullopt,
           std::optional<DefaultValue> default_value = std::nullopt, bool kwarg_only = false)
      : name(std::move(name)),
        type(std::move(type)),
        alias(std::move(alias)),
        default_value(std::move(default_value)),
        kwarg_only(kwarg_only) {}

  /// The argument's name; empty only for unnamed returns.
  std::string name;
  /// The argument's type.
  Type type;
  /// The alias annotation written after the innermost `Tensor`, if any.
  std::optional<AliasInfo> alias;
  /// The default value, if any.
  std::optional<DefaultValue> default_value;
  /// True for arguments after `*`: they can only be passed by name.
  bool kwarg_only = false;

  /// The type with its alias annotation in place: "Tensor(a!)[]", "Tensor(b!)?".
  std::string type_str() const;
  /// Canonical spelling: "Tensor(a!) self", "Scalar alpha=1", or "Tensor" for an unnamed
  /// return. Does not include the `*` marker; FunctionSchema::str() inserts it.
  std::string str() const;
  /// Field-wise equality (using Type's SymInt == int rule).
  friend bool operator==(const Argument& a, const Argument& b);
};

/// The name part of a schema: `aten::add.Tensor`.
struct OperatorName {
  /// Namespace, e.g. "aten"; empty when the text had no `ns::` prefix.
  std::string ns;
  /// Base name, e.g. "add" or "add_".
  std::string name;
  /// Overload name, e.g. "Tensor"; empty for the default overload.
  std::string overload_name;

  /// "aten::add.Tensor" ("add.Tensor" when ns is empty, "aten::add" without an overload).
  std::string qualified_name() const;
  /// Field-wise equality.
  friend bool operator==(const OperatorName& a, const OperatorName& b) = default;
};

/// A parsed operator schema: name, arguments and returns.
class FunctionSchema {
 public:
  /// An empty schema (no name, no arguments, no returns); useful only as a placeholder.
  FunctionSchema() = default;
  /// Builds a schema from its parts.
  /// @throws loom::ValueError if keyword-only arguments do not all follow the positional ones,
  ///   if a return has a default or the keyword-only flag, or if an alias annotation sits on an
  ///   argument whose type has no Tensor in it.
  FunctionSchema(std::string ns, std::string name, std::string overload_name,
                 std::vector<Argument> arguments, std::vector<Argument> returns,
                 bool is_vararg = false, bool is_varret = false);

  /// Namespace, "aten" or "" when the schema string had no `ns::` prefix.
  const std::string& ns() const { return ns_; }
  /// Base name, e.g. "add" or "add_".
  const std::string& name() const { return name_; }
  /// Overload name, e.g. "Tensor"; "" for the default overload.
  const std::string& overload_name() const { return overload_name_; }
  /// "aten::add.Tensor" ("add.Tensor" when the namespace is empty).
  std::string qualified_name() const;
  /// The name parts as one value.
  OperatorName operator_name() const { return {ns_, name_, overload_name_}; }
  /// Sets the namespace; a library that registers "add.Tensor" under namespace aten calls this.
  void set_ns(std::string ns) { ns_ = std::move(ns); }

  /// The arguments in declaration order (keyword-only ones last).
  const std::vector<Argument>& arguments() const { return arguments_; }
  /// The returns in declaration order.
  const std::vector<Argument>& returns() const { return returns_; }
  /// True when the argument list ends in `...` (any further arguments are accepted).
  bool is_vararg() const { return is_vararg_; }
  /// True when the returns end in `...` (any further returns may be produced).
  bool is_varret() const { return is_varret_; }

  /// Index of the argument called `name`, if there is one.
  std::optional<size_t> argument_index(std::string_view name) const;
  /// True when any argument is written to (has an alias annotation with `!`).
  bool is_mutable() const;
  /// Canonical text, e.g. `add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor`.
  /// See Note [Schema canonical form].
  std::string str() const;

  /// Equality of every part (names, arguments, returns, vararg/varret flags).
  friend bool operator==(const FunctionSchema& a, const FunctionSchema& b);

 private:
  std::string ns_;
  std::string name_;
  std::string overload_name_;
  std::vector<Argument> arguments_;
  std::vector<Argument> returns_;
  bool is_vararg_ = false;
  bool is_varret_ = false;
};

/// How many List and Optional layers a parsed type may have (`Tensor?[]` has two). PyTorch's
/// schemas use at most three; the limit keeps every walk over a Type (printing, equality, the
/// destructor), all of them recursive, shallow whatever text the type came from.
inline constexpr int kMaxTypeNesting = 8;

/// How many characters of text a user gave (a name, a schema) a message quotes.
inline constexpr size_t kMessageExcerptChars = 200;

/// Text a user gave as an error message quotes it: the text itself when it has at most
/// kMessageExcerptChars characters, else its first kMessageExcerptChars characters followed by
/// "... (N more characters)". A megabyte of input makes a message of a few hundred bytes, and a
/// UTF-8 sequence is never cut in two (characters are counted as code points).
std::string message_excerpt(std::string_view text);

/// True for a name the schema language accepts as an identifier: ASCII letters, digits and
/// '_', not starting with a digit (`aten`, `my_ops2`). Namespaces and operator names are
/// identifiers.
bool is_schema_identifier(std::string_view name);

/// Parses a schema such as `aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) ->
/// Tensor`.
/// @throws loom::SchemaParseError naming the 1-based column, what was expected and what was
///   found, with the schema (a window of it around the column, for a long one) and a caret under
///   the column; also for a default value that does not fit its argument's type (see Note
///   [Schema canonical form]) and for a type nested deeper than kMaxTypeNesting.
FunctionSchema parse_schema(std::string_view text);

/// Parses just an operator name, `[ns::]name[.overload]` (what `impl("add.Tensor", ...)` takes).
/// @throws loom::SchemaParseError as parse_schema does.
OperatorName parse_operator_name(std::string_view text);

/// Parses a standalone type such as `Tensor?[]` or `int[2]` (no alias annotation).
/// @throws loom::SchemaParseError as parse_schema does.
Type parse_type(std::string_view text);

/// Writes Type::str().
std::ostream& operator<<(std::ostream& out, const Type& type);
/// Writes Argument::str().
std::ostream& operator<<(std::ostream& out, const Argument& argument);
/// Writes FunctionSchema::str().
std::ostream& operator<<(std::ostream& out, const FunctionSchema& schema);

}  // namespace loom
