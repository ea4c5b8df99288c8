// Reference CPU kernels: embedding (a row gather), embedding_dense_backward (a row
// scatter-add) and the composite embedding_backward.
#include "loom/ops/nn/embedding.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string_view>
#include <vector>

#include "cpu/meta.h"
#include "cpu/reduce_engine.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/nn/meta/embedding.h"

namespace loom::ops::cpu::nn {
namespace {

namespace meta = loom::ops::meta;

using reduction::cast_contiguous;
using reduction::data_of;
using reduction::load;
using reduction::store;

/// The indices as int64 in row-major order; PyTorch's checkScalarTypes message otherwise.
/// None for meta indices, which have no values (so the range checks, a value's, pass).
std::vector<int64_t> index_values(std::string_view op, int position, const Tensor& indices) {
  const DType t = indices.dtype();
  LOOM_CHECK_T(TypeError, t == DType::Int64 || t == DType::Int32, "Expected tensor for argument #",
               position,
               " 'indices' to have one of the following scalar types: Long, Int; but got CPU",
               torch_type_name(t), "Type instead (while checking arguments for ", op, ")");
  if (is_meta(indices)) return {};
  const Tensor c = cast_contiguous(indices, DType::Int64);
  const int64_t* p = data_of<int64_t>(c);
  return std::vector<int64_t>(p, p + c.numel());
}

Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t /*padding_idx*/,
                 bool /*scale_grad_by_freq*/, bool /*sparse*/) {
  check_defined("embedding", {{"weight", weight}, {"indices", indices}});
  meta::check_embedding_weight(weight);
  const std::vector<int64_t> idx = index_values("embedding", 1, indices);
  const int64_t V = weight.size(0), D = weight.size(1);
  for (int64_t i : idx) {
    LOOM_CHECK_T(IndexError, i >= 0 && i < V, "embedding: index out of range in self");
  }
  const std::vector<int64_t> out_sizes = meta::embedding_output_sizes(weight, indices);
  Tensor out = Tensor::empty(out_sizes, options_like(weight, weight.dtype()));
  if (out.numel() == 0 || is_meta(out)) return out;
  // Rows are copied whole, so only the row stride may be anything.
  const Tensor w = weight.stride(1) == 1 ? weight : cast_contiguous(weight, weight.dtype());
  const auto es = static_cast<int64_t>(w.element_size());
  const auto row_bytes = static_cast<size_t>(D * es);
  const char* src = static_cast<const char*>(w.data_ptr());
  char* dst = static_cast<char*>(out.data_ptr());
  const auto n = static_cast<int64_t>(idx.size());
#pragma omp parallel for schedule(static) if (out.numel() >= reduction::kGrain)
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(dst + i * D * es, src + idx[i] * w.stride(0) * es, row_bytes);
  }
  return out;
}

Tensor embedding_dense_backward(const Tensor& grad_output, const Tensor& indices,
                                int64_t num_weights, int64_t padding_idx, bool scale_grad_by_freq) {
  constexpr const char* op = "embedding_dense_backward";
  check_defined(op, {{"grad_output", grad_output}, {"indices", indices}});
  const std::vector<int64_t> idx = index_values("embedding_backward", 2, indices);
  const auto n = static_cast<int64_t>(idx.size());
  meta::check_embedding_backward(op, grad_output, indices, num_weights);
  const int64_t D = grad_output.size(-1);
  for (int64_t i : idx) {
    LOOM_CHECK_T(IndexError, i == padding_idx || (i >= 0 && i < num_weights), op, ": index ", i,
                 " is out of range for num_weights ", num_weights);
  }
  Tensor out = Tensor::empty({num_weights, D}, options_like(grad_output, grad_output.dtype()));
  const Tensor g = cast_contiguous(grad_output, grad_output.dtype());
  // Equal indices become runs of one sorted order; each run sums its rows into one output
  // row (in double), so the runs are independent and need no buffer of the whole table.
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return idx[a] < idx[b]; });
  std::vector<int64_t> run_start;
  for (int64_t k = 0; k < n; ++k) {
    if (k == 0 || idx[order[k]] != idx[order[k - 1]]) run_start.push_back(k);
  }
  run_start.push_back(n);
  const auto runs = static_cast<int64_t>(run_start.size()) - 1;
  dispatch_floats(op, grad_output, [&]<typename T>(T*) {
    if (is_meta(out)) return;
    const T* pg = data_of<T>(g);
    T* po = data_of<T>(out);
    if (out.numel() > 0) std::memset(po, 0, static_cast<size_t>(out.numel()) * sizeof(T));
#pragma omp parallel for schedule(dynamic, 16) if (n * D >= reduction::kGrain && runs > 1)
    for (int64_t r = 0; r < runs; ++r) {
      const int64_t id = idx[order[run_start[r]]];
      if (id == padding_idx) continue;
      const int64_t count = run_start[r + 1] - run_start[r];
      std::vector<double> acc(static_cast<size_t>(D), 0.0);
      for (int64_t k = run_start[r]; k < run_start[r + 1]; ++k) {
        const T* row = pg + order[k] * D;
        for (int64_t j = 0; j < D; ++j) acc[j] += load(row + j);
      }
      const double scale = scale_grad_by_freq ? 1.0 / static_cast<double>(count) : 1.0;
      T* dst = po + id * D;
      for (int64_t j = 0; j < D; ++j) store(dst + j, acc[j] * scale);
    }
  });
  return out;
}

Tensor embedding_backward(const Tensor& grad, const Tensor& indices, int64_t num_weights,
                          int64_t padding_idx, bool scale_grad_by_freq, bool sparse) {
  LOOM_CHECK_T(NotImplementedError, !sparse,
               "embedding_backward: sparse gradients are not supported (there are no sparse "
               "tensors); use sparse=False");
  return loom::embedding_dense_backward(grad, indices, num_weights, padding_idx,
                                        scale_grad_by_freq);
}

}  // namespace

LOOM_REFERENCE_KERNELS(aten, m) {
  m.set_provider("reference");
  m.impl("embedding", &embedding);
  m.impl("embedding_dense_backward", &embedding_dense_backward);
}

// embedding_backward's composite over embedding_dense_backward, for every backend.
LOOM_LIBRARY_IMPL(aten, CompositeImplicitAutograd, m) {
  m.set_provider("reference");
  m.impl("embedding_backward", &embedding_backward);
}

}  // namespace loom::ops::cpu::nn
