// libloom.so: registering ops, C kernels and C backward functions through the stable ABI.
//
// Note [C kernels]: a LoomKernelFn becomes a boxed KernelFunction. The boxed kernel lends the
// op's arguments to the C function as borrowed LoomValues (no reference-count traffic), gives
// it a zeroed returns array, and converts what it wrote back by the schema's return types,
// taking over the references it handed out. A status the C function returns is rethrown as the
// Loom error of its code (throw_status, Note [C ABI error codes] in capi.cpp), so a C kernel's
// error reads like any other kernel's and keeps its code on the way back to a C caller. A C
// backward is an ordinary derivative formula (autograd/derivative.h) that saves every tensor
// argument and tensor return, so custom ops get autograd exactly as built-in ones.
#include <memory>

#include "capi_internal.h"
#include "loom/autograd/derivative.h"
#include "loom/core/error.h"
#include "loom/dispatcher/library.h"
#include "loom/dispatcher/plugin.h"

namespace loom::capi {
/// user_data plus its release function, called when the registration is undone (never for a
/// registration that failed: the caller still owns user_data then).
struct UserData {
  /// Calls release now (once): the registration was undone.
  void release_now() {
    LoomReleaseFn r = release;
    release = nullptr;
    if (r) r(data);
  }
  UserData(void* d, LoomReleaseFn r) : data(d), release(r) {}
  UserData(const UserData&) = delete;
  UserData& operator=(const UserData&) = delete;
  ~UserData() {
    if (release) release(data);
  }
  void* data;
  LoomReleaseFn release;
};

}  // namespace loom::capi

/// A set of registrations (the opaque LoomLibrary of capi.h).
///
/// The dispatcher keeps an unregistered kernel (and so its user data) alive until its plugin
/// unloads, or forever for registrations made by a program, because another thread may still
/// be running it. The C ABI promises release "when the registration is undone", so the library
/// calls each release itself right after undoing its registrations.
struct LoomLibrary {
  LoomLibrary(loom::Library lib, bool owned) : library(std::move(lib)), plugin_owned(owned) {}
  ~LoomLibrary() {
    library = loom::Library(loom::Library::Kind::Fragment, "", std::nullopt);  // undo first
    for (auto& ud : user_data) ud->release_now();
    // A backward function's user data is released once no autograd node that may still call
    // it is left: now, or when the last such graph goes (Note [Graphs keep their plugin]).
    backward_guards.clear();
  }
  /// Adds the library's newest registration to its plugin's log (`loom plugin check` lists it).
  void log_newest() {
    if (context != nullptr && !library.log().empty()) {
      context->keep(loom::RegistrationHandle(), library.log().back());
    }
  }
  loom::Library library;                   ///< owns the registrations
  bool plugin_owned;                       ///< true: the plugin context frees it at unload
  loom::PluginContext* context = nullptr;  ///< the owning plugin's context, while it loads
  std::vector<std::shared_ptr<loom::capi::UserData>> user_data;  ///< of its kernels
  /// Of its backward functions: each releases its user data when the library and every
  /// autograd node made with it have let go (DerivativeOptions::keep_alive).
  std::vector<std::shared_ptr<void>> backward_guards;
};

/// What a C backward function sees (the opaque LoomBackwardContext of capi.h).
struct LoomBackwardContext {
  loom::autograd::BackwardContext* ctx;         ///< the formula's context
  const loom::FunctionSchema* schema;           ///< the op's schema
  std::vector<loom::Tensor> inputs;             ///< tensor slots, in schema order
  std::vector<loom::Tensor> outputs;            ///< saved tensor returns
  loom::autograd::variable_list grads;          ///< gradients set by the C function, one per slot
  std::vector<std::vector<LoomTensor*>> lists;  ///< storage for borrowed list arguments
  std::vector<loom::IValue> args;               ///< arguments read by BackwardArgument, kept alive
};

