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

}  // namespace

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
