#pragma once
/// @file
/// The C++ API of the nn operator pack: every family's free functions. The ops_nn plugin
/// must be loaded (loom::init() or `loom::PluginLoader::instance().load("ops_nn")`).

#include "loom/ops/nn/convolution.h"
#include "loom/ops/nn/dropout.h"
#include "loom/ops/nn/embedding.h"
#include "loom/ops/nn/loss.h"
#include "loom/ops/nn/normalization.h"
#include "loom/ops/nn/padding.h"
#include "loom/ops/nn/pooling.h"
#include "loom/ops/nn/upsample.h"
