// Random kernels: uniform, normal, bernoulli, randint fills and native_dropout, on curand's
// Philox4x32-10 (counter based: subsequence = thread, offset from the device generator).
//
// Note [CUDA random layout]: the grid size depends only on numel (random_grid), never on the
// device, so a seed gives the same numbers on every GPU. Thread t handles groups of kGroup
// consecutive elements t, t + threads, ... and draws at most kWordsPerGroup 32-bit values per
// group; random_increment tells the generator how far to advance its offset.
#include <curand_kernel.h>

#include <cstdint>

#include "kernels/device_types.cuh"
#include "kernels/kernel_api.h"

namespace loom::cuda::kernels {
namespace {

constexpr int kGroup = 4;          // elements per group
constexpr int kWordsPerGroup = 8;  // two 32-bit words per element at most
constexpr int64_t kMaxRandomBlocks = 4096;

int64_t random_blocks(int64_t numel) {
  const int64_t groups = (numel + kGroup - 1) / kGroup;
  const int64_t blocks = (groups + kBlockThreads - 1) / kBlockThreads;
  return blocks < 1 ? 1 : (blocks > kMaxRandomBlocks ? kMaxRandomBlocks : blocks);
}

// Uniform [0, 1) with `bits` random bits (the CPU's uniform01: rounding to the target dtype
// can never give 1).
__device__ __forceinline__ double uniform_bits(uint32_t lo, uint32_t hi, int bits) {
  if (bits <= 32) return static_cast<double>(lo >> (32 - bits)) * ldexp(1.0, -bits);
  const uint64_t v = (static_cast<uint64_t>(hi) << 32) | lo;
  return static_cast<double>(v >> (64 - bits)) * ldexp(1.0, -bits);
}

template <typename T>
constexpr int mantissa_bits() {
  if constexpr (std::is_same_v<T, __half>) {
    return 11;
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return 8;
  } else if constexpr (std::is_same_v<T, float>) {
    return 24;
  } else {
    return 53;
  }
}

template <typename T>
__device__ __forceinline__ void store_double(T* p, double v) {
  if constexpr (std::is_same_v<T, bool>) {
    *p = v != 0;
  } else {
    *p = convert<T>(v);
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlockThreads) random_kernel(RandomLaunch r) {
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t threads = static_cast<int64_t>(gridDim.x) * blockDim.x;
  curandStatePhilox4_32_10_t st;
  curand_init(r.seed, static_cast<unsigned long long>(tid), r.offset, &st);
  T* out = static_cast<T*>(r.out);
  const int64_t groups = (r.numel + kGroup - 1) / kGroup;
  for (int64_t grp = tid; grp < groups; grp += threads) {
    const uint4 w0 = curand4(&st);
    const uint4 w1 = curand4(&st);
    const uint32_t lo[kGroup] = {w0.x, w0.y, w0.z, w0.w};
    const uint32_t hi[kGroup] = {w1.x, w1.y, w1.z, w1.w};
    const int64_t base = grp * kGroup;
    if (r.op == RandOp::Normal) {
      // Box-Muller on pairs, both outputs used (as the CPU's fill_normal).
      for (int j = 0; j < kGroup; j += 2) {
        const double u1 = 1.0 - uniform_bits(lo[j], hi[j], 53);  // (0, 1]: log is finite
        const double u2 = uniform_bits(lo[j + 1], hi[j + 1], 53);
        const double rad = sqrt(-2.0 * log(u1));
        const double z0 = rad * cospi(2.0 * u2), z1 = rad * sinpi(2.0 * u2);
        if (base + j < r.numel) store_double(out + base + j, r.a + r.b * z0);
        if (base + j + 1 < r.numel) store_double(out + base + j + 1, r.a + r.b * z1);
      }
      continue;
    }
    for (int j = 0; j < kGroup; ++j) {
      const int64_t i = base + j;
      if (i >= r.numel) break;
      switch (r.op) {
        case RandOp::Uniform: {
          const double u = uniform_bits(lo[j], hi[j], mantissa_bits<T>());
          store_double(out + i, r.a + (r.b - r.a) * u);
          break;
        }
        case RandOp::Bernoulli: {
          double p = r.a;
          if (r.p_tensor != nullptr) {
            if constexpr (is_float_v<T>)
              p = static_cast<double>(convert<float>(static_cast<const T*>(r.p_tensor)[i]));
            if constexpr (std::is_same_v<T, double>) p = static_cast<const double*>(r.p_tensor)[i];
          }
          store_double(out + i, uniform_bits(lo[j], hi[j], 53) < p ? 1.0 : 0.0);
          break;
        }
        case RandOp::RandInt: {
          const uint64_t v = (static_cast<uint64_t>(hi[j]) << 32) | lo[j];
          const auto x = static_cast<int64_t>(static_cast<uint64_t>(r.low) + v % r.range);
          if constexpr (std::is_same_v<T, bool>) {
            out[i] = x != 0;
          } else if constexpr (is_float_v<T>) {
            out[i] = convert<T>(static_cast<double>(x));
          } else {
            out[i] = static_cast<T>(x);
          }
          break;
        }
        default:
          break;
      }
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlockThreads)
    dropout_kernel(const T* x, T* out, bool* mask, int64_t numel, double keep, double scale,
                   uint64_t seed, uint64_t offset) {
  using C = compute_t<T>;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t threads = static_cast<int64_t>(gridDim.x) * blockDim.x;
  curandStatePhilox4_32_10_t st;
  curand_init(seed, static_cast<unsigned long long>(tid), offset, &st);
  const C s = static_cast<C>(scale);
  const int64_t groups = (numel + kGroup - 1) / kGroup;
  for (int64_t grp = tid; grp < groups; grp += threads) {
    const uint4 w0 = curand4(&st);
    const uint4 w1 = curand4(&st);
    const uint32_t lo[kGroup] = {w0.x, w0.y, w0.z, w0.w};
    const uint32_t hi[kGroup] = {w1.x, w1.y, w1.z, w1.w};
    for (int j = 0; j < kGroup; ++j) {
      const int64_t i = grp * kGroup + j;
      if (i >= numel) break;
      const bool k = uniform_bits(lo[j], hi[j], 53) < keep;
      mask[i] = k;
      // (x * mask) * scale, as the CPU: a dropped inf or NaN gives NaN.
      out[i] = convert<T>(convert<C>(x[i]) * static_cast<C>(k) * s);
    }
  }
}

}  // namespace

uint64_t random_increment(int64_t numel) {
  const int64_t threads = random_blocks(numel) * kBlockThreads;
  const int64_t groups = (numel + kGroup - 1) / kGroup;
  const int64_t per_thread = (groups + threads - 1) / threads;
  return static_cast<uint64_t>(per_thread * kWordsPerGroup);
}

void launch_random(const RandomLaunch& r, cudaStream_t stream) {
  if (r.numel <= 0) return;
  const auto blocks = static_cast<unsigned>(random_blocks(r.numel));
  dispatch_dt(r.dtype,
              [&]<typename T>(T*) { random_kernel<T><<<blocks, kBlockThreads, 0, stream>>>(r); });
}

void launch_dropout(Dt dtype, const void* x, void* out, bool* mask, int64_t numel, double p,
                    double scale, uint64_t seed, uint64_t offset, cudaStream_t stream) {
  if (numel <= 0) return;
  const auto blocks = static_cast<unsigned>(random_blocks(numel));
  const double keep = 1.0 - p;
  dispatch_dt(dtype, [&]<typename T>(T*) {
    if constexpr (is_float_v<T>) {
      dropout_kernel<T><<<blocks, kBlockThreads, 0, stream>>>(
          static_cast<const T*>(x), static_cast<T*>(out), mask, numel, keep, scale, seed, offset);
    }
  });
}

}  // namespace loom::cuda::kernels
