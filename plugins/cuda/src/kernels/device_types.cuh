#pragma once
// Device-side element types of the CUDA kernels: the storage type of each Dt, its compute
// type (float for the 16-bit floats, as on the CPU), conversions with the CPU kernels' rules
// (convert<To, From> in ops/core/cpu/elementwise.h) and a dtype switch for launchers.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "kernels/kernel_api.h"

namespace loom::cuda::kernels {

/// The type an element of storage type T is computed in.
template <typename T>
struct Compute {
  using type = T;
};
template <>
struct Compute<__half> {
  using type = float;
};
template <>
struct Compute<__nv_bfloat16> {
  using type = float;
};
template <typename T>
using compute_t = typename Compute<T>::type;

template <typename T>
inline constexpr bool is_half_v = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;
template <typename T>
inline constexpr bool is_float_v = std::is_floating_point_v<T> || is_half_v<T>;

/// Converts between storage/compute types as the CPU's convert<To, From> does: the 16-bit
/// floats go through float (round to nearest even), to bool is != 0, a non-finite float to
/// an integer is 0, other floats reach a narrow integer through int64.
template <typename To, typename From>
__host__ __device__ __forceinline__ To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<From, __half>) {
    return convert<To>(__half2float(v));
  } else if constexpr (std::is_same_v<From, __nv_bfloat16>) {
    return convert<To>(__bfloat162float(v));
  } else if constexpr (std::is_same_v<To, __half>) {
    return __float2half_rn(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, __nv_bfloat16>) {
    return __float2bfloat16_rn(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    if (!isfinite(v)) return To(0);
    if constexpr (std::is_same_v<To, int64_t>) {
      return static_cast<int64_t>(v);
    } else {
      return static_cast<To>(static_cast<int64_t>(v));
    }
  } else {
    return static_cast<To>(v);
  }
}

/// Calls f(T*) with a typed null pointer for dtype d.
template <typename F>
__host__ decltype(auto) dispatch_dt(Dt d, F&& f) {
  switch (d) {
    case Dt::Bool:
      return f(static_cast<bool*>(nullptr));
    case Dt::UInt8:
      return f(static_cast<uint8_t*>(nullptr));
    case Dt::Int8:
      return f(static_cast<int8_t*>(nullptr));
    case Dt::Int16:
      return f(static_cast<int16_t*>(nullptr));
    case Dt::Int32:
      return f(static_cast<int32_t*>(nullptr));
    case Dt::Int64:
      return f(static_cast<int64_t*>(nullptr));
    case Dt::Float16:
      return f(static_cast<__half*>(nullptr));
    case Dt::BFloat16:
      return f(static_cast<__nv_bfloat16*>(nullptr));
    case Dt::Float32:
      return f(static_cast<float*>(nullptr));
    case Dt::Float64:
      break;
  }
  return f(static_cast<double*>(nullptr));
}

/// Threads per block of the elementwise kernels.
inline constexpr int kBlockThreads = 256;

/// Blocks for n work items of kBlockThreads each, capped: the kernels loop grid-stride.
inline unsigned grid_for(int64_t n) {
  const int64_t blocks = (n + kBlockThreads - 1) / kBlockThreads;
  constexpr int64_t kMaxBlocks = 65536;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks));
}

}  // namespace loom::cuda::kernels
