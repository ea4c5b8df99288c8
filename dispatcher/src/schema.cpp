/// @file
/// FunctionSchema and friends: canonical printing, equality and small queries.
/// The parser lives in schema_parser.cpp. See Note [Schema canonical form] in schema.h.

#include "loom/dispatcher/schema.h"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <ostream>
#include <system_error>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "loom/core/error.h"

namespace loom {
namespace {


// Spelling of a type without elements. Int and Bool depend on `symbolic` and `device_index`, so
// it takes the whole Type.
std::string_view base_type_name(const Type& type) {
  switch (type.kind) {
    case TypeKind::Tensor:
      return "Tensor";
    case TypeKind::Int:
      if (type.device_index) return "DeviceIndex";
      return type.symbolic ? "SymInt" : "int";
    case TypeKind::Float:
      return "float";
    case TypeKind::Bool:
      return type.symbolic ? "SymBool" : "bool";
    case TypeKind::Str:
      return "str";
    case TypeKind::Scalar:
      return "Scalar";
    case TypeKind::ScalarType:
      return "ScalarType";
    case TypeKind::Device:
      return "Device";
    case TypeKind::Generator:
      return "Generator";
    case TypeKind::Layout:
      return "Layout";
    case TypeKind::MemoryFormat:
      return "MemoryFormat";
    case TypeKind::QScheme:
      return "QScheme";
    case TypeKind::Dimname:
      return "Dimname";
    case TypeKind::Storage:
      return "Storage";
    case TypeKind::Stream:
      return "Stream";
    case TypeKind::Complex:
      return "complex";
    case TypeKind::Any:
      return "Any";
    case TypeKind::List:
    case TypeKind::Optional:
      break;
  }
  return "<invalid>";
}

// Renders `type` with `alias` placed right after the innermost base type, which is where the
// schema language writes it (`Tensor(a!)[]`, `Tensor(b!)?`).
std::string render_type(const Type& type, const AliasInfo* alias) {
  switch (type.kind) {
    case TypeKind::List:
      return loom::str_cat(render_type(*type.elem, alias), "[",
                          type.fixed_size ? loom::str_cat(*type.fixed_size) : "", "]");
    case TypeKind::Optional:
      return loom::str_cat(render_type(*type.elem, alias), "?");
    default:
      return alias ? loom::str_cat(base_type_name(type), alias->str())
                   : std::string(base_type_name(type));
  }
}

// The innermost non-List/Optional type.
const Type& innermost(const Type& type) {
  const Type* t = &type;
  while ((t->kind == TypeKind::List || t->kind == TypeKind::Optional) && t->elem) t = t->elem.get();
  return *t;
}

// Shortest text that reads back as exactly `d` and is still recognisably a double.
std::string format_double(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  std::array<char, 64> buf;  // the longest shortest-form double is 24 characters
  auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), d);
  std::string text(buf.data(), ec == std::errc() ? end : buf.data());
  // "1" would re-parse as an int; the trailing dot keeps it a double (PyTorch prints "1." too).
  if (text.find_first_of(".e") == std::string::npos) text += '.';
  return text;
}

bool same_double(double a, double b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

std::string quote_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += absl::StrFormat("\\x%02x", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  return out;
}

bool same_set(std::vector<std::string> a, std::vector<std::string> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a == b;
}

}  // namespace

// ---- Type ----

Type Type::tensor() { return of(TypeKind::Tensor); }

Type Type::of(TypeKind kind) {
  Type t;
  t.kind = kind;
  return t;
}

Type Type::sym_int() {
  Type t = of(TypeKind::Int);
  t.symbolic = true;
  return t;
}

Type Type::sym_bool() {
  Type t = of(TypeKind::Bool);
  t.symbolic = true;
  return t;
}

Type Type::device_index_type() {
  Type t = of(TypeKind::Int);
  t.device_index = true;
  return t;
}

