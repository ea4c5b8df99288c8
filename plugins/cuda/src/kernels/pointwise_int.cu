// Pointwise kernels for the integer dtypes and bool, and the dtype switch of launch_pointwise
// (Note [Pointwise op codes] in pointwise.cuh).
#include "kernels/pointwise.cuh"

namespace loom::cuda::kernels {

// Instantiated in pointwise_float.cu.
extern template void launch_pointwise_typed<float>(const PointwiseLaunch&, const Geometry&, int64_t,
                                                   cudaStream_t);
extern template void launch_pointwise_typed<double>(const PointwiseLaunch&, const Geometry&,
                                                    int64_t, cudaStream_t);
extern template void launch_pointwise_typed<__half>(const PointwiseLaunch&, const Geometry&,
                                                    int64_t, cudaStream_t);
extern template void launch_pointwise_typed<__nv_bfloat16>(const PointwiseLaunch&, const Geometry&,
                                                           int64_t, cudaStream_t);

void launch_pointwise(const PointwiseLaunch& p, const Geometry& g, int64_t numel,
                      cudaStream_t stream) {
  if (numel <= 0) return;
  dispatch_dt(p.dtype, [&]<typename T>(T*) { launch_pointwise_typed<T>(p, g, numel, stream); });
}

}  // namespace loom::cuda::kernels
