#pragma once
/// @file
/// Creation operators of the core pack: factories, random factories, the *_like forms, and
/// tensors from host memory. Floating factories default to float32 (the default dtype);
/// random ones draw from `generator`, or the CPU default generator when it is null, so
/// loom::manual_seed(s) makes them reproducible.

#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "loom/core/generator.h"
#include "loom/core/storage.h"
#include "loom/ops/op_handle.h"

namespace loom {

/// Shorthand for the optional dtype / device arguments of the factories.
using OptDType = std::optional<DType>;
/// Shorthand for an optional device argument (none: the CPU).
using OptDevice = std::optional<Device>;

/// @cond INTERNAL
namespace detail {
using FactorySig = Tensor(IntArrayRef, std::optional<DType>, std::optional<int64_t>,
                          std::optional<Device>, std::optional<bool>);
using LikeSig = Tensor(const Tensor&, std::optional<DType>, std::optional<int64_t>,
                       std::optional<Device>, std::optional<bool>, std::optional<int64_t>);
using ScalarsSig = Tensor(const Scalar&, const Scalar&, const Scalar&, std::optional<DType>,
                          std::optional<int64_t>, std::optional<Device>, std::optional<bool>);
}  // namespace detail
/// @endcond

/// Uninitialised memory of the given sizes.
inline Tensor empty(IntArrayRef size, OptDType dtype = {}, OptDevice device = {}) {
  LOOM_TYPED_OP(op, "aten::empty.memory_format",
                Tensor(IntArrayRef, std::optional<DType>, std::optional<int64_t>,
                       std::optional<Device>, std::optional<bool>, std::optional<int64_t>));
  return op(size, dtype, std::nullopt, device, std::nullopt, std::nullopt);
}

/// A tensor of zeros.
inline Tensor zeros(IntArrayRef size, OptDType dtype = {}, OptDevice device = {}) {
  LOOM_TYPED_OP(op, "aten::zeros", detail::FactorySig);
  return op(size, dtype, std::nullopt, device, std::nullopt);
}

/// A tensor of ones.
inline Tensor ones(IntArrayRef size, OptDType dtype = {}, OptDevice device = {}) {
  LOOM_TYPED_OP(op, "aten::ones", detail::FactorySig);
  return op(size, dtype, std::nullopt, device, std::nullopt);
}

/// A tensor filled with value; the dtype defaults to value's (bool, int64 or float32).
inline Tensor full(IntArrayRef size, const Scalar& value, OptDType dtype = {},
                   OptDevice device = {}) {
  LOOM_TYPED_OP(op, "aten::full",
                Tensor(IntArrayRef, const Scalar&, std::optional<DType>, std::optional<int64_t>,
                       std::optional<Device>, std::optional<bool>));
  return op(size, value, dtype, std::nullopt, device, std::nullopt);
}

/// start, start + step, ... below end; int64 when all three are integers, else float32.
inline Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1,
                     OptDType dtype = {}, OptDevice device = {}) {
  LOOM_TYPED_OP(op, "aten::arange.start_step", detail::ScalarsSig);
  return op(start, end, step, dtype, std::nullopt, device, std::nullopt);
}

/// 0, 1, ... below end.
inline Tensor arange(const Scalar& end, OptDType dtype = {}, OptDevice device = {}) {
  LOOM_TYPED_OP(op, "aten::arange",
                Tensor(const Scalar&, std::optional<DType>, std::optional<int64_t>,
                       std::optional<Device>, std::optional<bool>));
  return op(end, dtype, std::nullopt, device, std::nullopt);
}

/// steps evenly spaced values from start to end inclusive.
inline Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, OptDType dtype = {},
                       OptDevice device = {}) {
  LOOM_TYPED_OP(op, "aten::linspace",
                Tensor(const Scalar&, const Scalar&, int64_t, std::optional<DType>,
                       std::optional<int64_t>, std::optional<Device>, std::optional<bool>));
  return op(start, end, steps, dtype, std::nullopt, device, std::nullopt);
}

