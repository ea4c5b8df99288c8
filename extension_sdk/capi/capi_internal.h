// Internals of libloom.so (the stable C ABI of include/loom/capi.h); not installed.
//
// Note [C ABI handles]: a LoomTensor* is the TensorImpl* itself, carrying one reference of
// the intrusive count, so handing a tensor across the boundary allocates nothing. A LoomOp*
// is the dispatcher's OperatorEntry* (entries live as long as the process). A LoomStatus is
// heap-allocated only on failure. Every entry point catches every exception: nothing but a
// status crosses the boundary.
#pragma once

#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loom/capi.h"
#include "loom/core/error.h"
#include "loom/core/tensor.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/ivalue.h"
#include "loom/dispatcher/schema.h"

/// An operator handle as the C ABI hands it out (one per operator, never freed).
struct LoomOp {
  loom::OperatorHandle handle;  ///< the dispatcher's handle
  std::string name;             ///< its full name, for OpName
  std::string schema;           ///< its schema text, for OpSchema
  /// Note [C ABI fast path]: ops whose schema is one of a few common shapes (tensors and
  /// Scalars in, one new Tensor out) are called through a typed handle, skipping the boxed
  /// stack; fast_shape says which shape (0: none), fast_default the value of a trailing
  /// defaulted Scalar a caller may omit.
  int fast_shape = 0;
  /// The schema the fast shape was derived from: a call whose op has been redefined since
  /// (a plugin reloaded with another schema) takes the checked boxed path instead.
  const loom::FunctionSchema* fast_schema = nullptr;
  size_t fast_args = 0;                      ///< arguments of the fast shape
  std::optional<loom::Scalar> fast_default;  ///< default of the last argument, if any
  /// The typed handle of the fast shape (signature checked once, at OpFind).
  std::optional<loom::OperatorHandle::Typed<loom::Tensor(const loom::Tensor&)>> t;
  std::optional<loom::OperatorHandle::Typed<loom::Tensor(const loom::Tensor&, const loom::Tensor&)>>
      tt;  ///< (Tensor, Tensor)
  std::optional<loom::OperatorHandle::Typed<loom::Tensor(const loom::Tensor&, const loom::Scalar&)>>
      ts;  ///< (Tensor, Scalar)
  std::optional<loom::OperatorHandle::Typed<loom::Tensor(const loom::Tensor&, const loom::Tensor&,
                                                         const loom::Scalar&)>>
      tts;  ///< (Tensor, Tensor, Scalar)
  std::optional<loom::OperatorHandle::Typed<loom::Tensor(const loom::Tensor&, const loom::Scalar&,
                                                         const loom::Scalar&)>>
      tss;  ///< (Tensor, Scalar, Scalar)
};

/// A failed call's outcome (the opaque LoomStatus of capi.h).
struct LoomStatus {
  LoomErrorCode code;   ///< one of the LOOM_* codes
  std::string message;  ///< what went wrong, in Loom's words
};

