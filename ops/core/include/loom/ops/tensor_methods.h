#pragma once
/// @file
/// The definitions of Tensor's op methods (Note [Tensor methods] in loom/core/tensor.h):
/// each forwards to the op pack's free function of the same name, so `x.matmul(w).relu()`
/// is `loom::relu(loom::matmul(x, w))` and costs one dispatch per call.

#include "loom/core/device_hooks.h"
#include "loom/ops/core.h"

namespace loom {

inline Tensor Tensor::view(IntArrayRef size) const { return loom::view(*this, size); }
inline Tensor Tensor::reshape(IntArrayRef shape) const { return loom::reshape(*this, shape); }
inline Tensor Tensor::view_as(const Tensor& other) const { return loom::view_as(*this, other); }
inline Tensor Tensor::reshape_as(const Tensor& other) const {
  return loom::reshape_as(*this, other);
}
inline Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  return loom::flatten(*this, start_dim, end_dim);
}
inline Tensor Tensor::unflatten(int64_t dim, IntArrayRef sizes) const {
  return loom::unflatten(*this, dim, sizes);
}
inline Tensor Tensor::squeeze() const { return loom::squeeze(*this); }
inline Tensor Tensor::squeeze(int64_t dim) const { return loom::squeeze(*this, dim); }
inline Tensor Tensor::unsqueeze(int64_t dim) const { return loom::unsqueeze(*this, dim); }
inline Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  return loom::transpose(*this, dim0, dim1);
}
inline Tensor Tensor::permute(IntArrayRef dims) const { return loom::permute(*this, dims); }
inline Tensor Tensor::t() const { return loom::t(*this); }
inline Tensor Tensor::expand(IntArrayRef size) const { return loom::expand(*this, size); }
inline Tensor Tensor::expand_as(const Tensor& other) const { return loom::expand_as(*this, other); }
inline Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const {
  return loom::narrow(*this, dim, start, length);
}
inline Tensor Tensor::select(int64_t dim, int64_t index) const {
  return loom::select(*this, dim, index);
}
inline Tensor Tensor::contiguous() const { return loom::contiguous(*this); }
inline std::vector<Tensor> Tensor::split(int64_t split_size, int64_t dim) const {
  return loom::split(*this, split_size, dim);
}
inline std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim) const {
  return loom::chunk(*this, chunks, dim);
}
inline std::vector<Tensor> Tensor::unbind(int64_t dim) const { return loom::unbind(*this, dim); }
inline Tensor Tensor::repeat(IntArrayRef repeats) const { return loom::repeat(*this, repeats); }
inline Tensor Tensor::flip(IntArrayRef dims) const { return loom::flip(*this, dims); }
inline Tensor Tensor::tril(int64_t diagonal) const { return loom::tril(*this, diagonal); }
inline Tensor Tensor::triu(int64_t diagonal) const { return loom::triu(*this, diagonal); }
inline Tensor Tensor::to(DType dtype) const { return loom::to(*this, dtype); }
inline Tensor Tensor::clone() const { return loom::clone(*this); }
inline Tensor Tensor::neg() const { return loom::neg(*this); }
inline Tensor Tensor::abs() const { return loom::abs(*this); }
inline Tensor Tensor::exp() const { return loom::exp(*this); }
inline Tensor Tensor::log() const { return loom::log(*this); }
inline Tensor Tensor::sqrt() const { return loom::sqrt(*this); }
inline Tensor Tensor::rsqrt() const { return loom::rsqrt(*this); }
inline Tensor Tensor::sin() const { return loom::sin(*this); }
inline Tensor Tensor::cos() const { return loom::cos(*this); }
inline Tensor Tensor::tanh() const { return loom::tanh(*this); }
inline Tensor Tensor::sigmoid() const { return loom::sigmoid(*this); }
inline Tensor Tensor::relu() const { return loom::relu(*this); }
inline Tensor Tensor::gelu(std::string_view approximate) const {
  return loom::gelu(*this, approximate);
}
inline Tensor Tensor::silu() const { return loom::silu(*this); }
inline Tensor Tensor::reciprocal() const { return loom::reciprocal(*this); }
inline Tensor Tensor::floor() const { return loom::floor(*this); }
inline Tensor Tensor::ceil() const { return loom::ceil(*this); }
inline Tensor Tensor::round() const { return loom::round(*this); }
inline Tensor Tensor::sign() const { return loom::sign(*this); }
inline Tensor Tensor::logical_not() const { return loom::logical_not(*this); }
inline Tensor Tensor::clamp(std::optional<Scalar> min, std::optional<Scalar> max) const {
  return loom::clamp(*this, min, max);
}
inline Tensor Tensor::pow(const Tensor& exponent) const { return loom::pow(*this, exponent); }
inline Tensor Tensor::pow(const Scalar& exponent) const { return loom::pow(*this, exponent); }
inline Tensor Tensor::add(const Tensor& other, const Scalar& alpha) const {
  return loom::add(*this, other, alpha);
}
inline Tensor Tensor::add(const Scalar& other, const Scalar& alpha) const {
  return loom::add(*this, other, alpha);
}
inline Tensor Tensor::sub(const Tensor& other, const Scalar& alpha) const {
  return loom::sub(*this, other, alpha);
}
inline Tensor Tensor::sub(const Scalar& other, const Scalar& alpha) const {
  return loom::sub(*this, other, alpha);
}
inline Tensor Tensor::mul(const Tensor& other) const { return loom::mul(*this, other); }
inline Tensor Tensor::mul(const Scalar& other) const { return loom::mul(*this, other); }
inline Tensor Tensor::div(const Tensor& other) const { return loom::div(*this, other); }
inline Tensor Tensor::div(const Scalar& other) const { return loom::div(*this, other); }
inline Tensor Tensor::maximum(const Tensor& other) const { return loom::maximum(*this, other); }
inline Tensor Tensor::minimum(const Tensor& other) const { return loom::minimum(*this, other); }
inline Tensor Tensor::eq(const Tensor& other) const { return loom::eq(*this, other); }
inline Tensor Tensor::eq(const Scalar& other) const { return loom::eq(*this, other); }
inline Tensor Tensor::ne(const Tensor& other) const { return loom::ne(*this, other); }
inline Tensor Tensor::ne(const Scalar& other) const { return loom::ne(*this, other); }
inline Tensor Tensor::lt(const Tensor& other) const { return loom::lt(*this, other); }
inline Tensor Tensor::lt(const Scalar& other) const { return loom::lt(*this, other); }
inline Tensor Tensor::le(const Tensor& other) const { return loom::le(*this, other); }
inline Tensor Tensor::le(const Scalar& other) const { return loom::le(*this, other); }
inline Tensor Tensor::gt(const Tensor& other) const { return loom::gt(*this, other); }
inline Tensor Tensor::gt(const Scalar& other) const { return loom::gt(*this, other); }
inline Tensor Tensor::ge(const Tensor& other) const { return loom::ge(*this, other); }
inline Tensor Tensor::ge(const Scalar& other) const { return loom::ge(*this, other); }
inline Tensor Tensor::where(const Tensor& condition, const Tensor& other) const {
  return loom::where(condition, *this, other);
}
inline Tensor Tensor::masked_fill(const Tensor& mask, const Scalar& value) const {
  return loom::masked_fill(*this, mask, value);
}
inline Tensor Tensor::sum(std::optional<DType> dtype) const { return loom::sum(*this, dtype); }
inline Tensor Tensor::sum(IntArrayRef dim, bool keepdim, std::optional<DType> dtype) const {
  return loom::sum(*this, dim, keepdim, dtype);
}
inline Tensor Tensor::mean(std::optional<DType> dtype) const { return loom::mean(*this, dtype); }
inline Tensor Tensor::mean(IntArrayRef dim, bool keepdim, std::optional<DType> dtype) const {
  return loom::mean(*this, dim, keepdim, dtype);
}
inline Tensor Tensor::prod(std::optional<DType> dtype) const { return loom::prod(*this, dtype); }
inline Tensor Tensor::max() const { return loom::max(*this); }
inline std::tuple<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const {
  return loom::max(*this, dim, keepdim);
}
inline Tensor Tensor::min() const { return loom::min(*this); }
inline std::tuple<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim) const {
  return loom::min(*this, dim, keepdim);
}
inline Tensor Tensor::amax(IntArrayRef dim, bool keepdim) const {
  return loom::amax(*this, dim, keepdim);
}
inline Tensor Tensor::amin(IntArrayRef dim, bool keepdim) const {
  return loom::amin(*this, dim, keepdim);
}
inline Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const {
  return loom::argmax(*this, dim, keepdim);
}
inline Tensor Tensor::argmin(std::optional<int64_t> dim, bool keepdim) const {
  return loom::argmin(*this, dim, keepdim);
}
inline Tensor Tensor::var(bool unbiased) const { return loom::var(*this, unbiased); }
inline Tensor Tensor::std(bool unbiased) const { return loom::std(*this, unbiased); }
inline Tensor Tensor::norm(const Scalar& p) const { return loom::norm(*this, p); }
inline Tensor Tensor::logsumexp(IntArrayRef dim, bool keepdim) const {
  return loom::logsumexp(*this, dim, keepdim);
}
inline Tensor Tensor::all() const { return loom::all(*this); }
inline Tensor Tensor::any() const { return loom::any(*this); }
inline Tensor Tensor::cumsum(int64_t dim) const { return loom::cumsum(*this, dim); }
inline Tensor Tensor::softmax(int64_t dim) const { return loom::softmax(*this, dim); }
inline Tensor Tensor::log_softmax(int64_t dim) const { return loom::log_softmax(*this, dim); }
inline Tensor Tensor::matmul(const Tensor& other) const { return loom::matmul(*this, other); }
inline Tensor Tensor::mm(const Tensor& mat2) const { return loom::mm(*this, mat2); }
inline Tensor Tensor::bmm(const Tensor& mat2) const { return loom::bmm(*this, mat2); }
inline Tensor Tensor::dot(const Tensor& other) const { return loom::dot(*this, other); }
inline Tensor Tensor::index_select(int64_t dim, const Tensor& index) const {
  return loom::index_select(*this, dim, index);
}
inline Tensor Tensor::gather(int64_t dim, const Tensor& index) const {
  return loom::gather(*this, dim, index);
}
inline Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src) const {
  return loom::scatter(*this, dim, index, src);
}
inline Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const {
  return loom::scatter_add(*this, dim, index, src);
}
inline Tensor Tensor::masked_select(const Tensor& mask) const {
  return loom::masked_select(*this, mask);
}
inline Tensor Tensor::nonzero() const { return loom::nonzero(*this); }
inline std::tuple<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest,
                                               bool sorted) const {
  return loom::topk(*this, k, dim, largest, sorted);
}
inline std::tuple<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending) const {
  return loom::sort(*this, dim, descending);
}
inline Tensor Tensor::argsort(int64_t dim, bool descending) const {
  return loom::argsort(*this, dim, descending);
}
inline const Tensor& Tensor::copy_(const Tensor& src) const {
  loom::copy_(*this, src);
  return *this;
}
inline const Tensor& Tensor::fill_(const Scalar& value) const {
  loom::fill_(*this, value);
  return *this;
}
inline const Tensor& Tensor::zero_() const {
  loom::zero_(*this);
  return *this;
}
inline const Tensor& Tensor::add_(const Tensor& other, const Scalar& alpha) const {
  loom::add_(*this, other, alpha);
  return *this;
}
inline const Tensor& Tensor::add_(const Scalar& other, const Scalar& alpha) const {
  loom::add_(*this, other, alpha);
  return *this;
}
inline const Tensor& Tensor::sub_(const Tensor& other, const Scalar& alpha) const {
  loom::sub_(*this, other, alpha);
  return *this;
}
inline const Tensor& Tensor::mul_(const Tensor& other) const {
  loom::mul_(*this, other);
  return *this;
}
inline const Tensor& Tensor::mul_(const Scalar& other) const {
  loom::mul_(*this, other);
  return *this;
}
inline const Tensor& Tensor::div_(const Tensor& other) const {
  loom::div_(*this, other);
  return *this;
}
inline const Tensor& Tensor::div_(const Scalar& other) const {
  loom::div_(*this, other);
  return *this;
}
inline const Tensor& Tensor::relu_() const {
  loom::relu_(*this);
  return *this;
}
inline const Tensor& Tensor::clamp_(std::optional<Scalar> min, std::optional<Scalar> max) const {
  loom::clamp_(*this, min, max);
  return *this;
}
inline const Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& value) const {
  loom::masked_fill_(*this, mask, value);
  return *this;
}

/// A tensor on another device: *this if already there, else a copy made by the target
/// backend's copy_ (the dispatcher picks the backend from the two devices).
inline Tensor Tensor::to(Device device) const {
  if (this->device() == device) return *this;
  // "cuda" (index -1) means the current device of that type (PyTorch's .to("cuda")).
  if (device.index() < 0 && this->device().type() == device.type()) {
    const DeviceHooks* hooks = find_device_hooks(device.type());
    const int16_t current = hooks ? hooks->current_device() : int16_t{0};
    if (this->device().index() == current || this->device().index() < 0) return *this;
    device = Device(device.type(), current);
  }
  Tensor out = Tensor::empty(sizes(), TensorOptions{}.with(dtype()).with(device));
  loom::copy_(out, *this);
  return out;
}


}  // namespace loom
