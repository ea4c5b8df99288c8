// CUDA kernels of the optimizers' fused update ops (optim_steps.cuh): one grid-stride pass over
// a parameter, its gradient and its state, element by element, with the CPU kernels' formulas
// in the same order (plugins/optim/ops/cpu_steps.cpp). The options are run-time flags: they
// are the same for every thread, so the branches cost nothing measurable next to the memory
// traffic, and two instantiations per op (float, double) keep compile time small.
#include <algorithm>
#include <cmath>

#include "kernels/optim_steps.cuh"

namespace loom::cuda::kernels {
namespace {

constexpr int kThreads = 256;

/// Blocks for n elements: enough to fill an H200 several times over, each thread looping.
unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::min<int64_t>(std::max<int64_t>(b, 1), 132 * 32));
}

/// PyTorch's lerp (as cpu_steps.cpp): self + weight * (end - self), from the nearer end.
template <typename T>
__device__ __forceinline__ T lerp(T self, T end, T weight) {
  return fabs(weight) < T(0.5) ? self + weight * (end - self)
                               : end - (end - self) * (T(1) - weight);
}

template <typename T>
__global__ void sgd_kernel(T* __restrict__ x, const T* __restrict__ gr, T* __restrict__ b,
                           int64_t n, T lr, T mom, T damp, T wd, bool has_wd, bool has_momentum,
                           bool nesterov, bool first, T sign) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    T g = sign * gr[i];
    const T xi = x[i];
    if (has_wd) g = g + wd * xi;
    if (has_momentum) {
      const T bi = first ? g : mom * b[i] + damp * g;
      b[i] = bi;
      g = nesterov ? g + mom * bi : bi;
    }
    x[i] = xi - lr * g;
  }
}

template <typename T>
__global__ void adam_kernel(T* __restrict__ x, const T* __restrict__ gr, T* __restrict__ m,
                            T* __restrict__ v, T* __restrict__ vm, int64_t n, T step_size,
                            T bc2_sqrt, T decay, T wd, T w1, T b2, T w2, T eps, bool decoupled,
                            bool has_l2, bool amsgrad, T sign) {
  const bool from_self = fabs(w1) < T(0.5);
  const T w1c = T(1) - w1;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    T g = sign * gr[i];
    T xi = x[i];
    if (decoupled) {
      xi = xi * decay;
    } else if (has_l2) {
      g = g + wd * xi;
    }
    const T mi = m[i];
    const T m_new = from_self ? mi + w1 * (g - mi) : g - (g - mi) * w1c;
    const T v_new = b2 * v[i] + w2 * (g * g);
    m[i] = m_new;
    v[i] = v_new;
    T denom;
    if (amsgrad) {
      const T vmax = vm[i] < v_new ? v_new : vm[i];  // std::max(vm, v), NaN included
      vm[i] = vmax;
      denom = sqrt(vmax) / bc2_sqrt + eps;
    } else {
      denom = sqrt(v_new) / bc2_sqrt + eps;
    }
    x[i] = xi - step_size * (m_new / denom);
  }
}

template <typename T>
__global__ void rmsprop_kernel(T* __restrict__ x, const T* __restrict__ gr, T* __restrict__ sq,
                               T* __restrict__ ga, T* __restrict__ b, int64_t n, T lr, T alpha, T w,
                               T eps, T wd, T mom, bool has_wd, bool centered, bool has_momentum,
                               T sign) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    T g = sign * gr[i];
    const T xi = x[i];
    if (has_wd) g = g + wd * xi;
    const T s = alpha * sq[i] + w * (g * g);
    sq[i] = s;
    T avg;
    if (centered) {
      const T a = lerp(ga[i], g, w);
      ga[i] = a;
      avg = sqrt(s - a * a) + eps;
    } else {
      avg = sqrt(s) + eps;
    }
    if (has_momentum) {
      const T bi = mom * b[i] + g / avg;
      b[i] = bi;
      x[i] = xi - lr * bi;
    } else {
      x[i] = xi - lr * (g / avg);
    }
  }
}

