#pragma once
/// @file
/// Helpers shared by the .cpp files of plugins/cuda/src/libs: new tensors on a CUDA device,
/// contiguous copies through the dispatcher (the plugin's own copy kernels), dtype names for
/// messages, and the cudaDataType / cudnnDataType of a Loom dtype.

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstdint>
#include <string_view>

#include "loom/core/error.h"
#include "loom/core/tensor.h"
#include "loom/core/tensor_checks.h"
#include "runtime/context.h"

namespace loom::cuda::libs {

/// A new contiguous tensor of sizes and dtype on the device of `like`.
inline Tensor new_on(const Tensor& like, IntArrayRef sizes, DType dtype) {
  return Tensor::empty(sizes, TensorOptions{}.with(dtype).with(like.device()));
}

/// A new contiguous tensor of sizes and dtype on CUDA device index `device`.
inline Tensor new_on_device(int device, IntArrayRef sizes, DType dtype) {
  return Tensor::empty(sizes, TensorOptions{}.with(dtype).with(
                                  Device(device_type(), static_cast<int16_t>(device))));
}

/// t itself when contiguous, else a contiguous copy (aten::contiguous on CUDA).
Tensor dense(const Tensor& t);

/// t converted to dtype (t itself when it already has it), contiguous.
Tensor contiguous_as(const Tensor& t, DType dtype);

/// Copies src into dst (same sizes, any strides) on the device (aten::copy_).
void copy_into(const Tensor& dst, const Tensor& src);

/// Zero-fills a contiguous tensor on the current stream (cudaMemsetAsync).
void zero_fill(std::string_view op, const Tensor& t);

/// The floating dtypes the library kernels take: float32, float64, float16, bfloat16.
inline bool is_supported_float(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 ||
         d == DType::BFloat16;
}

/// Throws TypeError "<op>: <arg> of dtype <d> is not supported on CUDA (float32, float64,
/// float16 and bfloat16 are)" unless t's dtype is one of the supported floats.
void check_float_dtype(std::string_view op, std::string_view arg, const Tensor& t);

/// Throws ValueError when v does not fit an int (cuBLAS and cuDNN take int sizes).
int to_int(std::string_view op, std::string_view what, int64_t v);

/// The cudnnDataType_t of a supported float dtype.
cudnnDataType_t cudnn_dtype(DType d);

/// The cudaDataType_t of a supported float dtype.
cudaDataType_t cuda_dtype(DType d);

/// The 0-based kind code of a supported float dtype that the .cu launchers take:
/// 0 float32, 1 float64, 2 float16, 3 bfloat16.
int kind_of(DType d);

/// The raw element pointer of t (at its storage offset).
inline void* ptr(const Tensor& t) { return t.data_ptr(); }

/// Sets device as current for the scope after checking that CUDA is available.
class OpGuard {
 public:
  OpGuard(std::string_view op, const Tensor& t)
      : device_((check_available(op), device_index(t))), guard_(device_) {}
  /// The device index.
  int device() const { return device_; }
  /// The current stream of the device.
  cudaStream_t stream() const { return current_stream(device_); }

 private:
  int device_;
  DeviceGuard guard_;
};

}  // namespace loom::cuda::libs
