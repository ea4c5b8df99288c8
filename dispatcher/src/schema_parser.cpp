/// @file
/// Recursive-descent parser for the operator schema language (see schema.h).
///
/// The grammar, with whitespace allowed between any two tokens:
///
///   schema    := opname '(' [params] ')' '->' returns
///   opname    := [IDENT '::'] IDENT ['.' OVERLOAD]        (no whitespace inside)
///   params    := param (',' param)*
///   param     := '*' | '...' | type IDENT ['=' default]
///   returns   := '(' ')' | '...' | '(' ret (',' ret)* ')' | ret
///   ret       := '...' | type [IDENT]
///   type      := BASE [alias] ('[' [INT] ']' | '?')*       (alias only after Tensor; at most
///                                                         kMaxTypeNesting '[]' and '?')
///   alias     := '(' set ['!'] ['->' set] ')'        set := ('*' | IDENT) ('|' ('*' | IDENT))*
///   default   := None | True | False | NUMBER | inf | nan | -inf | STRING | list | IDENT
///   list      := '[' [scalar (',' scalar)*] ']'        scalar := NUMBER | True | False
///
/// A default must also fit its argument's type (see default_mismatch below); one that does not
/// is a parse error at the default's column, since every call omitting the argument would fail.
///
/// The parser works on characters rather than a token stream so that every error can point at
/// the exact column, and a message can show what it found there.
///
/// Input can be anything a user or a plugin passes (`loom schema check`, the C ABI's LibraryDef),
/// so nothing here recurses on the input or takes more than linear time in it, and a message
/// quotes at most kMessageExcerptChars characters of it (message_excerpt): a megabyte of schema
/// gives an error of a few hundred bytes.

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "loom/core/dtype.h"
#include "loom/core/error.h"
#include "loom/dispatcher/schema.h"

namespace loom {
namespace {

struct BaseTypeName {
  std::string_view spelling;
  TypeKind kind;
  bool symbolic = false;      // SymInt, SymBool
  bool device_index = false;  // DeviceIndex
};

constexpr std::array<BaseTypeName, 20> kBaseTypes = {{
    {"Tensor", TypeKind::Tensor},
    {"int", TypeKind::Int},
    {"SymInt", TypeKind::Int, /*symbolic=*/true},
    {"DeviceIndex", TypeKind::Int, /*symbolic=*/false, /*device_index=*/true},
    {"float", TypeKind::Float},
    {"bool", TypeKind::Bool},
    {"SymBool", TypeKind::Bool, /*symbolic=*/true},
    {"str", TypeKind::Str},
    {"Scalar", TypeKind::Scalar},
    {"ScalarType", TypeKind::ScalarType},
    {"Device", TypeKind::Device},
    {"Generator", TypeKind::Generator},
    {"Layout", TypeKind::Layout},
    {"MemoryFormat", TypeKind::MemoryFormat},
    {"QScheme", TypeKind::QScheme},
    {"Dimname", TypeKind::Dimname},
    {"Storage", TypeKind::Storage},
    {"Stream", TypeKind::Stream},
    {"complex", TypeKind::Complex},
    {"Any", TypeKind::Any},
}};

// Names people reach for from C++ or Python that the schema language spells differently.
constexpr std::array<std::pair<std::string_view, std::string_view>, 6> kTypeSynonyms = {{
    {"double", "float"},
    {"int64_t", "int"},
    {"long", "int"},
    {"string", "str"},
    {"Number", "Scalar"},
    {"dtype", "ScalarType"},
}};

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
// The second to fourth bytes of a UTF-8 sequence; a cut never lands on one.
bool is_utf8_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

size_t count_code_points(std::string_view text) {
  return static_cast<size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return !is_utf8_continuation(c); }));
}

// " more characters" marker of message_excerpt, for the `rest` of a text that is cut.
std::string more_characters(std::string_view rest) {
  return loom::str_cat("... (", count_code_points(rest), " more characters)");
}

