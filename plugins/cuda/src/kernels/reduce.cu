// Reduction kernels: sum, prod, mean, max/min (with indices), argmax/argmin, all/any and
// var/std (Welford) over the middle axis of a contiguous [outer, red, inner] input.
//
// Note [CUDA reduction plan]: inner == 1 (the reduced dims are innermost) runs the row
// kernel: a block of rows_per_block x threads_per_row threads, each row's threads striding
// over (a chunk of) the row, then a shared-memory tree. A long row with few rows is split in
// chunks over gridDim.y whose partial accumulators go to the workspace and are merged by a
// second kernel. inner > 1 runs the column kernel: one thread per output walks red with
// stride inner (coalesced across threads). As on the CPU, float sums, means and variances
// accumulate in double, integer sums and products wrap in int64, max/min compare in the
// compute type, NaN propagates and the first index of the extreme (or of the first NaN) wins.
#include <math_constants.h>

#include <cstdint>
#include <type_traits>

#include "kernels/device_types.cuh"
#include "kernels/kernel_api.h"

namespace loom::cuda::kernels {
namespace {

template <typename C>
struct Acc {
  double d;     // float sum / product / Welford mean
  double m2;    // Welford sum of squared deviations
  int64_t i;    // integer sum / product, all/any flag, Welford count
  int64_t idx;  // extreme: index along red (-1: empty)
  C v;          // extreme: value
};

template <typename C>
__device__ __forceinline__ bool nan_of(C v) {
  if constexpr (std::is_floating_point_v<C>) {
    return v != v;
  } else {
    return false;
  }
}

template <typename T>
__device__ __forceinline__ Acc<compute_t<T>> acc_init(RedOp op, NormKind nk) {
  Acc<compute_t<T>> a;
  a.d = op == RedOp::Prod ? 1.0 : 0.0;
  if (op == RedOp::Norm && nk == NormKind::NegInf) a.d = CUDART_INF;
  if (op == RedOp::LogSumExp) a.d = -CUDART_INF;  // (max, sum of exp(x - max)) = (d, m2)
  a.m2 = 0;
  a.i = (op == RedOp::Prod || op == RedOp::All) ? 1 : 0;
  a.idx = -1;
  a.v = compute_t<T>(0);
  return a;
}

template <typename C>
__device__ __forceinline__ Acc<C> merge(RedOp op, const Acc<C>& a, const Acc<C>& b,
                                        NormKind nk = NormKind::Two) {
  constexpr bool kFloat = std::is_floating_point_v<C>;
  Acc<C> r = a;
  switch (op) {
    case RedOp::Norm:
      if (nk == NormKind::Inf || nk == NormKind::NegInf) {
        if (isnan(a.d) || isnan(b.d)) {
          r.d = CUDART_NAN;
        } else {
          r.d = nk == NormKind::Inf ? fmax(a.d, b.d) : fmin(a.d, b.d);
        }
      } else {
        r.d = a.d + b.d;
      }
      return r;
    case RedOp::Sum:
    case RedOp::Mean:
      r.d = a.d + b.d;
      r.i = static_cast<int64_t>(static_cast<uint64_t>(a.i) + static_cast<uint64_t>(b.i));
      return r;
    case RedOp::Prod:
      r.d = a.d * b.d;
      r.i = static_cast<int64_t>(static_cast<uint64_t>(a.i) * static_cast<uint64_t>(b.i));
      return r;
    case RedOp::All:
      r.i = (a.i != 0 && b.i != 0) ? 1 : 0;
      return r;
    case RedOp::Any:
      r.i = (a.i != 0 || b.i != 0) ? 1 : 0;
      return r;
    case RedOp::LogSumExp: {
      // The CPU's lse_merge.
      if (isnan(a.d) || isnan(b.d)) {
        r.d = CUDART_NAN;
        r.m2 = 0;
        return r;
      }
      if (a.d == -CUDART_INF) return b;
      if (b.d == -CUDART_INF) return a;
      if (isinf(a.d) || isinf(b.d)) {
        r.d = CUDART_INF;
        r.m2 = 1;
        return r;
      }
      const double m = fmax(a.d, b.d);
      r.d = m;
      r.m2 = a.m2 * exp(a.d - m) + b.m2 * exp(b.d - m);
      return r;
    }
    case RedOp::Var: {
      if (a.i == 0) return b;
      if (b.i == 0) return a;
      const double na = static_cast<double>(a.i), nb = static_cast<double>(b.i);
      const double n = na + nb;
      const double delta = b.d - a.d;
      r.i = a.i + b.i;
      r.d = a.d + delta * (nb / n);
      r.m2 = a.m2 + b.m2 + delta * delta * (na * nb / n);
      return r;
    }
    default: {  // Max, Min, ArgMax, ArgMin
      if (a.idx < 0) return b;
      if (b.idx < 0) return a;
      const bool an = nan_of(a.v), bn = nan_of(b.v);
      if (an || bn) {
        if (an && bn) return a.idx < b.idx ? a : b;
        return an ? a : b;
      }
      if (a.v == b.v) return a.idx < b.idx ? a : b;
      const bool is_max = op == RedOp::Max || op == RedOp::ArgMax;
      (void)kFloat;
      return (is_max ? a.v > b.v : a.v < b.v) ? a : b;
    }
  }
}

template <typename T>
__device__ __forceinline__ void step(const ReduceLaunch& r, Acc<compute_t<T>>& a, T raw,
                                     int64_t k) {
  using C = compute_t<T>;
  const RedOp op = r.op;
  const C x = convert<C>(raw);
  switch (op) {
    case RedOp::LogSumExp: {
      Acc<C> b = a;
      b.d = static_cast<double>(x);
      b.m2 = isnan(b.d) ? 0.0 : 1.0;
      a = merge(op, a, b);
      return;
    }
    case RedOp::Norm: {
      const double xd = static_cast<double>(x);
      const double ax = fabs(xd);
      switch (r.norm_kind) {
        case NormKind::Zero:
          a.d += xd != 0 ? 1.0 : 0.0;
          break;
        case NormKind::One:
          a.d += ax;
          break;
        case NormKind::Two:
          a.d += xd * xd;
          break;
        case NormKind::Inf:
          if (ax > a.d || isnan(ax)) a.d = isnan(a.d) ? a.d : ax;
          break;
        case NormKind::NegInf:
          if (ax < a.d || isnan(ax)) a.d = isnan(a.d) ? a.d : ax;
          break;
        case NormKind::General:
          a.d += pow(ax, r.norm_p);
          break;
      }
      return;
    }
    case RedOp::Sum:
    case RedOp::Mean:
      if constexpr (std::is_floating_point_v<C>) {
        a.d += static_cast<double>(x);
      } else {
        a.i = static_cast<int64_t>(static_cast<uint64_t>(a.i) +
                                   static_cast<uint64_t>(static_cast<int64_t>(x)));
      }
      return;
    case RedOp::Prod:
      if constexpr (std::is_floating_point_v<C>) {
        a.d *= static_cast<double>(x);
      } else {
        a.i = static_cast<int64_t>(static_cast<uint64_t>(a.i) *
                                   static_cast<uint64_t>(static_cast<int64_t>(x)));
      }
      return;
    case RedOp::All:
      a.i = (a.i != 0 && x != C(0)) ? 1 : 0;
      return;
    case RedOp::Any:
      a.i = (a.i != 0 || x != C(0)) ? 1 : 0;
      return;
    case RedOp::Var: {
      const double xd = static_cast<double>(x);
      a.i += 1;
      const double delta = xd - a.d;
      a.d += delta / static_cast<double>(a.i);
      a.m2 += delta * (xd - a.d);
      return;
    }
    default: {
      Acc<C> b = a;
      b.v = x;
      b.idx = k;
      a = merge(op, a, b);
      return;
    }
  }
}

template <typename V>
__device__ __forceinline__ void store_as(void* out, Dt dt, int64_t k, V v) {
  switch (dt) {
    case Dt::Bool:
      static_cast<bool*>(out)[k] = convert<bool>(v);
      break;
    case Dt::UInt8:
      static_cast<uint8_t*>(out)[k] = convert<uint8_t>(v);
      break;
    case Dt::Int8:
      static_cast<int8_t*>(out)[k] = convert<int8_t>(v);
      break;
    case Dt::Int16:
      static_cast<int16_t*>(out)[k] = convert<int16_t>(v);
      break;
    case Dt::Int32:
      static_cast<int32_t*>(out)[k] = convert<int32_t>(v);
      break;
    case Dt::Int64:
      static_cast<int64_t*>(out)[k] = convert<int64_t>(v);
      break;
    case Dt::Float16:
      static_cast<__half*>(out)[k] = convert<__half>(v);
      break;
    case Dt::BFloat16:
      static_cast<__nv_bfloat16*>(out)[k] = convert<__nv_bfloat16>(v);
      break;
    case Dt::Float32:
      static_cast<float*>(out)[k] = convert<float>(v);
      break;
    case Dt::Float64:
      static_cast<double*>(out)[k] = convert<double>(v);
      break;
  }
}

template <typename T>
__device__ void finalize(const ReduceLaunch& r, const Acc<compute_t<T>>& a, int64_t k) {
  using C = compute_t<T>;
  switch (r.op) {
    case RedOp::Sum:
    case RedOp::Prod:
      if constexpr (std::is_floating_point_v<C>) {
        store_as(r.out, r.out_dtype, k, a.d);
      } else {
        store_as(r.out, r.out_dtype, k, a.i);
      }
      return;
    case RedOp::Mean:
      store_as(r.out, r.out_dtype, k, a.d / static_cast<double>(r.red));  // 0/0 is nan
      return;
    case RedOp::All:
    case RedOp::Any:
      store_as(r.out, r.out_dtype, k, static_cast<int64_t>(a.i != 0));
      return;
    case RedOp::LogSumExp:
      store_as(r.out, r.out_dtype, k, isnan(a.d) || isinf(a.d) ? a.d : a.d + log(a.m2));
      return;
    case RedOp::Norm: {
      double v = a.d;
      if (r.norm_kind == NormKind::Two) v = sqrt(v);
      if (r.norm_kind == NormKind::General) v = pow(v, 1.0 / r.norm_p);
      store_as(r.out, r.out_dtype, k, v);
      return;
    }
    case RedOp::Var: {
      const double div = fmax(0.0, static_cast<double>(a.i) - r.correction);
      const double v = a.m2 / div;
      store_as(r.out, r.out_dtype, k, r.take_sqrt ? sqrt(v) : v);
      if (r.mean_out != nullptr) {
        store_as(r.mean_out, r.out_dtype, k, a.i == 0 ? CUDART_NAN : a.d);
      }
      return;
    }
    default:
      if (r.out != nullptr) store_as(r.out, r.out_dtype, k, a.v);
      if (r.indices != nullptr) r.indices[k] = a.idx;
      return;
  }
}

constexpr int kReduceThreads = 256;

struct RowPlan {
  int tpr = 32;  // threads per row
  int rpb = 8;   // rows per block
  int64_t blocks_x = 1;
  int64_t chunks = 1;
  int64_t chunk_len = 1;
};

RowPlan plan_rows(const ReduceLaunch& r) {
  RowPlan p;
  p.tpr = 32;
  while (p.tpr < kReduceThreads && p.tpr < r.red) p.tpr *= 2;
  p.rpb = kReduceThreads / p.tpr;
  p.blocks_x = (r.outer + p.rpb - 1) / p.rpb;
  if (p.blocks_x > 65535) p.blocks_x = 65535;  // rows loop over gridDim.x
  constexpr int64_t kTargetBlocks = 1024, kMinChunk = 4096;
  if (p.blocks_x < kTargetBlocks && r.red > 2 * kMinChunk) {
    int64_t chunks = kTargetBlocks / p.blocks_x;
    const int64_t max_chunks = r.red / kMinChunk;
    if (chunks > max_chunks) chunks = max_chunks;
    if (chunks > 1024) chunks = 1024;
    p.chunks = chunks < 1 ? 1 : chunks;
  }
  p.chunk_len = (r.red + p.chunks - 1) / p.chunks;
  return p;
}

bool use_columns(const ReduceLaunch& r) {
  // Enough outputs to fill the device, or a short reduced axis.
  return r.inner > 1 && (r.outer * r.inner >= 4096 || r.red <= 64);
}

template <typename T>
__global__ void __launch_bounds__(kReduceThreads)
    reduce_rows_kernel(ReduceLaunch r, int64_t chunk_len, int64_t chunks) {
  using C = compute_t<T>;
  __shared__ Acc<C> smem[kReduceThreads];
  const int tx = threadIdx.x, ty = threadIdx.y, tpr = blockDim.x;
  const int64_t chunk = blockIdx.y;
  const T* in = static_cast<const T*>(r.in);
  Acc<C>* partial = static_cast<Acc<C>*>(r.workspace);
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * blockDim.y; base < r.outer;
       base += static_cast<int64_t>(gridDim.x) * blockDim.y) {
    const int64_t row = base + ty;
    Acc<C> a = acc_init<T>(r.op, r.norm_kind);
    if (row < r.outer) {
      const int64_t begin = chunk * chunk_len;
      const int64_t end = begin + chunk_len < r.red ? begin + chunk_len : r.red;
      const T* p = in + row * r.red;
      for (int64_t k = begin + tx; k < end; k += tpr) step<T>(r, a, p[k], k);
    }
    const int slot = ty * tpr + tx;
    smem[slot] = a;
    __syncthreads();
    for (int s = tpr / 2; s > 0; s /= 2) {
      if (tx < s) smem[slot] = merge(r.op, smem[slot], smem[slot + s], r.norm_kind);
      __syncthreads();
    }
    if (tx == 0 && row < r.outer) {
      if (chunks == 1) {
        finalize<T>(r, smem[slot], row);
      } else {
        partial[row * chunks + chunk] = smem[slot];
      }
    }
    __syncthreads();  // smem is reused by the next rows
  }
}

template <typename T>
__global__ void __launch_bounds__(kReduceThreads)
    reduce_partials_kernel(ReduceLaunch r, int64_t chunks) {
  using C = compute_t<T>;
  const Acc<C>* partial = static_cast<const Acc<C>*>(r.workspace);
  const int64_t step_rows = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; row < r.outer;
       row += step_rows) {
    Acc<C> a = partial[row * chunks];
    for (int64_t c = 1; c < chunks; ++c) a = merge(r.op, a, partial[row * chunks + c], r.norm_kind);
    finalize<T>(r, a, row);
  }
}

