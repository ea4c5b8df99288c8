// Reference CPU kernels of the sorting family: sort (and sort.stable), argsort (and
// argsort.stable), msort, topk, and unique in its three forms (_unique2, unique_dim,
// unique_consecutive).
//
// Note [Sorting order]: NaN is greater than every number, so it sorts last ascending and
// first descending, and topk(largest=True) picks NaNs first. Each line along dim is sorted as
// (value, index) pairs with the standard library's algorithms and the comparators of
// PyTorch's CPU kernels: std::stable_sort for stable=True (ties keep their order, descending
// too), std::sort otherwise, and for topk std::partial_sort when k*64 <= n, else
// std::nth_element followed by std::sort of the first k-1. These algorithms are deterministic,
// so ties come out in the same order as from PyTorch's CPU kernels built on the same standard
// library. unique sorts the flattened values this way, then groups equal neighbours (NaNs
// never compare equal, so each NaN stays its own value).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "cpu/indexing_common.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/meta/wrap_dim.h"

namespace loom::ops::cpu::indexing {
namespace {

template <typename C>
bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

/// Ascending with NaN last (PyTorch's KeyValueCompAsc), on (value, index) pairs.
struct Ascending {
  template <typename P>
  bool operator()(const P& a, const P& b) const {
    return (!is_nan(a.first) && is_nan(b.first)) || (a.first < b.first);
  }
};
/// Descending with NaN first (KeyValueCompDesc).
struct Descending {
  template <typename P>
  bool operator()(const P& a, const P& b) const {
    return (is_nan(a.first) && !is_nan(b.first)) || (a.first > b.first);
  }
};

/// Sorts a line of (value, index) pairs (Note [Sorting order]).
template <typename P>
void sort_line(std::vector<P>& line, bool stable, bool descending) {
  if (descending) {
    stable ? std::stable_sort(line.begin(), line.end(), Descending{})
           : std::sort(line.begin(), line.end(), Descending{});
  } else {
    stable ? std::stable_sort(line.begin(), line.end(), Ascending{})
           : std::sort(line.begin(), line.end(), Ascending{});
  }
}

/// The lines of a tensor along dim: the positions of every other dim (outer walk) and the
/// stride along dim.
struct Lines {
  Dims outer_sizes;
  std::array<Dims, 3> outer_strides;  // self, values out, indices out
  int64_t n = 1;
  std::array<int64_t, 3> step{};
};
Lines lines_of(const Tensor& self, int64_t dim, const Tensor& values, const Tensor& indices) {
  Lines l;
  const NonEmptyGeometry gs = nonempty_geometry(self), gv = nonempty_geometry(values),
                         gi = nonempty_geometry(indices);
  for (size_t d = 0; d < gs.sizes.size(); ++d) {
    if (static_cast<int64_t>(d) == dim) {
      l.n = gs.sizes[d];
      l.step = {gs.strides[d], gv.strides[d], gi.strides[d]};
      continue;
    }
    l.outer_sizes.push_back(gs.sizes[d]);
    l.outer_strides[0].push_back(gs.strides[d]);
    l.outer_strides[1].push_back(gv.strides[d]);
    l.outer_strides[2].push_back(gi.strides[d]);
  }
  return l;
}

/// Calls body(base, buffer) for every line, base holding the line's first element in self,
/// values and indices. Lines are independent, so with enough work they run in parallel
/// (OpenMP), each thread with its own buffer of n pairs; the result does not depend on it.
template <typename P, typename F>
void for_each_line(const Lines& l, F&& body) {
  std::vector<std::array<int64_t, 3>> bases;
  for_each_offset<3>(aref(l.outer_sizes),
                     {aref(l.outer_strides[0]), aref(l.outer_strides[1]), aref(l.outer_strides[2])},
                     [&](const std::array<int64_t, 3>& o) { bases.push_back(o); });
  const auto nb = static_cast<int64_t>(bases.size());
  constexpr int64_t kParallelWork = int64_t{1} << 15;
  const bool parallel = nb > 1 && nb * l.n >= kParallelWork;
#pragma omp parallel if (parallel)
  {
    std::vector<P> buffer(static_cast<size_t>(l.n));
#pragma omp for schedule(static)
    for (int64_t b = 0; b < nb; ++b) body(bases[static_cast<size_t>(b)], buffer);
  }
}

std::tuple<Tensor, Tensor> sort_impl(const Tensor& self, bool stable, int64_t dim,
                                     bool descending) {
  check_cpu("sort", {{"self", self}});
  dim = meta::wrap_dim("sort", dim, self.dim());
  Tensor values = new_empty(self.sizes(), self.dtype(), self);
  Tensor indices = new_empty(self.sizes(), DType::Int64, self);
  if (self.numel() == 0 || is_meta(self)) return {values, indices};
  const Lines l = lines_of(self, dim, values, indices);
  // A broadcast dim holds one value n times: PyTorch leaves it unsorted (indices 0..n-1).
  const bool broadcast = self.dim() > 0 && self.stride(dim) == 0;
  dispatch_all(self.dtype(), [&]<typename T>(T*) {
    using C = compute_t<T>;
    const T* s = data_as<const T>(self);
    T* v = data_as<T>(values);
    int64_t* ix = data_as<int64_t>(indices);
    using P = std::pair<C, int64_t>;
    for_each_line<P>(l, [&](const std::array<int64_t, 3>& o, std::vector<P>& line) {
      for (int64_t i = 0; i < l.n; ++i) {
        line[static_cast<size_t>(i)] = {convert<C>(s[o[0] + i * l.step[0]]), i};
      }
      if (!broadcast) sort_line(line, stable, descending);
      for (int64_t i = 0; i < l.n; ++i) {
        const P& e = line[static_cast<size_t>(i)];
        v[o[1] + i * l.step[1]] = convert<T>(e.first);
        ix[o[2] + i * l.step[2]] = e.second;
      }
    });
  });
  return {values, indices};
}

std::tuple<Tensor, Tensor> sort(const Tensor& self, int64_t dim, bool descending) {
  return sort_impl(self, false, dim, descending);
}
std::tuple<Tensor, Tensor> sort_stable(const Tensor& self, std::optional<bool> stable, int64_t dim,
                                       bool descending) {
  return sort_impl(self, stable.value_or(false), dim, descending);
}
Tensor argsort(const Tensor& self, int64_t dim, bool descending) {
  return std::get<1>(sort_impl(self, false, dim, descending));
}
Tensor argsort_stable(const Tensor& self, bool stable, int64_t dim, bool descending) {
  return std::get<1>(sort_impl(self, stable, dim, descending));
}
Tensor msort(const Tensor& self) { return std::get<0>(sort_impl(self, false, 0, false)); }

// ---- topk ------------------------------------------------------------------------------------

std::tuple<Tensor, Tensor> topk(const Tensor& self, int64_t k, int64_t dim, bool largest,
                                bool sorted) {
  check_cpu("topk", {{"self", self}});
  dim = meta::wrap_dim("topk", dim, self.dim());
  const int64_t slice = self.dim() == 0 ? 1 : self.size(dim);
  LOOM_CHECK(k >= 0 && k <= slice, "topk: selected index k out of range (k = ", k,
             ", but dimension ", dim, " has size ", slice, ")");
  if (self.dtype() == DType::Bool) throw_dtype_unsupported("topk_cpu", self.dtype());
  Dims out_sizes = dims_of(self.sizes());
  if (self.dim() > 0) out_sizes[dim] = k;
  Tensor values = new_empty(aref(out_sizes), self.dtype(), self);
  Tensor indices = new_empty(aref(out_sizes), DType::Int64, self);
  if (is_meta(self)) return {values, indices};  // Note [Meta kernels share the reference's setup]
  if (self.dim() == 0) {
    copy_same_dtype(values, self);
    *data_as<int64_t>(indices) = 0;
    return {values, indices};
  }
  if (k == 0 || self.numel() == 0) return {values, indices};
  const Lines l = lines_of(self, dim, values, indices);
  const bool partial = k * 64 <= l.n;
  dispatch_all(self.dtype(), [&]<typename T>(T*) {
    using C = compute_t<T>;
    using P = std::pair<C, int64_t>;
    const T* s = data_as<const T>(self);
    T* v = data_as<T>(values);
    int64_t* ix = data_as<int64_t>(indices);
    for_each_line<P>(l, [&](const std::array<int64_t, 3>& o, std::vector<P>& queue) {
      for (int64_t i = 0; i < l.n; ++i) {
        queue[static_cast<size_t>(i)] = {convert<C>(s[o[0] + i * l.step[0]]), i};
      }
      // NaN counts as the largest value either way.
      auto select = [&](auto cmp) {
        const auto kth = queue.begin() + k;
        if (partial) {
          std::partial_sort(queue.begin(), kth, queue.end(), cmp);
        } else {
          std::nth_element(queue.begin(), kth - 1, queue.end(), cmp);
          if (sorted) std::sort(queue.begin(), kth - 1, cmp);
        }
      };
      largest ? select(Descending{}) : select(Ascending{});
      for (int64_t i = 0; i < k; ++i) {
        const P& e = queue[static_cast<size_t>(i)];
        v[o[1] + i * l.step[1]] = convert<T>(e.first);
        ix[o[2] + i * l.step[2]] = e.second;
      }
    });
  });
  return {values, indices};
}

// ---- unique ----------------------------------------------------------------------------------

// unique's results have as many elements as there are distinct values: a cpu-only kernel.
Tensor empty_long(IntArrayRef sizes) {
  return Tensor::empty(sizes, TensorOptions{}.with(DType::Int64));
}

/// Groups equal neighbours of a sorted (value, original position) sequence: the unique
/// values, the group of each original position, and each group's size.
template <typename C>
struct Groups {
  std::vector<C> values;
  std::vector<int64_t> inverse, counts;
};
template <typename C>
Groups<C> group_sorted(const std::vector<std::pair<C, int64_t>>& sorted, bool consecutive_order) {
  Groups<C> g;
  g.inverse.resize(sorted.size());
  for (size_t i = 0; i < sorted.size(); ++i) {
    // NaN != NaN: every NaN starts a group of its own.
    if (i == 0 || sorted[i].first != sorted[i - 1].first) {
      g.values.push_back(sorted[i].first);
      g.counts.push_back(0);
    }
    ++g.counts.back();
    const size_t at = consecutive_order ? i : static_cast<size_t>(sorted[i].second);
    g.inverse[at] = static_cast<int64_t>(g.values.size()) - 1;
  }
  return g;
}

/// The flattened unique values, in sorted order (sorted=True) or in order of appearance of
/// consecutive runs (consecutive=True).
std::tuple<Tensor, Tensor, Tensor> unique_flat(const Tensor& self, bool consecutive,
                                               bool return_inverse, bool return_counts) {
  check_cpu("unique", {{"self", self}});
  const int64_t numel = self.numel();
  if (numel == 0) {
    return {new_empty({0}, self.dtype(), self),
            return_inverse ? empty_long(self.sizes()) : empty_long({0}), empty_long({0})};
  }
  return dispatch_all(self.dtype(), [&]<typename T>(T*) -> std::tuple<Tensor, Tensor, Tensor> {
    using C = compute_t<T>;
    const T* s = data_as<const T>(self);
    std::vector<std::pair<C, int64_t>> seq;
    seq.reserve(static_cast<size_t>(numel));
    for_each_offset<1>(self.sizes(), {self.strides()}, [&](const std::array<int64_t, 1>& o) {
      seq.emplace_back(convert<C>(s[o[0]]), static_cast<int64_t>(seq.size()));
    });
    if (!consecutive) sort_line(seq, /*stable=*/false, /*descending=*/false);
    const Groups<C> g = group_sorted(seq, consecutive);
    Tensor out = new_empty({static_cast<int64_t>(g.values.size())}, self.dtype(), self);
    T* o = data_as<T>(out);
    for (size_t i = 0; i < g.values.size(); ++i) o[i] = convert<T>(g.values[i]);
    Tensor inverse = empty_long({0}), counts = empty_long({0});
    if (return_inverse) {
      inverse = empty_long(self.sizes());
      std::copy(g.inverse.begin(), g.inverse.end(), data_as<int64_t>(inverse));
    }
    if (return_counts) {
      counts = empty_long({static_cast<int64_t>(g.counts.size())});
      std::copy(g.counts.begin(), g.counts.end(), data_as<int64_t>(counts));
    }
    return {out, inverse, counts};
  });
}

/// Unique slices along dim (sorted lexicographically unless consecutive). As PyTorch's, it
/// returns the inverse (one per slice) and the counts whatever the flags say.
std::tuple<Tensor, Tensor, Tensor> unique_slices(const Tensor& self, int64_t dim,
                                                 bool consecutive) {
  check_cpu("unique_dim", {{"self", self}});
  LOOM_CHECK_T(IndexError, self.dim() > 0, "unique_dim: dimension specified as ", dim,
               " but tensor has no dimensions");
  dim = meta::wrap_dim("unique_dim", dim, self.dim());
  const int64_t n = self.size(dim);
  const int64_t zero_dims = std::count(self.sizes().begin(), self.sizes().end(), int64_t{0});
  if (n == 0) {
    LOOM_CHECK(zero_dims == 1,
               "Number of zero sized dimensions is more than one, so unique cannot be applied ");
    return {new_empty(self.sizes(), self.dtype(), self), empty_long({0}), empty_long({0})};
  }
  LOOM_CHECK(zero_dims == 0,
             "There are 0 sized dimensions, and they aren't selected, so unique cannot be "
             "applied");
  const int64_t m = self.numel() / n;
  // The slices' elements, row-major within each slice.
  Dims rest_sizes, rest_strides;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (d == dim) continue;
    rest_sizes.push_back(self.size(d));
    rest_strides.push_back(self.stride(d));
  }
  return dispatch_all(self.dtype(), [&]<typename T>(T*) -> std::tuple<Tensor, Tensor, Tensor> {
    // Slices compare in the compute type (bool as a byte: vector<bool> has no data()).
    using C = std::conditional_t<std::is_same_v<T, bool>, uint8_t, compute_t<T>>;
    const T* s = data_as<const T>(self);
    std::vector<C> flat;
    flat.reserve(static_cast<size_t>(self.numel()));
    for (int64_t r = 0; r < n; ++r) {
      const T* row = s + r * self.stride(dim);
      for_each_offset<1>(
          aref(rest_sizes), {aref(rest_strides)},
          [&](const std::array<int64_t, 1>& o) { flat.push_back(convert<C>(row[o[0]])); });
    }
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    auto row_at = [&](int64_t r) { return flat.data() + r * m; };
    if (!consecutive) {
      std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        const C* x = row_at(a);
        const C* y = row_at(b);
        for (int64_t i = 0; i < m; ++i) {
          if (x[i] < y[i]) return true;
          if (x[i] > y[i]) return false;
        }
        return false;
      });
    }
    std::vector<int64_t> firsts, counts, inverse(static_cast<size_t>(n));
    for (size_t i = 0; i < order.size(); ++i) {
      const bool same =
          i > 0 && std::equal(row_at(order[i]), row_at(order[i]) + m, row_at(firsts.back()));
      if (!same) {
        firsts.push_back(order[i]);
        counts.push_back(0);
      }
      ++counts.back();
      inverse[static_cast<size_t>(order[i])] = static_cast<int64_t>(firsts.size()) - 1;
    }
    Dims out_sizes = dims_of(self.sizes());
    out_sizes[dim] = static_cast<int64_t>(firsts.size());
    Tensor out = new_empty(aref(out_sizes), self.dtype(), self);
    Dims out_rest;
    for (int64_t d = 0; d < out.dim(); ++d) {
      if (d != dim) out_rest.push_back(out.stride(d));
    }
    for (size_t g = 0; g < firsts.size(); ++g) {
      copy_strided(
          static_cast<char*>(out.data_ptr()) +
              static_cast<int64_t>(g) * out.stride(dim) * static_cast<int64_t>(out.element_size()),
          aref(out_rest),
          static_cast<const char*>(self.data_ptr()) +
              firsts[g] * self.stride(dim) * static_cast<int64_t>(self.element_size()),
          aref(rest_strides), aref(rest_sizes), self.element_size());
    }
    Tensor inv = empty_long({n});
    std::copy(inverse.begin(), inverse.end(), data_as<int64_t>(inv));
    Tensor cnt = empty_long({static_cast<int64_t>(counts.size())});
    std::copy(counts.begin(), counts.end(), data_as<int64_t>(cnt));
    return {out, inv, cnt};
  });
}

