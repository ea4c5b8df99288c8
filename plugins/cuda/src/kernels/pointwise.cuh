#pragma once
// The generic pointwise kernel: one storage dtype T for every memory input, output T (or bool
// for predicates), an op code switched at run time.
//
// Note [Pointwise op codes]: a kernel per (op, dtype) would be ~60 ops x 10 dtypes x 3 index
// paths of instantiations, minutes of nvcc per CI build. Instead one kernel per (dtype, index
// path) switches on PointwiseLaunch::op, a value uniform across the grid, so the branch costs
// a few instructions per element of a memory-bound loop. Formulas copy the reference CPU
// kernels' (ops/core/cpu/{unary,binary,activation,compare,pointwise_ternary}.cpp), computed in
// compute_t<T> (float for float16/bfloat16). The host half (cuda_iterator.cpp) casts inputs to
// the common dtype first, as the CPU's TensorIterator does, so a kernel reads one dtype only.
#include <cstdint>
#include <type_traits>

#include "kernels/device_types.cuh"
#include "kernels/kernel_api.h"
#include "kernels/offset_calculator.cuh"
#include "loom/ops/meta/integer_math.h"

namespace loom::cuda::kernels {

template <typename C>
__device__ __forceinline__ C slot(const ScalarSlots& s, int k) {
  if constexpr (std::is_same_v<C, double>) {
    return s.d[k];
  } else if constexpr (std::is_same_v<C, float>) {
    return s.f[k];
  } else if constexpr (std::is_same_v<C, bool>) {
    return s.i[k] != 0;
  } else {
    return static_cast<C>(s.i[k]);
  }
}

template <typename C>
__device__ __forceinline__ bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>) {
    return v != v;
  } else {
    return false;
  }
}

// clamp with optional bounds, NaN propagating from the input or a bound (CPU clamp_value).
template <typename C>
__device__ __forceinline__ C clamp_value(C x, bool has_lo, C lo, bool has_hi, C hi) {
  if constexpr (std::is_floating_point_v<C>) {
    if (x != x) return x;
    if (has_lo && lo != lo) return lo;
    if (has_hi && hi != hi) return hi;
  }
  if (has_lo && x < lo) x = lo;
  if (has_hi && x > hi) x = hi;
  return x;
}

// a + b and a * b in compute type C: integers wrap, as on the CPU (Note [Wrapping integer
// arithmetic] in loom/ops/meta/integer_math.h; the CUDA compiler may also assume signed
// overflow away); bool keeps C++'s arithmetic, as the CPU's.
template <typename C>
__device__ __forceinline__ C plus(C a, C b) {
  if constexpr (ops::meta::WrappingInt<C>) {
    return ops::meta::wrapping_add(a, b);
  } else {
    return static_cast<C>(a + b);
  }
}
template <typename C>
__device__ __forceinline__ C times(C a, C b) {
  if constexpr (ops::meta::WrappingInt<C>) {
    return ops::meta::wrapping_mul(a, b);
  } else {
    return static_cast<C>(a * b);
  }
}

// floor(a / b) as Python's // for floats (the CPU's div_floor_float).
template <typename C>
__device__ __forceinline__ C div_floor_float(C a, C b) {
  if (b == 0) return a / b;
  const C mod = fmod(a, b);
  C div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
  if (div != 0) {
    C fl = floor(div);
    if (div - fl > C(0.5)) fl += 1;
    return fl;
  }
  return copysign(C(0), a / b);
}

