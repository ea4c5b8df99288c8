#pragma once
/// @file
/// Everything of autograd in one include: grad mode guards, the engine (backward, grad),
/// derivative registration, custom functions, anomaly mode, gradcheck and checkpointing.

#include "loom/autograd/anomaly.h"
#include "loom/autograd/derivative.h"
#include "loom/autograd/engine.h"
#include "loom/autograd/grad_mode.h"
#include "loom/autograd/meta.h"
#include "loom/autograd/gradcheck.h"
#include "loom/autograd/function.h"
