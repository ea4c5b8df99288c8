// Derivative formulas of the upsampling family (Note [Derivative kernels] in
// loom/autograd/derivative.h): each op's gradient is its backward op, given the forward's
// output size, input size and scales, as in PyTorch's derivatives.yaml. The backward ops are
// linear in grad_output, with the forward op as their adjoint: that is their own formula
// (double backward).
#include <optional>
#include <string_view>

#include "loom/autograd/derivative.h"
#include "loom/ops/core.h"
#include "loom/ops/nn.h"
#include "loom/ops/tensor_methods.h"

namespace loom {
namespace {
using autograd::BackwardContext;
using autograd::variable_list;

OptScale scale(BackwardContext& c, std::string_view name) {
  if (c.is_none(name)) return std::nullopt;
  return c.real(name);
}
}  // namespace

LOOM_LIBRARY_IMPL(aten, Autograd, m) {
  using autograd::derivative;
  derivative(m, "upsample_nearest1d", {}, [](BackwardContext& c) -> variable_list {
    return {upsample_nearest1d_backward(c.grad(), c.ints("output_size"), c.input_sizes(0),
                                        scale(c, "scales"))};
  });
  derivative(m, "upsample_nearest2d", {}, [](BackwardContext& c) -> variable_list {
    return {upsample_nearest2d_backward(c.grad(), c.ints("output_size"), c.input_sizes(0),
                                        scale(c, "scales_h"), scale(c, "scales_w"))};
  });
  derivative(m, "upsample_nearest3d", {}, [](BackwardContext& c) -> variable_list {
    return {upsample_nearest3d_backward(c.grad(), c.ints("output_size"), c.input_sizes(0),
                                        scale(c, "scales_d"), scale(c, "scales_h"),
                                        scale(c, "scales_w"))};
  });
  derivative(m, "_upsample_nearest_exact1d", {}, [](BackwardContext& c) -> variable_list {
    return {upsample_nearest_exact1d_backward(c.grad(), c.ints("output_size"), c.input_sizes(0),
                                              scale(c, "scales"))};
  });
  derivative(m, "_upsample_nearest_exact2d", {}, [](BackwardContext& c) -> variable_list {
    return {upsample_nearest_exact2d_backward(c.grad(), c.ints("output_size"), c.input_sizes(0),
                                              scale(c, "scales_h"), scale(c, "scales_w"))};
  });
  derivative(m, "_upsample_nearest_exact3d", {}, [](BackwardContext& c) -> variable_list {
    return {upsample_nearest_exact3d_backward(c.grad(), c.ints("output_size"), c.input_sizes(0),
                                              scale(c, "scales_d"), scale(c, "scales_h"),
                                              scale(c, "scales_w"))};
  });
  derivative(m, "upsample_linear1d", {}, [](BackwardContext& c) -> variable_list {
    return {upsample_linear1d_backward(c.grad(), c.ints("output_size"), c.input_sizes(0),
                                       c.flag("align_corners"), scale(c, "scales"))};
  });
  derivative(m, "upsample_bilinear2d", {}, [](BackwardContext& c) -> variable_list {
    return {upsample_bilinear2d_backward(c.grad(), c.ints("output_size"), c.input_sizes(0),
                                         c.flag("align_corners"), scale(c, "scales_h"),
                                         scale(c, "scales_w"))};
  });
  derivative(m, "upsample_trilinear3d", {}, [](BackwardContext& c) -> variable_list {
    return {upsample_trilinear3d_backward(c.grad(), c.ints("output_size"), c.input_sizes(0),
                                          c.flag("align_corners"), scale(c, "scales_d"),
                                          scale(c, "scales_h"), scale(c, "scales_w"))};
  });

  // ---- double backward ----
  derivative(m, "upsample_nearest1d_backward", {}, [](BackwardContext& c) -> variable_list {
    return {upsample_nearest1d(c.grad(), c.ints("output_size"), scale(c, "scales"))};
  });
  derivative(m, "upsample_nearest2d_backward", {}, [](BackwardContext& c) -> variable_list {
    return {upsample_nearest2d(c.grad(), c.ints("output_size"), scale(c, "scales_h"),
                               scale(c, "scales_w"))};
  });
  derivative(m, "upsample_nearest3d_backward", {}, [](BackwardContext& c) -> variable_list {
    return {upsample_nearest3d(c.grad(), c.ints("output_size"), scale(c, "scales_d"),
                               scale(c, "scales_h"), scale(c, "scales_w"))};
  });
  derivative(m, "_upsample_nearest_exact1d_backward", {}, [](BackwardContext& c) -> variable_list {
    return {upsample_nearest_exact1d(c.grad(), c.ints("output_size"), scale(c, "scales"))};
  });
  derivative(m, "_upsample_nearest_exact2d_backward", {}, [](BackwardContext& c) -> variable_list {
    return {upsample_nearest_exact2d(c.grad(), c.ints("output_size"), scale(c, "scales_h"),
                                     scale(c, "scales_w"))};
  });
  derivative(m, "_upsample_nearest_exact3d_backward", {}, [](BackwardContext& c) -> variable_list {
    return {upsample_nearest_exact3d(c.grad(), c.ints("output_size"), scale(c, "scales_d"),
                                     scale(c, "scales_h"), scale(c, "scales_w"))};
  });
  derivative(m, "upsample_linear1d_backward", {}, [](BackwardContext& c) -> variable_list {
    return {upsample_linear1d(c.grad(), c.ints("output_size"), c.flag("align_corners"),
                              scale(c, "scales"))};
  });
  derivative(m, "upsample_bilinear2d_backward", {}, [](BackwardContext& c) -> variable_list {
    return {upsample_bilinear2d(c.grad(), c.ints("output_size"), c.flag("align_corners"),
                                scale(c, "scales_h"), scale(c, "scales_w"))};
  });
  derivative(m, "upsample_trilinear3d_backward", {}, [](BackwardContext& c) -> variable_list {
    return {upsample_trilinear3d(c.grad(), c.ints("output_size"), c.flag("align_corners"),
                                 scale(c, "scales_d"), scale(c, "scales_h"), scale(c, "scales_w"))};
  });
}

}  // namespace loom
