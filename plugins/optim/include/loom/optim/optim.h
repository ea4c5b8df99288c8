#pragma once
/// @file
/// The optim library in one include: the fused update ops, the optimizers (SGD, Adam, AdamW,
/// RMSprop, Adagrad) and the learning-rate schedulers (docs/design/training.md). Link
/// loom::optim; load the op packs with loom::init() before the first step.

#include "loom/optim/adagrad.h"
#include "loom/optim/adam.h"
#include "loom/optim/lr_scheduler.h"
#include "loom/optim/ops.h"
#include "loom/optim/optimizer.h"
#include "loom/optim/rmsprop.h"
#include "loom/optim/sgd.h"
