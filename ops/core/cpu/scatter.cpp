// Reference CPU kernels of the scatter family: scatter (src, value, and the deprecated
// "add"/"multiply" reduce forms), scatter_add and scatter_reduce ("sum", "prod", "mean",
// "amax", "amin", include_self), each out of place and in place.
//
// out[i_0, .., index[i], .., i_n] (op)= src[i] for every position i of index, visited in
// row-major order, so duplicates combine in increasing order along dim as in PyTorch's CPU
// kernel (a plain scatter keeps the last write). Index values are checked before anything is
// written. Reductions compute in compute_t<T> and round after each update; amax/amin let a
// NaN win; "mean" divides by the number of contributions (plus one with include_self), with
// floor division for integers.
#include <cmath>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include "cpu/indexing_common.h"
#include "loom/core/memory_overlap.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/meta/indexing.h"

namespace loom::ops::cpu::indexing {
namespace {

enum class Reduce { kNone, kSum, kProd, kMean, kMax, kMin };

/// PyTorch's get_operator_enum: scatter's reduce takes "add"/"multiply"; scatter_reduce's
/// (new options) takes "sum", "prod", "mean", "amax" ("max"), "amin" ("min").
Reduce parse_reduce(std::string_view reduce, bool new_options) {
  if (new_options) {
    if (reduce == "sum") return Reduce::kSum;
    if (reduce == "prod") return Reduce::kProd;
    if (reduce == "mean") return Reduce::kMean;
    if (reduce == "amax" || reduce == "max") return Reduce::kMax;
    if (reduce == "amin" || reduce == "min") return Reduce::kMin;
    LOOM_THROW(ValueError, "reduce argument must be either sum, prod, mean, amax or amin, got ",
               reduce);
  }
  if (reduce == "add") return Reduce::kSum;
  if (reduce == "multiply") return Reduce::kProd;
  LOOM_THROW(ValueError, "reduce argument must be either add or multiply.");
}

/// PyTorch's scatter_gather_dtype_check and scatter_shape_check; returns dim wrapped.
int64_t check_scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor* src) {
  check_cpu("scatter", {{"self", self}, {"index", index}, {"src", src ? *src : Tensor()}});
  dim = meta::wrap_dim("scatter", dim, self.dim());
  meta::check_scatter(self, dim, index, src);
  return dim;
}

template <typename C>
bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

/// The value a reduction starts from when self is excluded (include_self=False).
template <typename T>
T reduce_identity(Reduce op) {
  using C = compute_t<T>;
  switch (op) {
    case Reduce::kProd:
      return convert<T>(C(1));
    case Reduce::kMax:
      if constexpr (std::numeric_limits<C>::has_infinity) {
        return convert<T>(-std::numeric_limits<C>::infinity());
      } else {
        return std::numeric_limits<T>::lowest();
      }
    case Reduce::kMin:
      if constexpr (std::numeric_limits<C>::has_infinity) {
        return convert<T>(std::numeric_limits<C>::infinity());
      } else {
        return std::numeric_limits<T>::max();
      }
    default:
      return convert<T>(C(0));
  }
}

template <typename C>
C combine(Reduce op, C a, C b) {
  switch (op) {
    case Reduce::kProd:
      return static_cast<C>(a * b);
    case Reduce::kMax:
      return is_nan(b) ? b : (a < b ? b : a);
    case Reduce::kMin:
      return is_nan(b) ? b : (b < a ? b : a);
    default:  // sum, mean
      return static_cast<C>(a + b);
  }
}

/// What a scatter call writes: a tensor src or a Scalar value, and how.
struct ScatterArgs {
  const Tensor* src = nullptr;
  const Scalar* value = nullptr;
  std::optional<std::string_view> reduce;
  bool new_options = false;  ///< scatter_reduce's names for reduce
  bool include_self = true;
};

/// Applies the scatter to out (a copy of self, or self itself); dim is wrapped.
void scatter_into(const Tensor& out, int64_t dim, const Tensor& index_arg, const ScatterArgs& a,
                  Reduce op) {
  if (index_arg.numel() == 0 || is_meta(out)) return;  // meta: the index values are unknown
  // Inputs that share memory with out are read from copies.
  const Tensor index = index_arg.is_alias_of(out) ? contiguous_copy(index_arg) : index_arg;
  Tensor src;
  if (a.src != nullptr) src = a.src->is_alias_of(out) ? contiguous_copy(*a.src) : *a.src;
  const NonEmptyGeometry go = nonempty_geometry(out), gi = nonempty_geometry(index);
  const Dims src_strides =
      a.src != nullptr ? nonempty_geometry(src).strides : Dims(gi.sizes.size(), 0);
  Dims o_strides = go.strides;
  o_strides[dim] = 0;
  const int64_t bound = go.sizes[dim], step = go.strides[dim];
  const int64_t* ip = data_as<const int64_t>(index);
  for_each_offset<1>(aref(gi.sizes), {aref(gi.strides)}, [&](const std::array<int64_t, 1>& o) {
    const int64_t v = ip[o[0]];
    LOOM_CHECK_T(IndexError, v >= 0 && v < bound,
                 meta::index_out_of_bounds("scatter", v, dim, bound));
  });

  if (op == Reduce::kNone && a.src != nullptr) {
    dispatch_word(out.element_size(), [&]<typename W>(W*) {
      W* d = data_as<W>(out);
      const W* s = data_as<const W>(src);
      for_each_offset<3>(
          aref(gi.sizes), {aref(gi.strides), aref(o_strides), aref(src_strides)},
          [&](const std::array<int64_t, 3>& o) { d[o[1] + ip[o[0]] * step] = s[o[2]]; });
    });
    return;
  }
  dispatch_all(out.dtype(), [&]<typename T>(T*) {
    using C = compute_t<T>;
    T* d = data_as<T>(out);
    const T* s = a.src != nullptr ? data_as<const T>(src) : nullptr;
    const C sv = a.value != nullptr ? convert<C>(convert<T>(a.value->to<C>())) : C(0);
    if (op == Reduce::kNone) {
      const T v = convert<T>(sv);
      for_each_offset<2>(aref(gi.sizes), {aref(gi.strides), aref(o_strides)},
                         [&](const std::array<int64_t, 2>& o) { d[o[1] + ip[o[0]] * step] = v; });
      return;
    }
    if (!a.include_self) {
      const T init = reduce_identity<T>(op);
      for_each_offset<2>(
          aref(gi.sizes), {aref(gi.strides), aref(o_strides)},
          [&](const std::array<int64_t, 2>& o) { d[o[1] + ip[o[0]] * step] = init; });
    }
    // "mean" counts the contributions per element of out, by its row-major position.
    const bool mean = op == Reduce::kMean;
    const DimVector cs = contiguous_strides(aref(go.sizes));
    const Dims c_full(cs.begin(), cs.end());
    Dims c_strides = c_full;
    const int64_t c_step = c_strides[dim];
    c_strides[dim] = 0;
    std::vector<int64_t> counts(mean ? static_cast<size_t>(out.numel()) : 0, 0);
    for_each_offset<4>(aref(gi.sizes),
                       {aref(gi.strides), aref(o_strides), aref(src_strides), aref(c_strides)},
                       [&](const std::array<int64_t, 4>& o) {
                         const int64_t v = ip[o[0]];
                         T& t = d[o[1] + v * step];
                         const C x = s != nullptr ? convert<C>(s[o[2]]) : sv;
                         t = convert<T>(combine<C>(op, convert<C>(t), x));
                         if (mean) ++counts[static_cast<size_t>(o[3] + v * c_step)];
                       });
    if (!mean) return;
    const int64_t extra = a.include_self ? 1 : 0;
    for_each_offset<2>(aref(go.sizes), {aref(go.strides), aref(c_full)},
                       [&](const std::array<int64_t, 2>& o) {
                         int64_t n = counts[static_cast<size_t>(o[1])] + extra;
                         if (n == 0) n = 1;
                         T& t = d[o[0]];
                         if constexpr (is_floating_v<T>) {
                           t = convert<T>(static_cast<C>(convert<C>(t) / static_cast<C>(n)));
                         } else {
                           t = convert<T>(floor_div<int64_t>(convert<int64_t>(t), n));
                         }
                       });
  });
}

Tensor scatter_run(const Tensor& self, int64_t dim, const Tensor& index, const ScatterArgs& a,
                   const Tensor* inplace) {
  dim = check_scatter(self, dim, index, a.src);
  if (a.value != nullptr) {  // Note [Checked scalar conversion]
    meta::check_scalar_fits(inplace != nullptr ? "scatter_.value" : "scatter.value", *a.value,
                            self.dtype());
  }
  const Reduce op = a.reduce ? parse_reduce(*a.reduce, a.new_options) : Reduce::kNone;
  // Note [Memory overlap]: inputs sharing out's memory are read from copies (scatter_into).
  if (inplace != nullptr) assert_no_internal_overlap("scatter_", *inplace);
  Tensor out = inplace != nullptr ? *inplace : contiguous_copy(self);
  scatter_into(out, dim, index, a, op);
  if (inplace != nullptr) out.bump_version();
  return out;
}

ScatterArgs with_src(const Tensor& src) { return {&src, nullptr, std::nullopt, false, true}; }
ScatterArgs with_value(const Scalar& value) { return {nullptr, &value, std::nullopt, false, true}; }

Tensor scatter_src(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_run(self, dim, index, with_src(src), nullptr);
}
Tensor& scatter_src_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  scatter_run(self, dim, index, with_src(src), &self);
  return self;
}
Tensor scatter_value(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  return scatter_run(self, dim, index, with_value(value), nullptr);
}
Tensor& scatter_value_(Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  scatter_run(self, dim, index, with_value(value), &self);
  return self;
}
Tensor scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                      std::string_view reduce) {
  ScatterArgs a = with_src(src);
  a.reduce = reduce;
  return scatter_run(self, dim, index, a, nullptr);
}
Tensor& scatter_reduce_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                        std::string_view reduce) {
  ScatterArgs a = with_src(src);
  a.reduce = reduce;
  scatter_run(self, dim, index, a, &self);
  return self;
}
Tensor scatter_value_reduce(const Tensor& self, int64_t dim, const Tensor& index,
                            const Scalar& value, std::string_view reduce) {
  ScatterArgs a = with_value(value);
  a.reduce = reduce;
  return scatter_run(self, dim, index, a, nullptr);
}
Tensor& scatter_value_reduce_(Tensor& self, int64_t dim, const Tensor& index, const Scalar& value,
                              std::string_view reduce) {
  ScatterArgs a = with_value(value);
  a.reduce = reduce;
  scatter_run(self, dim, index, a, &self);
  return self;
}
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  ScatterArgs a = with_src(src);
  a.reduce = "add";
  return scatter_run(self, dim, index, a, nullptr);
}
Tensor& scatter_add_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  ScatterArgs a = with_src(src);
  a.reduce = "add";
  scatter_run(self, dim, index, a, &self);
  return self;
}
ScatterArgs two_args(const Tensor& src, std::string_view reduce, bool include_self) {
  return {&src, nullptr, reduce, true, include_self};
}
Tensor scatter_reduce_two(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                          std::string_view reduce, bool include_self) {
  return scatter_run(self, dim, index, two_args(src, reduce, include_self), nullptr);
}
Tensor& scatter_reduce_two_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                            std::string_view reduce, bool include_self) {
  scatter_run(self, dim, index, two_args(src, reduce, include_self), &self);
  return self;
}

}  // namespace

LOOM_REFERENCE_KERNELS(aten, m) {
  m.set_provider("reference");
  m.impl("scatter.src", &scatter_src);
  m.impl("scatter_.src", &scatter_src_);
  m.impl("scatter.value", &scatter_value);
  m.impl("scatter_.value", &scatter_value_);
  m.impl("scatter.reduce", &scatter_reduce);
  m.impl("scatter_.reduce", &scatter_reduce_);
  m.impl("scatter.value_reduce", &scatter_value_reduce);
  m.impl("scatter_.value_reduce", &scatter_value_reduce_);
  m.impl("scatter_add", &scatter_add);
  m.impl("scatter_add_", &scatter_add_);
  m.impl("scatter_reduce.two", &scatter_reduce_two);
  m.impl("scatter_reduce_.two", &scatter_reduce_two_);
}

}  // namespace loom::ops::cpu::indexing
