#pragma once
/// @file
/// LOOM_TYPED_OP: the one-line body of an op's C++ API function.

#include "loom/dispatcher/dispatcher.h"

/// Declares `var`, a function-local static typed handle on operator `name` with canonical
/// signature `...` (Note [Canonical signatures]): looked up and checked once, on first
/// use, then each call costs one dispatch. Operators are never erased from the registry,
/// so the handle stays valid across plugin unload and reload.
#define LOOM_TYPED_OP(var, name, ...) \
  static const auto var = ::loom::Dispatcher::instance().find_op_or_throw(name).typed<__VA_ARGS__>()
