#pragma once
/// @file
/// LOOM_STABLE_EXTENSION: the plugin entry point of a stable-ABI extension.
/// Part of loom/stable.hpp (include that).

#include <cstddef>

#include "loom/stable/library.hpp"

#if defined(_WIN32)
/// How the manifest entry point is exported.
#define LOOM_STABLE_EXPORT __declspec(dllexport)
#elif defined(__GNUC__)
/// How the manifest entry point is exported.
#define LOOM_STABLE_EXPORT __attribute__((visibility("default")))
#else
/// How the manifest entry point is exported.
#define LOOM_STABLE_EXPORT
#endif

#if defined(__VERSION__)
/// The build information stamped into a stable extension's manifest.
#define LOOM_STABLE_BUILD_INFO "stable ABI v" LOOM_STABLE_STR(LOOM_API_VERSION) ", " __VERSION__
#else
/// The build information stamped into a stable extension's manifest.
#define LOOM_STABLE_BUILD_INFO "stable ABI v" LOOM_STABLE_STR(LOOM_API_VERSION)
#endif
/// Stringizes a macro's value.
#define LOOM_STABLE_STR(x) LOOM_STABLE_STR_(x)
/// Implementation of LOOM_STABLE_STR.
#define LOOM_STABLE_STR_(x) #x

/// Declares a stable-ABI extension (once per shared library): its name, version, one-line
/// description and the function that registers everything, called with a
/// loom::stable::PluginRegistrar& (a function name or a non-capturing lambda):
///
///     static void register_myops(loom::stable::PluginRegistrar& r) {
///       auto& m = r.library("myops");
///       m.def("scale(Tensor x, float k) -> Tensor");
///       m.impl("scale", "CPU", [](const std::vector<loom::stable::Value>& a) { ... });
///     }
///     LOOM_STABLE_EXTENSION("myops", "1.0", "my custom ops", register_myops)
///
/// An exception from the register function refuses the plugin with its message.
#define LOOM_STABLE_EXTENSION(NAME, VERSION, DESCRIPTION, REGISTER_FN) \
  LOOM_STABLE_EXTENSION_DEPS(NAME, VERSION, DESCRIPTION, REGISTER_FN, nullptr)

/// LOOM_STABLE_EXTENSION with the names of plugins that must load first, e.g.
/// `LOOM_STABLE_EXTENSION_DEPS("myops", "1.0", "...", reg, "ops_core")`.
#define LOOM_STABLE_EXTENSION_DEPS(NAME, VERSION, DESCRIPTION, REGISTER_FN, ...)                  \
  static int loom_stable_register_plugin_(LoomPluginContext* ctx, char* error, size_t capacity) { \
    return ::loom::stable::detail::run_register(ctx, error, capacity, REGISTER_FN);               \
  }                                                                                               \
  extern "C" LOOM_STABLE_EXPORT const LoomPluginManifest* loom_plugin_manifest(void) {            \
    static const char* const deps[] = {__VA_ARGS__, nullptr};                                     \
    static const LoomPluginManifest manifest = {sizeof(LoomPluginManifest),                       \
                                                LOOM_PLUGIN_ABI_MAJOR,                            \
                                                LOOM_PLUGIN_ABI_MINOR,                            \
                                                NAME,                                             \
                                                VERSION,                                          \
                                                DESCRIPTION,                                      \
                                                deps,                                             \
                                                LOOM_STABLE_BUILD_INFO,                           \
                                                &loom_stable_register_plugin_,                    \
                                                nullptr};                                         \
    return &manifest;                                                                             \
  }
