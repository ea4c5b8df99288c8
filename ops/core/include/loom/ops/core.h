#pragma once
/// @file
/// The C++ API of the core operator pack: every family's free functions.
///
/// Each function looks its operator up once and then costs one dispatch. The ops_core
/// plugin must be loaded (e.g. `loom::PluginLoader::instance().load("ops_core")`).

#include "loom/ops/creation.h"
#include "loom/ops/indexing.h"
#include "loom/ops/linalg.h"
#include "loom/ops/pointwise.h"
#include "loom/ops/reduction.h"
#include "loom/ops/shape.h"
#include "loom/ops/sorting.h"
