// The MKL CPU GEMM provider: its manifest. Its kernels (gemm.cpp) register the matmul family
// at the CPU key as provider "mkl", above cpu_onednn on Intel CPUs and below it elsewhere,
// and hand every call outside BLAS's domain to the next provider.
#include "loom/dispatcher/plugin.h"

LOOM_PLUGIN("cpu_mkl", LOOM_VERSION_STRING, "CPU GEMMs from Intel MKL (provider mkl)", "ops_core");
