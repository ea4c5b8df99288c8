// Indexing kernels: gather along one dim (index_select, gather) and the triangle zeroing of
// tril/triu. Elements are moved as words of their size, so one instantiation serves every
// dtype of that size.
#include <cstdint>

#include "kernels/device_types.cuh"
#include "kernels/kernel_api.h"
#include "kernels/offset_calculator.cuh"

namespace loom::cuda::kernels {
namespace {

template <typename W, typename I, typename Index>
__global__ void __launch_bounds__(kBlockThreads)
    gather_kernel(W* out, const W* self, const I* index, int64_t step, int64_t bound,
                  OffsetCalculator<3, Index> calc, Index n, int64_t* bad) {
  using Offset = typename OffsetCalculator<3, Index>::Offset;
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    Offset off[3];
    calc.get(i, off);
    const auto v = static_cast<int64_t>(index[off[1]]);
    if (v < 0 || v >= bound) {
      bad[1] = v;
      bad[0] = 1;
      continue;
    }
    out[off[0]] = self[static_cast<int64_t>(off[2]) + v * step];
  }
}

template <typename W, typename I>
void gather_typed(void* out, const void* self, const void* index, int64_t step, int64_t bound,
                  const Geometry& g, int64_t numel, int64_t* bad, cudaStream_t stream) {
  W* o = static_cast<W*>(out);
  const W* s = static_cast<const W*>(self);
  const I* x = static_cast<const I*>(index);
  // The gathered dim's part of the self offset (index * step) is added in 64 bits.
  if (fits_32bit(g, 3, numel)) {
    gather_kernel<W, I, uint32_t><<<grid_for(numel), kBlockThreads, 0, stream>>>(
        o, s, x, step, bound, OffsetCalculator<3, uint32_t>(g), static_cast<uint32_t>(numel), bad);
  } else {
    gather_kernel<W, I, uint64_t><<<grid_for(numel), kBlockThreads, 0, stream>>>(
        o, s, x, step, bound, OffsetCalculator<3, uint64_t>(g), static_cast<uint64_t>(numel), bad);
  }
}

template <typename W>
__global__ void __launch_bounds__(kBlockThreads)
    triangle_kernel(W* data, int64_t n, int64_t rows, int64_t cols, int64_t diagonal, bool upper) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const int64_t j = i % cols;
    const int64_t r = (i / cols) % rows;
    // tril keeps j <= r + diagonal; triu keeps j >= r + diagonal.
    const bool zero = upper ? j < r + diagonal : j > r + diagonal;
    if (zero) data[i] = W(0);
  }
}

// dst[d + v * step] op src[s], over the index shape.
template <typename T, typename I, typename Index>
__global__ void __launch_bounds__(kBlockThreads)
    scatter_kernel(ScatterLaunch sl, OffsetCalculator<3, Index> calc, Index n) {
  using Offset = typename OffsetCalculator<3, Index>::Offset;
  T* dst = static_cast<T*>(sl.dst);
  const T* src = static_cast<const T*>(sl.src);
  const I* index = static_cast<const I*>(sl.index);
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    Offset off[3];
    calc.get(i, off);
    auto v = static_cast<int64_t>(index[off[1]]);
    if (sl.wrap_negative && v < 0 && v >= -sl.bound) v += sl.bound;
    if (v < 0 || v >= sl.bound) {
      sl.bad[1] = static_cast<int64_t>(index[off[1]]);
      sl.bad[0] = 1;
      continue;
    }
    T* d = dst + static_cast<int64_t>(off[0]) + v * sl.dst_dim_stride;
    if (sl.mode == ScatterMode::Value) {
      T w;
      memcpy(&w, &sl.value_bits, sizeof(T));
      *d = w;
    } else if (sl.mode == ScatterMode::Copy) {
      *d = src[off[2]];
    } else {
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        atomicAdd(d, static_cast<T>(sl.alpha_d) * src[off[2]]);
      } else if constexpr (std::is_same_v<T, __half>) {
        atomicAdd(d, __float2half_rn(static_cast<float>(sl.alpha_d) * __half2float(src[off[2]])));
      } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
        atomicAdd(
            d, __float2bfloat16_rn(static_cast<float>(sl.alpha_d) * __bfloat162float(src[off[2]])));
      } else if constexpr (std::is_same_v<T, int32_t>) {
        atomicAdd(d, static_cast<int32_t>(sl.alpha_i * src[off[2]]));
      } else if constexpr (std::is_same_v<T, int64_t>) {
        // Two's complement: an unsigned add wraps as the CPU's int64 arithmetic.
        atomicAdd(reinterpret_cast<unsigned long long*>(d),
                  static_cast<unsigned long long>(sl.alpha_i * src[off[2]]));
      }
    }
  }
}

