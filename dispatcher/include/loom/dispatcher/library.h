#pragma once
/// @file
/// Library: the registration API (`m.def`, `m.impl`, `m.fallback`) and the
/// LOOM_LIBRARY / LOOM_LIBRARY_IMPL blocks.
///
/// Note [Deferred plugin registration]: a LOOM_LIBRARY block in a plugin does
/// not register while the plugin's .so is being opened. Its static
/// initialiser only appends the block to the plugin's pending list (the
/// loader sets that list up around dlopen); the blocks run later, from the
/// plugin's register function, with every handle recorded, so a failing
/// block rolls the whole plugin back; LOOM_LIBRARY and LOOM_LIBRARY_FRAGMENT
/// blocks run before LOOM_LIBRARY_IMPL blocks, whatever the files' link order. In an executable or
/// an ordinary linked library the block runs at static-initialisation time, as in PyTorch.

#include <optional>
#include <source_location>
#include <string>
#include <string_view>
#include <vector>

#include "loom/dispatcher/dispatcher.h"

namespace loom {

/// A set of registrations for one namespace (and, for IMPL blocks, one key). Owns their
/// handles: destroying the Library undoes them in reverse order.
class Library {
 public:
  /// DEF blocks define schemas (and may impl); IMPL blocks register kernels for one key;
  /// FRAGMENT blocks add to a namespace defined elsewhere.
  enum class Kind { Def, Impl, Fragment };

  /// A library for namespace ns (and key, for Impl).
  Library(Kind kind, std::string ns, std::optional<DispatchKey> key,
          std::source_location loc = std::source_location::current());
  /// A library whose origin is given explicitly (LOOM_LIBRARY blocks pass their file:line).
  Library(Kind kind, std::string ns, std::optional<DispatchKey> key, Origin origin);
  /// Moves the registrations (the moved-from library owns none).
  Library(Library&&) = default;
  /// Moves the registrations.
  Library& operator=(Library&&) = default;
  /// Undoes every registration, newest first.
  ~Library();

  /// Defines an operator from a schema string ("name.overload(args) -> returns"; the
  /// namespace prefix is optional and must match the library's).
  Library& def(std::string_view schema, std::source_location loc = std::source_location::current());

  /// Registers a C++ kernel (function pointer or lambda) for op at this IMPL library's key.
  template <typename F>
  Library& impl(std::string_view op, F&& kernel,
                std::source_location loc = std::source_location::current()) {
    return impl_kernel(op, std::nullopt, KernelFunction::from_functor(std::forward<F>(kernel)),
                       loc);
  }
  /// Registers a kernel for op at an explicit key.
  template <typename F>
  Library& impl(std::string_view op, DispatchKey key, F&& kernel,
                std::source_location loc = std::source_location::current()) {
    return impl_kernel(op, key, KernelFunction::from_functor(std::forward<F>(kernel)), loc);
  }
  /// Registers an already built kernel (e.g. KernelFunction::from_boxed(...)).
  Library& impl_kernel(std::string_view op, std::optional<DispatchKey> key, KernelFunction kernel,
                       std::source_location loc = std::source_location::current());
  /// Registers a boxed fallback (or KernelFunction::fallthrough()) for this IMPL library's key.
  Library& fallback(KernelFunction kernel,
                    std::source_location loc = std::source_location::current());

  /// Names the provider of this library's kernels ("reference", "onednn") and its priority.
  Library& set_provider(std::string provider, int priority = 0) {
    options_.provider = std::move(provider);
    options_.priority = priority;
    return *this;
  }

  /// The namespace.
  const std::string& ns() const { return ns_; }
  /// One line per registration ("def aten::add.Tensor(...)", "impl aten::add.Tensor CPU ...").
  const std::vector<std::string>& log() const { return log_; }

 private:
  DispatchKey require_key(std::optional<DispatchKey> key, std::string_view what) const;
  std::string qualify(std::string_view op) const;
  Kind kind_;
  std::string ns_;
  std::optional<DispatchKey> key_;
  Origin origin_;
  ImplOptions options_;
  std::vector<RegistrationHandle> handles_;
  std::vector<std::string> log_;
};

namespace detail {
/// One LOOM_LIBRARY / LOOM_LIBRARY_IMPL block, as recorded by its static initialiser.
struct LibraryBlock {
  Library::Kind kind;
  const char* ns;
  const char* key;  ///< dispatch key name for IMPL blocks (resolved when the block runs), or null
  void (*body)(Library&);
  const char* file;
  int line;
};
/// Runs block now (executables) or defers it to the plugin being opened on this thread.
/// See Note [Deferred plugin registration].
void submit_library_block(const LibraryBlock& block);
/// Runs one block into a new Library (used by submit_library_block and the plugin loader).
Library run_library_block(const LibraryBlock& block);
/// Registers a block at construction (one static object per LOOM_LIBRARY block).
struct LibraryBlockRegistrar {
  explicit LibraryBlockRegistrar(const LibraryBlock& block) { submit_library_block(block); }
};
}  // namespace detail

/// Errors raised by LOOM_LIBRARY blocks that ran at static-initialisation time. Such a block
/// is rolled back and reported on stderr instead of terminating the process.
std::vector<std::string> static_registration_errors();

}  // namespace loom

/// Token pasting helper for LOOM_CONCAT.
#define LOOM_CONCAT_INNER(a, b) a##b
/// Pastes two tokens after expanding them (unique names with __COUNTER__).
#define LOOM_CONCAT(a, b) LOOM_CONCAT_INNER(a, b)

/// Defines operators of namespace ns: `LOOM_LIBRARY(myops, m) { m.def("twice(Tensor x) -> Tensor");
/// }`
#define LOOM_LIBRARY(ns, m) \
  LOOM_LIBRARY_BLOCK_(Def, ns, nullptr, m, LOOM_CONCAT(ns##_def_, __COUNTER__))
/// Adds definitions to namespace ns from another file.
#define LOOM_LIBRARY_FRAGMENT(ns, m) \
  LOOM_LIBRARY_BLOCK_(Fragment, ns, nullptr, m, LOOM_CONCAT(ns##_frag_, __COUNTER__))
/// Registers kernels of namespace ns for dispatch key `key` (CPU, Meta, Autograd, or a
/// device backend such as CUDA, resolved by name when the block runs).
#define LOOM_LIBRARY_IMPL(ns, key, m) \
  LOOM_LIBRARY_BLOCK_(Impl, ns, #key, m, LOOM_CONCAT(ns##_##key##_impl_, __COUNTER__))

/// Implementation of the LOOM_LIBRARY* macros: a static registrar plus the block's body.
#define LOOM_LIBRARY_BLOCK_(kind, ns, key, m, uid)                                              \
  static void LOOM_CONCAT(loom_library_body_, uid)(::loom::Library&);                           \
  static const ::loom::detail::LibraryBlockRegistrar LOOM_CONCAT(loom_library_reg_, uid)(       \
      ::loom::detail::LibraryBlock{::loom::Library::Kind::kind, #ns, key,                       \
                                   &LOOM_CONCAT(loom_library_body_, uid), __FILE__, __LINE__}); \
  void LOOM_CONCAT(loom_library_body_, uid)(::loom::Library & m)