// `text` as a message quotes it: 'text', shortened by message_excerpt.
std::string quoted(std::string_view text) { return loom::str_cat("'", message_excerpt(text), "'"); }

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// " (did you mean 'Tensor'?)" for a misspelt type name, or "" when nothing is close.
std::string type_suggestion(std::string_view name) {
  for (const auto& [wrong, right] : kTypeSynonyms) {
    if (name == wrong) return loom::str_cat("; did you mean '", right, "'?");
  }
  std::string_view best;
  size_t best_distance = 3;  // suggest only names at most two edits away
  for (const BaseTypeName& base : kBaseTypes) {
    // The distance is at least the difference in length, so a name far longer than every type
    // (a megabyte of input) is never run through edit_distance.
    const size_t longer = std::max(name.size(), base.spelling.size());
    const size_t shorter = std::min(name.size(), base.spelling.size());
    if (longer - shorter >= best_distance) continue;
    size_t d = edit_distance(name, base.spelling);
    if (d < best_distance) {
      best_distance = d;
      best = base.spelling;
    }
  }
  return best.empty() ? "" : loom::str_cat("; did you mean '", best, "'?");
}

// Strips one Optional layer: the type a default value has to fit.
const Type& strip_optional(const Type& type) {
  return type.kind == TypeKind::Optional ? *type.elem : type;
}

// The element kind of a list type (through Optionals), or Any when `type` is not a list.
TypeKind list_element_kind(const Type& type) {
  const Type& list = strip_optional(type);
  if (list.kind != TypeKind::List) return TypeKind::Any;
  return strip_optional(*list.elem).kind;
}

// The identifiers an enum-like argument may default to. They are the names that
// default_to_ivalue (boxing.cpp) turns into the value the argument's type expects; ScalarType
// takes any name parse_dtype knows (`long`, `float32`).
constexpr std::array<std::string_view, 2> kReductionNames = {"Mean", "Sum"};
constexpr std::array<std::string_view, 4> kMemoryFormatNames = {
    "contiguous_format", "preserve_format", "channels_last", "channels_last_3d"};
constexpr std::array<std::string_view, 2> kLayoutNames = {"strided", "sparse_coo"};

