// loom-hello: the smallest Loom program. Loads the installed plugins, runs a
// few operators through the dispatcher, and shows what an error looks like.
#include <iostream>

#include "loom/dispatcher/plugin_loader.h"
#include "loom/ops/core.h"

int main() {
  using namespace loom;
  try {
    for (const auto& failure : PluginLoader::instance().load_all()) {
      std::cerr << "warning: " << failure.message << "\n";
    }
    PluginLoader::instance().load("ops_core");

    Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, std::vector<int64_t>{2, 2});
    Tensor b = fill_(Tensor::empty({2, 2}), 0.5);
    std::cout << "a = " << a << "\n";
    std::cout << "b = " << b << "\n";
    std::cout << "a + b = " << a + b << "\n";
    std::cout << "a * b = " << a * b << "\n";
    std::cout << "add(a, b, alpha=10) = " << add(a, b, 10) << "\n";
    std::cout << "sum(a * a) = " << sum(a * a).item<double>() << "\n";

    // A view shares storage and the version counter with its base.
    Tensor row = a.as_strided_view({2}, {1}, 2);
    fill_(row, 7);
    std::cout << "after filling a's second row through a view: a = " << a << " (version "
              << a.version() << ")\n";

    try {
      Tensor c = Tensor::empty({3});
      add(a, c);
    } catch (const Error& e) {
      std::cout << "a clear error: " << e.what() << "\n";
    }
    std::cout << cpu_allocator().summary();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "loom-hello: error: " << e.what() << "\n";
    return 1;
  }
}
