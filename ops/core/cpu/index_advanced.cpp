// Reference CPU kernels of advanced indexing and masks: index.Tensor, index_put(_),
// masked_fill(_), masked_select, masked_scatter(_), nonzero, argwhere and where(condition).
//
// Note [Advanced indexing]: aten::index.Tensor takes one optional index tensor per leading dim
// of self (a bool/uint8 mask stands for as many dims as it has, and becomes its nonzero()
// coordinates; a 0-dim mask adds a dim of size 1 or 0, as NumPy's x[True]). The index tensors
// broadcast together to one index shape; the result is self's dims before the indexed ones,
// then the index shape, then self's dims after them. When the indexed dims are not adjacent
// (x[i, :, j]) they move to the front first and the index shape leads the result, as in
// NumPy and PyTorch. Index values may be negative (counted from the end) and are checked, with
// PyTorch's message naming the position among the index tensors ("index 5 is out of bounds for
// dimension 0 with size 3"), before anything is read or written. The kernels precompute the
// element offset of every index position, then copy (or, for index_put_ with accumulate,
// add) whole runs of the trailing dims; index_put_ visits positions in row-major order, so the
// last of duplicate indices wins and accumulate sums duplicates.
#include <algorithm>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

#include "cpu/indexing_common.h"
#include "cpu/tensor_iterator.h"
#include "loom/core/memory_overlap.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/meta/indexing.h"

namespace loom::ops::cpu::indexing {
namespace {

using IndexList = std::vector<std::optional<Tensor>>;

bool is_mask_dtype(DType d) { return d == DType::Bool || d == DType::UInt8; }

/// t's strides when broadcast to shape (right-aligned; 0 where t is broadcast).
Dims expanded_strides(const Tensor& t, IntArrayRef shape) {
  Dims s(shape.size(), 0);
  const int64_t lead = static_cast<int64_t>(shape.size()) - t.dim();
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) != 1) s[lead + d] = t.stride(d);
  }
  return s;
}

/// A contiguous copy of t broadcast to shape (same dtype).
Tensor expand_copy(const Tensor& t, IntArrayRef shape) {
  Tensor out = new_empty(shape, t.dtype(), t);
  if (out.numel() == 0 || is_meta(out)) return out;
  const Dims s = expanded_strides(t, shape);
  copy_strided(out.data_ptr(), out.strides(), t.data_ptr(), aref(s), shape, t.element_size());
  return out;
}

/// The coordinates of t's nonzero elements (NaN counts, -0.0 does not) in row-major order,
/// t.dim() values per element.
std::vector<int64_t> nonzero_coords(const Tensor& t) {
  std::vector<int64_t> coords;
  const int64_t nd = t.dim(), numel = t.numel();
  if (numel == 0) return coords;
  dispatch_all(t.dtype(), [&]<typename T>(T*) {
    using C = compute_t<T>;
    const T* p = data_as<const T>(t);
    const Dims sizes = dims_of(t.sizes()), strides = dims_of(t.strides());
    Dims idx(static_cast<size_t>(nd), 0);
    int64_t off = 0;
    for (int64_t k = 0; k < numel; ++k) {
      if (convert<C>(p[off]) != C(0)) coords.insert(coords.end(), idx.begin(), idx.end());
      for (int64_t d = nd - 1; d >= 0; --d) {
        off += strides[d];
        if (++idx[d] < sizes[d]) break;
        off -= strides[d] * sizes[d];
        idx[d] = 0;
      }
    }
  });
  return coords;
}

/// t != 0 elementwise, as a new contiguous bool tensor.
Tensor nonzero_mask(const Tensor& t) {
  Tensor b = new_empty(t.sizes(), DType::Bool, t);
  if (is_meta(b)) return b;
  dispatch_all(t.dtype(), [&]<typename T>(T*) {
    using C = compute_t<T>;
    const T* p = data_as<const T>(t);
    bool* q = data_as<bool>(b);
    for_each_offset<1>(t.sizes(), {t.strides()}, [&](const std::array<int64_t, 1>& o) {
      *q++ = convert<C>(p[o[0]]) != C(0);
    });
  });
  return b;
}

/// Whether the single element of a 0-dim tensor is nonzero.
bool scalar_truth(const Tensor& t) { return *data_as<const bool>(nonzero_mask(t)); }

// ---- masked_fill -----------------------------------------------------------------------------

