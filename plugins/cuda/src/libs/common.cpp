// Helpers shared by the library kernels (libs/common.h).
#include "libs/common.h"

#include <limits>

#include "loom/core/str_cat.h"
#include "loom/ops/pointwise.h"

namespace loom::cuda::libs {

Tensor dense(const Tensor& t) { return t.is_contiguous() ? t : loom::contiguous(t); }

Tensor contiguous_as(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype) return dense(t);
  return dense(loom::to(t, dtype));
}

void copy_into(const Tensor& dst, const Tensor& src) { loom::copy_(dst, src); }

void zero_fill(std::string_view op, const Tensor& t) {
  if (t.numel() == 0) return;
  LOOM_CHECK(t.is_contiguous(), op, ": internal error: zero_fill of a non-contiguous tensor");
  LOOM_CUDA_CHECK(cudaMemsetAsync(t.data_ptr(), 0, static_cast<size_t>(t.numel()) * t.element_size(),
                                  current_stream(device_index(t))),
                  op);
}

void check_float_dtype(std::string_view op, std::string_view arg, const Tensor& t) {
  LOOM_CHECK_T(TypeError, is_supported_float(t.dtype()), op, ": ", arg, " of dtype ",
               dtype_name(t.dtype()), " on ", t.device().str(),
               " is not supported by the CUDA kernel (float32, float64, float16 and bfloat16 are)");
}

int to_int(std::string_view op, std::string_view what, int64_t v) {
  LOOM_CHECK_T(ValueError, v >= std::numeric_limits<int>::min() && v <= std::numeric_limits<int>::max(),
               op, ": ", what, " ", v, " does not fit the 32-bit int the CUDA library takes");
  return static_cast<int>(v);
}

cudnnDataType_t cudnn_dtype(DType d) {
  switch (d) {
    case DType::Float64:
      return CUDNN_DATA_DOUBLE;
    case DType::Float16:
      return CUDNN_DATA_HALF;
    case DType::BFloat16:
      return CUDNN_DATA_BFLOAT16;
    default:
      return CUDNN_DATA_FLOAT;
  }
}

cudaDataType_t cuda_dtype(DType d) {
  switch (d) {
    case DType::Float64:
      return CUDA_R_64F;
    case DType::Float16:
      return CUDA_R_16F;
    case DType::BFloat16:
      return CUDA_R_16BF;
    default:
      return CUDA_R_32F;
  }
}

int kind_of(DType d) {
  switch (d) {
    case DType::Float64:
      return 1;
    case DType::Float16:
      return 2;
    case DType::BFloat16:
      return 3;
    default:
      return 0;
  }
}

}  // namespace loom::cuda::libs
