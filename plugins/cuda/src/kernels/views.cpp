// The view ops on CUDA tensors: the reference CPU kernels themselves.
//
// Note [CUDA views are the CPU kernels]: the kernels of ops/core/cpu/shape_views.cpp compute
// sizes, strides and an offset from metadata and return self.as_strided_view(...); none reads
// data or checks the device (reshape's copy for non-viewable strides is the one exception,
// below). So each view op gets one boxed CUDA kernel that calls the CPU kernel under
// CpuKernelGuard: one implementation of PyTorch's shape rules and messages for both devices.
// reshape, reshape_as and flatten first make a contiguous CUDA copy when no view exists, so
// the CPU kernel always finds a view.
#include <optional>
#include <string_view>
#include <vector>

#include "kernels/copy_kernel.h"
#include "kernels/cpu_redispatch.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/meta/wrap_dim.h"
#include "loom/ops/op_handle.h"

namespace loom::cuda {
namespace {

using Dims = std::vector<int64_t>;

/// The view ops whose CPU kernels serve CUDA tensors unchanged (shape_views.cpp's list, less
/// reshape, reshape_as and flatten.using_ints).
constexpr std::string_view kMetadataViews[] = {
    "view",
    "unflatten.int",
    "squeeze",
    "squeeze.dim",
    "squeeze.dims",
    "unsqueeze",
    "transpose.int",
    "permute",
    "t",
    "expand",
    "expand_as",
    "narrow",
    "slice.Tensor",
    "select.int",
    "as_strided",
    "split.Tensor",
    "split_with_sizes",
    "chunk",
    "unbind.int",
    "view_as",
    "movedim.intlist",
    "movedim.int",
    "swapaxes",
    "swapdims",
    "split.sizes",
    "unsqueeze_",
    "squeeze_",
    "squeeze_.dim",
    "squeeze_.dims",
    "transpose_",
    "t_",
};

void call_cpu_kernel(const OperatorHandle& op, Stack& stack) {
  CpuKernelGuard cpu;
  op.call_boxed(stack);
}

// The requested shape with one -1 resolved, or nullopt when the request is invalid (the CPU
// kernel then reports it with its message).
std::optional<Dims> infer_size(IntArrayRef shape, int64_t numel) {
  Dims out(shape.begin(), shape.end());
  int64_t known = 1;
  std::optional<size_t> infer;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      if (infer) return std::nullopt;
      infer = i;
    } else {
      if (out[i] < 0) return std::nullopt;
      known *= out[i];
    }
  }
  if (infer) {
    if (known == 0 || numel % known != 0) return std::nullopt;
    out[*infer] = numel / known;
  } else if (known != numel) {
    return std::nullopt;
  }
  return out;
}

// Whether a tensor of (oldshape, oldstride) can be viewed as newshape: PyTorch's
// computeStride, as the CPU kernel's compute_stride (ops/core/cpu/shape_views.cpp).
bool viewable(IntArrayRef oldshape, IntArrayRef oldstride, const Dims& newshape) {
  if (oldshape.empty()) return true;
  int64_t numel = 1;
  for (int64_t s : oldshape) numel *= s;
  if (numel == 0) return true;
  int64_t view_d = static_cast<int64_t>(newshape.size()) - 1;
  int64_t chunk_base_stride = oldstride.back();
  int64_t tensor_numel = 1;
  int64_t view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(oldshape.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= oldshape[tensor_d];
    if (tensor_d == 0 || (oldshape[tensor_d - 1] != 1 &&
                          oldstride[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || newshape[view_d] == 1)) {
        view_numel *= newshape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (tensor_d > 0) {
        chunk_base_stride = oldstride[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

// self, or a contiguous copy when self cannot be viewed as shape.
Tensor viewable_source(const Tensor& self, IntArrayRef shape) {
  if (self.is_contiguous()) return self;
  const std::optional<Dims> s = infer_size(shape, self.numel());
  if (!s || viewable(self.sizes(), self.strides(), *s)) return self;
  return contiguous_cuda(self);
}

Tensor reshape(const Tensor& self, IntArrayRef shape) {
  LOOM_TYPED_OP(op, "aten::reshape", Tensor(const Tensor&, IntArrayRef));
  const Tensor src = viewable_source(self, shape);
  CpuKernelGuard cpu;
  return op(src, shape);
}

Tensor reshape_as(const Tensor& self, const Tensor& other) { return reshape(self, other.sizes()); }

Tensor flatten(const Tensor& self, int64_t start_dim, int64_t end_dim) {
  LOOM_TYPED_OP(op, "aten::flatten.using_ints", Tensor(const Tensor&, int64_t, int64_t));
  Tensor src = self;
  const int64_t nd = self.dim();
  if (nd > 0 && !self.is_contiguous()) {
    const int64_t s = ops::meta::wrap_dim("flatten", start_dim, nd),
                  e = ops::meta::wrap_dim("flatten", end_dim, nd);
    if (s < e) {
      Dims shape;
      for (int64_t d = 0; d < s; ++d) shape.push_back(self.size(d));
      int64_t n = 1;
      for (int64_t d = s; d <= e; ++d) n *= self.size(d);
      shape.push_back(n);
      for (int64_t d = e + 1; d < nd; ++d) shape.push_back(self.size(d));
      src = viewable_source(self, shape);
    }
  }
  CpuKernelGuard cpu;
  return op(src, start_dim, end_dim);
}

}  // namespace

LOOM_LIBRARY_IMPL(aten, CUDA, m) {
  for (std::string_view name : kMetadataViews) {
    m.impl_kernel(name, std::nullopt, KernelFunction::from_boxed(&call_cpu_kernel));
  }
  m.impl("reshape", &reshape);
  m.impl("reshape_as", &reshape_as);
  m.impl("flatten.using_ints", &flatten);
}

}  // namespace loom::cuda