void check_fill_mask(const Tensor& mask) { meta::check_masked_fill_mask(mask); }

Scalar fill_value(const Tensor& value) {
  meta::check_masked_fill_value(value);
  return is_meta(value) ? Scalar(0) : value.item();  // a meta value has no element to read
}

/// self[mask] = value, mask broadcast to self (inplace) or both broadcast together (a new
/// tensor); elementwise on the TensorIterator, so large tensors run in parallel.
Tensor masked_fill_run(std::string_view op, const Tensor& self, const Tensor& mask,
                       const Scalar& value, bool inplace) {
  check_cpu(op, {{"self", self}, {"mask", mask}});
  check_fill_mask(mask);
  meta::check_scalar_fits(op, value, self.dtype());  // Note [Checked scalar conversion]
  TensorIterator it(op);
  it.add_input("self", self).add_input("mask", mask, DType::Bool);
  if (inplace) it.set_output(self, OutputKind::InPlace);
  it.build();
  dispatch_all(it.common_dtype(), [&]<typename T>(T*) {
    using C = compute_t<T>;
    const C v = convert<C>(convert<T>(value.to<C>()));
    it.for_each<T, T, bool>([v](C a, bool m) { return m ? v : a; });
  });
  return it.finish();
}

Tensor masked_fill_scalar(const Tensor& self, const Tensor& mask, const Scalar& value) {
  return masked_fill_run("masked_fill.Scalar", self, mask, value, false);
}
Tensor masked_fill_tensor(const Tensor& self, const Tensor& mask, const Tensor& value) {
  check_fill_mask(mask);
  return masked_fill_run("masked_fill.Tensor", self, mask, fill_value(value), false);
}
Tensor& masked_fill_scalar_(Tensor& self, const Tensor& mask, const Scalar& value) {
  masked_fill_run("masked_fill_.Scalar", self, mask, value, true);
  return self;
}
Tensor& masked_fill_tensor_(Tensor& self, const Tensor& mask, const Tensor& value) {
  check_fill_mask(mask);
  masked_fill_run("masked_fill_.Tensor", self, mask, fill_value(value), true);
  return self;
}

// ---- masked_select / masked_scatter ------------------------------------------------------------

Tensor masked_select(const Tensor& self, const Tensor& mask) {
  check_cpu("masked_select", {{"self", self}, {"mask", mask}});
  LOOM_CHECK_T(TypeError, mask.dtype() == DType::Bool,
               "masked_select: expected BoolTensor for mask");
  const DimVector shape = broadcast_shapes("masked_select", self.sizes(), mask.sizes());
  const IntArrayRef sh(shape.data(), shape.size());
  const Dims ss = expanded_strides(self, sh), ms = expanded_strides(mask, sh);
  const bool* mp = data_as<const bool>(mask);
  int64_t count = 0;
  for_each_offset<1>(sh, {aref(ms)}, [&](const std::array<int64_t, 1>& o) { count += mp[o[0]]; });
  Tensor out = new_empty({count}, self.dtype(), self);
  if (count == 0) return out;
  dispatch_word(self.element_size(), [&]<typename W>(W*) {
    W* d = data_as<W>(out);
    const W* s = data_as<const W>(self);
    for_each_offset<2>(sh, {aref(ss), aref(ms)}, [&](const std::array<int64_t, 2>& o) {
      if (mp[o[1]]) *d++ = s[o[0]];
    });
  });
  return out;
}

/// Writes source's elements (row-major) into the positions of dest where mask (broadcast to
/// dest) is true, in row-major order.
void masked_scatter_into(const Tensor& dest, const Tensor& mask_arg, const Tensor& source) {
  if (is_meta(dest)) return;  // how many elements move depends on the mask's values
  const Tensor mask = mask_arg.is_alias_of(dest) ? contiguous_copy(mask_arg) : mask_arg;
  const Dims ms = expanded_strides(mask, dest.sizes());
  const bool* mp = data_as<const bool>(mask);
  int64_t count = 0;
  for_each_offset<1>(dest.sizes(), {aref(ms)},
                     [&](const std::array<int64_t, 1>& o) { count += mp[o[0]]; });
  LOOM_CHECK(source.numel() >= count, "Number of elements of source < number of ones in mask");
  if (count == 0) return;
  const Tensor src = contiguous_copy(source);
  dispatch_word(dest.element_size(), [&]<typename W>(W*) {
    W* d = data_as<W>(dest);
    const W* s = data_as<const W>(src);
    for_each_offset<2>(dest.sizes(), {dest.strides(), aref(ms)},
                       [&](const std::array<int64_t, 2>& o) {
                         if (mp[o[1]]) d[o[0]] = *s++;
                       });
  });
}