namespace loom::capi {

/// LOOM_INVALID_ARGUMENT as a Loom exception (Note [C ABI error codes] in capi.cpp): misuse of
/// the C API, such as a NULL pointer where data is needed. C++ code sees a ValueError.
class InvalidArgumentError : public ValueError {
 public:
  using ValueError::ValueError;
};

/// LOOM_OUT_OF_MEMORY returned by a C kernel, as a Loom exception (Note [C ABI error codes]).
class OutOfMemoryError : public Error {
 public:
  using Error::Error;
};

/// A new status (never null).
LoomStatus* make_status(LoomErrorCode code, std::string message);
/// The status for the exception being handled (call only inside a catch block): its code from
/// the exception's type, its message as message_for_c gives it (with echoed_input, the text the
/// caller passed that the message may quote).
LoomStatus* status_from_current_exception(std::string_view echoed_input = {});
/// Rethrows a status a C kernel or backward function returned as the Loom exception of its
/// code, and frees it; `where` names the function when the status has no message.
[[noreturn]] void throw_status(LoomStatus* status, const std::string& where);
/// A Loom error message as C clients read it: without source locations of Loom's files
/// ("plugin 'ops_core' at ops/core/cpu/binary.cpp:300" becomes "plugin 'ops_core'") and with
/// the C API's words for C++-only advice (LOOM_LIBRARY blocks, anomaly mode). Where it quotes
/// echoed_input (a name or schema the client passed, which C++ messages quote whole) and that
/// is longer than kMessageExcerptChars, it quotes message_excerpt(echoed_input) instead: a
/// megabyte-long name gives a short message.
std::string message_for_c(const std::string& message, std::string_view echoed_input = {});
/// LOOM_INVALID_ARGUMENT for a null pointer argument `what` of function `fn`.
LoomStatus* null_argument(const char* fn, const char* what);

/// The TensorImpl behind a handle.
inline TensorImpl* impl_of(const LoomTensor* t) {
  return reinterpret_cast<TensorImpl*>(const_cast<LoomTensor*>(t));
}
/// A Tensor sharing the handle's tensor (adds a reference; null gives an undefined tensor).
inline Tensor borrow(const LoomTensor* t) {
  return t ? Tensor(boost::intrusive_ptr<TensorImpl>(impl_of(t), /*add_ref=*/true)) : Tensor();
}
/// Hands t's reference to the caller (undefined gives null); t is left undefined.
inline LoomTensor* give(Tensor t) {
  if (!t.defined()) return nullptr;
  // Steal the reference: no count traffic (t is a by-value local, so the cast is sound).
  auto& p = const_cast<boost::intrusive_ptr<TensorImpl>&>(t.impl_ptr());
  return reinterpret_cast<LoomTensor*>(p.detach());
}

/// A Tensor view of a handle for the duration of a call, without touching the reference
/// count: it is never destroyed, so it never gives back the reference it never took.
class BorrowedTensor {
 public:
  /// Views t (not null).
  explicit BorrowedTensor(const LoomTensor* t) {
    new (buf_) Tensor(boost::intrusive_ptr<TensorImpl>(impl_of(t), /*add_ref=*/false));
  }
  BorrowedTensor(const BorrowedTensor&) = delete;
  BorrowedTensor& operator=(const BorrowedTensor&) = delete;
  /// The tensor.
  const Tensor& get() const { return *std::launder(reinterpret_cast<const Tensor*>(buf_)); }

 private:
  alignas(Tensor) unsigned char buf_[sizeof(Tensor)];
};

/// The i-th element of a client's value array (clients step by their own struct_size).
inline const LoomValue* value_at(const LoomValue* base, size_t i) {
  const size_t stride = base->struct_size;
  return reinterpret_cast<const LoomValue*>(reinterpret_cast<const char*>(base) + i * stride);
}
/// Mutable form of value_at.
inline LoomValue* value_at(LoomValue* base, size_t i) {
  const size_t stride = base->struct_size;
  return reinterpret_cast<LoomValue*>(reinterpret_cast<char*>(base) + i * stride);
}
/// Checks a client value array's stride; null if usable, else a status.
LoomStatus* check_values(const char* fn, const char* what, const LoomValue* values, size_t n);

/// A client's boxed value as the IValue the argument's schema type wants. Messages name op and
/// the argument called arg, or return *return_index when the value is a kernel's return.
IValue to_ivalue(const LoomValue& v, const Type& type, const std::string& op,
                 const std::string& arg, std::optional<size_t> return_index = std::nullopt);
/// Writes an IValue into a value handed to the client (tensors as new references, lists and
/// strings heap-allocated: ValuesRelease frees them).
void to_value(IValue iv, LoomValue* out);
/// Writes an IValue as a borrowed view (tensors not retained; lists point into iv): for values
/// the library hands to kernels for the duration of a call. iv must outlive out.
void to_borrowed_value(const IValue& iv, LoomValue* out,
                       std::vector<std::vector<LoomTensor*>>& lists);

/// The table's tensor/autograd/op/registration entries (each file fills its part).
void fill_tensor_entries(LoomApi& api);
void fill_op_entries(LoomApi& api);
void fill_registration_entries(LoomApi& api);

}  // namespace loom::capi

/// Opens an entry point's body: exceptions become statuses.
#define LOOM_CAPI_TRY try {
/// Closes an entry point's body.
#define LOOM_CAPI_CATCH                                   \
  }                                                       \
  catch (...) {                                           \
    return ::loom::capi::status_from_current_exception(); \
  }                                                       \
  return nullptr;
/// Closes an entry point's body whose errors may quote `input`, a string the client passed
/// (a name, a schema): message_for_c shortens each quote of a long one.
#define LOOM_CAPI_CATCH_ECHOING(input)                         \
  }                                                            \
  catch (...) {                                                \
    return ::loom::capi::status_from_current_exception(input); \
  }                                                            \
  return nullptr;
/// Fails the call with LOOM_INVALID_ARGUMENT if pointer p is null.
#define LOOM_CAPI_NOT_NULL(fn, p) \
  if ((p) == nullptr) return ::loom::capi::null_argument(fn, #p)
