// Reference CPU kernels of the indexing ops along one dim: index_select (and .out, and its
// backward), gather, index_add, index_fill, take and one_hot. The pure copies move elements
// as words of their width (any dtype); the arithmetic ones dispatch on the dtype and compute
// in compute_t<T> (float for the 16-bit floats), one rounding per update as PyTorch's CPU
// kernels do. Checks and messages follow PyTorch's (TensorAdvancedIndexing.cpp,
// ScatterGatherChecks.h); an index value out of range is an IndexError.
#include "loom/ops/meta/indexing.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "cpu/indexing_common.h"
#include "loom/core/memory_overlap.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/meta/result_size.h"
#include "loom/ops/meta/wrap_dim.h"

namespace loom::ops::cpu::indexing {
namespace {

using meta::check_gather_shape;
using meta::check_index_add;

using meta::is_index_dtype;

/// The sizes and strides of t without dim (a slice t.select(dim, i)).
struct Slice {
  Dims sizes, strides;
};
Slice slice_without(const NonEmptyGeometry& g, int64_t dim) {
  Slice s;
  for (size_t d = 0; d < g.sizes.size(); ++d) {
    if (static_cast<int64_t>(d) == dim) continue;
    s.sizes.push_back(g.sizes[d]);
    s.strides.push_back(g.strides[d]);
  }
  return s;
}

// ---- index_select ----------------------------------------------------------------------------

Tensor index_select_compute(const Tensor& self, int64_t dim, const Tensor& index) {
  check_cpu("index_select", {{"self", self}, {"index", index}});
  dim = meta::wrap_dim("index_select", dim, self.dim());
  const int64_t n = index.numel();
  const std::vector<int64_t> out_sizes = meta::index_select_sizes(self, dim, index);
  Tensor out = new_empty(out_sizes, self.dtype(), self);
  meta::check_index_select_axis(self, dim, index);
  if (is_meta(out)) return out;  // Note [Meta kernels share the reference's setup]
  const std::vector<int64_t> idx = index_values(index);
  const NonEmptyGeometry gs = nonempty_geometry(self);
  const int64_t bound = gs.sizes[dim];
  for (int64_t v : idx) {
    LOOM_CHECK_T(IndexError, v >= 0 && v < bound, "index_select: index out of range in self");
  }
  if (out.numel() == 0) return out;

  const NonEmptyGeometry go = nonempty_geometry(out);
  const Slice ss = slice_without(gs, dim), os = slice_without(go, dim);
  const int64_t s_step = gs.strides[dim], o_step = go.strides[dim];
  const int64_t slice_numel = out.numel() / n;
  const size_t es = self.element_size();
  if (slice_numel >= 64) {
    // Large slices: one strided block copy each (memcpy when both are contiguous).
    for (int64_t i = 0; i < n; ++i) {
      copy_strided(static_cast<char*>(out.data_ptr()) + i * o_step * static_cast<int64_t>(es),
                   aref(os.strides),
                   static_cast<const char*>(self.data_ptr()) +
                       idx[static_cast<size_t>(i)] * s_step * static_cast<int64_t>(es),
                   aref(ss.strides), aref(ss.sizes), es);
    }
    return out;
  }
  // Small slices: walk the slice positions, and the selected indices innermost.
  dispatch_word(es, [&]<typename W>(W*) {
    W* o = data_as<W>(out);
    const W* s = data_as<const W>(self);
    for_each_offset<2>(aref(ss.sizes), {aref(os.strides), aref(ss.strides)},
                       [&](const std::array<int64_t, 2>& off) {
                         for (int64_t i = 0; i < n; ++i) {
                           o[off[0] + i * o_step] =
                               s[off[1] + idx[static_cast<size_t>(i)] * s_step];
                         }
                       });
  });
  return out;
}

Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  return index_select_compute(self, dim, index);
}

Tensor& index_select_out(const Tensor& self, int64_t dim, const Tensor& index, Tensor& out) {
  meta::check_index_select_out(self, out);
  // Computed apart and then copied, so out may alias self or index.
  write_out("index_select.out", out, index_select_compute(self, dim, index));
  return out;
}

// ---- index_add -------------------------------------------------------------------------------

/// result.select(dim, index[i]) += alpha * source.select(dim, i), in order of i.
void index_add_into(std::string_view op, const Tensor& result, int64_t dim, const Tensor& index,
                    const Tensor& source, const Scalar& alpha) {
  meta::check_scalar_fits(op, alpha, result.dtype());  // Note [Checked scalar conversion]
  if (is_meta(result)) return;
  const std::vector<int64_t> idx = index_values(index);
  const NonEmptyGeometry gr = nonempty_geometry(result);
  const int64_t bound = gr.sizes[dim];
  for (int64_t v : idx) {
    LOOM_CHECK_T(IndexError, v >= 0 && v < bound, op, ": index out of range in self");
  }
  if (idx.empty() || result.numel() == 0) return;
  // A source sharing memory with result is read from a copy.
  const Tensor src = source.is_alias_of(result) ? contiguous_copy(source) : source;
  const NonEmptyGeometry gsrc = nonempty_geometry(src);
  const Slice rs = slice_without(gr, dim), ss = slice_without(gsrc, dim);
  const int64_t r_step = gr.strides[dim], s_step = gsrc.strides[dim];
  dispatch_all(result.dtype(), [&]<typename T>(T*) {
    using C = compute_t<T>;
    const C a = alpha.to<C>();
    T* r = data_as<T>(result);
    const T* s = data_as<const T>(src);
    for (size_t i = 0; i < idx.size(); ++i) {
      T* rp = r + idx[i] * r_step;
      const T* sp = s + static_cast<int64_t>(i) * s_step;
      for_each_offset<2>(
          aref(rs.sizes), {aref(rs.strides), aref(ss.strides)},
          [&](const std::array<int64_t, 2>& o) {
            rp[o[0]] = convert<T>(static_cast<C>(convert<C>(rp[o[0]]) + a * convert<C>(sp[o[1]])));
          });
    }
  });
}

Tensor& index_add_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                   const Scalar& alpha) {
  check_cpu("index_add_", {{"self", self}, {"index", index}, {"source", source}});
  dim = meta::wrap_dim("index_add_", dim, self.dim());
  check_index_add(self, dim, index, source);
  assert_no_internal_overlap("index_add_", self);  // Note [Memory overlap]
  index_add_into("index_add_", self, dim, index, source, alpha);
  self.bump_version();
  return self;
}

Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                 const Scalar& alpha) {
  check_cpu("index_add", {{"self", self}, {"index", index}, {"source", source}});
  dim = meta::wrap_dim("index_add", dim, self.dim());
  check_index_add(self, dim, index, source);
  Tensor result = contiguous_copy(self);
  index_add_into("index_add", result, dim, index, source, alpha);
  return result;
}