template <typename T>
__global__ void adagrad_kernel(T* __restrict__ x, const T* __restrict__ gr, T* __restrict__ sum,
                               int64_t n, T clr, T wd, T eps, bool has_wd, T sign) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    T g = sign * gr[i];
    const T xi = x[i];
    if (has_wd) g = g + wd * xi;
    const T s = sum[i] + g * g;
    sum[i] = s;
    const T std_dev = sqrt(s) + eps;
    x[i] = xi - clr * (g / std_dev);
  }
}

template <typename T>
void sgd(const SgdStepLaunch& a, cudaStream_t stream) {
  sgd_kernel<T><<<blocks_for(a.numel), kThreads, 0, stream>>>(
      static_cast<T*>(a.param), static_cast<const T*>(a.grad), static_cast<T*>(a.momentum_buffer),
      a.numel, T(a.lr), T(a.momentum), T(1 - a.dampening), T(a.weight_decay), a.weight_decay != 0,
      a.momentum != 0, a.nesterov, a.is_first_step, a.maximize ? T(-1) : T(1));
}

template <typename T>
void adam(const AdamStepLaunch& a, cudaStream_t stream) {
  adam_kernel<T><<<blocks_for(a.numel), kThreads, 0, stream>>>(
      static_cast<T*>(a.param), static_cast<const T*>(a.grad), static_cast<T*>(a.exp_avg),
      static_cast<T*>(a.exp_avg_sq), static_cast<T*>(a.max_exp_avg_sq), a.numel, T(a.step_size),
      T(a.bc2_sqrt), T(a.decay), T(a.weight_decay), T(1 - a.beta1), T(a.beta2), T(1 - a.beta2),
      T(a.eps), a.decoupled, a.weight_decay != 0, a.amsgrad, a.maximize ? T(-1) : T(1));
}

template <typename T>
void rmsprop(const RmspropStepLaunch& a, cudaStream_t stream) {
  rmsprop_kernel<T><<<blocks_for(a.numel), kThreads, 0, stream>>>(
      static_cast<T*>(a.param), static_cast<const T*>(a.grad), static_cast<T*>(a.square_avg),
      static_cast<T*>(a.grad_avg), static_cast<T*>(a.momentum_buffer), a.numel, T(a.lr), T(a.alpha),
      T(1 - a.alpha), T(a.eps), T(a.weight_decay), T(a.momentum), a.weight_decay != 0, a.centered,
      a.momentum > 0, a.maximize ? T(-1) : T(1));
}

template <typename T>
void adagrad(const AdagradStepLaunch& a, cudaStream_t stream) {
  adagrad_kernel<T><<<blocks_for(a.numel), kThreads, 0, stream>>>(
      static_cast<T*>(a.param), static_cast<const T*>(a.grad), static_cast<T*>(a.state_sum),
      a.numel, T(a.clr), T(a.weight_decay), T(a.eps), a.weight_decay != 0,
      a.maximize ? T(-1) : T(1));
}

}  // namespace

void launch_sgd_step(Dt dtype, const SgdStepLaunch& a, cudaStream_t stream) {
  if (a.numel == 0) return;
  dtype == Dt::Float64 ? sgd<double>(a, stream) : sgd<float>(a, stream);
}

void launch_adam_step(Dt dtype, const AdamStepLaunch& a, cudaStream_t stream) {
  if (a.numel == 0) return;
  dtype == Dt::Float64 ? adam<double>(a, stream) : adam<float>(a, stream);
}

void launch_rmsprop_step(Dt dtype, const RmspropStepLaunch& a, cudaStream_t stream) {
  if (a.numel == 0) return;
  dtype == Dt::Float64 ? rmsprop<double>(a, stream) : rmsprop<float>(a, stream);
}

void launch_adagrad_step(Dt dtype, const AdagradStepLaunch& a, cudaStream_t stream) {
  if (a.numel == 0) return;
  dtype == Dt::Float64 ? adagrad<double>(a, stream) : adagrad<float>(a, stream);
}

}  // namespace loom::cuda::kernels