/// An n x m matrix with ones on the diagonal (no m: m = n). A negative m is refused, as in
/// PyTorch, not taken for "none".
inline Tensor eye(int64_t n, std::optional<int64_t> m = std::nullopt, OptDType dtype = {},
                  OptDevice device = {}) {
  LOOM_TYPED_OP(op, "aten::eye.m",
                Tensor(int64_t, int64_t, std::optional<DType>, std::optional<int64_t>,
                       std::optional<Device>, std::optional<bool>));
  return op(n, m.value_or(n), dtype, std::nullopt, device, std::nullopt);
}

/// An n x n identity matrix of the given dtype.
inline Tensor eye(int64_t n, OptDType dtype, OptDevice device = {}) {
  return eye(n, n, dtype, device);
}

/// Uniform values in [0, 1).
inline Tensor rand(IntArrayRef size, Generator* generator = nullptr, OptDType dtype = {},
                   OptDevice device = {}) {
  LOOM_TYPED_OP(op, "aten::rand.generator",
                Tensor(IntArrayRef, Generator*, std::optional<DType>, std::optional<int64_t>,
                       std::optional<Device>, std::optional<bool>));
  return op(size, generator, dtype, std::nullopt, device, std::nullopt);
}

/// Standard normal values.
inline Tensor randn(IntArrayRef size, Generator* generator = nullptr, OptDType dtype = {},
                    OptDevice device = {}) {
  LOOM_TYPED_OP(op, "aten::randn.generator",
                Tensor(IntArrayRef, Generator*, std::optional<DType>, std::optional<int64_t>,
                       std::optional<Device>, std::optional<bool>));
  return op(size, generator, dtype, std::nullopt, device, std::nullopt);
}

/// Uniform values in [0, 1) of the given dtype, from the default generator.
inline Tensor rand(IntArrayRef size, OptDType dtype, OptDevice device = {}) {
  return rand(size, nullptr, dtype, device);
}

/// Standard normal values of the given dtype, from the default generator.
inline Tensor randn(IntArrayRef size, OptDType dtype, OptDevice device = {}) {
  return randn(size, nullptr, dtype, device);
}

/// Uniform integers in [low, high), int64 by default.
inline Tensor randint(int64_t low, int64_t high, IntArrayRef size, Generator* generator = nullptr,
                      OptDType dtype = {}, OptDevice device = {}) {
  LOOM_TYPED_OP(op, "aten::randint.low_generator",
                Tensor(int64_t, int64_t, IntArrayRef, Generator*, std::optional<DType>,
                       std::optional<int64_t>, std::optional<Device>, std::optional<bool>));
  return op(low, high, size, generator, dtype.value_or(DType::Int64), std::nullopt, device,
            std::nullopt);
}

/// Uniform integers in [0, high), int64 by default.
inline Tensor randint(int64_t high, IntArrayRef size, Generator* generator = nullptr,
                      OptDType dtype = {}, OptDevice device = {}) {
  return randint(0, high, size, generator, dtype, device);
}

/// 1 with probability self[i], else 0 (self holds probabilities; the result has its dtype).
inline Tensor bernoulli(const Tensor& self, Generator* generator = nullptr) {
  LOOM_TYPED_OP(op, "aten::bernoulli", Tensor(const Tensor&, Generator*));
  return op(self, generator);
}

/// 1 with probability p, else 0, shaped and typed like self.
inline Tensor bernoulli(const Tensor& self, double p, Generator* generator = nullptr) {
  LOOM_TYPED_OP(op, "aten::bernoulli.p", Tensor(const Tensor&, double, Generator*));
  return op(self, p, generator);
}

/// Uninitialised, shaped like self (its strides kept when it is dense).
inline Tensor empty_like(const Tensor& self, OptDType dtype = {}, OptDevice device = {}) {
  LOOM_TYPED_OP(op, "aten::empty_like", detail::LikeSig);
  return op(self, dtype, std::nullopt, device, std::nullopt, std::nullopt);
}

/// Zeros shaped like self.
inline Tensor zeros_like(const Tensor& self, OptDType dtype = {}, OptDevice device = {}) {
  LOOM_TYPED_OP(op, "aten::zeros_like", detail::LikeSig);
  return op(self, dtype, std::nullopt, device, std::nullopt, std::nullopt);
}