/// The value of an arithmetic op in compute type C (bool, an integer, float or double).
template <typename C>
__device__ C apply(const PointwiseLaunch& p, C x, C y, C z) {
  constexpr bool kFloat = std::is_floating_point_v<C>;
  constexpr bool kBool = std::is_same_v<C, bool>;
  const ScalarSlots& s = p.s;
  auto zero_div = [&]() {
    if (p.zero_division_flag != nullptr) *p.zero_division_flag = 1;
    return C(0);
  };
  switch (p.op) {
    case PwOp::Identity:
      return x;
    case PwOp::Neg:
      if constexpr (kBool) {
        return x;  // refused by the host
      } else if constexpr (kFloat) {
        return -x;
      } else {
        return ops::meta::wrapping_neg(x);
      }
    case PwOp::Abs:
      if constexpr (kBool) {
        return x;
      } else if constexpr (kFloat) {
        return x < 0 ? -x : x;
      } else {
        return ops::meta::wrapping_abs(x);
      }
    case PwOp::Sign:
      if constexpr (kBool) {
        return x;
      } else if constexpr (std::is_unsigned_v<C>) {
        return static_cast<C>(x > C(0));
      } else {
        return static_cast<C>((C(0) < x) - (x < C(0)));
      }
    case PwOp::Floor:
      if constexpr (kFloat) return floor(x);
      return x;
    case PwOp::Ceil:
      if constexpr (kFloat) return ceil(x);
      return x;
    case PwOp::Round:
      if constexpr (kFloat) return rint(x);  // half to even, as nearbyint
      return x;
    case PwOp::Trunc:
      if constexpr (kFloat) return trunc(x);
      return x;
    case PwOp::Relu:
      return x > C(0) || is_nan(x) ? x : C(0);
    case PwOp::Hardtanh: {
      if (is_nan(x)) return x;
      const C lo = slot<C>(s, 0), hi = slot<C>(s, 1);
      return x < lo ? lo : x > hi ? hi : x;
    }
    case PwOp::NanToNum:
      if constexpr (kFloat) {
        if (x != x) return slot<C>(s, 0);
        if (isinf(x)) return x > 0 ? slot<C>(s, 1) : slot<C>(s, 2);
      }
      return x;
    case PwOp::BitwiseNot:
      if constexpr (kBool) {
        return !x;
      } else if constexpr (!kFloat) {
        return static_cast<C>(~x);
      }
      return x;
    case PwOp::ClampScalar:
      return clamp_value<C>(x, (s.i[2] & 1) != 0, slot<C>(s, 0), (s.i[2] & 2) != 0, slot<C>(s, 1));
    case PwOp::Add:
      return plus(x, times(slot<C>(s, 0), y));
    case PwOp::Mul:
      if constexpr (kBool) {
        return x && y;
      } else {
        return times(x, y);
      }
    case PwOp::Div:
    case PwOp::DivTrunc:
      if constexpr (kFloat) {
        return p.op == PwOp::Div ? x / y : trunc(x / y);
      } else if constexpr (!kBool) {
        if (y == 0) return zero_div();
        return ops::meta::div_trunc_int(x, y);
      }
      return x;
    case PwOp::DivFloor:
      if constexpr (kFloat) {
        return div_floor_float(x, y);
      } else if constexpr (!kBool) {
        if (y == 0) return zero_div();
        return ops::meta::div_floor_int(x, y);
      }
      return x;
    case PwOp::Remainder:
    case PwOp::Fmod: {
      const bool python = p.op == PwOp::Remainder;
      if constexpr (kFloat) {
        C m = fmod(x, y);
        if (python && m != 0 && ((y < 0) != (m < 0))) m += y;
        return m;
      } else if constexpr (!kBool) {
        if (y == 0) return zero_div();
        return python ? ops::meta::remainder_int(x, y) : ops::meta::fmod_int(x, y);
      }
      return x;
    }
    case PwOp::Pow:
    case PwOp::PowScalarExp:
      if constexpr (kBool) {
        return x || !y;
      } else if constexpr (kFloat) {
        if (p.op == PwOp::PowScalarExp) {
          if (y == C(2)) return x * x;
          if (y == C(0.5)) return sqrt(x);
        }
        return pow(x, y);
      } else {
        return ops::meta::pow_int(x, y);
      }
    case PwOp::Maximum:
    case PwOp::Minimum:
      if (is_nan(x)) return x;
      if (is_nan(y)) return y;
      return p.op == PwOp::Maximum ? (x > y ? x : y) : (x < y ? x : y);
    case PwOp::BitwiseAnd:
    case PwOp::BitwiseOr:
    case PwOp::BitwiseXor:
      if constexpr (!kFloat) {
        return p.op == PwOp::BitwiseAnd  ? static_cast<C>(x & y)
               : p.op == PwOp::BitwiseOr ? static_cast<C>(x | y)
                                         : static_cast<C>(x ^ y);
      }
      return x;
    case PwOp::ThresholdBackward:
      return y <= slot<C>(s, 0) ? C(0) : x;
    case PwOp::ClampMin:
      return clamp_value<C>(x, true, y, false, C(0));
    case PwOp::ClampMax:
      return clamp_value<C>(x, false, C(0), true, y);
    case PwOp::MaskScale:
      return times(times(x, y), slot<C>(s, 0));
    case PwOp::Where:
      return x != C(0) ? y : z;
    case PwOp::MaskedFill:
      return y != C(0) ? z : x;
    case PwOp::Addcmul:
      return plus(x, times(times(slot<C>(s, 0), y), z));
    case PwOp::Clamp:
      return clamp_value<C>(x, true, y, true, z);
    default:
      break;
  }
  if constexpr (kFloat) {
    switch (p.op) {
      case PwOp::Exp:
        return exp(x);
      case PwOp::Exp2:
        return exp2(x);
      case PwOp::Log:
        return log(x);
      case PwOp::Log2:
        return log2(x);
      case PwOp::Log1p:
        return log1p(x);
      case PwOp::Expm1:
        return expm1(x);
      case PwOp::Sqrt:
        return sqrt(x);
      case PwOp::Rsqrt:
        return C(1) / sqrt(x);
      case PwOp::Reciprocal:
        return C(1) / x;
      case PwOp::Sin:
        return sin(x);
      case PwOp::Cos:
        return cos(x);
      case PwOp::Tan:
        return tan(x);
      case PwOp::Tanh:
        return tanh(x);
      case PwOp::Sigmoid:
        return C(1) / (C(1) + exp(-x));
      case PwOp::Erf:
        return erf(x);
      case PwOp::RoundDecimals: {
        const C t = slot<C>(s, 0);
        return s.i[0] != 0 ? rint(x / t) * t : rint(x * t) / t;
      }
      case PwOp::LeakyRelu:
        return x > C(0) ? x : x * slot<C>(s, 0);
      case PwOp::Elu:
        return x <= C(0) ? expm1(x * slot<C>(s, 2)) * slot<C>(s, 0) : x * slot<C>(s, 1);
      case PwOp::Gelu:
        if (s.i[0] != 0) {
          const C k = C(0.7978845608028654);  // sqrt(2 / pi)
          return C(0.5) * x * (C(1) + tanh(k * (x + C(0.044715) * x * x * x)));
        }
        return x * C(0.5) * (C(1) + erf(x * C(0.7071067811865476)));
      case PwOp::Silu:
        return x / (C(1) + exp(-x));
      case PwOp::Mish:
        return x * tanh(log1p(exp(x)));
      case PwOp::Hardsigmoid:
        return fmin(fmax(x + C(3), C(0)), C(6)) / C(6);
      case PwOp::Hardswish:
        return x * fmin(fmax(x + C(3), C(0)), C(6)) / C(6);
      case PwOp::Selu:
        return x > 0 ? C(1.0507009873554804934193349852946) * x
                     : C(1.0507009873554804934193349852946 * 1.6732632423543772848170429916717) *
                           expm1(x);
      case PwOp::Softplus: {
        const C beta = slot<C>(s, 0);
        return x * beta > slot<C>(s, 1) ? x : log1p(exp(x * beta)) / beta;
      }
      case PwOp::Atan2:
        return atan2(x, y);
      case PwOp::Addcdiv:
        return x + slot<C>(s, 0) * (y / z);
      case PwOp::Lerp: {
        const C w = z;
        return fabs(w) < C(0.5) ? x + w * (y - x) : y - (y - x) * (C(1) - w);
      }
      default:
        break;
    }
  }
  return x;  // unreachable: the host sends only ops defined for the dtype
}

