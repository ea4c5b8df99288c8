#pragma once
/// @file
/// PyTorch's `x[...]` in C++: `x.index({Slice(0, 10), 1, None, Ellipsis, mask})` and
/// `x.index_put_({Slice(), 0}, v)`, with the names of libtorch's torch::indexing.
///
/// Note [Index translation]
/// Indices are applied left to right as PyTorch's applySlicing does: an integer selects
/// (the dim goes away), a Slice slices (a view), None inserts a dim of size 1, Ellipsis
/// stands for as many full slices as the other indices leave, a bool inserts a dim of size
/// 1 (true) or 0 (false). Tensor indices (integer, or bool masks that cover as many dims
/// as they have) are collected and applied together by one advanced-indexing op
/// (aten::index.Tensor), so `x.index({mask})` copies while `x.index({Slice(1, 3)})` is a
/// view.

#include <cstdint>
#include <optional>
#include <variant>
#include <vector>

#include "loom/ops/core.h"

namespace loom {
namespace indexing {

/// Python's `start:stop:step`; an omitted part takes Python's default.
struct Slice {
  /// `::` (everything), or start:stop:step.
  Slice(std::optional<int64_t> start = std::nullopt, std::optional<int64_t> stop = std::nullopt,
        std::optional<int64_t> step = std::nullopt)
      : start(start), stop(stop), step(step) {}
  std::optional<int64_t> start;  ///< First index (default 0).
  std::optional<int64_t> stop;   ///< One past the last index (default: the size).
  std::optional<int64_t> step;   ///< Step, positive (default 1).
};

/// The type of None (a new dim of size 1).
struct NoneIndex {};
/// The type of Ellipsis (`...`).
struct EllipsisIndex {};
/// Python's None in an index: inserts a dim of size 1.
inline constexpr NoneIndex None{};
/// Python's `...` in an index: as many full slices as needed.
inline constexpr EllipsisIndex Ellipsis{};

}  // namespace indexing

/// One entry of an index list: an integer, a bool, a Slice, None, Ellipsis or a tensor.
class TensorIndex {
 public:
  /// An integer index (selects).
  template <typename I,
            std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
  TensorIndex(I i) : value_(static_cast<int64_t>(i)) {}  // NOLINT(google-explicit-constructor)
  /// A bool index (a new dim of size 1 or 0).
  TensorIndex(bool b) : value_(b) {}  // NOLINT(google-explicit-constructor)
  /// A slice.
  TensorIndex(indexing::Slice s) : value_(s) {}  // NOLINT(google-explicit-constructor)
  /// None.
  TensorIndex(indexing::NoneIndex n) : value_(n) {}  // NOLINT(google-explicit-constructor)
  /// Ellipsis.
  TensorIndex(indexing::EllipsisIndex e) : value_(e) {}  // NOLINT(google-explicit-constructor)
  /// An index tensor: integers, or a bool mask.
  TensorIndex(Tensor t) : value_(std::move(t)) {}  // NOLINT(google-explicit-constructor)

  /// The entry.
  const std::variant<int64_t, bool, indexing::Slice, indexing::NoneIndex, indexing::EllipsisIndex,
                     Tensor>&
  value() const {
    return value_;
  }

