// CUDA kernels of embedding and embedding_dense_backward on the own kernels of
// libs/embedding.cu, with the reference CPU kernels' checks (ops/nn/cpu/embedding.cpp).
// embedding_backward is CompositeImplicitAutograd and needs nothing here. An index out of
// range is found on the device and read back (one stream synchronization per call) to throw
// the reference's IndexError.
#include <string_view>
#include <vector>

#include "libs/common.h"
#include "libs/kernels.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/nn/meta/embedding.h"

namespace loom::cuda::libs {
namespace {

namespace meta = loom::ops::meta;

void check_indices(std::string_view op, int position, const Tensor& indices) {
  const DType t = indices.dtype();
  LOOM_CHECK_T(TypeError, t == DType::Int64 || t == DType::Int32, "Expected tensor for argument #",
               position,
               " 'indices' to have one of the following scalar types: Long, Int; but got ",
               dtype_name(t), " on ", indices.device().str(), " instead (while checking arguments for ",
               op, ")");
}

/// A zeroed {flag, value} pair on the device, and its read-back: {raised, value}.
Tensor bad_flag(std::string_view op, const Tensor& like) {
  Tensor flag = new_on(like, {2}, DType::Int64);
  zero_fill(op, flag);
  return flag;
}

std::pair<bool, int64_t> read_flag(std::string_view op, const Tensor& flag, cudaStream_t stream) {
  int64_t host[2] = {0, 0};
  LOOM_CUDA_CHECK(cudaMemcpyAsync(host, flag.data_ptr(), sizeof host, cudaMemcpyDeviceToHost, stream),
                  op);
  LOOM_CUDA_CHECK(cudaStreamSynchronize(stream), op);
  return {host[0] != 0, host[1]};
}

Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t /*padding_idx*/,
                 bool /*scale_grad_by_freq*/, bool /*sparse*/) {
  constexpr std::string_view op = "embedding";
  check_cuda_tensors(op, {{"weight", weight}, {"indices", indices}});
  meta::check_embedding_weight(weight);
  check_indices(op, 1, indices);
  const int64_t V = weight.size(0), D = weight.size(1);
  const std::vector<int64_t> out_sizes = meta::embedding_output_sizes(weight, indices);
  OpGuard g(op, weight);
  Tensor out = new_on(weight, out_sizes, weight.dtype());
  if (out.numel() == 0) return out;
  // Rows are copied whole, so only the row stride may be anything.
  const Tensor w = weight.stride(1) == 1 ? weight : dense(weight);
  const Tensor idx = dense(indices);
  const Tensor flag = bad_flag(op, weight);
  launch_embedding(static_cast<int>(w.element_size()), ptr(w), V, D, w.stride(0), ptr(idx),
                   idx.dtype() == DType::Int32, idx.numel(), ptr(out),
                   static_cast<int64_t*>(ptr(flag)), g.stream());
  check_launch(op);
  LOOM_CHECK_T(IndexError, !read_flag(op, flag, g.stream()).first, op,
               ": index out of range in self");
  return out;
}

Tensor embedding_dense_backward(const Tensor& grad_output, const Tensor& indices,
                                int64_t num_weights, int64_t padding_idx, bool scale_grad_by_freq) {
  constexpr std::string_view op = "embedding_dense_backward";
  check_cuda_tensors(op, {{"grad_output", grad_output}, {"indices", indices}});
  check_indices("embedding_backward", 2, indices);
  check_float_dtype(op, "grad_output", grad_output);
  const int64_t n = indices.numel();
  meta::check_embedding_backward(op, grad_output, indices, num_weights);
  const int64_t D = grad_output.size(-1);
  const DType dt = grad_output.dtype();
  OpGuard g(op, grad_output);
  Tensor out = new_on(grad_output, {num_weights, D}, dt);
  Tensor acc = new_on(grad_output, {num_weights, D}, dt == DType::Float64 ? DType::Float64 : DType::Float32);
  zero_fill(op, acc);
  Tensor counts;
  if (scale_grad_by_freq) {
    counts = new_on(grad_output, {num_weights}, DType::Int32);
    zero_fill(op, counts);
  }
  const Tensor go = dense(grad_output), idx = dense(indices);
  const Tensor flag = bad_flag(op, grad_output);
  launch_embedding_backward(kind_of(dt), ptr(go), ptr(idx), idx.dtype() == DType::Int32, n, D,
                            num_weights, padding_idx, scale_grad_by_freq, ptr(acc),
                            scale_grad_by_freq ? static_cast<int*>(ptr(counts)) : nullptr, ptr(out),
                            static_cast<int64_t*>(ptr(flag)), g.stream());
  check_launch(op);
  const auto [raised, value] = read_flag(op, flag, g.stream());
  LOOM_CHECK_T(IndexError, !raised, op, ": index ", value, " is out of range for num_weights ",
               num_weights);
  return out;
}

}  // namespace

LOOM_LIBRARY_IMPL(aten, CUDA, m) {
  m.set_provider("cuda");
  m.impl("embedding", &embedding);
  m.impl("embedding_dense_backward", &embedding_dense_backward);
}

}  // namespace loom::cuda::libs