template <typename T>
__global__ void __launch_bounds__(kReduceThreads) reduce_columns_kernel(ReduceLaunch r) {
  using C = compute_t<T>;
  const T* in = static_cast<const T*>(r.in);
  const int64_t n = r.outer * r.inner;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < n;
       j += stride) {
    const int64_t o = j / r.inner, i = j - o * r.inner;
    const T* p = in + o * r.red * r.inner + i;
    Acc<C> a = acc_init<T>(r.op, r.norm_kind);
    for (int64_t k = 0; k < r.red; ++k) step<T>(r, a, p[k * r.inner], k);
    finalize<T>(r, a, j);
  }
}

template <typename T>
__global__ void __launch_bounds__(kReduceThreads)
    scan_kernel(const T* in, T* out, int64_t outer, int64_t len, int64_t inner, bool prod) {
  const int64_t lines = outer * inner;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < lines;
       j += stride) {
    const int64_t o = j / inner, i = j - o * inner;
    const T* s = in + o * len * inner + i;
    T* d = out + o * len * inner + i;
    if constexpr (is_float_v<T>) {
      double acc = prod ? 1 : 0;
      for (int64_t k = 0; k < len; ++k) {
        const auto x = static_cast<double>(convert<compute_t<T>>(s[k * inner]));
        acc = prod ? acc * x : acc + x;
        d[k * inner] = convert<T>(acc);
      }
    } else {
      uint64_t acc = prod ? 1 : 0;  // integers wrap, as in PyTorch
      for (int64_t k = 0; k < len; ++k) {
        const auto x = static_cast<uint64_t>(static_cast<int64_t>(s[k * inner]));
        acc = prod ? acc * x : acc + x;
        d[k * inner] = convert<T>(static_cast<int64_t>(acc));
      }
    }
  }
}

}  // namespace

