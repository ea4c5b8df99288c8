// Reference CPU kernels of the view ops: each result is self.as_strided_view(...), sharing
// storage and version counter, with PyTorch's sizes and strides. reshape and flatten are
// views when the strides allow it and copies otherwise, as in PyTorch.
#include <algorithm>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include "cpu/meta.h"
#include "cpu/strided_copy.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/meta/wrap_dim.h"

namespace loom::ops::cpu {
namespace {

using Dims = std::vector<int64_t>;

Dims to_dims(IntArrayRef a) { return Dims(a.begin(), a.end()); }

// Resolves one -1 in a requested shape against numel, with PyTorch's messages after op's name.
Dims infer_size(std::string_view op, IntArrayRef shape, int64_t numel) {
  Dims out = to_dims(shape);
  int64_t known = 1;
  std::optional<size_t> infer;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      LOOM_CHECK(!infer, op, ": only one dimension can be inferred");
      infer = i;
    } else {
      LOOM_CHECK(out[i] >= 0, op, ": invalid shape dimension ", out[i]);
      known *= out[i];
    }
  }
  const bool ok = numel == known || (infer && known > 0 && numel % known == 0);
  LOOM_CHECK(ok, op, ": shape '", sizes_str(shape), "' is invalid for input of size ", numel);
  if (infer) {
    // PyTorch: "cannot reshape tensor of 0 elements into shape [0, -1] because the unspecified
    // dimension size -1 can be any value and is ambiguous".
    LOOM_CHECK(known != 0, op, ": cannot reshape tensor of 0 elements into shape ",
               sizes_str(shape),
               " because the unspecified dimension size -1 can be any value and is ambiguous");
    out[*infer] = numel / known;
  }
  return out;
}

