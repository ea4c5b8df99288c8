// CUDA kernels of native_dropout and native_dropout_backward (ops/nn/cpu/dropout.cpp's
// semantics and messages). The mask is drawn on the device's Philox generator (Note [CUDA
// random layout] in random.cu), so it differs from the CPU's draw for the same seed.
#include <optional>
#include <tuple>
#include <string_view>

#include "kernels/copy_kernel.h"
#include "kernels/cuda_iterator.h"
#include "loom/core/str_cat.h"
#include "loom/core/tensor_checks.h"
#include "loom/dispatcher/library.h"
#include "runtime/context.h"

namespace loom::cuda {
namespace {

void check_probability(std::string_view op, double p) {
  LOOM_CHECK(p >= 0 && p <= 1, op, ": dropout probability has to be between 0 and 1, but got ", p);
}

std::tuple<Tensor, Tensor> native_dropout(const Tensor& input, double p,
                                          std::optional<bool> train) {
  constexpr const char* op = "native_dropout";
  check_cuda_tensors(op, {{"input", input}});
  LOOM_CHECK_T(TypeError, is_floating_point(input.dtype()), op,
               ": expected a floating point input, got ", input.describe());
  const TensorOptions opts = TensorOptions{}.with(input.device());
  Tensor mask = Tensor::empty(input.sizes(), opts.with(DType::Bool));
  const int dev = device_index(input);
  if (!train.value_or(true)) {
    if (mask.numel() > 0) {
      DeviceGuard guard(dev);
      LOOM_CUDA_CHECK(cudaMemsetAsync(mask.data_ptr(), 1, static_cast<size_t>(mask.numel()),
                                      current_stream(dev)),
                      op);
    }
    return {cast_copy(input, input.dtype()), mask};
  }
  check_probability("native_dropout", p);
  Tensor out = Tensor::empty(input.sizes(), opts.with(input.dtype()));
  if (input.numel() == 0) return {out, mask};
  const double keep = 1.0 - p;
  // p == 1 keeps nothing; scale 0 rather than inf, so kept-nothing outputs are x * 0.
  const double scale = keep == 0 ? 0.0 : 1.0 / keep;
  const Tensor x = contiguous_cuda(input);
  const uint64_t inc = kernels::random_increment(input.numel());
  const auto [seed, offset] = philox_seed_offset(dev, inc);
  DeviceGuard guard(dev);
  kernels::launch_dropout(to_dt(input.dtype()), x.data_ptr(), out.data_ptr(),
                          static_cast<bool*>(mask.data_ptr()), input.numel(), p, scale, seed,
                          offset, current_stream(dev));
  check_launch(op);
  return {out, mask};
}

Tensor native_dropout_backward(const Tensor& grad_output, const Tensor& mask, double scale) {
  constexpr const char* op = "native_dropout_backward";
  check_cuda_tensors(op, {{"grad_output", grad_output}, {"mask", mask}});
  LOOM_CHECK_T(TypeError, mask.dtype() == DType::Bool, op,
               ": Mask should be Bool Scalar Type, but got mask ", mask.describe());
  LOOM_CHECK(grad_output.sizes() == mask.sizes(), op, ": grad_output of size ",
             sizes_str(grad_output.sizes()), " does not match mask of size ",
             sizes_str(mask.sizes()));
  LOOM_CHECK_T(TypeError, is_floating_point(grad_output.dtype()), op,
               ": expected a floating point input, got ", grad_output.describe());
  CudaIterator it(op);
  // The mask stays out of promotion; it is read as 0/1 in grad_output's dtype.
  it.add_input("grad_output", grad_output).add_input("mask", mask, /*promote=*/false);
  it.build();
  kernels::PointwiseLaunch pl;
  pl.op = kernels::PwOp::MaskScale;
  set_slot_double(pl.s, 0, scale);
  it.run(pl);
  return it.finish();
}

}  // namespace

LOOM_LIBRARY_IMPL(aten, CUDA, m) {
  m.impl("native_dropout", &native_dropout);
  m.impl("native_dropout_backward", &native_dropout_backward);
}

}  // namespace loom::cuda
