#pragma once
/// @file
/// ArrayRef<T>: a non-owning view of contiguous elements, like c10::ArrayRef.
/// Unlike std::span it binds to a braced list (`t.view({2, 3})`), which is what
/// makes shape arguments pleasant; the list must outlive the call, as always.

#include <array>
#include <cstddef>
#include <initializer_list>
#include <span>
#include <vector>

#include "absl/container/inlined_vector.h"

namespace loom {

/// A read-only view of `size()` elements of type T.
template <typename T>
class ArrayRef {
 public:
  /// Element type.
  using value_type = T;
  /// Iterator type.
  using iterator = const T*;
  /// Iterator type.
  using const_iterator = const T*;

  /// An empty view.
  constexpr ArrayRef() = default;
  /// A view of n elements from data.
  constexpr ArrayRef(const T* data, size_t n) : data_(data), size_(n) {}
  /// A view of [begin, end).
  constexpr ArrayRef(const T* begin, const T* end) : data_(begin), size_(end - begin) {}
  /// A view of one element.
  constexpr ArrayRef(const T& one) : data_(&one), size_(1) {}  // NOLINT
  /// A view of a braced list (valid for the full expression, like every temporary).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"  // intended: see the class comment
#endif
  constexpr ArrayRef(std::initializer_list<T> list)  // NOLINT
      : data_(list.begin()), size_(list.size()) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  /// A view of a vector.
  template <typename A>
  ArrayRef(const std::vector<T, A>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT
  /// A view of an InlinedVector.
  template <size_t N>
  ArrayRef(const absl::InlinedVector<T, N>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT
  /// A view of a std::array.
  template <size_t N>
  constexpr ArrayRef(const std::array<T, N>& a) : data_(a.data()), size_(N) {}  // NOLINT
  /// A view of a span.
  constexpr ArrayRef(std::span<const T> s) : data_(s.data()), size_(s.size()) {}  // NOLINT

  /// First element.
  constexpr const T* begin() const { return data_; }
  /// Past the last element.
  constexpr const T* end() const { return data_ + size_; }
  /// The elements.
  constexpr const T* data() const { return data_; }
  /// Number of elements.
  constexpr size_t size() const { return size_; }
  /// True if empty.
  constexpr bool empty() const { return size_ == 0; }
  /// Element i (unchecked).
  constexpr const T& operator[](size_t i) const { return data_[i]; }
  /// First element (unchecked).
  constexpr const T& front() const { return data_[0]; }
  /// Last element (unchecked).
  constexpr const T& back() const { return data_[size_ - 1]; }
  /// A copy as a vector.
  std::vector<T> vec() const { return std::vector<T>(begin(), end()); }
  /// Element-wise equality.
  friend bool operator==(ArrayRef a, ArrayRef b) {
    if (a.size_ != b.size_) return false;
    for (size_t i = 0; i < a.size_; ++i) {
      if (!(a.data_[i] == b.data_[i])) return false;
    }
    return true;
  }

 private:
  const T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace loom