// PyTorch's computeStride (aten/src/ATen/TensorUtils.cpp): the strides that let a tensor of
// (oldshape, oldstride) be viewed as newshape, or nullopt when no view exists.
std::optional<Dims> compute_stride(IntArrayRef oldshape, IntArrayRef oldstride,
                                   const Dims& newshape) {
  if (oldshape.empty()) return Dims(newshape.size(), 1);
  int64_t numel = 1;
  for (int64_t s : oldshape) numel *= s;
  if (numel == 0 && oldshape == IntArrayRef(newshape)) return to_dims(oldstride);
  Dims newstride(newshape.size());
  if (numel == 0) {
    for (int64_t d = static_cast<int64_t>(newshape.size()) - 1; d >= 0; --d) {
      newstride[d] = d == static_cast<int64_t>(newshape.size()) - 1
                         ? 1
                         : std::max<int64_t>(newshape[d + 1], 1) * newstride[d + 1];
    }
    return newstride;
  }
  int64_t view_d = static_cast<int64_t>(newshape.size()) - 1;
  int64_t chunk_base_stride = oldstride.back();
  int64_t tensor_numel = 1;
  int64_t view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(oldshape.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= oldshape[tensor_d];
    if (tensor_d == 0 || (oldshape[tensor_d - 1] != 1 &&
                          oldstride[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || newshape[view_d] == 1)) {
        newstride[view_d] = view_numel * chunk_base_stride;
        view_numel *= newshape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (tensor_d > 0) {
        chunk_base_stride = oldstride[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return newstride;
}

Tensor make_view(const Tensor& self, const Dims& sizes, const Dims& strides, int64_t offset) {
  return self.as_strided_view(sizes, strides, offset);
}

Tensor view(const Tensor& self, IntArrayRef size) {
  const Dims shape = infer_size("view", size, self.numel());
  auto stride = compute_stride(self.sizes(), self.strides(), shape);
  LOOM_CHECK(stride.has_value(),
             "view: view size is not compatible with input tensor's size and stride (at least one "
             "dimension spans across two contiguous subspaces). Use .reshape(...) instead.");
  return make_view(self, shape, *stride, self.storage_offset());
}

Tensor reshape(const Tensor& self, IntArrayRef shape_in) {
  const Dims shape = infer_size("reshape", shape_in, self.numel());
  if (auto stride = compute_stride(self.sizes(), self.strides(), shape)) {
    return make_view(self, shape, *stride, self.storage_offset());
  }
  Tensor copy = contiguous_copy(self);
  return make_view(copy, shape, to_dims(contiguous_strides(shape)), 0);
}

Tensor flatten(const Tensor& self, int64_t start_dim, int64_t end_dim) {
  const int64_t nd = self.dim();
  start_dim = meta::wrap_dim("flatten", start_dim, nd);
  end_dim = meta::wrap_dim("flatten", end_dim, nd);
  LOOM_CHECK(start_dim <= end_dim,
             "flatten() has invalid args: start_dim cannot come after "
             "end_dim");
  if (nd == 0) return reshape(self, {1});
  if (start_dim == end_dim)
    return make_view(self, to_dims(self.sizes()), to_dims(self.strides()), self.storage_offset());
  Dims shape;
  for (int64_t d = 0; d < start_dim; ++d) shape.push_back(self.size(d));
  int64_t n = 1;
  for (int64_t d = start_dim; d <= end_dim; ++d) n *= self.size(d);
  shape.push_back(n);
  for (int64_t d = end_dim + 1; d < nd; ++d) shape.push_back(self.size(d));
  return reshape(self, shape);
}

Tensor unflatten(const Tensor& self, int64_t dim, IntArrayRef sizes) {
  LOOM_CHECK(self.dim() > 0, "unflatten: Cannot unflatten a 0-d tensor");
  dim = meta::wrap_dim("unflatten", dim, self.dim());
  LOOM_CHECK(!sizes.empty(), "unflatten: sizes must be non-empty");
  const Dims inferred = [&] {
    int64_t known = 1;
    int64_t infer = -1;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] == -1) {
        LOOM_CHECK(infer < 0, "unflatten: only one dimension can be inferred");
        infer = static_cast<int64_t>(i);
      } else {
        known *= sizes[i];
      }
    }
    Dims out = to_dims(sizes);
    const int64_t n = self.size(dim);
    if (infer >= 0 && known != 0 && n % known == 0) out[infer] = n / known;
    int64_t prod = 1;
    for (int64_t s : out) prod *= s;
    LOOM_CHECK(prod == n, "unflatten: Provided sizes ", sizes_str(sizes),
               " don't multiply up to the size of dim ", dim, " (", n, ") in the input tensor");
    return out;
  }();
  Dims shape = to_dims(self.sizes());
  shape.erase(shape.begin() + dim);
  shape.insert(shape.begin() + dim, inferred.begin(), inferred.end());
  return view(self, shape);
}

Tensor squeeze_dims_impl(const Tensor& self, const std::vector<bool>& drop) {
  Dims sizes, strides;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (drop[d] && self.size(d) == 1) continue;
    sizes.push_back(self.size(d));
    strides.push_back(self.stride(d));
  }
  return make_view(self, sizes, strides, self.storage_offset());
}

Tensor squeeze(const Tensor& self) {
  return squeeze_dims_impl(self, std::vector<bool>(self.dim(), true));
}

Tensor squeeze_dims(const Tensor& self, IntArrayRef dims) {
  std::vector<bool> drop(self.dim(), false);
  for (int64_t d : dims) {
    const int64_t w = meta::wrap_dim("squeeze", d, self.dim());
    if (self.dim() == 0) continue;
    LOOM_CHECK(!drop[w], "squeeze: dim ", w, " appears multiple times in the list of dims");
    drop[w] = true;
  }
  return squeeze_dims_impl(self, drop);
}

Tensor squeeze_dim(const Tensor& self, int64_t dim) { return squeeze_dims(self, {dim}); }

Tensor unsqueeze(const Tensor& self, int64_t dim) {
  dim = meta::wrap_dim("unsqueeze", dim, self.dim() + 1);
  Dims sizes = to_dims(self.sizes());
  Dims strides = to_dims(self.strides());
  const int64_t stride = dim >= self.dim() ? 1 : sizes[dim] * strides[dim];
  sizes.insert(sizes.begin() + dim, 1);
  strides.insert(strides.begin() + dim, stride);
  return make_view(self, sizes, strides, self.storage_offset());
}

Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1) {
  dim0 = meta::wrap_dim("transpose", dim0, self.dim());
  dim1 = meta::wrap_dim("transpose", dim1, self.dim());
  Dims sizes = to_dims(self.sizes());
  Dims strides = to_dims(self.strides());
  if (self.dim() > 0) {
    std::swap(sizes[dim0], sizes[dim1]);
    std::swap(strides[dim0], strides[dim1]);
  }
  return make_view(self, sizes, strides, self.storage_offset());
}