void check_masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source) {
  check_cpu("masked_scatter_", {{"self", self}, {"mask", mask}, {"source", source}});
  LOOM_CHECK_T(TypeError, self.dtype() == source.dtype(),
               "masked_scatter_: expected self and source to have same dtypes but got ",
               torch_type_name(self.dtype()), " and ", torch_type_name(source.dtype()));
  LOOM_CHECK_T(TypeError, mask.dtype() == DType::Bool,
               "masked_scatter_ only supports boolean masks, but got mask with dtype ",
               torch_type_name(mask.dtype()));
}

Tensor& masked_scatter_(Tensor& self, const Tensor& mask, const Tensor& source) {
  check_masked_scatter(self, mask, source);
  const DimVector shape = broadcast_shapes("masked_scatter_", self.sizes(), mask.sizes());
  LOOM_CHECK(IntArrayRef(shape.data(), shape.size()) == self.sizes(),
             "masked_scatter_: output with shape ", sizes_str(self.sizes()),
             " doesn't match the broadcast shape ", sizes_str({shape.data(), shape.size()}));
  assert_no_internal_overlap("masked_scatter_", self);  // Note [Memory overlap]
  masked_scatter_into(self, mask, source);
  self.bump_version();
  return self;
}

Tensor masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source) {
  check_masked_scatter(self, mask, source);
  const DimVector shape = broadcast_shapes("masked_scatter", self.sizes(), mask.sizes());
  Tensor result = expand_copy(self, {shape.data(), shape.size()});
  masked_scatter_into(result, mask, source);
  return result;
}

// ---- nonzero, argwhere, where ----------------------------------------------------------------

Tensor nonzero(const Tensor& self) {
  check_cpu("nonzero", {{"self", self}});
  const std::vector<int64_t> coords = nonzero_coords(self);
  const int64_t nd = self.dim();
  int64_t n = 0;
  if (nd > 0) {
    n = static_cast<int64_t>(coords.size()) / nd;
  } else if (self.numel() == 1) {
    // A 0-dim tensor has one element and no coordinates: count it directly.
    n = scalar_truth(self) ? 1 : 0;
  }
  Tensor out = new_empty({n, nd}, DType::Int64, self);
  if (!coords.empty()) std::memcpy(out.data_ptr(), coords.data(), coords.size() * sizeof(int64_t));
  return out;
}

Tensor argwhere(const Tensor& self) { return nonzero(self); }

/// NumPy's nonzero: one [n] tensor of coordinates per dim (a 0-dim condition counts as 1-D).
std::vector<Tensor> where_condition(const Tensor& condition) {
  const Tensor nz = nonzero(condition);
  const int64_t n = nz.size(0), cols = nz.size(1), nd = std::max<int64_t>(cols, 1);
  std::vector<Tensor> out;
  const int64_t* p = data_as<const int64_t>(nz);
  for (int64_t d = 0; d < nd; ++d) {
    Tensor col = new_empty({n}, DType::Int64, nz);
    int64_t* c = data_as<int64_t>(col);
    for (int64_t i = 0; i < n; ++i) c[i] = cols == 0 ? 0 : p[i * cols + d];
    out.push_back(col);
  }
  return out;
}

// ---- index.Tensor / index_put_ (Note [Advanced indexing]) --------------------------------------

/// One index tensor after masks are expanded: its shape and values (row-major, int64).
struct IndexEntry {
  Dims shape;
  std::vector<int64_t> values;
};

/// The geometry of one advanced-indexing call.
struct IndexPlan {
  char* base = nullptr;          ///< self's first element
  Dims sizes, strides;           ///< self's dims, the indexed ones moved to the front if apart
  int64_t before = 0;            ///< dims before the indexed ones
  int64_t nindexed = 0;          ///< indexed dims
  Dims index_shape;              ///< broadcast shape of the index tensors
  std::vector<int64_t> offsets;  ///< element offset of each index position (row-major)
  Dims result_shape;
};

