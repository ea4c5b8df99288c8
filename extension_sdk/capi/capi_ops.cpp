// libloom.so: finding, listing and calling operators by name with boxed values (OpFind,
// OpCall, ValuesRelease, OpList*, OpName, OpArgumentEnumNames), and the conversions between
// LoomValue and IValue that the kernels of capi_registration.cpp use too.
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "capi_internal.h"
#include "loom/core/error.h"
#include "loom/dispatcher/boxing.h"

/// A snapshot of the defined ops (the opaque LoomOpList of capi.h): full names and schema
/// texts, sorted by name; OpListGet hands out pointers into it.
struct LoomOpList {
  std::vector<std::pair<std::string, std::string>> ops;  ///< (name, schema text)
};

namespace loom::capi {

namespace {

const Type& strip_optional(const Type& t) { return t.kind == TypeKind::Optional ? t.element() : t; }

// Note [Enum arguments] (capi.h): the names of each enum, indexed by PyTorch's integer code
// (the codes boxing.cpp gives the schema defaults Mean, contiguous_format, strided).
constexpr const char* kReductionNames[] = {"none", "mean", "sum", nullptr};
constexpr const char* kMemoryFormatNames[] = {"contiguous_format", "preserve_format",
                                              "channels_last", "channels_last_3d", nullptr};
constexpr const char* kLayoutNames[] = {"strided", nullptr};  // the only layout Loom has

/// The names of an enum argument, or null for any other argument. `int reduction` is an enum
/// by its name, as in PyTorch's schemas (the schema type says only int).
const char* const* enum_names(const Type& type, std::string_view arg) {
  switch (strip_optional(type).kind) {
    case TypeKind::MemoryFormat:
      return kMemoryFormatNames;
    case TypeKind::Layout:
      return kLayoutNames;
    case TypeKind::Int:
      return arg == "reduction" ? kReductionNames : nullptr;
    default:
      return nullptr;
  }
}

/// "'none' (0), 'mean' (1), 'sum' (2)".
std::string describe_enum(const char* const* names) {
  std::string out;
  for (int i = 0; names[i] != nullptr; ++i) {
    str_append(&out, i == 0 ? "" : ", ", "'", names[i], "' (", i, ")");
  }
  return out;
}

/// The code of an enum argument given by name or number; throws ValueError naming the op, the
/// argument and the allowed names for anything else.
int64_t enum_code(const LoomValue& v, const char* const* names, const std::string& op,
                  const std::string& arg) {
  int64_t n = 0;
  while (names[n] != nullptr) ++n;
  if (v.kind == LOOM_VALUE_INT) {
    LOOM_CHECK(v.u.i >= 0 && v.u.i < n, op, ": argument '", arg, "' is ", v.u.i,
               ", which is none of ", describe_enum(names));
    return v.u.i;
  }
  for (int64_t i = 0; i < n; ++i) {
    if (std::strcmp(v.u.s, names[i]) == 0) return i;
  }
  LOOM_THROW(ValueError, op, ": argument '", arg, "' got '", message_excerpt(v.u.s),
             "', expected one of ", describe_enum(names));
}

const char* kind_name(LoomValueKind k) {
  switch (k) {
    case LOOM_VALUE_NONE:
      return "NONE";
    case LOOM_VALUE_TENSOR:
      return "TENSOR";
    case LOOM_VALUE_INT:
      return "INT";
    case LOOM_VALUE_FLOAT:
      return "FLOAT";
    case LOOM_VALUE_BOOL:
      return "BOOL";
    case LOOM_VALUE_STRING:
      return "STRING";
    case LOOM_VALUE_INT_LIST:
      return "INT_LIST";
    case LOOM_VALUE_TENSOR_LIST:
      return "TENSOR_LIST";
    case LOOM_VALUE_FLOAT_LIST:
      return "FLOAT_LIST";
    case LOOM_VALUE_DTYPE:
      return "DTYPE";
    default:
      return "unknown";
  }
}

// How a message names the value: "argument 'other'", or "return 0" for a kernel's return.
// Built only when a check fails (the arguments of LOOM_CHECK are not evaluated otherwise).
std::string slot_name(const std::string& arg, std::optional<size_t> return_index) {
  return return_index ? str_cat("return ", *return_index) : str_cat("argument '", arg, "'");
}

}  // namespace

IValue to_ivalue(const LoomValue& v, const Type& type, const std::string& op,
                 const std::string& arg, std::optional<size_t> return_index) {
  const Type& t = strip_optional(type);
  switch (v.kind) {
    case LOOM_VALUE_NONE:
      return IValue();
    case LOOM_VALUE_TENSOR:
      if (v.u.tensor == nullptr && type.kind == TypeKind::Optional) return IValue();
      return IValue(borrow(v.u.tensor));
    case LOOM_VALUE_INT:
      if (const char* const* names = enum_names(type, arg)) {
        return IValue(enum_code(v, names, op, arg));
      }
      return IValue(v.u.i);
    case LOOM_VALUE_FLOAT:
      return IValue(v.u.f);
    case LOOM_VALUE_BOOL:
      return IValue(v.u.b);
    case LOOM_VALUE_STRING:
      LOOM_CHECK_T(InvalidArgumentError, v.u.s != nullptr, op, ": ", slot_name(arg, return_index),
                   " is a STRING value whose pointer is NULL");
      if (t.kind == TypeKind::Device) return IValue(Device(v.u.s));
      if (const char* const* names = enum_names(type, arg)) {
        return IValue(enum_code(v, names, op, arg));
      }
      if (t.kind == TypeKind::ScalarType) {
        const std::optional<DType> d = parse_dtype(v.u.s);
        LOOM_CHECK_T(TypeError, d.has_value(), op, ": ", slot_name(arg, return_index), " got '",
                     message_excerpt(v.u.s),
                     "', which is no dtype name (float32, float64, int64, bool, ...)");
        return IValue(*d);
      }
      return IValue(std::string(v.u.s));
    case LOOM_VALUE_INT_LIST:
      LOOM_CHECK_T(InvalidArgumentError, v.u.ints.size == 0 || v.u.ints.data != nullptr, op, ": ",
                   slot_name(arg, return_index), " is an INT_LIST of ", v.u.ints.size,
                   " elements whose pointer is NULL");
      return IValue(std::vector<int64_t>(v.u.ints.data, v.u.ints.data + v.u.ints.size));
    case LOOM_VALUE_FLOAT_LIST:
      LOOM_CHECK_T(InvalidArgumentError, v.u.floats.size == 0 || v.u.floats.data != nullptr, op,
                   ": ", slot_name(arg, return_index), " is a FLOAT_LIST of ", v.u.floats.size,
                   " elements whose pointer is NULL");
      return IValue(std::vector<double>(v.u.floats.data, v.u.floats.data + v.u.floats.size));
    case LOOM_VALUE_TENSOR_LIST: {
      LOOM_CHECK_T(InvalidArgumentError, v.u.tensors.size == 0 || v.u.tensors.data != nullptr, op,
                   ": ", slot_name(arg, return_index), " is a TENSOR_LIST of ", v.u.tensors.size,
                   " elements whose pointer is NULL");
      const bool optional_elems =
          t.kind == TypeKind::List && t.element().kind == TypeKind::Optional;
      if (optional_elems) {
        std::vector<std::optional<Tensor>> list;
        list.reserve(v.u.tensors.size);
        for (size_t i = 0; i < v.u.tensors.size; ++i) {
          if (v.u.tensors.data[i]) {
            list.emplace_back(borrow(v.u.tensors.data[i]));
          } else {
            list.emplace_back(std::nullopt);
          }
        }
        return IValue(std::move(list));
      }
      std::vector<Tensor> list;
      list.reserve(v.u.tensors.size);
      for (size_t i = 0; i < v.u.tensors.size; ++i) {
        // A NULL element is an undefined tensor, which only a Tensor?[] takes (as None); say
        // which element, as a kernel would only report "the tensor is undefined".
        LOOM_CHECK_T(TypeError, v.u.tensors.data[i] != nullptr, op, ": ",
                     slot_name(arg, return_index), " is a TENSOR_LIST whose element ", i, " of ",
                     v.u.tensors.size, " is NULL; a ", type.str(), " takes defined tensors only");
        list.push_back(borrow(v.u.tensors.data[i]));
      }
      return IValue(std::move(list));
    }
    case LOOM_VALUE_DTYPE:
      LOOM_CHECK_T(TypeError, v.u.i >= 0 && v.u.i < kNumDTypes, op, ": ",
                   slot_name(arg, return_index), " is an unknown dtype token ", v.u.i,
                   " (get tokens from DTypeFromName)");
      return IValue(static_cast<DType>(v.u.i));
    default:
      LOOM_THROW(InvalidArgumentError, op, ": ", slot_name(arg, return_index),
                 " has unknown value kind ", v.kind, " (", kind_name(v.kind), ")");
  }
}

namespace {

template <typename T>
const T* copy_array(const std::vector<T>& v) {
  if (v.empty()) return nullptr;
  T* a = new T[v.size()];
  std::copy(v.begin(), v.end(), a);
  return a;
}

}  // namespace

void to_value(IValue iv, LoomValue* out) {
  const uint32_t size = out->struct_size;
  std::memset(static_cast<void*>(out), 0, sizeof(LoomValue));
  out->struct_size = size;
  switch (iv.tag()) {
    case IValue::Tag::None:
      out->kind = LOOM_VALUE_NONE;
      return;
    case IValue::Tag::Tensor:
      out->kind = LOOM_VALUE_TENSOR;
      out->u.tensor = give(iv.take_tensor());
      return;
    case IValue::Tag::Int:
      out->kind = LOOM_VALUE_INT;
      out->u.i = iv.to_int();
      return;
    case IValue::Tag::Double:
      out->kind = LOOM_VALUE_FLOAT;
      out->u.f = iv.to_double();
      return;
    case IValue::Tag::Bool:
      out->kind = LOOM_VALUE_BOOL;
      out->u.b = iv.to_bool();
      return;
    case IValue::Tag::String: {
      const std::string& s = iv.to_string();
      char* c = new char[s.size() + 1];
      std::memcpy(c, s.c_str(), s.size() + 1);
      out->kind = LOOM_VALUE_STRING;
      out->u.s = c;
      return;
    }
    case IValue::Tag::Device: {
      const std::string s = iv.to_device().str();
      char* c = new char[s.size() + 1];
      std::memcpy(c, s.c_str(), s.size() + 1);
      out->kind = LOOM_VALUE_STRING;
      out->u.s = c;
      return;
    }
    case IValue::Tag::IntList:
      out->kind = LOOM_VALUE_INT_LIST;
      out->u.ints.size = iv.to_int_list().size();
      out->u.ints.data = copy_array(iv.to_int_list());
      return;
    case IValue::Tag::DoubleList:
      out->kind = LOOM_VALUE_FLOAT_LIST;
      out->u.floats.size = iv.to_double_list().size();
      out->u.floats.data = copy_array(iv.to_double_list());
      return;
    case IValue::Tag::TensorList: {
      const std::vector<Tensor>& list = iv.to_tensor_list();
      LoomTensor** a = list.empty() ? nullptr : new LoomTensor*[list.size()];
      for (size_t i = 0; i < list.size(); ++i) a[i] = give(list[i]);
      out->kind = LOOM_VALUE_TENSOR_LIST;
      out->u.tensors.size = list.size();
      out->u.tensors.data = a;
      return;
    }
    case IValue::Tag::DType:
      out->kind = LOOM_VALUE_DTYPE;
      out->u.i = static_cast<int64_t>(iv.to_dtype());
      return;
    default:
      LOOM_THROW(NotImplementedError, "the C ABI cannot return a value of type ", iv.type_name());
  }
}

void to_borrowed_value(const IValue& iv, LoomValue* out,
                       std::vector<std::vector<LoomTensor*>>& lists) {
  std::memset(static_cast<void*>(out), 0, sizeof(LoomValue));
  out->struct_size = sizeof(LoomValue);
  switch (iv.tag()) {
    case IValue::Tag::None:
      out->kind = LOOM_VALUE_NONE;
      return;
    case IValue::Tag::Tensor:
      out->kind = LOOM_VALUE_TENSOR;
      out->u.tensor = reinterpret_cast<LoomTensor*>(iv.to_tensor().impl());
      return;
    case IValue::Tag::Int:
      out->kind = LOOM_VALUE_INT;
      out->u.i = iv.to_int();
      return;
    case IValue::Tag::Double:
      out->kind = LOOM_VALUE_FLOAT;
      out->u.f = iv.to_double();
      return;
    case IValue::Tag::Bool:
      out->kind = LOOM_VALUE_BOOL;
      out->u.b = iv.to_bool();
      return;
    case IValue::Tag::String:
      out->kind = LOOM_VALUE_STRING;
      out->u.s = iv.to_string().c_str();
      return;
    case IValue::Tag::IntList:
      out->kind = LOOM_VALUE_INT_LIST;
      out->u.ints.size = iv.to_int_list().size();
      out->u.ints.data = iv.to_int_list().data();
      return;
    case IValue::Tag::DoubleList:
      out->kind = LOOM_VALUE_FLOAT_LIST;
      out->u.floats.size = iv.to_double_list().size();
      out->u.floats.data = iv.to_double_list().data();
      return;
    case IValue::Tag::TensorList: {
      std::vector<LoomTensor*>& l = lists.emplace_back();
      for (const Tensor& t : iv.to_tensor_list())
        l.push_back(reinterpret_cast<LoomTensor*>(t.impl()));
      out->kind = LOOM_VALUE_TENSOR_LIST;
      out->u.tensors.size = l.size();
      out->u.tensors.data = l.data();
      return;
    }
    case IValue::Tag::OptionalTensorList: {
      std::vector<LoomTensor*>& l = lists.emplace_back();
      for (const auto& t : iv.to_optional_tensor_list()) {
        l.push_back(t ? reinterpret_cast<LoomTensor*>(t->impl()) : nullptr);
      }
      out->kind = LOOM_VALUE_TENSOR_LIST;
      out->u.tensors.size = l.size();
      out->u.tensors.data = l.data();
      return;
    }
    case IValue::Tag::DType:
      out->kind = LOOM_VALUE_DTYPE;
      out->u.i = static_cast<int64_t>(iv.to_dtype());
      return;
    case IValue::Tag::Device: {
      // Devices reach C kernels as text; the string lives in the lists' arena as bytes.
      static thread_local std::string last;
      last = iv.to_device().str();
      out->kind = LOOM_VALUE_STRING;
      out->u.s = last.c_str();
      return;
    }
    default:
      LOOM_THROW(NotImplementedError, "a C ABI kernel cannot receive an argument of type ",
                 iv.type_name());
  }
}

namespace {

// Note [C ABI fast path] shapes: T = Tensor, S = Scalar; all return one new Tensor.
enum FastShape { kSlow = 0, kT, kTT, kTS, kTTS, kTSS };
using SigT = Tensor(const Tensor&);
using SigTT = Tensor(const Tensor&, const Tensor&);
using SigTS = Tensor(const Tensor&, const Scalar&);
using SigTTS = Tensor(const Tensor&, const Tensor&, const Scalar&);
using SigTSS = Tensor(const Tensor&, const Scalar&, const Scalar&);

void classify(LoomOp& op, const FunctionSchema& schema) {
  const auto& rets = schema.returns();
  if (rets.size() != 1 || rets[0].type.kind != TypeKind::Tensor || rets[0].alias) return;
  std::string pattern;
  for (const Argument& a : schema.arguments()) {
    if (a.alias) return;
    if (a.type.kind == TypeKind::Tensor) {
      pattern += 'T';
    } else if (a.type.kind == TypeKind::Scalar) {
      pattern += 'S';
    } else {
      return;
    }
  }
  static const std::pair<const char*, FastShape> kShapes[] = {
      {"T", kT}, {"TT", kTT}, {"TS", kTS}, {"TTS", kTTS}, {"TSS", kTSS}};
  for (const auto& [p, shape] : kShapes) {
    if (pattern == p) op.fast_shape = shape;
  }
  switch (op.fast_shape) {
    case kT:
      op.t.emplace(op.handle.typed<SigT>());
      break;
    case kTT:
      op.tt.emplace(op.handle.typed<SigTT>());
      break;
    case kTS:
      op.ts.emplace(op.handle.typed<SigTS>());
      break;
    case kTTS:
      op.tts.emplace(op.handle.typed<SigTTS>());
      break;
    case kTSS:
      op.tss.emplace(op.handle.typed<SigTSS>());
      break;
    default:
      return;
  }
  op.fast_args = pattern.size();
  op.fast_schema = &schema;
  const Argument& last = schema.arguments().back();
  if (last.type.kind == TypeKind::Scalar && last.default_value) {
    op.fast_default = default_to_ivalue(*last.default_value, last.type).to_scalar();
  }
}

/// A Scalar from an INT/FLOAT/BOOL value, or nullopt.
inline std::optional<Scalar> scalar_of(const LoomValue& v) {
  switch (v.kind) {
    case LOOM_VALUE_INT:
      return Scalar(v.u.i);
    case LOOM_VALUE_FLOAT:
      return Scalar(v.u.f);
    case LOOM_VALUE_BOOL:
      return Scalar(v.u.b);
    default:
      return std::nullopt;
  }
}

/// The fast path: true if it handled the call (the result is in *out).
bool try_fast_call(const LoomOp* op, const LoomValue* args, size_t num_args, LoomTensor** out) {
  if (!op->handle.has_schema() || &op->handle.schema() != op->fast_schema) return false;
  const size_t n = op->fast_args;
  if (num_args != n && !(num_args + 1 == n && op->fast_default)) return false;
  const LoomValue* a0 = args;
  if (a0->kind != LOOM_VALUE_TENSOR || a0->u.tensor == nullptr) return false;
  const BorrowedTensor t0(a0->u.tensor);
  auto tensor_at = [&](size_t i) -> const LoomTensor* {
    const LoomValue* v = value_at(args, i);
    return v->kind == LOOM_VALUE_TENSOR ? v->u.tensor : nullptr;
  };
  auto scalar_at = [&](size_t i) -> std::optional<Scalar> {
    if (i >= num_args) return op->fast_default;
    return scalar_of(*value_at(args, i));
  };
  switch (op->fast_shape) {
    case kT: {
      *out = give(op->t->call(t0.get()));
      return true;
    }
    case kTT: {
      const LoomTensor* b = tensor_at(1);
      if (b == nullptr) return false;
      const BorrowedTensor t1(b);
      *out = give(op->tt->call(t0.get(), t1.get()));
      return true;
    }
    case kTS: {
      const std::optional<Scalar> s1 = scalar_at(1);
      if (!s1) return false;
      *out = give(op->ts->call(t0.get(), *s1));
      return true;
    }
    case kTTS: {
      const LoomTensor* b = tensor_at(1);
      const std::optional<Scalar> s2 = scalar_at(2);
      if (b == nullptr || !s2) return false;
      const BorrowedTensor t1(b);
      *out = give(op->tts->call(t0.get(), t1.get(), *s2));
      return true;
    }
    case kTSS: {
      const std::optional<Scalar> s1 = scalar_at(1), s2 = scalar_at(2);
      if (!s1 || !s2) return false;
      *out = give(op->tss->call(t0.get(), *s1, *s2));
      return true;
    }
    default:
      return false;
  }
}

LoomStatus* op_find(const char* name, const LoomOp** out) {
  LOOM_CAPI_NOT_NULL("OpFind", name);
  LOOM_CAPI_NOT_NULL("OpFind", out);
  LOOM_CAPI_TRY
  const OperatorHandle h = Dispatcher::instance().find_op_or_throw(name);
  // One LoomOp per operator, kept for the process (an op handle outlives plugin unloads: a
  // call after its plugin left fails with the dispatcher's error, not a dangling pointer).
  static std::mutex mu;
  static auto* ops = new std::map<const void*, LoomOp*>();
  std::lock_guard<std::mutex> lock(mu);
  LoomOp*& slot = (*ops)[h.entry()];
  if (slot == nullptr) {
    slot = new LoomOp();
    slot->handle = h;
    slot->name = h.name();
    slot->schema = h.schema().str();
    classify(*slot, h.schema());
  }
  *out = slot;
  LOOM_CAPI_CATCH_ECHOING(name)
}

const char* op_schema(const LoomOp* op) { return op ? op->schema.c_str() : ""; }
const char* op_name(const LoomOp* op) { return op ? op->name.c_str() : ""; }

LoomStatus* op_list_create(LoomOpList** out) {
  LOOM_CAPI_NOT_NULL("OpListCreate", out);
  LOOM_CAPI_TRY
  auto list = std::make_unique<LoomOpList>();
  for (const OperatorHandle& h : Dispatcher::instance().ops()) {
    // Only defined ops (an op may have kernels and no schema); one whose plugin unloads while
    // the list is made is left out.
    try {
      if (h.has_schema()) list->ops.emplace_back(h.name(), h.schema().str());
    } catch (const NotImplementedError&) {
    }
  }
  std::sort(list->ops.begin(), list->ops.end());
  *out = list.release();
  LOOM_CAPI_CATCH
}
size_t op_list_size(const LoomOpList* list) { return list ? list->ops.size() : 0; }
LoomStatus* op_list_get(const LoomOpList* list, size_t index, const char** name,
                        const char** schema) {
  LOOM_CAPI_NOT_NULL("OpListGet", list);
  if (index >= list->ops.size()) {
    return make_status(LOOM_INDEX_ERROR,
                       str_cat("OpListGet: index ", index, " is out of range for a list of ",
                               list->ops.size(), " ops"));
  }
  if (name) *name = list->ops[index].first.c_str();
  if (schema) *schema = list->ops[index].second.c_str();
  return nullptr;
}
void op_list_release(LoomOpList* list) { delete list; }

LoomStatus* op_argument_enum_names(const LoomOp* op, const char* argument,
                                   const char* const** out) {
  LOOM_CAPI_NOT_NULL("OpArgumentEnumNames", op);
  LOOM_CAPI_NOT_NULL("OpArgumentEnumNames", argument);
  LOOM_CAPI_NOT_NULL("OpArgumentEnumNames", out);
  LOOM_CAPI_TRY
  const FunctionSchema& schema = op->handle.schema();
  const std::optional<size_t> i = schema.argument_index(argument);
  if (!i) {
    std::string names;
    for (const Argument& a : schema.arguments())
      str_append(&names, names.empty() ? "" : ", ", a.name);
    LOOM_THROW(ValueError, "OpArgumentEnumNames: ", op->name, " has no argument '", argument,
               "' (its arguments: ", names, ")");
  }
  *out = enum_names(schema.arguments()[*i].type, argument);
  LOOM_CAPI_CATCH_ECHOING(argument)
}

LoomStatus* op_call(const LoomOp* op, const LoomValue* args, size_t num_args, LoomValue* returns,
                    size_t capacity, size_t* num_returns) {
  LOOM_CAPI_NOT_NULL("OpCall", op);
  LOOM_CAPI_NOT_NULL("OpCall", num_returns);
  if (LoomStatus* s = check_values("OpCall", "args", args, num_args)) return s;
  if (LoomStatus* s = check_values("OpCall", "returns", returns, capacity)) return s;
  LOOM_CAPI_TRY
  if (op->fast_shape != 0 && num_args > 0 && capacity >= 1) {
    LoomTensor* result = nullptr;
    if (try_fast_call(op, args, num_args, &result)) {
      LoomValue* r = returns;
      const uint32_t size = r->struct_size;
      std::memset(static_cast<void*>(r), 0, sizeof(LoomValue));
      r->struct_size = size;
      r->kind = LOOM_VALUE_TENSOR;
      r->u.tensor = result;
      *num_returns = 1;
      return nullptr;
    }
  }
  const FunctionSchema& schema = op->handle.schema();
  const auto& params = schema.arguments();
  LOOM_CHECK_T(TypeError, num_args <= params.size(), schema.name(), "() takes at most ",
               params.size(), " arguments but ", num_args, " were given");
  const size_t nret = schema.returns().size();
  if (capacity < nret) {
    return make_status(LOOM_INVALID_ARGUMENT,
                       str_cat("OpCall: ", schema.name(), " returns ", nret,
                               " values but the returns array holds ", capacity));
  }
  detail::PooledStack pooled;
  Stack& stack = pooled.stack;
  stack.reserve(params.size());
  for (size_t i = 0; i < num_args; ++i) {
    stack.push_back(to_ivalue(*value_at(args, i), params[i].type, schema.name(), params[i].name));
  }
  op->handle.call_boxed(stack);
  LOOM_CHECK_T(Error, stack.size() == nret, "OpCall: ", schema.name(), " left ", stack.size(),
               " values on the stack, its schema has ", nret, " returns");
  for (size_t i = 0; i < nret; ++i) {
    LoomValue* r = value_at(returns, i);
    r->struct_size = returns->struct_size;
    to_value(std::move(stack[i]), r);
  }
  *num_returns = nret;
  LOOM_CAPI_CATCH
}

void values_release(LoomValue* values, size_t count) {
  if (values == nullptr || count == 0 || values->struct_size < sizeof(LoomValue)) return;
  for (size_t i = 0; i < count; ++i) {
    LoomValue* v = value_at(values, i);
    switch (v->kind) {
      case LOOM_VALUE_TENSOR:
        if (v->u.tensor) intrusive_ptr_release(impl_of(v->u.tensor));
        break;
      case LOOM_VALUE_STRING:
        delete[] v->u.s;
        break;
      case LOOM_VALUE_INT_LIST:
        delete[] v->u.ints.data;
        break;
      case LOOM_VALUE_FLOAT_LIST:
        delete[] v->u.floats.data;
        break;
      case LOOM_VALUE_TENSOR_LIST:
        for (size_t j = 0; j < v->u.tensors.size; ++j) {
          if (v->u.tensors.data[j]) intrusive_ptr_release(impl_of(v->u.tensors.data[j]));
        }
        delete[] v->u.tensors.data;
        break;
      default:
        break;
    }
    const uint32_t size = v->struct_size;
    std::memset(static_cast<void*>(v), 0, sizeof(LoomValue));
    v->struct_size = size;
  }
}

}  // namespace

void fill_op_entries(LoomApi& api) {
  api.OpFind = &op_find;
  api.OpSchema = &op_schema;
  api.OpCall = &op_call;
  api.ValuesRelease = &values_release;
  api.OpListCreate = &op_list_create;
  api.OpListSize = &op_list_size;
  api.OpListGet = &op_list_get;
  api.OpListRelease = &op_list_release;
  api.OpName = &op_name;
  api.OpArgumentEnumNames = &op_argument_enum_names;
}

}  // namespace loom::capi
