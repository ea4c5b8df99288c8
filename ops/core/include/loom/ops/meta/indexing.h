#pragma once
/// @file
/// Indexing ops (index_select, index_add, gather, scatter, index_fill, masked_fill): argument
/// checks, parameter parsing and output shapes every backend of these ops shares, so that error
/// messages are word for word the same on every device. Device checks stay with each backend and
/// come first; the checks here follow them. Header-only, no state, no device-specific code.

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loom/core/error.h"
#include "loom/core/str_cat.h"
#include "loom/core/tensor.h"
#include "loom/ops/meta/pointwise.h"
#include "loom/ops/meta/wrap_dim.h"

namespace loom::ops::meta {

/// The index dtypes of index_select and index_add: int32 and int64.
inline bool is_index_dtype(DType d) { return d == DType::Int64 || d == DType::Int32; }

/// The message of an index v outside [-size, size) or [0, size) along dim (gather, scatter,
/// index_fill), PyTorch's sentence after op's name.
inline std::string index_out_of_bounds(std::string_view op, int64_t v, int64_t dim, int64_t size) {
  return str_cat(op, ": index ", v, " is out of bounds for dimension ", dim, " with size ", size);
}

/// t's size at d, a 0-d tensor counting as a 1-element vector.
inline int64_t size_or_one(const Tensor& t, int64_t d) { return t.dim() == 0 ? 1 : t.size(d); }

/// index_select's checks (dim already wrapped) and its result sizes: self's with dim's size
/// replaced by the number of indices.
inline std::vector<int64_t> index_select_sizes(const Tensor& self, int64_t dim,
                                               const Tensor& index) {
  const int64_t n = index.numel();
  LOOM_CHECK_T(IndexError, index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  LOOM_CHECK(!(self.dim() == 0 && n != 1),
             "index_select(): Index to scalar can have only 1 value, got ", n, " value(s)");
  LOOM_CHECK_T(TypeError, is_index_dtype(index.dtype()),
               "index_select(): Expected dtype int32 or int64 for index");
  std::vector<int64_t> sizes(self.sizes().begin(), self.sizes().end());
  if (self.dim() > 0) sizes[dim] = n;
  return sizes;
}

/// index_select: an empty self with indices must not be empty along dim.
inline void check_index_select_axis(const Tensor& self, int64_t dim, const Tensor& index) {
  if (self.dim() > 1 && index.numel() > 0 && self.numel() == 0) {
    LOOM_CHECK(self.size(dim) > 0, "index_select(): self indexing axis dim should be positive");
  }
}

/// index_select.out: out must have self's dtype.
inline void check_index_select_out(const Tensor& self, const Tensor& out) {
  LOOM_CHECK_T(TypeError, out.dtype() == self.dtype(),
               "index_select(): self and result must have the same scalar type");
}

/// PyTorch's index_func_meta_impl checks for index_add (dim already wrapped).
inline void check_index_add(const Tensor& self, int64_t dim, const Tensor& index,
                            const Tensor& source) {
  const int64_t numel = index.numel();
  LOOM_CHECK_T(IndexError, index.dim() <= 1,
               "index_add_(): Index is supposed to be a vector, but got dim: ", index.dim(),
               " with type: ", torch_type_name(index.dtype()),
               " and size: ", sizes_str(index.sizes()));
  LOOM_CHECK_T(TypeError, is_index_dtype(index.dtype()),
               "index_add_(): Expected dtype int32/int64 for index but got: ",
               torch_type_name(index.dtype()));
  LOOM_CHECK_T(TypeError, self.dtype() == source.dtype(), "index_add_(): self (",
               torch_type_name(self.dtype()), ") and source (", torch_type_name(source.dtype()),
               ") must have the same scalar type");
  LOOM_CHECK_T(IndexError, dim == 0 || dim < source.dim(), "index_add_(): Indexing dim ", dim,
               " is out of bounds of the source tensor with dim ", source.dim());
  const int64_t source_len = source.dim() == 0 ? 1 : source.size(dim);
  LOOM_CHECK(numel == source_len, "index_add_(): Number of indices (", numel,
             ") should be equal to source.size(dim): (", source_len, "), for dim: ", dim);
  std::vector<int64_t> self_sizes(self.sizes().begin(), self.sizes().end());
  std::vector<int64_t> source_sizes(source.sizes().begin(), source.sizes().end());
  if (source.dim() != 0 && self.dim() != 0) {
    self_sizes.erase(self_sizes.begin() + dim);
    source_sizes.erase(source_sizes.begin() + dim);
  }
  LOOM_CHECK(self_sizes == source_sizes,
             "source tensor shape must match self tensor shape, excluding the specified "
             "dimension. Got self.shape = ",
             sizes_str(self.sizes()), " source.shape = ", sizes_str(source.sizes()));
}

/// gather with a non-empty index: its dtype must be int64.
inline void check_gather_index_dtype(const Tensor& index) {
  LOOM_CHECK_T(TypeError, index.dtype() == DType::Int64,
               "gather(): Expected dtype int64 for index");
}

/// PyTorch's gather_shape_check (dim already wrapped).
inline void check_gather_shape(const Tensor& self, int64_t dim, const Tensor& index) {
  const int64_t self_dims = std::max<int64_t>(self.dim(), 1);
  LOOM_CHECK(self_dims == std::max<int64_t>(index.dim(), 1),
             "gather: Index tensor must have the same number of dimensions as input tensor");
  for (int64_t i = 0; i < self_dims; ++i) {
    if (i == dim) continue;
    LOOM_CHECK(size_or_one(index, i) <= size_or_one(self, i),
               "gather: Size does not match at dimension ", i, " expected index ",
               sizes_str(index.sizes()), " to be no larger than self ", sizes_str(self.sizes()),
               " apart from dimension ", dim);
  }
}

/// PyTorch's scatter_gather_dtype_check and scatter_shape_check for scatter, scatter_add and
/// scatter_reduce (dim already wrapped; src null for the value forms).
inline void check_scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor* src) {
  if (index.numel() != 0) {
    LOOM_CHECK_T(TypeError, index.dtype() == DType::Int64,
                 "scatter(): Expected dtype int64 for index");
  }
  if (src != nullptr) {
    LOOM_CHECK_T(TypeError, self.dtype() == src->dtype(),
                 "scatter(): Expected self.dtype to be equal to src.dtype");
  }
  if (index.numel() == 0) return;
  const int64_t self_dims = std::max<int64_t>(self.dim(), 1);
  LOOM_CHECK(self_dims == std::max<int64_t>(index.dim(), 1),
             "scatter: Index tensor must have the same number of dimensions as self tensor");
  bool wrong_shape = false;
  for (int64_t d = 0; d < self_dims && !wrong_shape; ++d) {
    wrong_shape = d != dim && size_or_one(index, d) > size_or_one(self, d);
  }
  if (src != nullptr) {
    LOOM_CHECK(std::max<int64_t>(src->dim(), 1) == self_dims,
               "scatter: Index tensor must have the same number of dimensions as src tensor");
    for (int64_t d = 0; d < self_dims && !wrong_shape; ++d) {
      wrong_shape = size_or_one(index, d) > size_or_one(*src, d);
    }
    LOOM_CHECK(!wrong_shape, "scatter: Expected index ", sizes_str(index.sizes()),
               " to be no larger than self ", sizes_str(self.sizes()), " apart from dimension ",
               dim, " and to be no larger size than src ", sizes_str(src->sizes()));
  } else {
    LOOM_CHECK(!wrong_shape, "scatter: Expected index ", sizes_str(index.sizes()),
               " to be no larger than self ", sizes_str(self.sizes()), " apart from dimension ",
               dim);
  }
}

/// index_fill_'s index checks; returns dim wrapped.
inline int64_t index_fill_dim(const Tensor& self, int64_t dim, const Tensor& index) {
  LOOM_CHECK_T(IndexError, index.dtype() == DType::Int64,
               "index_fill_(): Expected dtype int64 for index.");
  dim = wrap_dim("index_fill_", dim, self.dim());
  LOOM_CHECK(index.dim() <= 1, "index_fill_: Index has to be a vector/scalar");
  return dim;
}

/// index_fill_.Tensor: the value must be 0-d.
inline void check_index_fill_value(const Tensor& value) {
  LOOM_CHECK(value.dim() == 0,
             "index_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
             value.dim(), " dimension(s).");
}

/// masked_fill: the mask must be bool.
inline void check_masked_fill_mask(const Tensor& mask) {
  LOOM_CHECK_T(TypeError, mask.dtype() == DType::Bool,
               "masked_fill_ only supports boolean masks, but got mask with dtype ",
               c_type_name(mask.dtype()));
}

/// masked_fill.Tensor: the value must be 0-d.
inline void check_masked_fill_value(const Tensor& value) {
  LOOM_CHECK(value.dim() == 0,
             "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
             value.dim(), " dimension(s).");
}

}  // namespace loom::ops::meta