/// Throws PyTorch's "too many indices" unless the list fits self (a mask covers its dims).
void check_index_count(const Tensor& self, const IndexList& indices) {
  int64_t consumed = 0;
  for (const auto& ix : indices) {
    const bool mask = ix && ix->defined() && is_mask_dtype(ix->dtype());
    consumed += mask ? ix->dim() : 1;
  }
  LOOM_CHECK_T(IndexError, consumed <= self.dim(), "too many indices for tensor of dimension ",
               self.dim(), " (got ", consumed, ")");
}

void check_mask_shape(const Tensor& self, const Tensor& mask, int64_t first_dim) {
  for (int64_t j = 0; j < mask.dim(); ++j) {
    LOOM_CHECK_T(IndexError, mask.size(j) == self.size(first_dim + j), "The shape of the mask ",
                 sizes_str(mask.sizes()), " at index ", j,
                 " does not match the shape of the indexed tensor ", sizes_str(self.sizes()),
                 " at index ", first_dim + j);
  }
}

IndexPlan make_index_plan(std::string_view op, const Tensor& self, const IndexList& indices) {
  check_cpu(op, {{"self", self}});
  for (const auto& ix : indices) {
    if (ix) check_cpu(op, {{"indices", *ix}});
  }
  check_index_count(self, indices);
  // On meta, integer indices give the result's shape (their values are not checked: there are
  // none); a mask selects as many elements as it has true values, which meta cannot count.
  const bool meta = is_meta(self);

  // Expand masks; one entry per dim of the (possibly unsqueezed) view of self.
  Dims vsizes, vstrides;
  std::vector<std::optional<IndexEntry>> entries;
  int64_t d = 0;
  auto keep_dim = [&](int64_t dim) {
    vsizes.push_back(self.size(dim));
    vstrides.push_back(self.stride(dim));
  };
  for (const auto& ix : indices) {
    if (!ix || !ix->defined()) {
      entries.emplace_back(std::nullopt);
      keep_dim(d++);
      continue;
    }
    const Tensor& t = *ix;
    if (t.dtype() == DType::Int64 || t.dtype() == DType::Int32) {
      entries.emplace_back(
          IndexEntry{dims_of(t.sizes()), meta ? std::vector<int64_t>{} : index_values(t)});
      keep_dim(d++);
    } else if (is_mask_dtype(t.dtype())) {
      LOOM_CHECK_T(NotImplementedError, !meta, op, ": a boolean index ", t.describe(),
                   " selects as many elements as it has true values, which a meta tensor does "
                   "not have");
      if (t.dim() == 0) {
        const bool on = scalar_truth(t);
        entries.emplace_back(
            IndexEntry{{on ? 1 : 0}, on ? std::vector<int64_t>{0} : std::vector<int64_t>{}});
        vsizes.push_back(1);
        vstrides.push_back(0);
        continue;
      }
      check_mask_shape(self, t, d);
      const std::vector<int64_t> coords = nonzero_coords(t);
      const int64_t n = static_cast<int64_t>(coords.size()) / t.dim();
      for (int64_t j = 0; j < t.dim(); ++j) {
        IndexEntry e{{n}, std::vector<int64_t>(static_cast<size_t>(n))};
        for (int64_t i = 0; i < n; ++i) e.values[static_cast<size_t>(i)] = coords[i * t.dim() + j];
        entries.emplace_back(std::move(e));
        keep_dim(d++);
      }
    } else {
      LOOM_THROW(IndexError, "tensors used as indices must be long, int, byte or bool tensors");
    }
  }
  while (d < self.dim()) {
    entries.emplace_back(std::nullopt);
    keep_dim(d++);
  }

  IndexPlan p;
  p.base = static_cast<char*>(self.data_ptr());
  // Broadcast the index tensors together.
  bool ok = true;
  for (const auto& e : entries) {
    if (!e) continue;
    const size_t n = std::max(p.index_shape.size(), e->shape.size());
    Dims out(n, 1);
    for (size_t i = 0; i < n; ++i) {
      const int64_t a =
          i < n - p.index_shape.size() ? 1 : p.index_shape[i - (n - p.index_shape.size())];
      const int64_t b = i < n - e->shape.size() ? 1 : e->shape[i - (n - e->shape.size())];
      ok = ok && (a == b || a == 1 || b == 1);
      out[i] = a == 1 ? b : a;
    }
    p.index_shape = out;
  }
  if (!ok) {
    std::string shapes;
    for (const auto& e : entries) {
      if (!e) continue;
      shapes += (shapes.empty() ? "" : ", ") + sizes_str(aref(e->shape));
    }
    LOOM_THROW(IndexError,
               "shape mismatch: indexing tensors could not be broadcast together with shapes ",
               shapes);
  }

  // Move the indexed dims to the front when they are not adjacent.
  std::vector<size_t> defined;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i]) defined.push_back(i);
  }
  std::vector<size_t> order(entries.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  const bool adjacent = defined.empty() || defined.back() - defined.front() + 1 == defined.size();
  if (!adjacent) {
    order = defined;
    for (size_t i = 0; i < entries.size(); ++i) {
      if (!entries[i]) order.push_back(i);
    }
  }
  p.before = adjacent ? (defined.empty() ? static_cast<int64_t>(entries.size())
                                         : static_cast<int64_t>(defined.front()))
                      : 0;
  p.nindexed = static_cast<int64_t>(defined.size());
  for (size_t i : order) {
    p.sizes.push_back(vsizes[i]);
    p.strides.push_back(vstrides[i]);
  }

  // Offsets of the index positions, checking every value.
  int64_t m = 1;
  for (int64_t s : p.index_shape) m *= s;
  const auto ni = static_cast<size_t>(p.nindexed);
  if (m > 0) {
    for (size_t j = 0; j < ni; ++j) {
      LOOM_CHECK_T(IndexError, p.sizes[p.before + j] != 0,
                   "index is out of bounds for dimension with size 0");
    }
  }
  const size_t ns = p.index_shape.size();
  std::vector<Dims> bstrides(ni, Dims(ns, 0));
  for (size_t j = 0; j < ni; ++j) {
    const Dims& shape = entries[defined[j]]->shape;
    int64_t st = 1;
    for (size_t k = shape.size(); k-- > 0;) {
      if (shape[k] != 1) bstrides[j][ns - shape.size() + k] = st;
      st *= shape[k];
    }
  }
  if (meta) m = 0;  // no offsets: nothing is read or written
  p.offsets.assign(static_cast<size_t>(m), 0);
  Dims counter(ns, 0);
  std::vector<int64_t> eoff(ni, 0);
  for (int64_t pos = 0; pos < m; ++pos) {
    int64_t off = 0;
    for (size_t j = 0; j < ni; ++j) {
      int64_t v = entries[defined[j]]->values[static_cast<size_t>(eoff[j])];
      const int64_t size = p.sizes[p.before + j];
      LOOM_CHECK_T(IndexError, v >= -size && v < size, "index ", v,
                   " is out of bounds for dimension ", j, " with size ", size);
      if (v < 0) v += size;
      off += v * p.strides[p.before + j];
    }
    p.offsets[static_cast<size_t>(pos)] = off;
    for (size_t k = ns; k-- > 0;) {
      for (size_t j = 0; j < ni; ++j) eoff[j] += bstrides[j][k];
      if (++counter[k] < p.index_shape[k]) break;
      for (size_t j = 0; j < ni; ++j) eoff[j] -= bstrides[j][k] * p.index_shape[k];
      counter[k] = 0;
    }
  }

  for (int64_t k = 0; k < p.before; ++k) p.result_shape.push_back(p.sizes[k]);
  p.result_shape.insert(p.result_shape.end(), p.index_shape.begin(), p.index_shape.end());
  for (size_t k = static_cast<size_t>(p.before) + ni; k < p.sizes.size(); ++k) {
    p.result_shape.push_back(p.sizes[k]);
  }
  return p;
}

