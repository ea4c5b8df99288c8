#include "loom/dispatcher/kernel.h"

#include "absl/strings/str_join.h"
#include "loom/core/str_cat.h"

namespace loom {

KernelFunction KernelFunction::from_boxed(BoxedFunction f) {
  LOOM_CHECK_T(RegistrationError, static_cast<bool>(f), "from_boxed: the boxed function is empty");
  KernelFunction k;
  k.functor_ = std::shared_ptr<void>(new BoxedFunction(std::move(f)),
                                     [](void* p) { delete static_cast<BoxedFunction*>(p); });
  k.boxed_ = [](void* functor, const OperatorHandle& op, Stack& stack) {
    (*static_cast<BoxedFunction*>(functor))(op, stack);
  };
  return k;
}

KernelFunction KernelFunction::fallthrough() {
  KernelFunction k;
  k.fallthrough_ = true;
  return k;
}

std::string InferredSignature::str() const {
  std::vector<std::string> a, r;
  for (const auto& t : arguments) a.push_back(t.str());
  for (const auto& t : returns) r.push_back(t.str());
  const std::string rets = r.size() == 1 ? r[0] : loom::str_cat("(", absl::StrJoin(r, ", "), ")");
  return loom::str_cat("(", absl::StrJoin(a, ", "), ") -> ", rets);
}

namespace {
// Strips what C++ cannot express: fixed list sizes, SymInt, and the int-backed enums.
bool kernel_type_matches(const Type& schema, const Type& cpp) {
  TypeKind sk = schema.kind;
  if (sk == TypeKind::Layout || sk == TypeKind::MemoryFormat) sk = TypeKind::Int;
  if (sk != cpp.kind) return false;
  if (sk == TypeKind::List || sk == TypeKind::Optional) {
    return kernel_type_matches(schema.element(), cpp.element());
  }
  return true;
}
}  // namespace

std::string signature_mismatch(const FunctionSchema& schema, const InferredSignature& sig) {
  const auto& args = schema.arguments();
  if (args.size() != sig.arguments.size()) {
    return loom::str_cat("the schema has ", args.size(), " arguments but the C++ function takes ",
                         sig.arguments.size());
  }
  for (size_t i = 0; i < args.size(); ++i) {
    if (!kernel_type_matches(args[i].type, sig.arguments[i])) {
      return loom::str_cat("argument ", i, " '", args[i].name, "' is ", args[i].type.str(),
                           " in the schema but ", sig.arguments[i].str(), " in the C++ function");
    }
  }
  const auto& rets = schema.returns();
  if (rets.size() != sig.returns.size()) {
    return loom::str_cat("the schema returns ", rets.size(),
                         " values but the C++ function returns ", sig.returns.size());
  }
  for (size_t i = 0; i < rets.size(); ++i) {
    if (!kernel_type_matches(rets[i].type, sig.returns[i])) {
      return loom::str_cat("return ", i, " is ", rets[i].type.str(), " in the schema but ",
                           sig.returns[i].str(), " in the C++ function");
    }
  }
  return "";
}

}  // namespace loom
