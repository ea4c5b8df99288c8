#pragma once
/// @file
/// cuBLAS, opened at its first call (Note [cuBLAS opened at first use]).
///
/// Note [cuBLAS opened at first use]
/// libcublas pulls in libcublasLt, whose relocations alone cost ~150 MiB of resident memory at
/// load time: linked normally, every process that loads the CUDA plugin (`loom info`, a CPU-only
/// training run on a machine with a driver) pays that before any matmul. So the plugin does not
/// link cuBLAS: libs/cublas_lazy.cpp defines the few cuBLAS functions it calls (the C names of
/// cublas_api.h, hidden inside the plugin), and each forwards to the real function, looked up
/// with dlopen/dlsym of libcublas.so.<major> on the first call of any of them. cuDNN and the
/// runtime are small (~2 MiB) and stay linked. A missing or broken libcublas becomes a
/// loom::Error at the first matmul on a CUDA device, naming the library and dlerror's reason.
/// The same idea as Implib.so's generated stubs, written out for eleven functions.

namespace loom::cuda::libs {

/// Whether libcublas has been opened in this process (loom info reports the version it was
/// built against until then, so that asking never loads it).
bool cublas_loaded();

}  // namespace loom::cuda::libs