Tensor permute(const Tensor& self, IntArrayRef dims) {
  const int64_t nd = self.dim();
  LOOM_CHECK(static_cast<int64_t>(dims.size()) == nd,
             "permute: number of dimensions in the tensor input does not match the "
             "length of the desired ordering of dimensions i.e. input.dim() = ",
             nd, " is not equal to len(dims) = ", dims.size());
  Dims sizes(nd), strides(nd);
  std::vector<bool> seen(nd, false);
  for (int64_t i = 0; i < nd; ++i) {
    const int64_t d = meta::wrap_dim("permute", dims[i], nd);
    LOOM_CHECK(!seen[d], "permute: duplicate dims are not allowed.");
    seen[d] = true;
    sizes[i] = self.size(d);
    strides[i] = self.stride(d);
  }
  return make_view(self, sizes, strides, self.storage_offset());
}

Tensor t(const Tensor& self) {
  LOOM_CHECK(self.dim() <= 2, "t() expects a tensor with <= 2 dimensions, but self is ", self.dim(),
             "D");
  return transpose(self, 0, self.dim() < 2 ? 0 : 1);
}

Tensor expand(const Tensor& self, IntArrayRef size, bool /*implicit*/) {
  const auto nd = static_cast<int64_t>(size.size());
  LOOM_CHECK(nd >= self.dim(), "expand(", self.describe(), ", size=", sizes_str(size),
             "): the number of sizes provided (", nd,
             ") must be greater or equal to the number of dimensions in the tensor (", self.dim(),
             ")");
  Dims sizes(nd), strides(nd);
  for (int64_t i = nd - 1; i >= 0; --i) {
    const int64_t offset = nd - 1 - i;
    const int64_t d = self.dim() - 1 - offset;
    const int64_t sz = d >= 0 ? self.size(d) : 1;
    const int64_t st = d >= 0 ? self.stride(d) : (i == nd - 1 ? 1 : sizes[i + 1] * strides[i + 1]);
    int64_t target = size[i];
    if (target == -1) {
      LOOM_CHECK(d >= 0,
                 "expand: The expanded size of the tensor (-1) isn't allowed in a leading, "
                 "non-existing dimension ",
                 i);
      target = sz;
    }
    if (sz == target) {
      sizes[i] = sz;
      strides[i] = st;
    } else {
      LOOM_CHECK(sz == 1, "expand: The expanded size of the tensor (", target,
                 ") must match the existing size (", sz, ") at non-singleton dimension ", i,
                 ".  Target sizes: ", sizes_str(size),
                 ".  Tensor sizes: ", sizes_str(self.sizes()));
      LOOM_CHECK(target >= 0, "expand: Trying to create tensor with negative dimension ", target,
                 ": ", sizes_str(size));
      sizes[i] = target;
      strides[i] = 0;
    }
  }
  return make_view(self, sizes, strides, self.storage_offset());
}

Tensor expand_as(const Tensor& self, const Tensor& other) {
  return expand(self, other.sizes(), false);
}

Tensor slice(const Tensor& self, int64_t dim, std::optional<int64_t> start_in,
             std::optional<int64_t> end_in, int64_t step) {
  LOOM_CHECK(self.dim() > 0, "slice() cannot be applied to a 0-dim tensor.");
  dim = meta::wrap_dim("slice", dim, self.dim());
  LOOM_CHECK(step > 0, "slice: slice step must be positive");
  const int64_t n = self.size(dim);
  int64_t start = start_in.value_or(0);
  int64_t end = end_in.value_or(std::numeric_limits<int64_t>::max());
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Dims sizes = to_dims(self.sizes());
  Dims strides = to_dims(self.strides());
  sizes[dim] = (end - start + step - 1) / step;
  strides[dim] *= step;
  return make_view(self, sizes, strides, self.storage_offset() + start * self.stride(dim));
}

Tensor narrow(const Tensor& self, int64_t dim, int64_t start, int64_t length) {
  LOOM_CHECK(self.dim() > 0, "narrow() cannot be applied to a 0-dim tensor.");
  LOOM_CHECK(length >= 0, "narrow(): length must be non-negative.");
  dim = meta::wrap_dim("narrow", dim, self.dim());
  const int64_t n = self.size(dim);
  LOOM_CHECK_T(IndexError, start >= -n && start <= n,
               "narrow: start out of range (expected to be in range of [", -n, ", ", n,
               "], but got ", start, ")");
  if (start < 0) start += n;
  LOOM_CHECK(start <= n - length, "narrow: start (", start, ") + length (", length,
             ") exceeds dimension size (", n, ").");
  return slice(self, dim, start, start + length, 1);
}