namespace loom::capi {
namespace {

constexpr size_t kInlineValues = 12;

KernelFunction c_kernel(LoomKernelFn fn, std::shared_ptr<UserData> ud) {
  return KernelFunction::from_boxed([fn, ud](const OperatorHandle& op, Stack& stack) {
    const FunctionSchema& schema = op.schema();
    const size_t nargs = schema.arguments().size();
    const size_t nret = schema.returns().size();
    const size_t first = stack.size() - nargs;
    LoomValue inline_args[kInlineValues];
    LoomValue inline_rets[kInlineValues];
    std::vector<LoomValue> heap_args, heap_rets;
    LoomValue* args = inline_args;
    LoomValue* rets = inline_rets;
    if (nargs > kInlineValues) {
      heap_args.resize(nargs);
      args = heap_args.data();
    }
    if (nret > kInlineValues) {
      heap_rets.resize(nret);
      rets = heap_rets.data();
    }
    std::vector<std::vector<LoomTensor*>> lists;
    for (size_t i = 0; i < nargs; ++i) to_borrowed_value(stack[first + i], &args[i], lists);
    for (size_t i = 0; i < nret; ++i) {
      std::memset(static_cast<void*>(&rets[i]), 0, sizeof(LoomValue));
      rets[i].struct_size = sizeof(LoomValue);
    }
    LoomStatus* s = fn(ud->data, args, nargs, rets, nret);
    if (s != nullptr) {
      // Drop whatever the kernel handed out before failing.
      for (size_t i = 0; i < nret; ++i) {
        if (rets[i].kind == LOOM_VALUE_TENSOR && rets[i].u.tensor) {
          intrusive_ptr_release(impl_of(rets[i].u.tensor));
        } else if (rets[i].kind == LOOM_VALUE_TENSOR_LIST && rets[i].u.tensors.data) {
          for (size_t j = 0; j < rets[i].u.tensors.size; ++j) {
            if (rets[i].u.tensors.data[j])
              intrusive_ptr_release(impl_of(rets[i].u.tensors.data[j]));
          }
        }
      }
      throw_status(s, schema.name());
    }
    std::vector<IValue> out;
    out.reserve(nret);
    std::exception_ptr error;
    for (size_t i = 0; i < nret; ++i) {
      const Argument& r = schema.returns()[i];
      try {
        if (!error) out.push_back(to_ivalue(rets[i], r.type, schema.name(), "", i));
      } catch (...) {
        error = std::current_exception();
      }
      // The kernel's references are ours now (to_ivalue took its own).
      if (rets[i].kind == LOOM_VALUE_TENSOR && rets[i].u.tensor) {
        intrusive_ptr_release(impl_of(rets[i].u.tensor));
      } else if (rets[i].kind == LOOM_VALUE_TENSOR_LIST && rets[i].u.tensors.data) {
        for (size_t j = 0; j < rets[i].u.tensors.size; ++j) {
          if (rets[i].u.tensors.data[j]) intrusive_ptr_release(impl_of(rets[i].u.tensors.data[j]));
        }
      }
    }
    if (error) std::rethrow_exception(error);
    for (size_t i = 0; i < nret; ++i) {
      const Argument& r = schema.returns()[i];
      if (r.type.kind != TypeKind::Tensor) continue;
      // A TENSOR whose pointer is NULL reads as an undefined tensor; say so rather than that
      // a Tensor is not a Tensor.
      LOOM_CHECK_T(TypeError, !out[i].is_tensor() || out[i].to_tensor().defined(), schema.name(),
                   ": the C kernel returned a NULL tensor for return ", i,
                   " (Tensor); return a new reference to a tensor (a kernel that has nothing to "
                   "return fails with a status instead)");
      LOOM_CHECK_T(TypeError, out[i].is_tensor(), schema.name(), ": the C kernel returned ",
                   out[i].type_name(), " for return ", i, " but the schema says Tensor");
    }
    stack.resize(first);
    for (IValue& v : out) stack.push_back(std::move(v));
  });
}

// ---- libraries ----

// LOOM_VALUE_ERROR unless ns (of entry point fn) is NULL or a namespace the schema language can
// write: a library of "" or "a b" could define no op, since no schema names it.
LoomStatus* check_namespace(const char* fn, const char* ns) {
  if (ns == nullptr || is_schema_identifier(ns)) return nullptr;
  return make_status(LOOM_VALUE_ERROR,
                     str_cat(fn, ": namespace '", message_excerpt(ns),
                             "' is not an identifier (ASCII letters, digits and '_', not starting "
                             "with a digit, as in \"myops\")",
                             *ns == '\0' ? "; pass NULL for a library of no namespace" : ""));
}

LoomStatus* library_create(const char* ns, LoomLibrary** out) {
  LOOM_CAPI_NOT_NULL("LibraryCreate", out);
  if (LoomStatus* s = check_namespace("LibraryCreate", ns)) return s;
  LOOM_CAPI_TRY
  *out = ns ? new LoomLibrary(Library(Library::Kind::Def, ns, std::nullopt), false)
            : new LoomLibrary(Library(Library::Kind::Fragment, "", std::nullopt), false);
  LOOM_CAPI_CATCH_ECHOING(ns ? ns : "")
}

LoomStatus* plugin_library(LoomPluginContext* ctx, const char* ns, LoomLibrary** out) {
  LOOM_CAPI_NOT_NULL("PluginLibrary", ctx);
  LOOM_CAPI_NOT_NULL("PluginLibrary", out);
  if (LoomStatus* s = check_namespace("PluginLibrary", ns)) return s;
  LOOM_CAPI_TRY
  auto& context = *reinterpret_cast<PluginContext*>(ctx);
  auto* lib = ns ? new LoomLibrary(Library(Library::Kind::Def, ns, std::nullopt), true)
                 : new LoomLibrary(Library(Library::Kind::Fragment, "", std::nullopt), true);
  // Its kernels are the plugin's provider ("which provider implements this op" names it).
  lib->library.set_provider(context.name());
  context.keep(RegistrationHandle([lib] { delete lib; }),
               str_cat("stable-ABI library '", ns ? ns : "", "'"));
  lib->context = &context;
  *out = lib;
  LOOM_CAPI_CATCH_ECHOING(ns ? ns : "")
}

void library_release(LoomLibrary* lib) {
  if (lib != nullptr && !lib->plugin_owned) delete lib;
}

LoomStatus* library_def(LoomLibrary* lib, const char* schema) {
  LOOM_CAPI_NOT_NULL("LibraryDef", lib);
  LOOM_CAPI_NOT_NULL("LibraryDef", schema);
  LOOM_CAPI_TRY
  lib->library.def(schema);
  lib->log_newest();
  LOOM_CAPI_CATCH_ECHOING(schema)
}

LoomStatus* library_impl(LoomLibrary* lib, const char* op, const char* key, LoomKernelFn fn,
                         void* user_data, LoomReleaseFn release) {
  LOOM_CAPI_NOT_NULL("LibraryImpl", lib);
  LOOM_CAPI_NOT_NULL("LibraryImpl", op);
  LOOM_CAPI_NOT_NULL("LibraryImpl", key);
  LOOM_CAPI_NOT_NULL("LibraryImpl", fn);
  auto ud = std::make_shared<UserData>(user_data, release);
  try {
    // Version 1 refuses a kernel for an op that is not defined (the C++ API lets it wait for
    // its def, Note [Kernels wait for their def]); a stable-ABI plugin declares the plugin
    // that defines its ops as a dependency, so they are defined when it registers.
    const std::string name =
        std::string(op).find("::") != std::string::npos || lib->library.ns().empty()
            ? std::string(op)
            : str_cat(lib->library.ns(), "::", op);
    if (!Dispatcher::instance().find_op(name)) {
      LOOM_THROW(RegistrationError, "LibraryImpl(", name, ", ", key, "): no operator named '", name,
                 "' is defined; define it first (LibraryDef) or load the plugin that "
                 "defines it");
    }
    lib->library.impl_kernel(op, parse_dispatch_key(key), c_kernel(fn, ud));
    lib->user_data.push_back(ud);
    lib->log_newest();
  } catch (...) {
    ud->release = nullptr;  // refused: user_data stays the caller's
    return status_from_current_exception(op);
  }
  return nullptr;
}

LoomStatus* library_impl_backward(LoomLibrary* lib, const char* op, LoomBackwardFn fn,
                                  void* user_data, LoomReleaseFn release) {
  LOOM_CAPI_NOT_NULL("LibraryImplBackward", lib);
  LOOM_CAPI_NOT_NULL("LibraryImplBackward", op);
  LOOM_CAPI_NOT_NULL("LibraryImplBackward", fn);
  auto ud = std::make_shared<UserData>(user_data, release);
  try {
    const std::string name = std::string(op).find("::") == std::string::npos
                                 ? str_cat(lib->library.ns(), "::", op)
                                 : std::string(op);
    const OperatorHandle h = Dispatcher::instance().find_op_or_throw(name);
    const FunctionSchema& schema = h.schema();
    std::vector<std::string> saves;
    for (const Argument& a : schema.arguments()) {
      if (a.type.is_tensor_like()) saves.push_back(a.name);
    }
    size_t tensor_returns = 0;
    for (size_t i = 0; i < schema.returns().size(); ++i) {
      if (schema.returns()[i].type.kind != TypeKind::Tensor) continue;
      saves.push_back(i == 0 ? std::string("result") : str_cat("result", i));
      ++tensor_returns;
    }
    const FunctionSchema* sp = &schema;
    auto formula = [fn, ud, sp,
                    tensor_returns](autograd::BackwardContext& c) -> autograd::variable_list {
      LoomBackwardContext bc{&c, sp, {}, {}, {}, {}, {}};
      for (const Argument& a : sp->arguments()) {
        if (!a.type.is_tensor_like()) continue;
        const Type& t = a.type.kind == TypeKind::Optional ? a.type.element() : a.type;
        if (t.kind == TypeKind::List) {
          for (Tensor& x : c.saved_list(a.name)) bc.inputs.push_back(std::move(x));
        } else {
          bc.inputs.push_back(c.saved(a.name));
        }
      }
      for (size_t i = 0; i < tensor_returns; ++i) bc.outputs.push_back(c.result(i));
      bc.grads.resize(bc.inputs.size());
      LoomStatus* s = fn(ud->data, &bc);
      if (s != nullptr) throw_status(s, str_cat(c.op_name(), " backward"));
      return std::move(bc.grads);
    };
    // The user data outlives the library while graphs that may call fn are alive.
    std::shared_ptr<void> guard(ud.get(), [ud](void*) { ud->release_now(); });
    autograd::DerivativeOptions options;
    options.keep_alive = guard;
    lib->library.impl_kernel(
        name, DispatchKey::Autograd,
        autograd::derivative_kernel(std::move(saves), std::move(formula), std::move(options)));
    lib->backward_guards.push_back(std::move(guard));
    lib->log_newest();
  } catch (...) {
    ud->release = nullptr;  // refused: user_data stays the caller's
    return status_from_current_exception(op);
  }
  return nullptr;
}

// ---- inside a backward function ----
size_t bw_num_inputs(const LoomBackwardContext* c) { return c ? c->inputs.size() : 0; }
size_t bw_num_outputs(const LoomBackwardContext* c) { return c ? c->outputs.size() : 0; }

LoomStatus* bw_tensor(const char* fn, const std::vector<Tensor>& v, size_t i, const char* what,
                      const LoomTensor** out) {
  LOOM_CAPI_NOT_NULL(fn, out);
  if (i >= v.size()) {
    return make_status(LOOM_INDEX_ERROR, str_cat(fn, ": ", what, " ", i,
                                                 " is out of range (the op has ", v.size(), ")"));
  }
  *out = reinterpret_cast<const LoomTensor*>(v[i].impl());
  return nullptr;
}
LoomStatus* bw_input(const LoomBackwardContext* c, size_t i, const LoomTensor** out) {
  LOOM_CAPI_NOT_NULL("BackwardInput", c);
  return bw_tensor("BackwardInput", c->inputs, i, "tensor input", out);
}
LoomStatus* bw_output(const LoomBackwardContext* c, size_t i, const LoomTensor** out) {
  LOOM_CAPI_NOT_NULL("BackwardOutput", c);
  return bw_tensor("BackwardOutput", c->outputs, i, "output", out);
}
LoomStatus* bw_grad_output(const LoomBackwardContext* c, size_t i, const LoomTensor** out) {
  LOOM_CAPI_NOT_NULL("BackwardGradOutput", c);
  LOOM_CAPI_NOT_NULL("BackwardGradOutput", out);
  if (i >= c->outputs.size()) {
    return make_status(LOOM_INDEX_ERROR,
                       str_cat("BackwardGradOutput: output ", i, " is out of range (the op has ",
                               c->outputs.size(), ")"));
  }
  LOOM_CAPI_TRY
  *out = reinterpret_cast<const LoomTensor*>(c->ctx->grad(i).impl());
  LOOM_CAPI_CATCH
}
bool bw_needs_input_grad(const LoomBackwardContext* c, size_t i) {
  if (c == nullptr || i >= c->inputs.size()) return false;
  try {
    return c->ctx->needs_grad(i);
  } catch (...) {
    return false;
  }
}
LoomStatus* bw_set_grad_input(LoomBackwardContext* c, size_t i, LoomTensor* grad) {
  LOOM_CAPI_NOT_NULL("BackwardSetGradInput", c);
  if (i >= c->grads.size()) {
    return make_status(LOOM_INDEX_ERROR,
                       str_cat("BackwardSetGradInput: tensor input ", i,
                               " is out of range (the op has ", c->grads.size(), ")"));
  }
  c->grads[i] = borrow(grad);
  return nullptr;
}
LoomStatus* bw_argument(const LoomBackwardContext* c, size_t position, LoomValue* out) {
  LOOM_CAPI_NOT_NULL("BackwardArgument", c);
  LOOM_CAPI_NOT_NULL("BackwardArgument", out);
  LOOM_CAPI_TRY
  const auto& params = c->schema->arguments();
  LOOM_CHECK_T(IndexError, position < params.size(), "BackwardArgument: position ", position,
               " is out of range: ", c->schema->name(), " has ", params.size(), " arguments");
  LOOM_CHECK_T(TypeError, !params[position].type.is_tensor_like(), "BackwardArgument: argument ",
               position, " ('", params[position].name,
               "') is a tensor; read it with BackwardInput");
  auto* mc = const_cast<LoomBackwardContext*>(c);
  mc->args.reserve(params.size());  // keeps earlier borrowed pointers valid
  mc->args.push_back(c->ctx->arg(params[position].name));
  to_borrowed_value(mc->args.back(), out, mc->lists);
  LOOM_CAPI_CATCH
}

}  // namespace

void fill_registration_entries(LoomApi& api) {
  api.LibraryCreate = &library_create;
  api.PluginLibrary = &plugin_library;
  api.LibraryRelease = &library_release;
  api.LibraryDef = &library_def;
  api.LibraryImpl = &library_impl;
  api.LibraryImplBackward = &library_impl_backward;
  api.BackwardNumInputs = &bw_num_inputs;
  api.BackwardNumOutputs = &bw_num_outputs;
  api.BackwardInput = &bw_input;
  api.BackwardOutput = &bw_output;
  api.BackwardGradOutput = &bw_grad_output;
  api.BackwardNeedsInputGrad = &bw_needs_input_grad;
  api.BackwardSetGradInput = &bw_set_grad_input;
  api.BackwardArgument = &bw_argument;
}

}  // namespace loom::capi
