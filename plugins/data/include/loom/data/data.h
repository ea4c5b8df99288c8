#pragma once
/// @file
/// The whole data library (docs/design/training.md): datasets, transforms, samplers, the
/// DataLoader, file readers, safetensors checkpoints.

#include "loom/data/dataloader.h"
#include "loom/data/dataset.h"
#include "loom/data/datasets.h"
#include "loom/data/safetensors.h"
#include "loom/data/sampler.h"
#include "loom/data/transforms.h"
