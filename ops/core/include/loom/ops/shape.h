#pragma once
/// @file
/// Shape operators of the core pack.

#include "loom/ops/op_handle.h"

namespace loom {}  // namespace loom
