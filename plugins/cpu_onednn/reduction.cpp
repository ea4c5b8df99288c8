// oneDNN kernels: sum and mean over the innermost dims (the reduction primitive).
//
// Note [Reduction domain]: oneDNN 2.6's reduction is fast only over the innermost dims, and
// there it beats the reference by 1.2 to 2 times from about 1e5 elements (measured, 2
// threads, reference vs onednn: sum over the last dim of [N, 256], 1e5 elements 7.2/6.3 us,
// 1e6 55/29 us; at 1.6e7 even, 1.14/0.99 and 1.24/1.31 ms in two runs); over a leading or middle
// dim it is 10 to 30 times slower (1e6 elements: 0.23 vs 4.2 ms), and over the whole tensor it wins
// only between 1e5 and 1e6 (1e6: 48/44 us) and loses above (1.6e7: 1.1 vs 1.9 ms). So taken are:
// contiguous float32 inputs of kMinReduce to kMaxReduce elements (above, the float32 sum is no
// faster and less accurate than the reference's double one), with no dtype argument or float32, and
// a well-formed dim list (each dim in range, none twice; the others are the reference's error) that
// reduces the innermost dims but not all of them (size-1 dims aside). sum() and mean() of the whole
// tensor stay with the reference. The result has the reference's sizes: reduced dims kept as 1 with
// keepdim, dropped without. oneDNN accumulates in float32 where the reference accumulates in
// double: sums agree to float32 rounding of the partial sums (the suites' tolerance says how
// closely). Not taken: amax/amin (oneDNN's max and min drop a NaN, the reference propagates it),
// and prod, norms and the statistics (not measured faster, or no oneDNN algorithm).
#include <cstdint>
#include <optional>
#include <vector>

#include "loom/dispatcher/library.h"
#include "onednn.h"

namespace loom::onednn {
namespace {

using dnnl::algorithm;
using dnnl::memory;

/// The smallest input numel a reduction is taken at (Note [Reduction domain]), measured on
/// 2 threads.
constexpr int64_t kMinReduce = 100000;
/// The largest input numel a reduction is taken at.
constexpr int64_t kMaxReduce = int64_t{1} << 22;

/// What one reduction call becomes: a row-major [outer, inner] matrix reduced over its rows
/// (the reduced dims are the innermost ones, so they merge into inner, the kept ones into
/// outer), and the result's sizes as Loom's.
struct ReducePlan {
  int64_t outer = 1;
  int64_t inner = 1;
  std::vector<int64_t> sizes;  ///< the result's sizes (keepdim or not)
};

/// The plan for reducing self over dim (nullopt or []: all dims), or nullopt when the call is
/// not oneDNN's (Note [Reduction domain]).
std::optional<ReducePlan> plan_reduce(const Tensor& self, std::optional<IntArrayRef> dim,
                                      bool keepdim, std::optional<DType> dtype) {
  if (!self.defined() || self.dtype() != DType::Float32 || self.numel() < kMinReduce ||
      self.numel() > kMaxReduce) {
    return std::nullopt;
  }
  if ((dtype && *dtype != DType::Float32) || self.dim() == 0 || self.dim() > DNNL_MAX_NDIMS ||
      !takes({self}) || !self.is_contiguous()) {
    return std::nullopt;
  }
  const int64_t nd = self.dim();
  std::vector<bool> mask(static_cast<size_t>(nd), !dim || dim->empty());  // none or []: all
  if (dim) {
    for (int64_t d : *dim) {
      const int64_t w = d < 0 ? d + nd : d;
      if (w < 0 || w >= nd || mask[static_cast<size_t>(w)]) return std::nullopt;
      mask[static_cast<size_t>(w)] = true;
    }
  }
  // The reduced dims must be the innermost ones, with a kept dim of size > 1 before them.
  bool reducing = false, kept_before = false;
  for (int64_t i = 0; i < nd; ++i) {
    if (self.size(i) == 1) continue;
    if (mask[static_cast<size_t>(i)]) {
      reducing = true;
    } else if (reducing) {
      return std::nullopt;  // a kept dim inside the reduced ones
    } else {
      kept_before = true;
    }
  }
  if (!reducing || !kept_before) return std::nullopt;
  ReducePlan plan;
  for (int64_t i = 0; i < nd; ++i) {
    if (mask[static_cast<size_t>(i)]) {
      plan.inner *= self.size(i);
      if (keepdim) plan.sizes.push_back(1);
    } else {
      plan.outer *= self.size(i);
      plan.sizes.push_back(self.size(i));
    }
  }
  return plan;
}

/// Runs alg over the plan into a new result tensor.
Tensor run(algorithm alg, const ReducePlan& plan, const Tensor& self) {
  Key key("reduction");
  key.add(static_cast<int64_t>(alg)).add(plan.outer).add(plan.inner);
  const memory::desc src({plan.outer, plan.inner}, memory::data_type::f32, memory::format_tag::ab);
  const memory::desc dst({plan.outer, 1}, memory::data_type::f32, memory::format_tag::ab);
  auto p = cached(key, [&] {
    auto pd = dnnl::reduction::primitive_desc(dnnl::reduction::desc(alg, src, dst, 0, 0), engine());
    return CachedPrimitive{dnnl::reduction(pd), pd, nullptr};
  });
  // The result's memory is dst's: its elements are the kept dims' in row-major order.
  Tensor out = Tensor::empty(plan.sizes, TensorOptions{}.with(DType::Float32));
  execute(p->primitive,
          {{DNNL_ARG_SRC, memory_of(self, src)}, {DNNL_ARG_DST, memory_of(out, dst)}});
  return out;
}

using DimSig = Tensor(const Tensor&, std::optional<IntArrayRef>, bool, std::optional<DType>);

Tensor sum_dims(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim,
                std::optional<DType> dtype) {
  static const auto op = onednn::op<DimSig>("aten::sum.dim_IntList");
  const std::optional<ReducePlan> plan = plan_reduce(self, dim, keepdim, dtype);
  if (!plan) return op.call_next_provider(kCPU, self, dim, keepdim, dtype);
  return run(algorithm::reduction_sum, *plan, self);
}

Tensor mean_dims(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim,
                 std::optional<DType> dtype) {
  static const auto op = onednn::op<DimSig>("aten::mean.dim");
  const std::optional<ReducePlan> plan = plan_reduce(self, dim, keepdim, dtype);
  if (!plan) return op.call_next_provider(kCPU, self, dim, keepdim, dtype);
  return run(algorithm::reduction_mean, *plan, self);
}

}  // namespace

LOOM_LIBRARY_IMPL(aten, CPU, m) {
  m.set_provider("onednn", /*priority=*/10);
  m.impl("sum.dim_IntList", &sum_dims);
  m.impl("mean.dim", &mean_dims);
}

}  // namespace loom::onednn