Tensor select(const Tensor& self, int64_t dim, int64_t index) {
  LOOM_CHECK_T(IndexError, self.dim() > 0, "select() cannot be applied to a 0-dim tensor.");
  dim = meta::wrap_dim("select", dim, self.dim());
  const int64_t n = self.size(dim);
  LOOM_CHECK_T(IndexError, index >= -n && index < n, "select(): index ", index,
               " out of range for tensor of size ", sizes_str(self.sizes()), " at dimension ", dim);
  if (index < 0) index += n;
  Dims sizes = to_dims(self.sizes());
  Dims strides = to_dims(self.strides());
  sizes.erase(sizes.begin() + dim);
  strides.erase(strides.begin() + dim);
  return make_view(self, sizes, strides, self.storage_offset() + index * self.stride(dim));
}

Tensor as_strided(const Tensor& self, IntArrayRef size, IntArrayRef stride,
                  std::optional<int64_t> storage_offset) {
  LOOM_CHECK(size.size() == stride.size(), "as_strided: mismatch in length of strides and shape");
  for (int64_t s : stride) {
    LOOM_CHECK(s >= 0,
               "as_strided: Negative strides are not supported at the moment, got "
               "strides: ",
               sizes_str(stride));
  }
  for (int64_t s : size) {
    LOOM_CHECK(s >= 0, "as_strided: Trying to create tensor with negative dimension ", s, ": ",
               sizes_str(size));
  }
  const int64_t offset = storage_offset.value_or(self.storage_offset());
  LOOM_CHECK(offset >= 0, "as_strided: Tensor: invalid storage offset ", offset);
  return self.as_strided_view(size, stride, offset);
}

std::vector<Tensor> split_with_sizes(const Tensor& self, IntArrayRef split_sizes, int64_t dim) {
  LOOM_CHECK(self.dim() > 0, "split expects at least a 1-dimensional tensor");
  dim = meta::wrap_dim("split_with_sizes", dim, self.dim());
  const int64_t n = self.size(dim);
  int64_t total = 0;
  for (int64_t s : split_sizes) {
    LOOM_CHECK(s >= 0,
               "split_with_sizes expects split_sizes have only non-negative entries, "
               "but got split_sizes=",
               sizes_str(split_sizes));
    total += s;
  }
  LOOM_CHECK(total == n, "split_with_sizes expects split_sizes to sum exactly to ", n,
             " (input tensor's size at dimension ", dim,
             "), but got split_sizes=", sizes_str(split_sizes));
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t s : split_sizes) {
    out.push_back(narrow(self, dim, start, s));
    start += s;
  }
  return out;
}

std::vector<Tensor> split(const Tensor& self, int64_t split_size, int64_t dim) {
  LOOM_CHECK(self.dim() > 0, "split expects at least a 1-dimensional tensor");
  LOOM_CHECK(split_size >= 0,
             "split expects split_size be non-negative, but got split_size=", split_size);
  dim = meta::wrap_dim("split", dim, self.dim());
  const int64_t n = self.size(dim);
  LOOM_CHECK(split_size != 0 || n == 0,
             "split: split_size can only be 0 if dimension size is 0, but got dimension size of ",
             n);
  int64_t num_splits = 1;
  if (split_size != 0) num_splits = std::max<int64_t>((n + split_size - 1) / split_size, 1);
  std::vector<Tensor> out;
  for (int64_t i = 0; i < num_splits; ++i) {
    const int64_t len = std::min(split_size, n - i * split_size);
    out.push_back(narrow(self, dim, i * split_size, std::max<int64_t>(len, 0)));
  }
  return out;
}

std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim) {
  LOOM_CHECK(self.dim() > 0, "chunk expects at least a 1-dimensional tensor");
  LOOM_CHECK(chunks > 0, "chunk expects `chunks` to be greater than 0, got: ", chunks);
  dim = meta::wrap_dim("chunk", dim, self.dim());
  const int64_t n = self.size(dim);
  const int64_t split_size = (n + chunks - 1) / chunks;
  if (split_size == 0 && n == 0) {
    return split_with_sizes(self, Dims(static_cast<size_t>(chunks), 0), dim);
  }
  return split(self, split_size, dim);
}

std::vector<Tensor> unbind(const Tensor& self, int64_t dim) {
  LOOM_CHECK_T(IndexError, self.dim() > 0, "unbind: Dimension specified as ", dim,
               " but tensor has no dimensions");
  dim = meta::wrap_dim("unbind", dim, self.dim());
  std::vector<Tensor> out;
  for (int64_t i = 0; i < self.size(dim); ++i) out.push_back(select(self, dim, i));
  return out;
}

// ---- PyTorch's aliases and composites of the above ----

Tensor view_as(const Tensor& self, const Tensor& other) { return view(self, other.sizes()); }
Tensor reshape_as(const Tensor& self, const Tensor& other) { return reshape(self, other.sizes()); }

