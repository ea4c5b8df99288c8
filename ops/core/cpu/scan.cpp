// Reference CPU kernels: cumsum, cumprod (accumulating in double or int64, as PyTorch's
// CPU acc_type does).
#include "cpu/meta.h"
#include "cpu/reduce_engine.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/meta/wrap_dim.h"

namespace loom::ops::cpu::reduction {
namespace {

template <bool kProd>
Tensor scan(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  // Validates dim (a 0-dim tensor takes 0 and -1).
  meta::wrap_dim(kProd ? "cumprod" : "cumsum", dim, self.dim());
  const DType out_dtype = meta::sum_dtype(self, dtype);
  const Tensor src = self.dtype() == out_dtype ? self : cast_contiguous(self, out_dtype);
  Tensor out = Tensor::empty(self.sizes(), options_like(self, out_dtype));
  if (out.numel() == 0 || is_meta(out)) return out;
  const LinePlan plan = make_lines(dim, {&src, &out});
  dispatch_all(out_dtype, [&]<typename T>(T*) {
    const T* in = data_of<T>(src);
    T* o = data_of<T>(out);
    for_each_line(plan, [&](int64_t, const int64_t* off) {
      const T* s = in + off[0];
      T* d = o + off[1];
      if constexpr (is_float_v<T>) {
        double acc = kProd ? 1 : 0;
        for (int64_t i = 0; i < plan.len; ++i) {
          const double x = load(s + i * plan.stride[0]);
          acc = kProd ? acc * x : acc + x;
          store(d + i * plan.stride[1], acc);
        }
      } else {
        uint64_t acc = kProd ? 1 : 0;  // integers wrap, as in PyTorch
        for (int64_t i = 0; i < plan.len; ++i) {
          const auto x = static_cast<uint64_t>(load(s + i * plan.stride[0]));
          acc = kProd ? acc * x : acc + x;
          store(d + i * plan.stride[1], static_cast<int64_t>(acc));
        }
      }
    });
  });
  return out;
}

Tensor cumsum(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  return scan<false>(self, dim, dtype);
}
Tensor cumprod(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  return scan<true>(self, dim, dtype);
}

}  // namespace

LOOM_REFERENCE_KERNELS(aten, m) {
  m.set_provider("reference");
  m.impl("cumsum", &cumsum);
  m.impl("cumprod", &cumprod);
}

}  // namespace loom::ops::cpu::reduction