Tensor index_select_backward(const Tensor& grad, IntArrayRef self_sizes, int64_t dim,
                             const Tensor& index) {
  Tensor result = new_zeros(self_sizes, grad.dtype(), grad);
  dim = meta::wrap_dim("index_select_backward", dim, result.dim());
  check_index_add(result, dim, index, grad);
  index_add_into("index_select_backward", result, dim, index, grad, Scalar(1));
  return result;
}

// ---- gather ----------------------------------------------------------------------------------

Tensor gather(const Tensor& self, int64_t dim, const Tensor& index, bool /*sparse_grad*/) {
  check_cpu("gather", {{"self", self}, {"index", index}});
  dim = meta::wrap_dim("gather", dim, self.dim());
  Tensor out = new_empty(index.sizes(), self.dtype(), self);
  if (index.numel() == 0) return out;
  meta::check_gather_index_dtype(index);
  check_gather_shape(self, dim, index);
  if (is_meta(out)) return out;
  const NonEmptyGeometry gs = nonempty_geometry(self), gi = nonempty_geometry(index),
                         go = nonempty_geometry(out);
  Dims s_strides = gs.strides;
  const int64_t bound = gs.sizes[dim], step = gs.strides[dim];
  s_strides[dim] = 0;
  const int64_t* ip = data_as<const int64_t>(index);
  dispatch_word(self.element_size(), [&]<typename W>(W*) {
    W* o = data_as<W>(out);
    const W* s = data_as<const W>(self);
    for_each_offset<3>(aref(gi.sizes), {aref(go.strides), aref(gi.strides), aref(s_strides)},
                       [&](const std::array<int64_t, 3>& off) {
                         const int64_t v = ip[off[1]];
                         LOOM_CHECK_T(IndexError, v >= 0 && v < bound,
                                      meta::index_out_of_bounds("gather", v, dim, bound));
                         o[off[0]] = s[off[2] + v * step];
                       });
  });
  return out;
}