/// The dims of the plan's view before (lead) and after (trail) the indexed ones.
struct Split {
  Dims lead_sizes, lead_strides, trail_sizes, trail_strides;
};
Split split_plan(const IndexPlan& p) {
  Split s;
  const auto b = static_cast<size_t>(p.before), e = b + static_cast<size_t>(p.nindexed);
  for (size_t k = 0; k < p.sizes.size(); ++k) {
    if (k < b) {
      s.lead_sizes.push_back(p.sizes[k]);
      s.lead_strides.push_back(p.strides[k]);
    } else if (k >= e) {
      s.trail_sizes.push_back(p.sizes[k]);
      s.trail_strides.push_back(p.strides[k]);
    }
  }
  return s;
}

Tensor index_tensor(const Tensor& self, const IndexList& indices) {
  const IndexPlan p = make_index_plan("index", self, indices);
  Tensor out = new_empty(aref(p.result_shape), self.dtype(), self);
  if (out.numel() == 0 || is_meta(out)) return out;
  const Split s = split_plan(p);
  std::vector<int64_t> trail;
  for_each_offset<1>(aref(s.trail_sizes), {aref(s.trail_strides)},
                     [&](const std::array<int64_t, 1>& o) { trail.push_back(o[0]); });
  bool trail_contiguous = true;
  for (size_t a = 0; a < trail.size(); ++a) trail_contiguous &= trail[a] == static_cast<int64_t>(a);
  dispatch_word(self.element_size(), [&]<typename W>(W*) {
    W* o = data_as<W>(out);
    const W* src = reinterpret_cast<const W*>(p.base);
    const size_t na = trail.size();
    for_each_offset<1>(aref(s.lead_sizes), {aref(s.lead_strides)},
                       [&](const std::array<int64_t, 1>& lead) {
                         for (int64_t off : p.offsets) {
                           const W* sp = src + lead[0] + off;
                           if (trail_contiguous) {
                             std::memcpy(o, sp, na * sizeof(W));
                             o += na;
                           } else {
                             for (size_t a = 0; a < na; ++a) *o++ = sp[trail[a]];
                           }
                         }
                       });
  });
  return out;
}