 private:
  std::variant<int64_t, bool, indexing::Slice, indexing::NoneIndex, indexing::EllipsisIndex, Tensor>
      value_;
};

namespace detail {

/// The view that the basic indices select from self, and the tensor indices left for
/// aten::index.Tensor / aten::index_put_ (one entry per remaining dim of the view, a bool
/// mask standing for as many dims as it has). See Note [Index translation].
struct AppliedIndex {
  Tensor view;
  std::vector<std::optional<Tensor>> tensors;
  bool any_tensor = false;
};

inline AppliedIndex apply_basic_indices(const Tensor& self, ArrayRef<TensorIndex> indices) {
  // Dims the list consumes: integers, slices and tensors (a mask consumes its dims).
  int64_t consumed = 0;
  int ellipses = 0;
  for (const TensorIndex& ix : indices) {
    const auto& v = ix.value();
    if (std::holds_alternative<int64_t>(v) || std::holds_alternative<indexing::Slice>(v)) {
      ++consumed;
    } else if (const Tensor* t = std::get_if<Tensor>(&v)) {
      LOOM_CHECK_T(IndexError, t->defined(), "index: an index tensor is undefined");
      consumed += t->dtype() == DType::Bool || t->dtype() == DType::UInt8 ? t->dim() : 1;
    } else if (std::holds_alternative<indexing::EllipsisIndex>(v)) {
      ++ellipses;
    }
  }
  LOOM_CHECK_T(IndexError, ellipses <= 1, "an index can only have a single ellipsis ('...')");
  LOOM_CHECK_T(IndexError, consumed <= self.dim(), "too many indices for tensor of dimension ",
               self.dim());

  AppliedIndex out;
  out.view = self;
  int64_t dim = 0;  // the dim of out.view the next index applies to
  auto pad_to = [&](int64_t d) {
    // out.tensors has one entry per view dim before d that is not covered by a mask.
    while (static_cast<int64_t>(out.tensors.size()) < d) out.tensors.emplace_back(std::nullopt);
  };
  int64_t mask_extra = 0;  // dims covered by masks beyond their one list entry
  for (const TensorIndex& ix : indices) {
    const auto& v = ix.value();
    if (const int64_t* i = std::get_if<int64_t>(&v)) {
      out.view = loom::select(out.view, dim, *i);
    } else if (const bool* b = std::get_if<bool>(&v)) {
      out.view = loom::unsqueeze(out.view, dim);
      pad_to(dim - mask_extra);
      out.tensors.emplace_back(*b ? Tensor::from_vector<int64_t>({0}, {1})
                                  : Tensor::empty({0}, TensorOptions{}.with(DType::Int64)));
      out.any_tensor = true;
      ++dim;
    } else if (const auto* s = std::get_if<indexing::Slice>(&v)) {
      const int64_t step = s->step.value_or(1);
      LOOM_CHECK_T(ValueError, step > 0, "step must be greater than zero");
      out.view = loom::slice(out.view, dim, s->start, s->stop, step);
      ++dim;
    } else if (std::holds_alternative<indexing::NoneIndex>(v)) {
      out.view = loom::unsqueeze(out.view, dim);
      ++dim;
    } else if (std::holds_alternative<indexing::EllipsisIndex>(v)) {
      dim += self.dim() - consumed;
    } else {
      const Tensor& t = std::get<Tensor>(v);
      pad_to(dim - mask_extra);
      out.tensors.emplace_back(t);
      out.any_tensor = true;
      const int64_t covers = t.dtype() == DType::Bool || t.dtype() == DType::UInt8 ? t.dim() : 1;
      dim += covers;
      mask_extra += covers - 1;
    }
  }
  return out;
}

}  // namespace detail

inline Tensor Tensor::index(ArrayRef<TensorIndex> indices) const {
  detail::AppliedIndex a = detail::apply_basic_indices(*this, indices);
  if (!a.any_tensor) return a.view;
  return loom::index(a.view, a.tensors);
}

inline const Tensor& Tensor::index_put_(ArrayRef<TensorIndex> indices, const Tensor& value) const {
  detail::AppliedIndex a = detail::apply_basic_indices(*this, indices);
  if (!a.any_tensor) {
    loom::copy_(a.view, value);
  } else {
    loom::index_put_(a.view, a.tensors, value, /*accumulate=*/false);
  }
  return *this;
}

inline const Tensor& Tensor::index_put_(ArrayRef<TensorIndex> indices, const Scalar& value) const {
  detail::AppliedIndex a = detail::apply_basic_indices(*this, indices);
  if (!a.any_tensor) {
    loom::fill_(a.view, value);
  } else {
    Tensor v = Tensor::empty({}, TensorOptions{}.with(dtype()));
    loom::fill_(v, value);
    loom::index_put_(a.view, a.tensors, v, /*accumulate=*/false);
  }
  return *this;
}

}  // namespace loom
