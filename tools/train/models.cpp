// The models of `loom train` (models.h).
#include "models.h"

#include "loom/core/error.h"
#include "loom/nn/activation.h"
#include "loom/nn/conv.h"
#include "loom/nn/linear.h"
#include "loom/nn/pooling.h"

namespace loom::train {

std::shared_ptr<nn::Sequential> make_model(const std::string& name) {
  using std::make_shared;
  auto m = make_shared<nn::Sequential>();
  if (name == "mlp") {
    m->push_back(make_shared<nn::Flatten>());
    m->push_back(make_shared<nn::Linear>(784, 256));
    m->push_back(make_shared<nn::ReLU>());
    m->push_back(make_shared<nn::Linear>(256, 10));
  } else if (name == "cnn") {
    m->push_back(make_shared<nn::Conv2d>(1, 32, 3));
    m->push_back(make_shared<nn::ReLU>());
    m->push_back(make_shared<nn::MaxPool2d>(2));
    m->push_back(make_shared<nn::Conv2d>(32, 64, 3));
    m->push_back(make_shared<nn::ReLU>());
    m->push_back(make_shared<nn::MaxPool2d>(2));
    m->push_back(make_shared<nn::Flatten>());
    m->push_back(make_shared<nn::Linear>(1600, 128));
    m->push_back(make_shared<nn::ReLU>());
    m->push_back(make_shared<nn::Linear>(128, 10));
  } else {
    LOOM_THROW(ValueError, "unknown model '", name, "' (expected mlp or cnn)");
  }
  return m;
}

}  // namespace loom::train
