// Pointwise kernels for the floating dtypes (Note [Pointwise op codes] in pointwise.cuh).
// Split from pointwise_int.cu so the two compile in parallel.
#include "kernels/pointwise.cuh"

namespace loom::cuda::kernels {

template void launch_pointwise_typed<float>(const PointwiseLaunch&, const Geometry&, int64_t,
                                            cudaStream_t);
template void launch_pointwise_typed<double>(const PointwiseLaunch&, const Geometry&, int64_t,
                                             cudaStream_t);
template void launch_pointwise_typed<__half>(const PointwiseLaunch&, const Geometry&, int64_t,
                                             cudaStream_t);
template void launch_pointwise_typed<__nv_bfloat16>(const PointwiseLaunch&, const Geometry&,
                                                    int64_t, cudaStream_t);

}  // namespace loom::cuda::kernels