template <size_t N>
bool is_one_of(const std::array<std::string_view, N>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

template <size_t N>
std::string one_of_hint(std::string_view type_name, const std::array<std::string_view, N>& names) {
  std::string out = loom::str_cat("; a default for ", type_name, " is one of ");
  for (size_t i = 0; i < N; ++i) loom::str_append(&out, i ? ", " : "", names[i]);
  return out;
}

// Why default `value` does not fit `type`: nullopt when it fits, else a hint to append to the
// message (possibly empty). `written` is the type as written, for the hints; `in_optional` is
// set while checking the element of an Optional. The rules follow
// PyTorch's schema parser (function_schema_parser.cpp) and, where Loom is narrower, what
// boxed calls can turn into an argument of the type:
//  * T? takes None and whatever T takes; None fits nothing else (Any takes everything).
//  * int (SymInt, DeviceIndex): an integer or a reduction name (Mean, Sum).
//  * float and complex: a number (an integer literal is the same number); bool (SymBool):
//    True/False; Scalar: a number or True/False; str: a string literal.
//  * ScalarType, Layout, MemoryFormat: one of their names (`long`, `strided`,
//    `contiguous_format`).
//  * Lists (int/float/bool elements only): a list literal whose elements fit the element type
//    (`[]` included); a fixed-size int list (`int[2] stride=1`) also takes one int, repeated.
//    (PyTorch repeats a single value for float and bool lists too; Loom's boxing does not.)
//  * Tensor, Generator, Device, Dimname, QScheme, Storage, Stream: only None, so only when
//    optional. (PyTorch also takes `Device d="cpu"`, which Loom's boxing cannot turn into a
//    Device, and `Tensor t=None`, an undefined tensor, which Loom's boxed calls reject; no
//    native_functions.yaml line uses either.)
std::optional<std::string> default_mismatch(const Type& type, const DefaultValue::Value& value,
                                            std::string_view written, bool in_optional = false) {
  if (type.kind == TypeKind::Any) return std::nullopt;
  if (type.kind == TypeKind::Optional) {
    if (std::holds_alternative<std::monostate>(value)) return std::nullopt;
    return default_mismatch(type.element(), value, written, /*in_optional=*/true);
  }
  if (std::holds_alternative<std::monostate>(value)) {
    return loom::str_cat("; only an optional type defaults to None (write '", written, "?')");
  }
  const bool is_int = std::holds_alternative<int64_t>(value);
  const bool is_double = std::holds_alternative<double>(value);
  const bool is_bool = std::holds_alternative<bool>(value);
  const Identifier* ident = std::get_if<Identifier>(&value);
  auto fits_if = [](bool ok, std::string hint = "") -> std::optional<std::string> {
    if (ok) return std::nullopt;
    return hint;
  };
  switch (type.kind) {
    case TypeKind::Int:
      if (ident) {
        return fits_if(is_one_of(kReductionNames, ident->name),
                       one_of_hint("int", kReductionNames));
      }
      return fits_if(is_int);
    case TypeKind::Float:
    case TypeKind::Complex:
      return fits_if(is_int || is_double);
    case TypeKind::Bool:
      return fits_if(is_bool, "; a bool defaults to True or False");
    case TypeKind::Scalar:
      return fits_if(is_int || is_double || is_bool);
    case TypeKind::Str:
      return fits_if(std::holds_alternative<std::string>(value),
                     "; a str default is a quoted string");
    case TypeKind::ScalarType:
      return fits_if(ident && parse_dtype(ident->name).has_value(),
                     "; a ScalarType defaults to a dtype name such as long or float32");
    case TypeKind::Layout:
      return fits_if(ident && is_one_of(kLayoutNames, ident->name),
                     one_of_hint("Layout", kLayoutNames));
    case TypeKind::MemoryFormat:
      return fits_if(ident && is_one_of(kMemoryFormatNames, ident->name),
                     one_of_hint("MemoryFormat", kMemoryFormatNames));
    case TypeKind::List: {
      const Type& elem = type.element();
      if (elem.kind != TypeKind::Int && elem.kind != TypeKind::Float &&
          elem.kind != TypeKind::Bool) {
        return loom::str_cat("; only lists of int, float or bool take a default other than None");
      }
      if (std::holds_alternative<std::vector<int64_t>>(value)) {
        return fits_if(elem.kind == TypeKind::Int);  // an int list for float[] is doubles by now
      }
      if (std::holds_alternative<std::vector<double>>(value)) {
        return fits_if(elem.kind == TypeKind::Float);
      }
      if (std::holds_alternative<std::vector<bool>>(value)) {
        return fits_if(elem.kind == TypeKind::Bool);
      }
      if (is_int || is_double || is_bool) {
        // PyTorch repeats one value for any fixed-size list, but Loom's boxed calls repeat only
        // ints (`int[2] stride=1`), so `float[2] x=1.5` would fail every call that omits it.
        if (elem.kind != TypeKind::Int || !type.fixed_size) {
          return loom::str_cat("; only a fixed-size int list (such as 'int[2]') takes a single ",
                               "value, which is repeated");
        }
        return fits_if(is_int);
      }
      return fits_if(false);
    }
    default:  // Tensor, Generator, Device, Dimname, QScheme, Storage, Stream
      if (in_optional) return loom::str_cat("; a ", written, " argument can only default to None");
      return loom::str_cat("; a ", written, " argument can only default to None, and only when ",
                           "optional ('", written, "?')");
  }
}

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  FunctionSchema parse_schema() {
    skip_ws();
    OperatorName name = parse_name();
    skip_ws();
    if (peek() != '(') fail_expected("'(' after operator name");
    ++pos_;
    bool is_vararg = false;
    std::vector<Argument> arguments = parse_arguments(&is_vararg);
    skip_ws();
    if (!looking_at("->")) fail_expected("'->' after the argument list");
    pos_ += 2;
    skip_ws();
    bool is_varret = false;
    std::vector<Argument> returns = parse_returns(&is_varret);
    skip_ws();
    if (pos_ < s_.size()) fail_expected("end of schema after the returns");
    return {std::move(name.ns),
            std::move(name.name),
            std::move(name.overload_name),
            std::move(arguments),
            std::move(returns),
            is_vararg,
            is_varret};
  }

  OperatorName parse_name_only() {
    skip_ws();
    OperatorName name = parse_name();
    skip_ws();
    if (pos_ < s_.size()) fail_expected("end of operator name");
    return name;
  }

  Type parse_type_only() {
    skip_ws();
    size_t start = pos_;
    auto [type, alias] = parse_type("a type");
    if (alias) fail(start, "a standalone type cannot carry an alias annotation");
    skip_ws();
    if (pos_ < s_.size()) fail_expected("end of type");
    return type;
  }

 private:
  // ---- low-level helpers ----

  char peek(size_t ahead = 0) const { return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0'; }
  bool looking_at(std::string_view token) const { return s_.substr(pos_).starts_with(token); }
  void skip_ws() {
    while (pos_ < s_.size() && is_space(s_[pos_])) ++pos_;
  }
  std::string_view read_ident() {
    size_t start = pos_;
    while (pos_ < s_.size() && is_ident_char(s_[pos_])) ++pos_;
    return s_.substr(start, pos_ - start);
  }

  // How the text at `at` reads in a message: 'self', '123', ')' or "end of input".
  std::string describe(size_t at) const {
    if (at >= s_.size()) return "end of input";
    size_t end = at;
    if (is_ident_char(s_[at])) {
      while (end < s_.size() && is_ident_char(s_[end])) ++end;
    } else {
      // One whole character: a UTF-8 sequence is not cut in half ('\xc3' of 'é'); bytes that
      // are no valid sequence are shown escaped.
      end = at + 1;
      while (end < s_.size() && is_utf8_continuation(s_[end])) ++end;
      const auto lead = static_cast<unsigned char>(s_[at]);
      const size_t want = lead < 0x80                   ? 1
                          : lead >= 0xC2 && lead < 0xE0 ? 2
                          : lead >= 0xE0 && lead < 0xF0 ? 3
                          : lead >= 0xF0 && lead < 0xF5 ? 4
                                                        : 0;
      if (want != end - at) {
        std::string escaped;
        for (size_t i = at; i < end; ++i) {
          absl::StrAppend(&escaped, "\\x",
                          absl::Hex(static_cast<unsigned char>(s_[i]), absl::kZeroPad2));
        }
        return loom::str_cat("'", escaped, "'");
      }
    }
    return quoted(s_.substr(at, end - at));
  }

  // The schema as a message echoes it: whole when short, else kMessageExcerptChars characters
  // around the caret at byte `caret`, with "..." where text is left out. *caret_column receives
  // the caret's place in the echo.
  std::string echo(size_t caret, size_t* caret_column) const {
    constexpr size_t kWindow = kMessageExcerptChars;
    std::string out;
    if (s_.size() <= kWindow) {
      out = std::string(s_);
      *caret_column = caret;
    } else {
      size_t start = std::min(caret > kWindow / 2 ? caret - kWindow / 2 : 0, s_.size() - kWindow);
      size_t end = start + kWindow;
      while (start > 0 && is_utf8_continuation(s_[start])) --start;
      while (end < s_.size() && is_utf8_continuation(s_[end])) ++end;
      const std::string_view before = start > 0 ? "..." : "";
      out = loom::str_cat(before, s_.substr(start, end - start),
                          end < s_.size() ? more_characters(s_.substr(end)) : "");
      *caret_column = before.size() + caret - start;
    }
    // Tabs and newlines would misalign the caret, so the echoed schema shows them as spaces.
    std::replace_if(out.begin(), out.end(), is_space, ' ');
    return out;
  }

  [[noreturn]] void fail(size_t at, std::string_view what) const {
    size_t caret = std::min(at, s_.size());
    size_t caret_column = 0;
    const std::string schema = echo(caret, &caret_column);
    // Columns count characters, not bytes, so that the caret stands under the character.
    const auto characters = [](std::string_view text) {
      return static_cast<size_t>(
          std::count_if(text.begin(), text.end(), [](char c) { return !is_utf8_continuation(c); }));
    };
    const size_t column = characters(s_.substr(0, caret)) + 1;
    caret_column = characters(std::string_view(schema).substr(0, caret_column));
    throw SchemaParseError(
        loom::str_cat("schema parse error at column ", column, ": ", what, "\n  ", schema, "\n  ",
                      std::string(caret_column, ' '), "^"),
        static_cast<int>(column));
  }
  [[noreturn]] void fail_expected(std::string_view expected) const {
    fail(pos_, loom::str_cat("expected ", expected, ", found ", describe(pos_)));
  }

  // ---- names ----

  OperatorName parse_name() {
    OperatorName name;
    if (!is_ident_start(peek())) fail_expected("operator name");
    name.name = std::string(read_ident());
    if (looking_at("::")) {
      pos_ += 2;
      if (!is_ident_start(peek())) fail_expected("operator name after '::'");
      name.ns = std::move(name.name);
      name.name = std::string(read_ident());
    }
    if (peek() == '.') {
      ++pos_;
      // Overload names are identifier-like but may start with a digit.
      if (!is_ident_char(peek())) fail_expected("overload name after '.'");
      name.overload_name = std::string(read_ident());
    }
    return name;
  }

  // ---- arguments and returns ----

  std::vector<Argument> parse_arguments(bool* is_vararg) {
    std::vector<Argument> arguments;
    absl::flat_hash_set<std::string> names;  // a long argument list stays linear
    bool kwarg_only = false;
    size_t star_pos = 0;
    size_t args_at_star = 0;
    skip_ws();
    if (peek() == ')') {
      ++pos_;
      return arguments;
    }
    while (true) {
      skip_ws();
      if (looking_at("...")) {
        pos_ += 3;
        *is_vararg = true;
        skip_ws();
        if (peek() != ')') fail(pos_, "'...' must be the last argument");
      } else if (peek() == '*') {
        if (kwarg_only) fail(pos_, "'*' may appear only once in an argument list");
        kwarg_only = true;
        star_pos = pos_;
        args_at_star = arguments.size();
        ++pos_;
      } else {
        size_t name_pos = 0;
        Argument arg = parse_argument(/*is_return=*/false, &name_pos);
        arg.kwarg_only = kwarg_only;
        if (!names.insert(arg.name).second) {
          fail(name_pos, loom::str_cat("duplicate argument name ", quoted(arg.name)));
        }
        arguments.push_back(std::move(arg));
      }
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == ')') {
        ++pos_;
        break;
      }
      fail_expected("')' or ',' after argument");
    }
    // A trailing `*` marks nothing; rejecting it keeps printing canonical.
    if (kwarg_only && arguments.size() == args_at_star) {
      fail(star_pos, "expected a keyword-only argument after '*'");
    }
    return arguments;
  }

  std::vector<Argument> parse_returns(bool* is_varret) {
    std::vector<Argument> returns;
    absl::flat_hash_set<std::string> names;
    if (looking_at("...")) {
      pos_ += 3;
      *is_varret = true;
      return returns;
    }
    if (peek() != '(') {
      size_t name_pos = 0;
      returns.push_back(parse_argument(/*is_return=*/true, &name_pos));
      return returns;
    }
    ++pos_;
    skip_ws();
    if (peek() == ')') {
      ++pos_;
      return returns;
    }
    while (true) {
      skip_ws();
      if (looking_at("...")) {
        pos_ += 3;
        *is_varret = true;
        skip_ws();
        if (peek() != ')') fail(pos_, "'...' must be the last return");
      } else if (peek() == '*') {
        fail(pos_, "'*' (keyword-only marker) is not allowed in returns");
      } else {
        size_t name_pos = 0;
        Argument ret = parse_argument(/*is_return=*/true, &name_pos);
        if (!ret.name.empty() && !names.insert(ret.name).second) {
          fail(name_pos, loom::str_cat("duplicate return name ", quoted(ret.name)));
        }
        returns.push_back(std::move(ret));
      }
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == ')') {
        ++pos_;
        break;
      }
      fail_expected("')' or ',' after return");
    }
    return returns;
  }

  // `type name[=default]` for arguments, `type [name]` for returns.
  Argument parse_argument(bool is_return, size_t* name_pos) {
    size_t type_pos = pos_;
    auto [type, alias] = parse_type(is_return ? "a return type" : "an argument type");
    Argument arg;
    arg.type = std::move(type);
    arg.alias = std::move(alias);
    skip_ws();
    *name_pos = pos_;
    if (is_ident_start(peek())) {
      arg.name = std::string(read_ident());
    } else if (!is_return) {
      fail_expected(loom::str_cat("an argument name after type ",
                                  quoted(s_.substr(type_pos, last_type_end_ - type_pos))));
    }
    skip_ws();
    if (peek() == '=') {
      if (is_return) fail(pos_, "return values cannot have default values");
      ++pos_;
      skip_ws();
      arg.default_value =
          parse_default(arg.type, message_excerpt(s_.substr(type_pos, last_type_end_ - type_pos)));
    }
    return arg;
  }

  // ---- types ----

  std::pair<Type, std::optional<AliasInfo>> parse_type(std::string_view what) {
    size_t start = pos_;
    if (!is_ident_start(peek())) fail_expected(what);
    std::string_view spelling = read_ident();
    auto base = std::find_if(kBaseTypes.begin(), kBaseTypes.end(),
                             [&](const BaseTypeName& b) { return b.spelling == spelling; });
    if (base == kBaseTypes.end()) {
      fail(start, loom::str_cat("unknown type ", quoted(spelling), type_suggestion(spelling)));
    }
    Type type = Type::of(base->kind);
    type.symbolic = base->symbolic;
    type.device_index = base->device_index;
    last_type_end_ = pos_;
    std::optional<AliasInfo> alias;
    skip_ws();
    if (peek() == '(') {
      if (base->kind != TypeKind::Tensor) {
        fail(pos_, loom::str_cat("alias annotations are only allowed on Tensor, not on '", spelling,
                                 "'"));
      }
      alias = parse_alias();
      last_type_end_ = pos_;
      skip_ws();
    }
    // Each '[]' and '?' wraps the type once more; see kMaxTypeNesting.
    int nesting = 0;
    while (true) {
      if ((peek() == '[' || peek() == '?') && nesting == kMaxTypeNesting) {
        fail(pos_, loom::str_cat("type nests lists and optionals more than ", kMaxTypeNesting,
                                 " deep; a schema type has at most a few layers ('Tensor?[]' ",
                                 "has 2)"));
      }
      if (peek() == '[') {
        ++nesting;
        ++pos_;
        skip_ws();
        std::optional<int64_t> size;
        if (is_digit(peek())) {
          size_t size_pos = pos_;
          while (is_digit(peek())) ++pos_;
          int64_t n = 0;
          std::string_view digits = s_.substr(size_pos, pos_ - size_pos);
          auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
          if (ec != std::errc() || n <= 0) {
            fail(size_pos,
                 loom::str_cat("list size must be a positive integer, found ", quoted(digits)));
          }
          size = n;
          skip_ws();
        }
        if (peek() != ']') fail_expected(size ? "']' after the list size" : "a list size or ']'");
        ++pos_;
        type = Type::list(std::move(type), size);
      } else if (peek() == '?') {
        if (type.kind == TypeKind::Optional) fail(pos_, "type is already optional");
        ++nesting;
        ++pos_;
        type = Type::optional(std::move(type));
      } else {
        break;
      }
      last_type_end_ = pos_;
      skip_ws();
    }
    return {std::move(type), std::move(alias)};
  }

  AliasInfo parse_alias() {
    ++pos_;  // '('
    AliasInfo info;
    info.before_set = parse_alias_set();
    skip_ws();
    if (peek() == '!') {
      info.is_write = true;
      ++pos_;
      skip_ws();
    }
    if (looking_at("->")) {
      pos_ += 2;
      info.after_set = parse_alias_set();
      skip_ws();
    } else {
      info.after_set = info.before_set;
    }
    if (peek() != ')') fail_expected("')' to close the alias annotation");
    ++pos_;
    return info;
  }

  std::vector<std::string> parse_alias_set() {
    std::vector<std::string> set;
    while (true) {
      skip_ws();
      if (peek() == '*') {
        ++pos_;
        set.emplace_back("*");
      } else if (is_ident_start(peek())) {
        set.emplace_back(read_ident());
      } else {
        fail_expected("an alias set name or '*' in the alias annotation");
      }
      skip_ws();
      if (peek() != '|') return set;
      ++pos_;
    }
  }

  // ---- default values ----

  // A default value, checked against the argument's type (written as `written`, shortened for
  // messages).
  DefaultValue parse_default(const Type& type, std::string_view written) {
    size_t start = pos_;
    char c = peek();
    DefaultValue value;
    if (c == '"' || c == '\'') {
      value.value = parse_string();
    } else if (c == '[') {
      value.value = parse_list(list_element_kind(type));
    } else if (c == '-' || is_digit(c)) {
      value.value = std::visit([](auto v) -> DefaultValue::Value { return v; }, parse_number());
    } else if (is_ident_start(c)) {
      std::string_view word = read_ident();
      if (word == "None") {
        value.value = std::monostate{};
      } else if (word == "True" || word == "False") {
        value.value = word == "True";
      } else if (word == "inf") {
        value.value = std::numeric_limits<double>::infinity();
      } else if (word == "nan") {
        value.value = std::numeric_limits<double>::quiet_NaN();
      } else {
        value.value = Identifier{std::string(word)};
      }
    } else {
      fail_expected("a default value");
    }
    // An int literal for a float argument can only mean the double; see Note [Schema canonical
    // form] in schema.h.
    const Type& target = strip_optional(type);
    if (target.kind == TypeKind::Float) {
      if (const int64_t* i = std::get_if<int64_t>(&value.value)) {
        value.value = static_cast<double>(*i);
      }
    } else if (target.kind == TypeKind::List && list_element_kind(type) == TypeKind::Float) {
      if (const auto* ints = std::get_if<std::vector<int64_t>>(&value.value)) {
        value.value = std::vector<double>(ints->begin(), ints->end());
      }
    }
    if (auto hint = default_mismatch(type, value.value, written)) {
      fail(start, loom::str_cat("default value ", message_excerpt(s_.substr(start, pos_ - start)),
                                " does not fit type '", written, "'", *hint));
    }
    return value;
  }

  // An int or double literal, including `-inf` and `-nan`.
  std::variant<int64_t, double> parse_number() {
    size_t start = pos_;
    if (peek() == '-') {
      ++pos_;
      if (looking_at("inf") && !is_ident_char(peek(3))) {
        pos_ += 3;
        return -std::numeric_limits<double>::infinity();
      }
      if (looking_at("nan") && !is_ident_char(peek(3))) {
        pos_ += 3;
        return -std::numeric_limits<double>::quiet_NaN();
      }
      if (!is_digit(peek())) fail_expected("a digit after '-'");
    }
    bool is_float = false;
    while (is_digit(peek())) ++pos_;
    if (peek() == '.') {
      is_float = true;
      ++pos_;
      while (is_digit(peek())) ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      is_float = true;
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!is_digit(peek())) fail_expected("exponent digits in the number");
      while (is_digit(peek())) ++pos_;
    }
    if (is_ident_char(peek()) || peek() == '.') {
      size_t end = pos_;
      while (end < s_.size() && (is_ident_char(s_[end]) || s_[end] == '.')) ++end;
      fail(start, loom::str_cat("malformed number ", quoted(s_.substr(start, end - start))));
    }
    std::string_view text = s_.substr(start, pos_ - start);
    const char* first = text.data();
    const char* last = text.data() + text.size();
    if (is_float) {
      double d = 0;
      auto [end, ec] = std::from_chars(first, last, d);
      if (ec != std::errc() || end != last) {
        fail(start, loom::str_cat("float literal ", quoted(text), " is out of range for a double"));
      }
      return d;
    }
    int64_t i = 0;
    auto [end, ec] = std::from_chars(first, last, i);
    if (ec != std::errc() || end != last) {
      fail(start, loom::str_cat("integer literal ", quoted(text), " is out of range for int64"));
    }
    return i;
  }

  DefaultValue::Value parse_list(TypeKind element_kind) {
    size_t start = pos_;
    ++pos_;  // '['
    std::vector<std::variant<int64_t, double>> numbers;
    std::vector<bool> bools;
    bool any_double = false;
    skip_ws();
    if (peek() != ']') {
      while (true) {
        skip_ws();
        if (looking_at("True") || looking_at("False")) {
          size_t word_pos = pos_;
          std::string_view word = read_ident();
          if (word != "True" && word != "False") {
            pos_ = word_pos;
            fail_expected("a number or boolean in the list default");
          }
          bools.push_back(word == "True");
        } else if (peek() == '-' || is_digit(peek())) {
          numbers.push_back(parse_number());
          any_double = any_double || std::holds_alternative<double>(numbers.back());
        } else {
          fail_expected("a number or boolean in the list default");
        }
        skip_ws();
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        if (peek() == ']') break;
        fail_expected("',' or ']' in the list default");
      }
    }
    ++pos_;  // ']'
    if (!bools.empty() && !numbers.empty()) {
      fail(start, "list default mixes booleans and numbers");
    }
    if (!bools.empty() || (numbers.empty() && element_kind == TypeKind::Bool)) return bools;
    if (any_double || (numbers.empty() && element_kind == TypeKind::Float)) {
      std::vector<double> doubles;
      doubles.reserve(numbers.size());
      for (const auto& n : numbers) {
        doubles.push_back(std::visit([](auto v) { return static_cast<double>(v); }, n));
      }
      return doubles;
    }
    std::vector<int64_t> ints;
    ints.reserve(numbers.size());
    for (const auto& n : numbers) ints.push_back(std::get<int64_t>(n));
    return ints;
  }

  std::string parse_string() {
    size_t start = pos_;
    char quote = s_[pos_++];
    std::string out;
    while (true) {
      if (pos_ >= s_.size()) fail(start, "unterminated string literal");
      char c = s_[pos_++];
      if (c == quote) return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) fail(start, "unterminated string literal");
      size_t escape_pos = pos_ - 1;
      char e = s_[pos_++];
      switch (e) {
        case '\\':
        case '\'':
        case '"':
          out += e;
          break;
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case '0':
          out += '\0';
          break;
        case 'x': {
          auto hex = [](char h) -> int {
            if (h >= '0' && h <= '9') return h - '0';
            if (h >= 'a' && h <= 'f') return h - 'a' + 10;
            if (h >= 'A' && h <= 'F') return h - 'A' + 10;
            return -1;
          };
          int hi = hex(peek());
          int lo = hex(peek(1));
          if (hi < 0 || lo < 0) fail(escape_pos, "expected two hex digits after '\\x'");
          out += static_cast<char>(hi * 16 + lo);
          pos_ += 2;
          break;
        }
        default:
          fail(escape_pos, loom::str_cat("unknown escape sequence '\\", std::string(1, e),
                                         "' in string literal"));
      }
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
  // End of the most recently parsed type's text, so messages can quote the type as written.
  size_t last_type_end_ = 0;
};

}  // namespace

std::string message_excerpt(std::string_view text) {
  if (text.size() <= kMessageExcerptChars) return std::string(text);  // bytes >= characters
  size_t end = 0;
  for (size_t chars = 0; end < text.size(); ++end) {
    if (!is_utf8_continuation(text[end]) && chars++ == kMessageExcerptChars) break;
  }
  if (end == text.size()) return std::string(text);
  return loom::str_cat(text.substr(0, end), more_characters(text.substr(end)));
}

bool is_schema_identifier(std::string_view name) {
  return !name.empty() && is_ident_start(name[0]) &&
         std::all_of(name.begin(), name.end(), is_ident_char);
}

FunctionSchema parse_schema(std::string_view text) { return Parser(text).parse_schema(); }

OperatorName parse_operator_name(std::string_view text) { return Parser(text).parse_name_only(); }

Type parse_type(std::string_view text) { return Parser(text).parse_type_only(); }

}  // namespace loom
