// bench-libtorch-trivial: the smallest libtorch program (make a tensor, exit), the libtorch
// side of startup.info. It includes only the per-operator headers it needs.
#include <ATen/core/Tensor.h>
#include <ATen/ops/ones.h>

int main() {
  const at::Tensor t = at::ones({2, 2});
  return t.defined() && t.numel() == 4 ? 0 : 1;
}
