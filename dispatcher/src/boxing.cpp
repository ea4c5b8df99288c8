#include "loom/dispatcher/boxing.h"

#include "absl/strings/str_join.h"
#include "loom/core/str_cat.h"

namespace loom {

IValue default_to_ivalue(const DefaultValue& value, const Type& type) {
  struct Visitor {
    const Type& type;
    IValue operator()(std::monostate) const { return IValue(); }
    IValue operator()(bool b) const { return IValue(b); }
    IValue operator()(int64_t i) const {
      if (type.kind == TypeKind::Float) return IValue(static_cast<double>(i));
      return IValue(i);
    }
    IValue operator()(double d) const { return IValue(d); }
    IValue operator()(const std::string& s) const { return IValue(s); }
    IValue operator()(const std::vector<int64_t>& v) const { return IValue(v); }
    IValue operator()(const std::vector<double>& v) const { return IValue(v); }
    IValue operator()(const std::vector<bool>& v) const { return IValue(v); }
    IValue operator()(const Identifier& id) const {
      // The identifiers native_functions.yaml uses as defaults.
      static const std::pair<std::string_view, int64_t> kCodes[] = {
          {"Mean", 1},
          {"Sum", 2},
          {"contiguous_format", 0},
          {"preserve_format", 1},
          {"channels_last", 2},
          {"channels_last_3d", 3},
          {"strided", 0},
          {"sparse_coo", 1},
      };
      for (const auto& [name, code] : kCodes) {
        if (id.name == name) return IValue(code);
      }
      if (auto d = parse_dtype(id.name)) return IValue(*d);
      return IValue(id.name);
    }
  };
  return std::visit(Visitor{type}, value.value);
}

namespace {

bool matches(const Type& type, IValue& v) {
  switch (type.kind) {
    case TypeKind::Optional:
      return v.is_none() || matches(type.element(), v);
    case TypeKind::Tensor:
      return v.is_tensor();
    case TypeKind::Int:
    case TypeKind::Layout:
    case TypeKind::MemoryFormat:
      return v.tag() == IValue::Tag::Int;
    case TypeKind::Float:
      if (v.tag() == IValue::Tag::Int) v = IValue(static_cast<double>(v.to_int()));
      return v.tag() == IValue::Tag::Double;
    case TypeKind::Bool:
      return v.tag() == IValue::Tag::Bool;
    case TypeKind::Scalar:
      return v.is_scalar();
    case TypeKind::Str:
      return v.tag() == IValue::Tag::String;
    case TypeKind::ScalarType:
      return v.tag() == IValue::Tag::DType;
    case TypeKind::Device:
      return v.tag() == IValue::Tag::Device;
    case TypeKind::Generator:
      return v.tag() == IValue::Tag::Generator;
    case TypeKind::List: {
      const Type& e = type.element();
      if (e.kind == TypeKind::Int) {
        if (v.tag() == IValue::Tag::Int && type.fixed_size) {
          v = IValue(std::vector<int64_t>(static_cast<size_t>(*type.fixed_size), v.to_int()));
        }
        return v.tag() == IValue::Tag::IntList;
      }
      if (e.kind == TypeKind::Float) {
        if (v.tag() == IValue::Tag::IntList) {
          const auto& ints = v.to_int_list();
          v = IValue(std::vector<double>(ints.begin(), ints.end()));
        }
        return v.tag() == IValue::Tag::DoubleList;
      }
      if (e.kind == TypeKind::Bool) return v.tag() == IValue::Tag::BoolList;
      if (e.kind == TypeKind::Tensor) return v.tag() == IValue::Tag::TensorList;
      if (e.kind == TypeKind::Optional && e.element().kind == TypeKind::Tensor) {
        if (v.tag() == IValue::Tag::TensorList) {
          std::vector<std::optional<Tensor>> opt;
          for (const Tensor& t : v.to_tensor_list()) opt.emplace_back(t);
          v = IValue(std::move(opt));
        }
        return v.tag() == IValue::Tag::OptionalTensorList;
      }
      return true;  // lists of other types are passed through unchecked
    }
    default:
      return true;  // Dimname, Storage, Stream, Complex, Any: not checked
  }
}

}  // namespace

void normalize_boxed_arguments(OperatorHandle op, Stack& stack) {
  const FunctionSchema& schema = op.schema();
  const auto& args = schema.arguments();
  LOOM_CHECK_T(TypeError, stack.size() <= args.size(), op.name(), "() takes ", args.size(),
               " arguments but ", stack.size(), " were given; schema: ", schema.str());
  for (size_t i = stack.size(); i < args.size(); ++i) {
    LOOM_CHECK_T(TypeError, args[i].default_value.has_value(), op.name(),
                 "() missing required argument '", args[i].name, "' (position ", i,
                 "); schema: ", schema.str());
    stack.push_back(default_to_ivalue(*args[i].default_value, args[i].type));
  }
  for (size_t i = 0; i < args.size(); ++i) {
    IValue& v = stack[i];
    if (args[i].type.kind == TypeKind::Tensor && v.is_tensor() && !v.to_tensor().defined()) {
      LOOM_THROW(TypeError, op.name(), "(): expected a proper Tensor but got an undefined Tensor "
                 "for argument #", i, " '", args[i].name, "'; schema: ", schema.str());
    }
    if (!matches(args[i].type, v)) {
      LOOM_THROW(TypeError, op.name(), "(): argument '", args[i].name, "' (position ", i,
                 ") must be ", args[i].type.str(), ", not ", v.type_name(), " (", v.repr(),
                 "); schema: ", schema.str());
    }
  }
}

DispatchKeySet boxed_key_set(OperatorHandle op, const Stack& stack) {
  DispatchKeySet ks;
  for (const IValue& v : stack) {
    switch (v.tag()) {
      case IValue::Tag::Device:
        ks = ks | DispatchKeySet(backend_key(v.to_device().type()));
        break;
      case IValue::Tag::Tensor:
        ks = ks | v.to_tensor().key_set();
        break;
      case IValue::Tag::TensorList:
        for (const Tensor& t : v.to_tensor_list()) ks = ks | t.key_set();
        break;
      case IValue::Tag::OptionalTensorList:
        for (const auto& t : v.to_optional_tensor_list()) {
          if (t) ks = ks | t->key_set();
        }
        break;
      default:
        break;
    }
  }
  if (ks.empty()) {  // Note [Factory dispatch] in kernel_traits.h
    bool has_tensor_args = false;
    for (const Argument& a : op.schema().arguments()) has_tensor_args |= a.type.is_tensor_like();
    if (!has_tensor_args) ks = DispatchKeySet(DispatchKey::CPU);
  }
  return ks;
}

std::string describe_call(OperatorHandle op, const Stack& args) {
  std::string name = op.name();
  if (auto pos = name.find("::"); pos != std::string::npos) name = name.substr(pos + 2);
  std::vector<std::string> parts;
  const FunctionSchema* schema = op.has_schema() ? &op.schema() : nullptr;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string arg_name = schema && i < schema->arguments().size()
                                     ? schema->arguments()[i].name
                                     : loom::str_cat("arg", i);
    parts.push_back(loom::str_cat(arg_name, ": ", args[i].repr()));
  }
  return loom::str_cat(name, "(", absl::StrJoin(parts, ", "), ")");
}

}  // namespace loom