// ---- index_fill ------------------------------------------------------------------------------

Tensor& index_fill_impl(std::string_view op, Tensor& self, int64_t dim, const Tensor& index,
                        const Scalar& value) {
  check_cpu("index_fill_", {{"self", self}, {"index", index}});
  dim = meta::index_fill_dim(self, dim, index);
  meta::check_scalar_fits(op, value, self.dtype());  // Note [Checked scalar conversion]
  assert_no_internal_overlap("index_fill_", self);   // Note [Memory overlap]
  if (is_meta(self)) {
    self.bump_version();
    return self;
  }
  std::vector<int64_t> idx = index_values(index);
  const NonEmptyGeometry g = nonempty_geometry(self);
  const int64_t size = g.sizes[dim];
  for (int64_t& v : idx) {
    LOOM_CHECK_T(IndexError, v >= -size && v < size, meta::index_out_of_bounds(op, v, dim, size));
    if (v < 0) v += size;
  }
  const Slice s = slice_without(g, dim);
  const int64_t step = g.strides[dim];
  dispatch_all(self.dtype(), [&]<typename T>(T*) {
    const T v = convert<T>(value.to<compute_t<T>>());
    T* p = data_as<T>(self);
    for (int64_t i : idx) {
      T* row = p + i * step;
      for_each_offset<1>(aref(s.sizes), {aref(s.strides)},
                         [&](const std::array<int64_t, 1>& o) { row[o[0]] = v; });
    }
  });
  self.bump_version();
  return self;
}

Scalar index_fill_value(const Tensor& value) {
  meta::check_index_fill_value(value);
  return is_meta(value) ? Scalar(0) : value.item();  // a meta value has no element to read
}

Tensor& index_fill_scalar_(Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  return index_fill_impl("index_fill_", self, dim, index, value);
}
Tensor& index_fill_tensor_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& value) {
  return index_fill_impl("index_fill_", self, dim, index, index_fill_value(value));
}
Tensor index_fill_scalar(const Tensor& self, int64_t dim, const Tensor& index,
                         const Scalar& value) {
  Tensor result = contiguous_copy(self);
  return index_fill_impl("index_fill", result, dim, index, value);
}
Tensor index_fill_tensor(const Tensor& self, int64_t dim, const Tensor& index,
                         const Tensor& value) {
  Tensor result = contiguous_copy(self);
  return index_fill_impl("index_fill", result, dim, index, index_fill_value(value));
}

// ---- take ------------------------------------------------------------------------------------

