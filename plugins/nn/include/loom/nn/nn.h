#pragma once
/// @file
/// The whole nn library in one include (loom::nn): Module and the containers, the layers,
/// the losses, init and utils. Load the op packs first with loom::init().

#include "loom/nn/activation.h"
#include "loom/nn/container.h"
#include "loom/nn/conv.h"
#include "loom/nn/dropout.h"
#include "loom/nn/embedding.h"
#include "loom/nn/init.h"
#include "loom/nn/linear.h"
#include "loom/nn/loss.h"
#include "loom/nn/module.h"
#include "loom/nn/normalization.h"
#include "loom/nn/pooling.h"
#include "loom/nn/rnn.h"
#include "loom/nn/serialize.h"
#include "loom/nn/transformer.h"
#include "loom/nn/utils.h"
