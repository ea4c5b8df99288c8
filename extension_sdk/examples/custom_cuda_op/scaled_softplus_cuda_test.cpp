// The op-check test of custom_cuda_op: loads the extension into a program on the stable ABI
// and checks custom_cuda::scaled_softplus with loom/opcheck.hpp, on the CPU always and on
// cuda:0 when there is a usable CUDA device (otherwise it says why and skips those checks).
//
//   ./build/scaled_softplus_cuda_test [path/to/libcustom_cuda_op.so]
//
// Exit status 0 when every check that ran passed.
#include <iostream>
#include <loom/opcheck.hpp>
#include <loom/stable.hpp>
#include <string>
#include <vector>

namespace ls = loom::stable;
using loom::opcheck::OpCheck;

namespace {

// The checks of both ops on one device. The reference is Loom's built-in aten::softplus on the
// CPU (an independent implementation; opcheck compares values wherever they live).
bool check_on(const ls::Device& device) {
  const ls::DType f32 = ls::dtype::float32(), f64 = ls::dtype::float64();
  const ls::Op softplus = ls::Op::find("aten::softplus");
  auto on = [&](const ls::Tensor& t) { return t.to(device); };
  const loom::opcheck::Report forward =
      OpCheck("custom_cuda::scaled_softplus")
          .schema("custom_cuda::scaled_softplus(Tensor x, float beta) -> Tensor")
          .reference([softplus](const std::vector<ls::Value>& a) {
            return softplus.call_tensor(a[0].to_tensor().cpu(), a[1].to_double());
          })
          .sample({on(ls::Tensor::randn({3, 4})), 1.0}, {3, 4}, f32, device + " float32 [3, 4]")
          .sample({on(ls::Tensor::randn({7}, f64) * 6.0), 2.5}, {7}, f64, device + " float64")
          .sample({on(ls::Tensor::randn({4, 3})).t(), 0.5}, {3, 4}, f32, device + " transposed")
          .error({on(ls::Tensor::randn({2})), -1.0}, "expected beta > 0", device + " beta < 0")
          .run();
  const loom::opcheck::Report backward =
      OpCheck("custom_cuda::scaled_softplus_backward")
          .reference([](const std::vector<ls::Value>& a) {
            const double beta = a[2].to_double();
            return a[0].to_tensor().cpu() * (a[1].to_tensor().cpu() * beta).sigmoid();
          })
          .sample({on(ls::Tensor::randn({2, 5})), on(ls::Tensor::randn({2, 5})), 1.5},
                  device + " float32")
          .gradcheck(false)
          .run();
  std::cout << forward << backward;
  return forward.ok() && backward.ok();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string plugin = argc > 1 ? argv[1] : CUSTOM_CUDA_OP_PATH;
  try {
    ls::init();  // loads Loom's CUDA plugin too, when it is installed
    ls::plugins::load(plugin);
    ls::manual_seed(0);
    bool ok = check_on("cpu");

    int32_t devices = 0;
    std::string reason;
    try {
      devices = ls::device::count("cuda");
      if (devices == 0) reason = ls::device::unavailable_reason("cuda");
    } catch (const ls::Error& e) {
      reason = e.what();  // e.g. no CUDA plugin installed
    }
    if (devices == 0) {
      std::cout << "SKIP: the CUDA checks: no usable CUDA device ("
                << (reason.empty() ? "DeviceCount(\"cuda\") is 0" : reason) << ")\n";
    } else {
      ok = check_on("cuda:0") && ok;
      ls::device::synchronize("cuda:0");  // a kernel fault would surface here
    }
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "scaled_softplus_cuda_test: " << e.what() << "\n";
    return 1;
  }
}