/// Ones shaped like self.
inline Tensor ones_like(const Tensor& self, OptDType dtype = {}, OptDevice device = {}) {
  LOOM_TYPED_OP(op, "aten::ones_like", detail::LikeSig);
  return op(self, dtype, std::nullopt, device, std::nullopt, std::nullopt);
}

/// value, shaped like self.
inline Tensor full_like(const Tensor& self, const Scalar& value, OptDType dtype = {},
                        OptDevice device = {}) {
  LOOM_TYPED_OP(op, "aten::full_like",
                Tensor(const Tensor&, const Scalar&, std::optional<DType>, std::optional<int64_t>,
                       std::optional<Device>, std::optional<bool>, std::optional<int64_t>));
  return op(self, value, dtype, std::nullopt, device, std::nullopt, std::nullopt);
}

/// Uniform [0, 1) values shaped like self.
inline Tensor rand_like(const Tensor& self, OptDType dtype = {}, OptDevice device = {}) {
  LOOM_TYPED_OP(op, "aten::rand_like", detail::LikeSig);
  return op(self, dtype, std::nullopt, device, std::nullopt, std::nullopt);
}

/// Standard normal values shaped like self.
inline Tensor randn_like(const Tensor& self, OptDType dtype = {}, OptDevice device = {}) {
  LOOM_TYPED_OP(op, "aten::randn_like", detail::LikeSig);
  return op(self, dtype, std::nullopt, device, std::nullopt, std::nullopt);
}

/// Uniform integers in [low, high) shaped like self.
inline Tensor randint_like(const Tensor& self, int64_t low, int64_t high, OptDType dtype = {},
                           OptDevice device = {}) {
  LOOM_TYPED_OP(
      op, "aten::randint_like.low_dtype",
      Tensor(const Tensor&, int64_t, int64_t, std::optional<DType>, std::optional<int64_t>,
             std::optional<Device>, std::optional<bool>, std::optional<int64_t>));
  return op(self, low, high, dtype, std::nullopt, device, std::nullopt, std::nullopt);
}

/// A CPU tensor holding a copy of values with the given sizes (as torch::tensor).
template <typename T>
Tensor tensor(const std::vector<T>& values, IntArrayRef sizes) {
  return Tensor::from_vector(values, sizes);
}

/// A 1-D CPU tensor holding a copy of values.
template <typename T>
Tensor tensor(const std::vector<T>& values) {
  return Tensor::from_vector(values, {static_cast<int64_t>(values.size())});
}

/// A CPU tensor over caller-owned memory, as torch::from_blob: nothing is copied, the memory
/// must outlive the tensor and its views, and `deleter(data)` (if given) runs when the last
/// of them goes. strides default to contiguous.
inline Tensor from_blob(void* data, IntArrayRef sizes, DType dtype, IntArrayRef strides = {},
                        void (*deleter)(void*) = nullptr) {
  const DimVector contiguous = contiguous_strides(sizes);
  const IntArrayRef st = strides.empty() && !sizes.empty()
                             ? IntArrayRef(contiguous.data(), contiguous.size())
                             : strides;
  LOOM_CHECK(st.size() == sizes.size(), "from_blob: ", sizes.size(), " sizes but ", st.size(),
             " strides");
  // The extent the geometry reaches, so the storage's bounds check passes.
  int64_t extent = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) extent = 0;
  }
  if (extent != 0) {
    for (size_t i = 0; i < sizes.size(); ++i) extent += (sizes[i] - 1) * st[i];
  }
  LOOM_CHECK(data != nullptr || extent == 0, "from_blob: data is null, but sizes ",
             sizes_str(sizes), " describe ", extent, " elements");
  auto adapter = [](void* ctx, void* p) {
    if (ctx != nullptr) reinterpret_cast<void (*)(void*)>(ctx)(p);
  };
  DataPtr ptr(data, reinterpret_cast<void*>(deleter), adapter, Device());
  boost::intrusive_ptr<StorageImpl> storage(
      new StorageImpl(std::move(ptr), static_cast<size_t>(extent) * element_size(dtype), nullptr));
  return Tensor(boost::intrusive_ptr<TensorImpl>(
      new TensorImpl(Storage(std::move(storage)), dtype, sizes, st, 0)));
}

}  // namespace loom
