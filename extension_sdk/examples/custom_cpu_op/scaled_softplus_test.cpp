// The op-check test of custom_cpu_op: loads the extension into a program on the stable ABI
// and checks custom::scaled_softplus with loom/opcheck.hpp (schema, output shapes, forward
// against Loom's built-in softplus, gradients against finite differences, refused inputs).
//
//   ./build/scaled_softplus_test [path/to/libcustom_cpu_op.so]
//
// Exit status 0 when every check passes; the report goes to stdout either way.
#include <iostream>
#include <loom/opcheck.hpp>
#include <loom/stable.hpp>
#include <string>
#include <vector>

namespace ls = loom::stable;
using loom::opcheck::OpCheck;

int main(int argc, char** argv) {
  const std::string plugin = argc > 1 ? argv[1] : CUSTOM_CPU_OP_PATH;
  try {
    ls::init();
    ls::plugins::load(plugin);  // throws ls::PluginError with the loader's reason
    ls::manual_seed(0);
    const ls::DType f32 = ls::dtype::float32(), f64 = ls::dtype::float64();

    // The reference, from built-in ops: aten::softplus(x, beta) is log1p(exp(beta x)) / beta
    // (linear above beta x > 20, where the two differ by less than exp(-20) / beta).
    const ls::Op softplus = ls::Op::find("aten::softplus");
    const OpCheck forward =
        OpCheck("custom::scaled_softplus")
            .schema("custom::scaled_softplus(Tensor x, float beta) -> Tensor")
            .reference([softplus](const std::vector<ls::Value>& a) {
              return softplus.call_tensor(a[0].to_tensor(), a[1].to_double());
            })
            .sample({ls::Tensor::randn({3, 4}), 1.0}, {3, 4}, f32, "float32 [3, 4]")
            .sample({ls::Tensor::randn({7}, f64) * 6.0, 2.5}, {7}, f64, "float64, beta x up to ~50")
            .sample({ls::Tensor::randn({4, 3}).t(), 0.5}, {3, 4}, f32, "transposed")
            .sample({ls::Tensor::scalar(0.25), 3.0}, std::vector<int64_t>{}, f64, "0-dim")
            .sample({ls::Tensor::zeros({0, 5}), 1.0}, {0, 5}, f32, "no elements")
            .error({ls::Tensor::randn({2}), -1.0}, "expected beta > 0", "beta < 0")
            .error({ls::Tensor::arange(3), 1.0}, "of dtype float32 or float64", "int64 input");

    // The backward op on its own: its reference is grad * sigmoid(beta x). It has no
    // derivative of its own, so no gradcheck.
    const OpCheck backward =
        OpCheck("custom::scaled_softplus_backward")
            .schema("custom::scaled_softplus_backward(Tensor grad, Tensor x, float beta) -> Tensor")
            .reference([](const std::vector<ls::Value>& a) {
              const double beta = a[2].to_double();
              return a[0].to_tensor() * (a[1].to_tensor() * beta).sigmoid();
            })
            .sample({ls::Tensor::randn({2, 5}), ls::Tensor::randn({2, 5}), 1.5}, "float32")
            .sample({ls::Tensor::randn({6}, f64), ls::Tensor::randn({6}, f64), 0.3}, "float64")
            .error({ls::Tensor::randn({3}), ls::Tensor::randn({4}), 1.0}, "shaped and typed as x",
                   "grad of another shape")
            .gradcheck(false);

    const loom::opcheck::Report r1 = forward.run();
    const loom::opcheck::Report r2 = backward.run();
    std::cout << r1 << r2;
    return r1.ok() && r2.ok() ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "scaled_softplus_test: " << e.what() << "\n";
    return 1;
  }
}