std::tuple<Tensor, Tensor, Tensor> unique2(const Tensor& self, bool /*sorted*/, bool return_inverse,
                                           bool return_counts) {
  // Always sorted, as PyTorch's CPU kernel.
  return unique_flat(self, false, return_inverse, return_counts);
}

std::tuple<Tensor, Tensor, Tensor> unique_dim(const Tensor& self, int64_t dim, bool /*sorted*/,
                                              bool /*return_inverse*/, bool /*return_counts*/) {
  return unique_slices(self, dim, false);
}

std::tuple<Tensor, Tensor, Tensor> unique_consecutive(const Tensor& self, bool return_inverse,
                                                      bool return_counts,
                                                      std::optional<int64_t> dim) {
  if (!dim || (*dim == 0 && self.dim() == 1)) {
    return unique_flat(self, true, return_inverse, return_counts);
  }
  return unique_slices(self, *dim, true);
}

}  // namespace

LOOM_REFERENCE_KERNELS(aten, m) {
  m.set_provider("reference");
  m.impl("sort", &sort);
  m.impl("sort.stable", &sort_stable);
  m.impl("argsort", &argsort);
  m.impl("argsort.stable", &argsort_stable);
  m.impl("msort", &msort);
  m.impl("topk", &topk);
}

// The unique family's result sizes are the number of distinct values: no Meta kernel, as in
// PyTorch (a meta tensor has no values to count).
LOOM_LIBRARY_IMPL(aten, CPU, m) {
  m.set_provider("reference");
  m.impl("_unique2", &unique2);
  m.impl("unique_dim", &unique_dim);
  m.impl("unique_consecutive", &unique_consecutive);
}

}  // namespace loom::ops::cpu::indexing
