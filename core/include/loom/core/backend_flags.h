#pragma once
/// @file
/// Process-wide algorithm switches the backends read (PyTorch's
/// torch.backends.cudnn.deterministic / .benchmark, torch.backends.cuda.matmul.allow_tf32,
/// torch.use_deterministic_algorithms).
///
/// Each starts from an environment variable read once, when first asked:
/// LOOM_DETERMINISTIC=1, LOOM_CUDNN_BENCHMARK=1, LOOM_ALLOW_TF32=1. Setting one from code
/// wins over the environment. Reads are one relaxed atomic load (fine on a hot path).

namespace loom::backends {

/// Deterministic mode: backends choose only algorithms that give bit-identical results run
/// to run (cuDNN/cuBLAS deterministic algorithms, no atomics-based reductions). Off by default.
bool deterministic();
/// Turns deterministic mode on or off.
void set_deterministic(bool on);
/// Benchmark mode: cuDNN searches for the fastest algorithm of each new shape (once; the
/// choice is cached per shape). Off by default; ignored while deterministic() is on.
bool benchmark();
/// Turns benchmark mode on or off.
void set_benchmark(bool on);
/// Whether float32 matmuls and convolutions may use TF32 tensor cores (faster, ~10 mantissa
/// bits). Off by default (an opt-in, as PyTorch has it since 1.12).
bool allow_tf32();
/// Allows or forbids TF32.
void set_allow_tf32(bool on);

}  // namespace loom::backends
