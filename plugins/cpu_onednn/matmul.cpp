// oneDNN kernels: mm (the others of the matmul family arrive here too).
#include "loom/dispatcher/library.h"
#include "onednn.h"

namespace loom::onednn {
namespace {

using dnnl::memory;

/// out = a @ b for 2-D or 3-D (batched) a, b of any non-negative strides, into out.
void matmul_into(const Tensor& a, const Tensor& b, const Tensor& out) {
  Key key("matmul");
  key.add(a).add(b).add(out);
  auto p = cached(key, [&] {
    auto d = dnnl::matmul::desc(desc_of(a), desc_of(b), desc_of(out));
    auto pd = dnnl::matmul::primitive_desc(d, engine());
    return CachedPrimitive{dnnl::matmul(pd), pd, nullptr};
  });
  execute(p->primitive,
          {{DNNL_ARG_SRC, memory_of(a)}, {DNNL_ARG_WEIGHTS, memory_of(b)}, {DNNL_ARG_DST, memory_of(out)}});
}

Tensor mm(const Tensor& self, const Tensor& mat2) {
  static const auto op = onednn::op<Tensor(const Tensor&, const Tensor&)>("aten::mm");
  if (!takes({self, mat2}) || self.dim() != 2 || mat2.dim() != 2 ||
      self.size(1) != mat2.size(0)) {
    return op.call_next_provider(kCPU, self, mat2);
  }
  Tensor out = Tensor::empty({self.size(0), mat2.size(1)}, TensorOptions{}.with(self.dtype()));
  matmul_into(self, mat2, out);
  return out;
}

}  // namespace

LOOM_LIBRARY_IMPL(aten, CPU, m) {
  m.set_provider("onednn", /*priority=*/10);
  m.impl("mm", &mm);
}

}  // namespace loom::onednn