Tensor take(const Tensor& self, const Tensor& index) {
  check_cpu("take", {{"self", self}, {"index", index}});
  LOOM_CHECK_T(TypeError, index.dtype() == DType::Int64,
               "take(): Expected a long tensor for index, but got ",
               torch_type_name(index.dtype()));
  const int64_t numel = self.numel();
  LOOM_CHECK_T(IndexError, !(numel == 0 && index.numel() != 0),
               "take(): tried to take from an empty tensor");
  Tensor out = new_empty(index.sizes(), self.dtype(), self);
  if (out.numel() == 0 || is_meta(out)) return out;
  const std::vector<int64_t> idx = index_values(index);
  for (int64_t v : idx) {
    LOOM_CHECK_T(IndexError, v >= -numel && v < numel, "out of range: tried to access index ", v,
                 " on a tensor of ", numel, " elements.");
  }
  // The element offset of row-major position v of self.
  const bool contiguous = self.is_contiguous();
  auto offset_of = [&](int64_t v) {
    if (contiguous) return v;
    int64_t off = 0;
    for (int64_t d = self.dim() - 1; d >= 0; --d) {
      off += (v % self.sizes()[d]) * self.strides()[d];
      v /= self.sizes()[d];
    }
    return off;
  };
  dispatch_word(self.element_size(), [&]<typename W>(W*) {
    W* o = data_as<W>(out);
    const W* s = data_as<const W>(self);
    for (size_t i = 0; i < idx.size(); ++i)
      o[i] = s[offset_of(idx[i] < 0 ? idx[i] + numel : idx[i])];
  });
  return out;
}

// ---- one_hot ---------------------------------------------------------------------------------

Tensor one_hot(const Tensor& self, int64_t num_classes) {
  check_cpu("one_hot", {{"self", self}});
  LOOM_CHECK_T(TypeError, self.dtype() == DType::Int64,
               "one_hot: one_hot is only applicable to index tensor of type LongTensor.");
  Dims shape = dims_of(self.sizes());
  if (self.numel() == 0) {
    LOOM_CHECK(num_classes > 0,
               "one_hot: Can not infer total number of classes from empty tensor.");
    shape.push_back(num_classes);
    return new_zeros(aref(shape), DType::Int64, self);
  }
  if (is_meta(self)) {
    // The classes' range is in the values; only a given num_classes fixes the shape.
    LOOM_CHECK_T(NotImplementedError, num_classes != -1,
                 "one_hot: num_classes=-1 takes the number of classes from the values, which a "
                 "meta tensor does not have; pass num_classes");
    shape.push_back(num_classes);
    meta::check_result_numel("one_hot", aref(shape), DType::Int64);
    return new_zeros(aref(shape), DType::Int64, self);
  }
  const std::vector<int64_t> v = index_values(self);
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  LOOM_CHECK(*lo >= 0, "one_hot: Class values must be non-negative.");
  if (num_classes == -1) {
    num_classes = meta::result_size_add("one_hot", *hi, 1);  // Note [Result sizes that overflow]
  } else {
    LOOM_CHECK(num_classes > *hi, "one_hot: Class values must be smaller than num_classes.");
  }
  shape.push_back(num_classes);
  meta::check_result_numel("one_hot", aref(shape), DType::Int64);
  Tensor out = new_zeros(aref(shape), DType::Int64, self);
  int64_t* o = data_as<int64_t>(out);
  for (size_t i = 0; i < v.size(); ++i) o[static_cast<int64_t>(i) * num_classes + v[i]] = 1;
  return out;
}

}  // namespace

LOOM_REFERENCE_KERNELS(aten, m) {
  m.set_provider("reference");
  m.impl("index_select", &index_select);
  m.impl("index_select.out", &index_select_out);
  m.impl("index_select_backward", &index_select_backward);
  m.impl("index_add", &index_add);
  m.impl("index_add_", &index_add_);
  m.impl("gather", &gather);
  m.impl("index_fill.int_Scalar", &index_fill_scalar);
  m.impl("index_fill.int_Tensor", &index_fill_tensor);
  m.impl("index_fill_.int_Scalar", &index_fill_scalar_);
  m.impl("index_fill_.int_Tensor", &index_fill_tensor_);
  m.impl("take", &take);
  m.impl("one_hot", &one_hot);
}

}  // namespace loom::ops::cpu::indexing
