#pragma once
/// @file
/// Calling an op's CPU kernel from a CUDA kernel: for metadata-only kernels (views), which
/// never touch data or check the device, and for factories asked for a CPU result.

#include "loom/dispatcher/dispatch_key.h"

namespace loom::cuda {

/// For its scope, every dispatch on this thread goes to the CPU kernel: all keys but CPU are
/// excluded and CPU is included (so a call whose tensors are all CUDA tensors reaches it).
class CpuKernelGuard {
 public:
  CpuKernelGuard()
      : exclude_(DispatchKeySet::from_bits(~DispatchKeySet(DispatchKey::CPU).bits())),
        include_(DispatchKeySet(DispatchKey::CPU)) {}

 private:
  ExcludeDispatchKeyGuard exclude_;
  IncludeDispatchKeyGuard include_;
};

}  // namespace loom::cuda