/// PyTorch's canDispatchToMaskedFill: one mask (any Nones), a one-element value and no
/// accumulation make index_put_ a masked_fill_ (which also takes a value of another dtype).
/// Returns the mask as a bool view broadcastable to self.
std::optional<Tensor> masked_fill_route(const Tensor& self, const IndexList& indices,
                                        const Tensor& value) {
  if (value.numel() != 1) return std::nullopt;
  int64_t covered = 0, mask_end = 0;
  const Tensor* mask = nullptr;
  for (const auto& ix : indices) {
    if (!ix || !ix->defined()) {
      ++covered;
      continue;
    }
    if (!is_mask_dtype(ix->dtype()) || mask != nullptr) return std::nullopt;
    mask = &*ix;
    check_mask_shape(self, *mask, covered);
    covered += mask->dim();
    mask_end = covered;
  }
  if (mask == nullptr) return std::nullopt;
  const Tensor m = mask->dtype() == DType::Bool ? *mask : nonzero_mask(*mask);
  // The dims of self after the mask's (Nones included; PyTorch's route counts trailing Nones
  // as covered and so would mask the wrong dims) broadcast over it.
  Dims sizes = dims_of(m.sizes()), strides = dims_of(m.strides());
  for (int64_t k = mask_end; k < self.dim(); ++k) {
    sizes.push_back(1);
    strides.push_back(0);
  }
  // Dims before the mask come from broadcasting its leading side.
  return m.as_strided_view(aref(sizes), aref(strides), m.storage_offset());
}