void launch_scan(Dt dtype, const void* in, void* out, int64_t outer, int64_t len, int64_t inner,
                 bool prod, cudaStream_t stream) {
  const int64_t lines = outer * inner;
  if (lines <= 0 || len <= 0) return;
  dispatch_dt(dtype, [&]<typename T>(T*) {
    scan_kernel<T><<<grid_for(lines), kReduceThreads, 0, stream>>>(
        static_cast<const T*>(in), static_cast<T*>(out), outer, len, inner, prod);
  });
}

size_t reduce_workspace_bytes(const ReduceLaunch& r) {
  if (r.outer * r.inner == 0 || r.inner > 1) return 0;  // columns need no scratch
  const RowPlan p = plan_rows(r);
  if (p.chunks == 1) return 0;
  return dispatch_dt(r.in_dtype, [&]<typename T>(T*) {
    return static_cast<size_t>(r.outer * p.chunks) * sizeof(Acc<compute_t<T>>);
  });
}

void launch_reduce(const ReduceLaunch& r, cudaStream_t stream) {
  const int64_t nout = r.outer * r.inner;
  if (nout == 0) return;
  dispatch_dt(r.in_dtype, [&]<typename T>(T*) {
    if (r.inner > 1) {
      // The host calls with inner > 1 only when use_columns(r) holds.
      reduce_columns_kernel<T><<<grid_for(nout), kReduceThreads, 0, stream>>>(r);
      return;
    }
    const RowPlan p = plan_rows(r);
    const dim3 block(static_cast<unsigned>(p.tpr), static_cast<unsigned>(p.rpb));
    const dim3 grid(static_cast<unsigned>(p.blocks_x), static_cast<unsigned>(p.chunks));
    reduce_rows_kernel<T><<<grid, block, 0, stream>>>(r, p.chunk_len, p.chunks);
    if (p.chunks > 1) {
      reduce_partials_kernel<T><<<grid_for(r.outer), kReduceThreads, 0, stream>>>(r, p.chunks);
    }
  });
}

bool reduce_takes_columns(const ReduceLaunch& r) { return use_columns(r); }

}  // namespace loom::cuda::kernels