/// The value of a predicate (bool result) in compute type C.
template <typename C>
__device__ bool apply_pred(const PointwiseLaunch& p, C x, C y) {
  switch (p.op) {
    case PwOp::Eq:
      return x == y;
    case PwOp::Ne:
      return x != y;
    case PwOp::Lt:
      return x < y;
    case PwOp::Le:
      return x <= y;
    case PwOp::Gt:
      return x > y;
    case PwOp::Ge:
      return x >= y;
    case PwOp::LogicalAnd:
      return (x != C(0)) && (y != C(0));
    case PwOp::LogicalOr:
      return (x != C(0)) || (y != C(0));
    case PwOp::LogicalXor:
      return (x != C(0)) != (y != C(0));
    case PwOp::LogicalNot:
      return x == C(0);
    default:
      return false;
  }
}

template <typename T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

/// The inputs of one launch as the kernels read them: a pointer, or a fixed value (a scalar
/// input, a 0-stride memory input of the contiguous path, an absent input).
template <typename T>
struct PwInputs {
  using C = compute_t<T>;
  const T* ptr[3];
  C fixed[3];
  bool is_fixed[3];
  __device__ PwInputs(const PointwiseLaunch& p, unsigned stride0) {
#pragma unroll
    for (int k = 0; k < 3; ++k) {
      ptr[k] = static_cast<const T*>(p.in[k]);
      is_fixed[k] = true;
      fixed[k] = C(0);
      if (k >= p.nin) continue;
      if ((p.scalar_inputs >> k) & 1u) {
        fixed[k] = slot<C>(p.s, kScalarInputSlot + k);
      } else if ((stride0 >> k) & 1u) {
        fixed[k] = convert<C>(ptr[k][0]);
      } else {
        is_fixed[k] = false;
      }
    }
  }
};

