#include "loom/dispatcher/library.h"

#include <iostream>
#include <mutex>

#include "loom/core/str_cat.h"
#include "loom/dispatcher/plugin.h"

namespace loom {

Library::Library(Kind kind, std::string ns, std::optional<DispatchKey> key,
                 std::source_location loc)
    : Library(kind, std::move(ns), key, Origin::here(loc)) {}

Library::Library(Kind kind, std::string ns, std::optional<DispatchKey> key, Origin origin)
    : kind_(kind), ns_(std::move(ns)), key_(key), origin_(std::move(origin)) {
  // A namespace is an identifier, as in schemas ("myops::scale"); Fragment and Impl libraries
  // of no namespace (ns "") register qualified names.
  LOOM_CHECK_T(RegistrationError, is_schema_identifier(ns_) || (kind_ != Kind::Def && ns_.empty()),
               "Library at ", origin_.str(), ": namespace '", message_excerpt(ns_),
               "' is not an identifier (letters, digits and '_', not starting with a digit)");
  if (kind_ == Kind::Def) {
    handles_.push_back(Dispatcher::instance().claim_namespace(ns_, origin_));
  }
}

Library::~Library() {
  while (!handles_.empty()) handles_.pop_back();  // newest first
}

std::string Library::qualify(std::string_view op) const {
  return op.find("::") == std::string_view::npos ? loom::str_cat(ns_, "::", op) : std::string(op);
}

DispatchKey Library::require_key(std::optional<DispatchKey> key, std::string_view what) const {
  if (key) return *key;
  LOOM_CHECK_T(RegistrationError, key_.has_value(), what, " at ", origin_.str(),
               ": this library has no dispatch key; use LOOM_LIBRARY_IMPL(ns, KEY, m) or pass "
               "the key explicitly");
  return *key_;
}

Library& Library::def(std::string_view schema_text, std::source_location loc) {
  const Origin origin = Origin::here(loc);
  LOOM_CHECK_T(RegistrationError, kind_ != Kind::Impl, "def(\"", schema_text, "\") at ",
               origin.str(),
               ": LOOM_LIBRARY_IMPL blocks cannot define operators; use LOOM_LIBRARY");
  FunctionSchema schema = parse_schema(schema_text);
  if (schema.ns().empty()) {
    schema.set_ns(ns_);
  } else {
    LOOM_CHECK_T(RegistrationError, schema.ns() == ns_, "def(\"", schema_text, "\") at ",
                 origin.str(), ": namespace '", schema.ns(), "' does not match the library's '",
                 ns_, "'");
  }
  std::string line = loom::str_cat("def ", schema.str());
  handles_.push_back(Dispatcher::instance().def(std::move(schema), origin));
  log_.push_back(std::move(line));
  return *this;
}

Library& Library::impl_kernel(std::string_view op, std::optional<DispatchKey> key,
                              KernelFunction kernel, std::source_location loc) {
  const Origin origin = Origin::here(loc);
  const DispatchKey k = require_key(key, loom::str_cat("impl(\"", op, "\")"));
  const std::string name = qualify(op);
  ImplOptions options = options_;
  if (options.provider.empty())
    options.provider = origin.plugin.empty() ? "default" : origin.plugin;
  std::string line = loom::str_cat("impl ", name, " for ", dispatch_key_name(k), " (provider '",
                                   options.provider, "', priority ", options.priority, ")");
  handles_.push_back(Dispatcher::instance().impl(name, k, std::move(kernel), options, origin));
  log_.push_back(std::move(line));
  return *this;
}

Library& Library::fallback(KernelFunction kernel, std::source_location loc) {
  const Origin origin = Origin::here(loc);
  const DispatchKey k = require_key(std::nullopt, "fallback()");
  std::string line = loom::str_cat("fallback for ", dispatch_key_name(k),
                                   kernel.is_fallthrough() ? " (fallthrough)" : "");
  handles_.push_back(Dispatcher::instance().fallback(k, std::move(kernel), origin));
  log_.push_back(std::move(line));
  return *this;
}

namespace detail {
namespace {
struct StaticLibraries {
  std::mutex mu;
  std::vector<Library> libraries;
  std::vector<std::string> errors;
};
StaticLibraries& static_libraries() {
  static auto* s = new StaticLibraries();  // leaked: registrations last until exit
  return *s;
}
}  // namespace

Library run_library_block(const LibraryBlock& block) {
  std::optional<DispatchKey> key;
  if (block.key) key = parse_dispatch_key(block.key);
  Library lib(block.kind, block.ns, key,
              Origin{current_registering_plugin(), Origin::relative_path(block.file), block.line});
  block.body(lib);
  return lib;
}

void submit_library_block(const LibraryBlock& block) {
  if (defer_library_block_to_opening_plugin(block)) return;
  try {
    Library lib = run_library_block(block);
    auto& s = static_libraries();
    std::lock_guard<std::mutex> lock(s.mu);
    s.libraries.push_back(std::move(lib));
  } catch (...) {
    // Whatever it threw (a non-std exception too): a static initialiser must not end the
    // program, and the block's registrations were rolled back with its Library.
    std::string why = "a non-standard exception (not derived from std::exception)";
    try {
      throw;
    } catch (const std::exception& e) {
      why = e.what();
    } catch (...) {
    }
    const std::string msg = loom::str_cat("loom: the registration block at ", block.file, ":",
                                          block.line, " failed and was rolled back: ", why);
    std::cerr << msg << "\n";
    auto& s = static_libraries();
    std::lock_guard<std::mutex> lock(s.mu);
    s.errors.push_back(msg);
  }
}

}  // namespace detail

std::vector<std::string> static_registration_errors() {
  auto& s = detail::static_libraries();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.errors;
}

}  // namespace loom