template <typename T, typename I>
void scatter_typed(const ScatterLaunch& sl, const Geometry& g, int64_t numel, cudaStream_t stream) {
  if (fits_32bit(g, 3, numel)) {
    scatter_kernel<T, I, uint32_t><<<grid_for(numel), kBlockThreads, 0, stream>>>(
        sl, OffsetCalculator<3, uint32_t>(g), static_cast<uint32_t>(numel));
  } else {
    scatter_kernel<T, I, uint64_t><<<grid_for(numel), kBlockThreads, 0, stream>>>(
        sl, OffsetCalculator<3, uint64_t>(g), static_cast<uint64_t>(numel));
  }
}

}  // namespace

bool scatter_add_supported(Dt dtype) {
  return dtype == Dt::Float32 || dtype == Dt::Float64 || dtype == Dt::Float16 ||
         dtype == Dt::BFloat16 || dtype == Dt::Int32 || dtype == Dt::Int64;
}

void launch_scatter(const ScatterLaunch& sl, const Geometry& g, int64_t numel,
                    cudaStream_t stream) {
  if (numel <= 0) return;
  auto by_index = [&]<typename T>(T*) {
    if (sl.index_is_int32) {
      scatter_typed<T, int32_t>(sl, g, numel, stream);
    } else {
      scatter_typed<T, int64_t>(sl, g, numel, stream);
    }
  };
  if (sl.mode == ScatterMode::Add) {
    switch (sl.dtype) {
      case Dt::Float32:
        return by_index(static_cast<float*>(nullptr));
      case Dt::Float64:
        return by_index(static_cast<double*>(nullptr));
      case Dt::Float16:
        return by_index(static_cast<__half*>(nullptr));
      case Dt::BFloat16:
        return by_index(static_cast<__nv_bfloat16*>(nullptr));
      case Dt::Int32:
        return by_index(static_cast<int32_t*>(nullptr));
      case Dt::Int64:
        return by_index(static_cast<int64_t*>(nullptr));
      default:
        return;  // refused by the host (scatter_add_supported)
    }
  }
  // Copy and Value move words of the element size.
  switch (dispatch_dt(sl.dtype, []<typename T>(T*) { return static_cast<int>(sizeof(T)); })) {
    case 1:
      return by_index(static_cast<uint8_t*>(nullptr));
    case 2:
      return by_index(static_cast<uint16_t*>(nullptr));
    case 4:
      return by_index(static_cast<uint32_t*>(nullptr));
    default:
      return by_index(static_cast<uint64_t*>(nullptr));
  }
}

void launch_gather(void* out, const void* self, const void* index, bool index_is_int32,
                   int element_size, int64_t self_dim_stride, int64_t bound, const Geometry& g,
                   int64_t numel, int64_t* bad, cudaStream_t stream) {
  if (numel <= 0) return;
  auto by_index = [&]<typename W>(W*) {
    if (index_is_int32) {
      gather_typed<W, int32_t>(out, self, index, self_dim_stride, bound, g, numel, bad, stream);
    } else {
      gather_typed<W, int64_t>(out, self, index, self_dim_stride, bound, g, numel, bad, stream);
    }
  };
  switch (element_size) {
    case 1:
      by_index(static_cast<uint8_t*>(nullptr));
      break;
    case 2:
      by_index(static_cast<uint16_t*>(nullptr));
      break;
    case 4:
      by_index(static_cast<uint32_t*>(nullptr));
      break;
    default:
      by_index(static_cast<uint64_t*>(nullptr));
      break;
  }
}

void launch_triangle(void* data, int element_size, int64_t batch, int64_t rows, int64_t cols,
                     int64_t diagonal, bool upper, cudaStream_t stream) {
  const int64_t n = batch * rows * cols;
  if (n <= 0) return;
  switch (element_size) {
    case 1:
      triangle_kernel<<<grid_for(n), kBlockThreads, 0, stream>>>(static_cast<uint8_t*>(data), n,
                                                                 rows, cols, diagonal, upper);
      break;
    case 2:
      triangle_kernel<<<grid_for(n), kBlockThreads, 0, stream>>>(static_cast<uint16_t*>(data), n,
                                                                 rows, cols, diagonal, upper);
      break;
    case 4:
      triangle_kernel<<<grid_for(n), kBlockThreads, 0, stream>>>(static_cast<uint32_t*>(data), n,
                                                                 rows, cols, diagonal, upper);
      break;
    default:
      triangle_kernel<<<grid_for(n), kBlockThreads, 0, stream>>>(static_cast<uint64_t*>(data), n,
                                                                 rows, cols, diagonal, upper);
      break;
  }
}

}  // namespace loom::cuda::kernels