template <typename T, bool kBoolOut>
__device__ __forceinline__ std::conditional_t<kBoolOut, bool, T> pw_one(const PointwiseLaunch& p,
                                                                        compute_t<T> x,
                                                                        compute_t<T> y,
                                                                        compute_t<T> z) {
  if constexpr (kBoolOut) {
    return apply_pred<compute_t<T>>(p, x, y);
  } else {
    return convert<T>(apply<compute_t<T>>(p, x, y, z));
  }
}

constexpr int kVec = 4;

/// Every memory operand contiguous (inputs may be 0-stride): a flat grid-stride loop, with
/// kVec-element vector loads and stores when vec (all pointers aligned to the vector size).
template <typename T, bool kBoolOut>
__global__ void __launch_bounds__(kBlockThreads)
    pw_contiguous_kernel(PointwiseLaunch p, int64_t n, unsigned stride0, bool vec) {
  using C = compute_t<T>;
  using O = std::conditional_t<kBoolOut, bool, T>;
  const PwInputs<T> in(p, stride0);
  O* out = static_cast<O*>(p.out);
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t start = 0;
  if (vec) {
    const int64_t nvec = n / kVec;
    for (int64_t v = tid; v < nvec; v += step) {
      Pack<T, kVec> a[3];
#pragma unroll
      for (int k = 0; k < 3; ++k) {
        if (!in.is_fixed[k]) a[k] = reinterpret_cast<const Pack<T, kVec>*>(in.ptr[k])[v];
      }
      Pack<O, kVec> r;
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        const C x = in.is_fixed[0] ? in.fixed[0] : convert<C>(a[0].v[j]);
        const C y = in.is_fixed[1] ? in.fixed[1] : convert<C>(a[1].v[j]);
        const C z = in.is_fixed[2] ? in.fixed[2] : convert<C>(a[2].v[j]);
        r.v[j] = pw_one<T, kBoolOut>(p, x, y, z);
      }
      reinterpret_cast<Pack<O, kVec>*>(out)[v] = r;
    }
    start = nvec * kVec;
  }
  for (int64_t i = start + tid; i < n; i += step) {
    const C x = in.is_fixed[0] ? in.fixed[0] : convert<C>(in.ptr[0][i]);
    const C y = in.is_fixed[1] ? in.fixed[1] : convert<C>(in.ptr[1][i]);
    const C z = in.is_fixed[2] ? in.fixed[2] : convert<C>(in.ptr[2][i]);
    out[i] = pw_one<T, kBoolOut>(p, x, y, z);
  }
}