Type Type::list(Type elem, std::optional<int64_t> n) {
  Type t = of(TypeKind::List);
  t.elem = std::make_shared<const Type>(std::move(elem));
  t.fixed_size = n;
  return t;
}

Type Type::optional(Type elem) {
  Type t = of(TypeKind::Optional);
  t.elem = std::make_shared<const Type>(std::move(elem));
  return t;
}

bool Type::is_tensor_like() const {
  const Type* t = this;
  if (t->kind == TypeKind::List && t->elem) t = t->elem.get();
  if (t->kind == TypeKind::Optional && t->elem) t = t->elem.get();
  return t->kind == TypeKind::Tensor;
}

std::string Type::str() const { return render_type(*this, nullptr); }

bool operator==(const Type& a, const Type& b) {
  if (a.kind != b.kind || a.fixed_size != b.fixed_size) return false;
  if (!a.elem || !b.elem) return !a.elem && !b.elem;
  return *a.elem == *b.elem;
}

std::ostream& operator<<(std::ostream& out, const Type& type) { return out << type.str(); }

// ---- AliasInfo ----

std::string AliasInfo::str() const {
  std::string out = loom::str_cat("(", absl::StrJoin(before_set, "|"), is_write ? "!" : "");
  if (after_set != before_set) loom::str_append(&out, " -> ", absl::StrJoin(after_set, "|"));
  out += ')';
  return out;
}

bool operator==(const AliasInfo& a, const AliasInfo& b) {
  return a.is_write == b.is_write && same_set(a.before_set, b.before_set) &&
         same_set(a.after_set, b.after_set);
}

// ---- DefaultValue ----

std::string DefaultValue::str() const {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return "None";
        } else if constexpr (std::is_same_v<T, bool>) {
          return v ? "True" : "False";
        } else if constexpr (std::is_same_v<T, int64_t>) {
          return loom::str_cat(v);
        } else if constexpr (std::is_same_v<T, double>) {
          return format_double(v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          return quote_string(v);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          return loom::str_cat("[", absl::StrJoin(v, ", "), "]");
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          return loom::str_cat(
              "[",
              absl::StrJoin(v, ", ",
                            [](std::string* out, double d) { out->append(format_double(d)); }),
              "]");
        } else if constexpr (std::is_same_v<T, std::vector<bool>>) {
          return loom::str_cat(
              "[",
              absl::StrJoin(v, ", ",
                            [](std::string* out, bool b) { out->append(b ? "True" : "False"); }),
              "]");
        } else {
          static_assert(std::is_same_v<T, Identifier>);
          return v.name;
        }
      },
      value);
}

bool operator==(const DefaultValue& a, const DefaultValue& b) {
  if (a.value.index() != b.value.index()) return false;
  if (const double* x = std::get_if<double>(&a.value)) {
    return same_double(*x, std::get<double>(b.value));
  }
  if (const auto* x = std::get_if<std::vector<double>>(&a.value)) {
    const auto& y = std::get<std::vector<double>>(b.value);
    return std::equal(x->begin(), x->end(), y.begin(), y.end(), same_double);
  }
  return a.value == b.value;
}

// ---- Argument ----

std::string Argument::type_str() const { return render_type(type, alias ? &*alias : nullptr); }

std::string Argument::str() const {
  std::string out = type_str();
  if (!name.empty()) loom::str_append(&out, " ", name);
  if (default_value) loom::str_append(&out, "=", default_value->str());
  return out;
}

bool operator==(const Argument& a, const Argument& b) {
  return a.name == b.name && a.type == b.type && a.alias == b.alias &&
         a.default_value == b.default_value && a.kwarg_only == b.kwarg_only;
}

std::ostream& operator<<(std::ostream& out, const Argument& argument) {
  return out << argument.str();
}

// ---- OperatorName ----

