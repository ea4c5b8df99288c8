#pragma once
/// @file
/// The models `loom train` knows: the MLP 784-256-10 and the Fashion-MNIST CNN.
#include <memory>
#include <string>

#include "loom/nn/container.h"

namespace loom::train {

/// "mlp": Flatten, Linear(784, 256), ReLU, Linear(256, 10).
/// "cnn": Conv2d(1, 32, 3), ReLU, MaxPool2d(2), Conv2d(32, 64, 3), ReLU, MaxPool2d(2),
///        Flatten, Linear(1600, 128), ReLU, Linear(128, 10).
/// Weights drawn from Loom's default generator (PyTorch's default initialisation).
std::shared_ptr<nn::Sequential> make_model(const std::string& name);

}  // namespace loom::train