/// Any strides: each output index goes through the offset calculator.
template <typename T, bool kBoolOut, typename Index>
__global__ void __launch_bounds__(kBlockThreads)
    pw_strided_kernel(PointwiseLaunch p, OffsetCalculator<kMaxOperands, Index> calc, Index n) {
  using C = compute_t<T>;
  using O = std::conditional_t<kBoolOut, bool, T>;
  using Offset = typename OffsetCalculator<kMaxOperands, Index>::Offset;
  const PwInputs<T> in(p, 0u);
  O* out = static_cast<O*>(p.out);
  const Index step = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    Offset off[kMaxOperands];
    calc.get(i, off);
    const C x = in.is_fixed[0] ? in.fixed[0] : convert<C>(in.ptr[0][off[1]]);
    const C y = in.is_fixed[1] ? in.fixed[1] : convert<C>(in.ptr[1][off[2]]);
    const C z = in.is_fixed[2] ? in.fixed[2] : convert<C>(in.ptr[2][off[3]]);
    out[off[0]] = pw_one<T, kBoolOut>(p, x, y, z);
  }
}

inline bool aligned_to(const void* ptr, size_t bytes) {
  return reinterpret_cast<uintptr_t>(ptr) % bytes == 0;
}

/// Picks the path (contiguous with or without vectors, strided 32- or 64-bit) and launches.
template <typename T, bool kBoolOut>
void launch_pointwise_path(const PointwiseLaunch& p, const Geometry& g, int64_t numel,
                           cudaStream_t stream) {
  using O = std::conditional_t<kBoolOut, bool, T>;
  bool contiguous = g.ndim == 1 && g.strides[0][0] == 1;
  unsigned stride0 = 0;
  bool vec = contiguous && aligned_to(p.out, sizeof(O) * kVec);
  for (int k = 0; k < p.nin && contiguous; ++k) {
    if ((p.scalar_inputs >> k) & 1u) continue;
    const int64_t st = g.strides[k + 1][0];
    if (st == 0) {
      stride0 |= 1u << k;
    } else if (st == 1) {
      vec = vec && aligned_to(p.in[k], sizeof(T) * kVec);
    } else {
      contiguous = false;
    }
  }
  if (contiguous) {
    const int64_t work = vec ? (numel + kVec - 1) / kVec : numel;
    pw_contiguous_kernel<T, kBoolOut>
        <<<grid_for(work), kBlockThreads, 0, stream>>>(p, numel, stride0, vec);
  } else if (fits_32bit(g, p.nin + 1, numel)) {
    pw_strided_kernel<T, kBoolOut, uint32_t><<<grid_for(numel), kBlockThreads, 0, stream>>>(
        p, OffsetCalculator<kMaxOperands, uint32_t>(g), static_cast<uint32_t>(numel));
  } else {
    pw_strided_kernel<T, kBoolOut, uint64_t><<<grid_for(numel), kBlockThreads, 0, stream>>>(
        p, OffsetCalculator<kMaxOperands, uint64_t>(g), static_cast<uint64_t>(numel));
  }
}

/// launch_pointwise for storage type T (instantiated in pointwise_float.cu / pointwise_int.cu).
template <typename T>
void launch_pointwise_typed(const PointwiseLaunch& p, const Geometry& g, int64_t numel,
                            cudaStream_t stream) {
  if (p.bool_out) {
    launch_pointwise_path<T, true>(p, g, numel, stream);
  } else {
    launch_pointwise_path<T, false>(p, g, numel, stream);
  }
}

}  // namespace loom::cuda::kernels
