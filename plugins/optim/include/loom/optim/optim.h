#pragma once
/// @file
/// The optim library in one include: the fused update ops, the optimizers (SGD, Adam, AdamW,
/// RMSprop, Adagrad) and the learning-rate schedulers (docs/design/training.md). Link
/// loom::optim; load the op packs with loom::init() before the first step:
///
/// @code
///   loom::init();
///   auto model = std::make_shared<Net>();  // a loom::nn::Module
///   loom::optim::AdamW opt(model->parameters(), loom::optim::AdamWOptions(1e-3));
///   loom::optim::OneCycleLR::Options cycle;
///   cycle.max_lr = {1e-2};
///   cycle.total_steps = epochs * batches_per_epoch;
///   loom::optim::OneCycleLR sched(opt, cycle);
///   for (...) {
///     opt.zero_grad();
///     loss_fn(model->forward(x), y).backward();
///     opt.step();
///     sched.step();
///   }
///   loom::optim::OptimizerStateDict checkpoint = opt.state_dict();
/// @endcode

#include "loom/optim/adagrad.h"
#include "loom/optim/adam.h"
#include "loom/optim/lr_scheduler.h"
#include "loom/optim/ops.h"
#include "loom/optim/optimizer.h"
#include "loom/optim/rmsprop.h"
#include "loom/optim/sgd.h"