Tensor movedim(const Tensor& self, IntArrayRef source, IntArrayRef destination) {
  const int64_t nd = self.dim();
  LOOM_CHECK(source.size() == destination.size(),
             "movedim: Invalid source or destination dims: source (", sizes_str(source),
             " dims) should contain the same number of dims as destination (",
             sizes_str(destination), " dims)");
  Dims perm(std::max<int64_t>(nd, 0), -1);
  std::vector<bool> used_src(nd, false), used_dst(nd, false);
  for (size_t i = 0; i < source.size(); ++i) {
    const int64_t s = meta::wrap_dim("movedim", source[i], nd);
    const int64_t d = meta::wrap_dim("movedim", destination[i], nd);
    if (nd == 0) continue;
    LOOM_CHECK(!used_src[s], "movedim: repeated dim in `source` (", sizes_str(source), ")");
    LOOM_CHECK(!used_dst[d], "movedim: repeated dim in `destination` (", sizes_str(destination),
               ")");
    used_src[s] = used_dst[d] = true;
    perm[d] = s;
  }
  // The other dims keep their order in the free slots.
  int64_t next = 0;
  for (int64_t d = 0; d < nd; ++d) {
    if (perm[d] >= 0) continue;
    while (used_src[next]) ++next;
    perm[d] = next++;
  }
  return permute(self, perm);
}

Tensor movedim_int(const Tensor& self, int64_t source, int64_t destination) {
  return movedim(self, {source}, {destination});
}

std::vector<Tensor> split_sizes(const Tensor& self, IntArrayRef split_sizes_, int64_t dim) {
  return split_with_sizes(self, split_sizes_, dim);
}

// ---- in-place metadata forms: self takes the view's geometry (no data changes, so the
// version is not bumped, as in PyTorch) ----

Tensor& take_geometry(Tensor& self, const Tensor& v) {
  self.impl()->set_geometry(v.sizes(), v.strides(), v.storage_offset());
  return self;
}
Tensor& unsqueeze_(Tensor& self, int64_t dim) { return take_geometry(self, unsqueeze(self, dim)); }
Tensor& squeeze_(Tensor& self) { return take_geometry(self, squeeze(self)); }
Tensor& squeeze_dim_(Tensor& self, int64_t dim) {
  return take_geometry(self, squeeze_dim(self, dim));
}
Tensor& squeeze_dims_(Tensor& self, IntArrayRef dims) {
  return take_geometry(self, squeeze_dims(self, dims));
}
Tensor& transpose_(Tensor& self, int64_t dim0, int64_t dim1) {
  return take_geometry(self, transpose(self, dim0, dim1));
}
Tensor& t_(Tensor& self) { return take_geometry(self, t(self)); }

}  // namespace

LOOM_REFERENCE_KERNELS(aten, m) {
  m.set_provider("reference");
  m.impl("view", &view);
  m.impl("reshape", &reshape);
  m.impl("flatten.using_ints", &flatten);
  m.impl("unflatten.int", &unflatten);
  m.impl("squeeze", &squeeze);
  m.impl("squeeze.dim", &squeeze_dim);
  m.impl("squeeze.dims", &squeeze_dims);
  m.impl("unsqueeze", &unsqueeze);
  m.impl("transpose.int", &transpose);
  m.impl("permute", &permute);
  m.impl("t", &t);
  m.impl("expand", &expand);
  m.impl("expand_as", &expand_as);
  m.impl("narrow", &narrow);
  m.impl("slice.Tensor", &slice);
  m.impl("select.int", &select);
  m.impl("as_strided", &as_strided);
  m.impl("split.Tensor", &split);
  m.impl("split_with_sizes", &split_with_sizes);
  m.impl("chunk", &chunk);
  m.impl("unbind.int", &unbind);
  m.impl("view_as", &view_as);
  m.impl("reshape_as", &reshape_as);
  m.impl("movedim.intlist", &movedim);
  m.impl("movedim.int", &movedim_int);
  m.impl("swapaxes", &transpose);
  m.impl("swapdims", &transpose);
  m.impl("split.sizes", &split_sizes);
  m.impl("unsqueeze_", &unsqueeze_);
  m.impl("squeeze_", &squeeze_);
  m.impl("squeeze_.dim", &squeeze_dim_);
  m.impl("squeeze_.dims", &squeeze_dims_);
  m.impl("transpose_", &transpose_);
  m.impl("t_", &t_);
}

}  // namespace loom::ops::cpu