std::string OperatorName::qualified_name() const {
  std::string out = ns.empty() ? name : loom::str_cat(ns, "::", name);
  if (!overload_name.empty()) loom::str_append(&out, ".", overload_name);
  return out;
}

// ---- FunctionSchema ----

FunctionSchema::FunctionSchema(std::string ns, std::string name, std::string overload_name,
                               std::vector<Argument> arguments, std::vector<Argument> returns,
                               bool is_vararg, bool is_varret)
    : ns_(std::move(ns)),
      name_(std::move(name)),
      overload_name_(std::move(overload_name)),
      arguments_(std::move(arguments)),
      returns_(std::move(returns)),
      is_vararg_(is_vararg),
      is_varret_(is_varret) {
  // The printer writes one `*` before the first keyword-only argument, so a positional argument
  // after a keyword-only one could not be printed (and cannot be written in a schema string).
  bool seen_kwarg_only = false;
  for (const Argument& arg : arguments_) {
    LOOM_CHECK(!seen_kwarg_only || arg.kwarg_only, qualified_name(), ": positional argument '",
               arg.name, "' follows a keyword-only argument");
    seen_kwarg_only = seen_kwarg_only || arg.kwarg_only;
    LOOM_CHECK(!arg.alias || innermost(arg.type).kind == TypeKind::Tensor, qualified_name(),
               ": argument '", arg.name, "' of type ", arg.type.str(),
               " cannot carry an alias annotation");
  }
  for (const Argument& ret : returns_) {
    LOOM_CHECK(!ret.default_value && !ret.kwarg_only, qualified_name(), ": return '", ret.str(),
               "' cannot have a default value or be keyword-only");
    LOOM_CHECK(!ret.alias || innermost(ret.type).kind == TypeKind::Tensor, qualified_name(),
               ": return of type ", ret.type.str(), " cannot carry an alias annotation");
  }
}

std::string FunctionSchema::qualified_name() const {
  return OperatorName{ns_, name_, overload_name_}.qualified_name();
}

std::optional<size_t> FunctionSchema::argument_index(std::string_view name) const {
  for (size_t i = 0; i < arguments_.size(); ++i) {
    if (arguments_[i].name == name) return i;
  }
  return std::nullopt;
}

bool FunctionSchema::is_mutable() const {
  return std::any_of(arguments_.begin(), arguments_.end(),
                     [](const Argument& a) { return a.alias && a.alias->is_write; });
}

std::string FunctionSchema::str() const {
  std::vector<std::string> args;
  args.reserve(arguments_.size() + 2);
  bool star_written = false;
  for (const Argument& arg : arguments_) {
    if (arg.kwarg_only && !star_written) {
      args.emplace_back("*");
      star_written = true;
    }
    args.push_back(arg.str());
  }
  if (is_vararg_) args.emplace_back("...");

  std::string rets;
  if (returns_.size() == 1 && !is_varret_) {
    // A lone return is written bare, as PyTorch does; `(Tensor)` would parse the same.
    rets = returns_[0].str();
  } else {
    std::vector<std::string> parts;
    for (const Argument& ret : returns_) parts.push_back(ret.str());
    if (is_varret_) parts.emplace_back("...");
    rets = (returns_.empty() && is_varret_) ? "..."
                                            : loom::str_cat("(", absl::StrJoin(parts, ", "), ")");
  }
  return loom::str_cat(qualified_name(), "(", absl::StrJoin(args, ", "), ") -> ", rets);
}

bool operator==(const FunctionSchema& a, const FunctionSchema& b) {
  return a.ns_ == b.ns_ && a.name_ == b.name_ && a.overload_name_ == b.overload_name_ &&
         a.arguments_ == b.arguments_ && a.returns_ == b.returns_ && a.is_vararg_ == b.is_vararg_ &&
         a.is_varret_ == b.is_varret_;
}

std::ostream& operator<<(std::ostream& out, const FunctionSchema& schema) {
  return out << schema.str();
}

}  // namespace loom