Tensor& index_put_impl(Tensor& self, const IndexList& indices, const Tensor& values,
                       bool accumulate) {
  check_cpu("index_put_", {{"self", self}, {"values", values}});
  check_index_count(self, indices);
  assert_no_internal_overlap("index_put_", self);  // Note [Memory overlap]
  if (!accumulate) {
    if (const std::optional<Tensor> mask = masked_fill_route(self, indices, values)) {
      // On meta: the shapes and dtypes are checked as the fill would; nothing to write.
      masked_fill_run("index_put_", self, *mask, is_meta(values) ? Scalar(0) : values.item(), true);
      return self;
    }
  }
  const IndexPlan p = make_index_plan("index_put_", self, indices);
  const IntArrayRef rs = aref(p.result_shape);
  bool expandable = values.dim() <= static_cast<int64_t>(rs.size());
  for (int64_t k = 0; expandable && k < values.dim(); ++k) {
    const int64_t want = rs[rs.size() - static_cast<size_t>(values.dim()) + static_cast<size_t>(k)];
    expandable = values.size(k) == 1 || values.size(k) == want;
  }
  LOOM_CHECK(expandable, "shape mismatch: value tensor of shape ", sizes_str(values.sizes()),
             " cannot be broadcast to indexing result of shape ", sizes_str(rs));
  LOOM_CHECK_T(TypeError, values.dtype() == self.dtype(),
               "Index put requires the source and destination dtypes match, got ",
               torch_type_name(self.dtype()), " for the destination and ",
               torch_type_name(values.dtype()), " for the source.");
  self.bump_version();
  int64_t total = 1;
  for (int64_t s : rs) total *= s;
  if (total == 0 || is_meta(self)) return self;

  const Tensor vals = values.is_alias_of(self) ? contiguous_copy(values) : values;
  const Dims vstr = expanded_strides(vals, rs);
  const auto b = static_cast<size_t>(p.before), ns = p.index_shape.size();
  const Dims v_lead(vstr.begin(), vstr.begin() + b), v_mid(vstr.begin() + b, vstr.begin() + b + ns),
      v_trail(vstr.begin() + b + ns, vstr.end());
  const Split s = split_plan(p);
  std::vector<int64_t> v_pos;
  for_each_offset<1>(aref(p.index_shape), {aref(v_mid)},
                     [&](const std::array<int64_t, 1>& o) { v_pos.push_back(o[0]); });
  std::vector<int64_t> d_trail, v_trail_off;
  for_each_offset<2>(aref(s.trail_sizes), {aref(s.trail_strides), aref(v_trail)},
                     [&](const std::array<int64_t, 2>& o) {
                       d_trail.push_back(o[0]);
                       v_trail_off.push_back(o[1]);
                     });
  const size_t na = d_trail.size();
  auto walk = [&](auto&& put) {
    for_each_offset<2>(aref(s.lead_sizes), {aref(s.lead_strides), aref(v_lead)},
                       [&](const std::array<int64_t, 2>& lead) {
                         for (size_t m = 0; m < p.offsets.size(); ++m) {
                           const int64_t dbase = lead[0] + p.offsets[m];
                           const int64_t vbase = lead[1] + v_pos[m];
                           for (size_t a = 0; a < na; ++a) {
                             put(dbase + d_trail[a], vbase + v_trail_off[a]);
                           }
                         }
                       });
  };
  if (!accumulate) {
    dispatch_word(self.element_size(), [&]<typename W>(W*) {
      W* d = reinterpret_cast<W*>(p.base);
      const W* v = data_as<const W>(vals);
      walk([&](int64_t di, int64_t vi) { d[di] = v[vi]; });
    });
  } else {
    dispatch_all(self.dtype(), [&]<typename T>(T*) {
      using C = compute_t<T>;
      T* d = reinterpret_cast<T*>(p.base);
      const T* v = data_as<const T>(vals);
      walk([&](int64_t di, int64_t vi) {
        d[di] = convert<T>(static_cast<C>(convert<C>(d[di]) + convert<C>(v[vi])));
      });
    });
  }
  return self;
}

Tensor& index_put_(Tensor& self, const IndexList& indices, const Tensor& values, bool accumulate) {
  return index_put_impl(self, indices, values, accumulate);
}

Tensor index_put(const Tensor& self, const IndexList& indices, const Tensor& values,
                 bool accumulate) {
  Tensor result = contiguous_copy(self);
  index_put_impl(result, indices, values, accumulate);
  return result;
}

}  // namespace

LOOM_REFERENCE_KERNELS(aten, m) {
  m.set_provider("reference");
  m.impl("masked_fill.Scalar", &masked_fill_scalar);
  m.impl("masked_fill.Tensor", &masked_fill_tensor);
  m.impl("masked_fill_.Scalar", &masked_fill_scalar_);
  m.impl("masked_fill_.Tensor", &masked_fill_tensor_);
  m.impl("masked_scatter", &masked_scatter);
  m.impl("masked_scatter_", &masked_scatter_);
  m.impl("index.Tensor", &index_tensor);
  m.impl("index_put", &index_put);
  m.impl("index_put_", &index_put_);
}

// Results whose sizes count the true or nonzero values (masked_select, nonzero, argwhere,
// where(condition)): cpu only, as in PyTorch; on meta the dispatcher reports that there is no
// Meta kernel.
LOOM_LIBRARY_IMPL(aten, CPU, m) {
  m.set_provider("reference");
  m.impl("masked_select", &masked_select);
  m.impl("nonzero", &nonzero);
  m.impl("argwhere", &argwhere);
  m.impl("where", &where_condition);
}

}  // namespace loom::ops::cpu::indexing
