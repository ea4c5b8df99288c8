// The dtype-converting strided copy (copy_kernel.cpp) and the fill kernel: one kernel per
// destination dtype, the source dtype switched at run time (a uniform branch), so the 100
// (dst, src) pairs cost 10 instantiations per index path.
#include <cstdint>

#include "kernels/device_types.cuh"
#include "kernels/kernel_api.h"
#include "kernels/offset_calculator.cuh"
#include "loom/ops/meta/integer_math.h"

namespace loom::cuda::kernels {
namespace {

template <typename D>
__device__ __forceinline__ D load_convert(const void* src, Dt st, int64_t i) {
  switch (st) {
    case Dt::Bool:
      return convert<D>(static_cast<const bool*>(src)[i]);
    case Dt::UInt8:
      return convert<D>(static_cast<const uint8_t*>(src)[i]);
    case Dt::Int8:
      return convert<D>(static_cast<const int8_t*>(src)[i]);
    case Dt::Int16:
      return convert<D>(static_cast<const int16_t*>(src)[i]);
    case Dt::Int32:
      return convert<D>(static_cast<const int32_t*>(src)[i]);
    case Dt::Int64:
      return convert<D>(static_cast<const int64_t*>(src)[i]);
    case Dt::Float16:
      return convert<D>(static_cast<const __half*>(src)[i]);
    case Dt::BFloat16:
      return convert<D>(static_cast<const __nv_bfloat16*>(src)[i]);
    case Dt::Float32:
      return convert<D>(static_cast<const float*>(src)[i]);
    case Dt::Float64:
      break;
  }
  return convert<D>(static_cast<const double*>(src)[i]);
}

template <typename D>
__global__ void __launch_bounds__(kBlockThreads)
    copy_contiguous_kernel(D* dst, const void* src, Dt st, int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    dst[i] = load_convert<D>(src, st, i);
}

template <typename D, typename Index>
__global__ void __launch_bounds__(kBlockThreads)
    copy_strided_kernel(D* dst, const void* src, Dt st, OffsetCalculator<2, Index> calc, Index n) {
  using Offset = typename OffsetCalculator<2, Index>::Offset;
  const Index step = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    Offset off[2];
    calc.get(i, off);
    dst[off[0]] = load_convert<D>(src, st, static_cast<int64_t>(off[1]));
  }
}

template <typename E>
__global__ void __launch_bounds__(kBlockThreads)
    fill_contiguous_kernel(E* dst, E value, int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    dst[i] = value;
}

template <typename E, typename Index>
__global__ void __launch_bounds__(kBlockThreads)
    fill_strided_kernel(E* dst, E value, OffsetCalculator<1, Index> calc, Index n) {
  using Offset = typename OffsetCalculator<1, Index>::Offset;
  const Index step = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    Offset off[1];
    calc.get(i, off);
    dst[off[0]] = value;
  }
}

template <typename E>
void fill_typed(E* dst, E value, const Geometry& g, int64_t numel, cudaStream_t stream) {
  if (g.ndim == 1 && g.strides[0][0] == 1) {
    fill_contiguous_kernel<E><<<grid_for(numel), kBlockThreads, 0, stream>>>(dst, value, numel);
  } else if (fits_32bit(g, 1, numel)) {
    fill_strided_kernel<E, uint32_t><<<grid_for(numel), kBlockThreads, 0, stream>>>(
        dst, value, OffsetCalculator<1, uint32_t>(g), static_cast<uint32_t>(numel));
  } else {
    fill_strided_kernel<E, uint64_t><<<grid_for(numel), kBlockThreads, 0, stream>>>(
        dst, value, OffsetCalculator<1, uint64_t>(g), static_cast<uint64_t>(numel));
  }
}

}  // namespace

void launch_copy(void* dst, Dt dst_dtype, const void* src, Dt src_dtype, const Geometry& g,
                 int64_t numel, cudaStream_t stream) {
  if (numel <= 0) return;
  dispatch_dt(dst_dtype, [&]<typename D>(D*) {
    D* d = static_cast<D*>(dst);
    if (g.ndim == 1 && g.strides[0][0] == 1 && g.strides[1][0] == 1) {
      copy_contiguous_kernel<D>
          <<<grid_for(numel), kBlockThreads, 0, stream>>>(d, src, src_dtype, numel);
    } else if (fits_32bit(g, 2, numel)) {
      copy_strided_kernel<D, uint32_t><<<grid_for(numel), kBlockThreads, 0, stream>>>(
          d, src, src_dtype, OffsetCalculator<2, uint32_t>(g), static_cast<uint32_t>(numel));
    } else {
      copy_strided_kernel<D, uint64_t><<<grid_for(numel), kBlockThreads, 0, stream>>>(
          d, src, src_dtype, OffsetCalculator<2, uint64_t>(g), static_cast<uint64_t>(numel));
    }
  });
}

void launch_fill(void* dst, int element_size, uint64_t bits, const Geometry& g, int64_t numel,
                 cudaStream_t stream) {
  if (numel <= 0) return;
  switch (element_size) {
    case 1:
      fill_typed(static_cast<uint8_t*>(dst), static_cast<uint8_t>(bits), g, numel, stream);
      break;
    case 2:
      fill_typed(static_cast<uint16_t*>(dst), static_cast<uint16_t>(bits), g, numel, stream);
      break;
    case 4:
      fill_typed(static_cast<uint32_t*>(dst), static_cast<uint32_t>(bits), g, numel, stream);
      break;
    default:
      fill_typed(static_cast<uint64_t*>(dst), bits, g, numel, stream);
      break;
  }
}

namespace {
// The CPU's store(): exact integers, or doubles, into dtype T.
template <typename T>
__global__ void __launch_bounds__(kBlockThreads)
    arange_kernel(T* dst, int64_t n, bool exact, int64_t start_i, int64_t step_i, double start_d,
                  double step_d) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < n; k += step) {
    if (exact) {
      // Wrapping, as the CPU kernel: k * step may pass int64 on the way to a value that fits.
      const int64_t v = ops::meta::wrapping_add(start_i, ops::meta::wrapping_mul(k, step_i));
      if constexpr (std::is_same_v<T, bool>) {
        dst[k] = v != 0;
      } else if constexpr (is_float_v<T>) {
        dst[k] = convert<T>(static_cast<double>(v));
      } else {
        dst[k] = static_cast<T>(v);
      }
    } else {
      // No fused multiply-add: the CPU kernel rounds the product, then the sum.
      const double v = __dadd_rn(start_d, __dmul_rn(static_cast<double>(k), step_d));
      if constexpr (std::is_same_v<T, bool>) {
        dst[k] = v != 0;
      } else if constexpr (is_float_v<T>) {
        dst[k] = convert<T>(v);
      } else {
        dst[k] = static_cast<T>(v);
      }
    }
  }
}
}  // namespace

void launch_arange(void* dst, Dt dtype, int64_t n, bool exact, int64_t start_i, int64_t step_i,
                   double start_d, double step_d, cudaStream_t stream) {
  if (n <= 0) return;
  dispatch_dt(dtype, [&]<typename T>(T*) {
    arange_kernel<T><<<grid_for(n), kBlockThreads, 0, stream>>>(static_cast<T*>(dst), n, exact,
                                                                start_i, step_i, start_d, step_d);
  });
}

}  // namespace loom::cuda::kernels
