#pragma once
/// @file
/// The definitions of Tensor's op methods, the operators and a few free functions, each
/// calling one op by name through a cached Op (Note [Stable wrapper costs] in loom/stable.hpp).
/// Part of loom/stable.hpp (include that).

#include <cstdint>
#include <optional>
#include <vector>

#include "loom/stable/op.hpp"

namespace loom::stable {

// ---- Tensor's op methods ----

inline Tensor Tensor::ones(const std::vector<int64_t>& sizes, DType dtype, const Device& device) {
  return LOOM_STABLE_OP("aten::ones").call_tensor(sizes, dtype, std::nullopt, device);
}
inline Tensor Tensor::full(const std::vector<int64_t>& sizes, const Scalar& fill_value, DType dtype,
                           const Device& device) {
  return LOOM_STABLE_OP("aten::full").call_tensor(sizes, fill_value, dtype, std::nullopt, device);
}
inline Tensor Tensor::rand(const std::vector<int64_t>& sizes, DType dtype, const Device& device) {
  return LOOM_STABLE_OP("aten::rand").call_tensor(sizes, dtype, std::nullopt, device);
}
inline Tensor Tensor::randn(const std::vector<int64_t>& sizes, DType dtype, const Device& device) {
  return LOOM_STABLE_OP("aten::randn").call_tensor(sizes, dtype, std::nullopt, device);
}
inline Tensor Tensor::arange(int64_t end, std::optional<DType> dtype, const Device& device) {
  return LOOM_STABLE_OP("aten::arange").call_tensor(end, dtype, std::nullopt, device);
}

inline Tensor Tensor::reshape(const std::vector<int64_t>& shape) const {
  return LOOM_STABLE_OP("aten::reshape").call_tensor(*this, shape);
}
inline Tensor Tensor::view(const std::vector<int64_t>& size) const {
  return LOOM_STABLE_OP("aten::view").call_tensor(*this, size);
}
inline Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  return LOOM_STABLE_OP("aten::flatten.using_ints").call_tensor(*this, start_dim, end_dim);
}
inline Tensor Tensor::squeeze() const { return LOOM_STABLE_OP("aten::squeeze").call_tensor(*this); }
inline Tensor Tensor::squeeze(int64_t dim) const {
  return LOOM_STABLE_OP("aten::squeeze.dim").call_tensor(*this, dim);
}
inline Tensor Tensor::unsqueeze(int64_t dim) const {
  return LOOM_STABLE_OP("aten::unsqueeze").call_tensor(*this, dim);
}
inline Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  return LOOM_STABLE_OP("aten::transpose.int").call_tensor(*this, dim0, dim1);
}
inline Tensor Tensor::permute(const std::vector<int64_t>& dims) const {
  return LOOM_STABLE_OP("aten::permute").call_tensor(*this, dims);
}
inline Tensor Tensor::t() const { return LOOM_STABLE_OP("aten::t").call_tensor(*this); }
inline Tensor Tensor::expand(const std::vector<int64_t>& size) const {
  return LOOM_STABLE_OP("aten::expand").call_tensor(*this, size);
}
inline Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const {
  return LOOM_STABLE_OP("aten::narrow").call_tensor(*this, dim, start, length);
}
inline Tensor Tensor::select(int64_t dim, int64_t index) const {
  return LOOM_STABLE_OP("aten::select.int").call_tensor(*this, dim, index);
}
inline Tensor Tensor::contiguous() const {
  return LOOM_STABLE_OP("aten::contiguous").call_tensor(*this);
}
inline Tensor Tensor::clone() const { return LOOM_STABLE_OP("aten::clone").call_tensor(*this); }
inline Tensor Tensor::to(DType dtype) const {
  if (this->dtype() == dtype) return *this;
  return LOOM_STABLE_OP("aten::to.dtype").call_tensor(*this, dtype);
}
inline Tensor Tensor::to(const Device& device) const {
  if (this->device() == device) return *this;
  Tensor out = empty(sizes(), dtype(), device);
  out.copy_(*this);
  return out;
}

inline Tensor Tensor::neg() const { return LOOM_STABLE_OP("aten::neg").call_tensor(*this); }
inline Tensor Tensor::abs() const { return LOOM_STABLE_OP("aten::abs").call_tensor(*this); }
inline Tensor Tensor::exp() const { return LOOM_STABLE_OP("aten::exp").call_tensor(*this); }
inline Tensor Tensor::log() const { return LOOM_STABLE_OP("aten::log").call_tensor(*this); }
inline Tensor Tensor::sqrt() const { return LOOM_STABLE_OP("aten::sqrt").call_tensor(*this); }
inline Tensor Tensor::rsqrt() const { return LOOM_STABLE_OP("aten::rsqrt").call_tensor(*this); }
inline Tensor Tensor::sin() const { return LOOM_STABLE_OP("aten::sin").call_tensor(*this); }
inline Tensor Tensor::cos() const { return LOOM_STABLE_OP("aten::cos").call_tensor(*this); }
inline Tensor Tensor::tanh() const { return LOOM_STABLE_OP("aten::tanh").call_tensor(*this); }
inline Tensor Tensor::sigmoid() const { return LOOM_STABLE_OP("aten::sigmoid").call_tensor(*this); }
inline Tensor Tensor::relu() const { return LOOM_STABLE_OP("aten::relu").call_tensor(*this); }
inline Tensor Tensor::silu() const { return LOOM_STABLE_OP("aten::silu").call_tensor(*this); }
inline Tensor Tensor::reciprocal() const {
  return LOOM_STABLE_OP("aten::reciprocal").call_tensor(*this);
}
inline Tensor Tensor::clamp(std::optional<Scalar> min, std::optional<Scalar> max) const {
  return LOOM_STABLE_OP("aten::clamp").call_tensor(*this, min, max);
}
inline Tensor Tensor::pow(const Scalar& exponent) const {
  return LOOM_STABLE_OP("aten::pow.Tensor_Scalar").call_tensor(*this, exponent);
}
inline Tensor Tensor::pow(const Tensor& exponent) const {
  return LOOM_STABLE_OP("aten::pow.Tensor_Tensor").call_tensor(*this, exponent);
}

inline Tensor Tensor::add(const Tensor& other, const Scalar& alpha) const {
  return LOOM_STABLE_OP("aten::add.Tensor").call_tensor(*this, other, alpha);
}
inline Tensor Tensor::add(const Tensor& other) const {
  return LOOM_STABLE_OP("aten::add.Tensor").call_tensor(*this, other);
}
inline Tensor Tensor::add(const Scalar& other) const {
  return LOOM_STABLE_OP("aten::add.Scalar").call_tensor(*this, other);
}
inline Tensor Tensor::sub(const Tensor& other, const Scalar& alpha) const {
  return LOOM_STABLE_OP("aten::sub.Tensor").call_tensor(*this, other, alpha);
}
inline Tensor Tensor::sub(const Tensor& other) const {
  return LOOM_STABLE_OP("aten::sub.Tensor").call_tensor(*this, other);
}
inline Tensor Tensor::sub(const Scalar& other) const {
  return LOOM_STABLE_OP("aten::sub.Scalar").call_tensor(*this, other);
}
inline Tensor Tensor::mul(const Tensor& other) const {
  return LOOM_STABLE_OP("aten::mul.Tensor").call_tensor(*this, other);
}
inline Tensor Tensor::mul(const Scalar& other) const {
  return LOOM_STABLE_OP("aten::mul.Scalar").call_tensor(*this, other);
}
inline Tensor Tensor::div(const Tensor& other) const {
  return LOOM_STABLE_OP("aten::div.Tensor").call_tensor(*this, other);
}
inline Tensor Tensor::div(const Scalar& other) const {
  return LOOM_STABLE_OP("aten::div.Scalar").call_tensor(*this, other);
}
inline Tensor Tensor::maximum(const Tensor& other) const {
  return LOOM_STABLE_OP("aten::maximum").call_tensor(*this, other);
}
inline Tensor Tensor::minimum(const Tensor& other) const {
  return LOOM_STABLE_OP("aten::minimum").call_tensor(*this, other);
}
inline Tensor Tensor::eq(const Tensor& o) const {
  return LOOM_STABLE_OP("aten::eq.Tensor").call_tensor(*this, o);
}
inline Tensor Tensor::eq(const Scalar& o) const {
  return LOOM_STABLE_OP("aten::eq.Scalar").call_tensor(*this, o);
}
inline Tensor Tensor::ne(const Tensor& o) const {
  return LOOM_STABLE_OP("aten::ne.Tensor").call_tensor(*this, o);
}
inline Tensor Tensor::ne(const Scalar& o) const {
  return LOOM_STABLE_OP("aten::ne.Scalar").call_tensor(*this, o);
}
inline Tensor Tensor::lt(const Tensor& o) const {
  return LOOM_STABLE_OP("aten::lt.Tensor").call_tensor(*this, o);
}
inline Tensor Tensor::lt(const Scalar& o) const {
  return LOOM_STABLE_OP("aten::lt.Scalar").call_tensor(*this, o);
}
inline Tensor Tensor::le(const Tensor& o) const {
  return LOOM_STABLE_OP("aten::le.Tensor").call_tensor(*this, o);
}
inline Tensor Tensor::le(const Scalar& o) const {
  return LOOM_STABLE_OP("aten::le.Scalar").call_tensor(*this, o);
}
inline Tensor Tensor::gt(const Tensor& o) const {
  return LOOM_STABLE_OP("aten::gt.Tensor").call_tensor(*this, o);
}
inline Tensor Tensor::gt(const Scalar& o) const {
  return LOOM_STABLE_OP("aten::gt.Scalar").call_tensor(*this, o);
}
inline Tensor Tensor::ge(const Tensor& o) const {
  return LOOM_STABLE_OP("aten::ge.Tensor").call_tensor(*this, o);
}
inline Tensor Tensor::ge(const Scalar& o) const {
  return LOOM_STABLE_OP("aten::ge.Scalar").call_tensor(*this, o);
}

inline Tensor Tensor::sum() const { return LOOM_STABLE_OP("aten::sum").call_tensor(*this); }
inline Tensor Tensor::sum(const std::vector<int64_t>& dims, bool keepdim) const {
  return LOOM_STABLE_OP("aten::sum.dim_IntList").call_tensor(*this, dims, keepdim);
}
inline Tensor Tensor::mean() const { return LOOM_STABLE_OP("aten::mean").call_tensor(*this); }
inline Tensor Tensor::mean(const std::vector<int64_t>& dims, bool keepdim) const {
  return LOOM_STABLE_OP("aten::mean.dim").call_tensor(*this, dims, keepdim);
}
inline Tensor Tensor::max() const { return LOOM_STABLE_OP("aten::max").call_tensor(*this); }
inline Tensor Tensor::min() const { return LOOM_STABLE_OP("aten::min").call_tensor(*this); }
inline Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const {
  return LOOM_STABLE_OP("aten::argmax").call_tensor(*this, dim, keepdim);
}
inline Tensor Tensor::norm(const Scalar& p) const {
  return LOOM_STABLE_OP("aten::norm.Scalar").call_tensor(*this, p);
}
inline Tensor Tensor::norm() const {
  return LOOM_STABLE_OP("aten::norm.Scalar").call_tensor(*this);
}
inline Tensor Tensor::softmax(int64_t dim) const {
  return LOOM_STABLE_OP("aten::softmax.int").call_tensor(*this, dim);
}
inline Tensor Tensor::log_softmax(int64_t dim) const {
  return LOOM_STABLE_OP("aten::log_softmax.int").call_tensor(*this, dim);
}
inline Tensor Tensor::prod() const { return LOOM_STABLE_OP("aten::prod").call_tensor(*this); }
inline Tensor Tensor::var(bool unbiased) const {
  return LOOM_STABLE_OP("aten::var").call_tensor(*this, unbiased);
}
inline Tensor Tensor::std(bool unbiased) const {
  return LOOM_STABLE_OP("aten::std").call_tensor(*this, unbiased);
}
inline Tensor Tensor::logsumexp(const std::vector<int64_t>& dims, bool keepdim) const {
  return LOOM_STABLE_OP("aten::logsumexp").call_tensor(*this, dims, keepdim);
}
inline Tensor Tensor::cumsum(int64_t dim) const {
  return LOOM_STABLE_OP("aten::cumsum").call_tensor(*this, dim);
}
inline Tensor Tensor::index_select(int64_t dim, const Tensor& index) const {
  return LOOM_STABLE_OP("aten::index_select").call_tensor(*this, dim, index);
}
inline Tensor Tensor::gather(int64_t dim, const Tensor& index) const {
  return LOOM_STABLE_OP("aten::gather").call_tensor(*this, dim, index);
}
inline Tensor Tensor::masked_fill(const Tensor& mask, const Scalar& value) const {
  return LOOM_STABLE_OP("aten::masked_fill.Scalar").call_tensor(*this, mask, value);
}
inline std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim) const {
  std::vector<Value> r = LOOM_STABLE_OP("aten::chunk").call(*this, chunks, dim);
  return r.at(0).to_tensor_list();
}
inline std::vector<Tensor> Tensor::split(int64_t split_size, int64_t dim) const {
  std::vector<Value> r = LOOM_STABLE_OP("aten::split.Tensor").call(*this, split_size, dim);
  return r.at(0).to_tensor_list();
}

inline Tensor Tensor::matmul(const Tensor& other) const {
  return LOOM_STABLE_OP("aten::matmul").call_tensor(*this, other);
}
inline Tensor Tensor::mm(const Tensor& mat2) const {
  return LOOM_STABLE_OP("aten::mm").call_tensor(*this, mat2);
}
inline Tensor Tensor::bmm(const Tensor& mat2) const {
  return LOOM_STABLE_OP("aten::bmm").call_tensor(*this, mat2);
}
inline Tensor Tensor::dot(const Tensor& other) const {
  return LOOM_STABLE_OP("aten::dot").call_tensor(*this, other);
}

inline Tensor& Tensor::copy_(const Tensor& src) {
  LOOM_STABLE_OP("aten::copy_").call_tensor(*this, src);
  return *this;
}
inline Tensor& Tensor::fill_(const Scalar& value) {
  LOOM_STABLE_OP("aten::fill_.Scalar").call_tensor(*this, value);
  return *this;
}
inline Tensor& Tensor::zero_() {
  LOOM_STABLE_OP("aten::zero_").call_tensor(*this);
  return *this;
}
inline Tensor& Tensor::add_(const Tensor& other, const Scalar& alpha) {
  LOOM_STABLE_OP("aten::add_.Tensor").call_tensor(*this, other, alpha);
  return *this;
}
inline Tensor& Tensor::add_(const Tensor& other) {
  LOOM_STABLE_OP("aten::add_.Tensor").call_tensor(*this, other);
  return *this;
}
inline Tensor& Tensor::sub_(const Tensor& other, const Scalar& alpha) {
  LOOM_STABLE_OP("aten::sub_.Tensor").call_tensor(*this, other, alpha);
  return *this;
}
inline Tensor& Tensor::sub_(const Tensor& other) {
  LOOM_STABLE_OP("aten::sub_.Tensor").call_tensor(*this, other);
  return *this;
}
inline Tensor& Tensor::mul_(const Tensor& other) {
  LOOM_STABLE_OP("aten::mul_.Tensor").call_tensor(*this, other);
  return *this;
}
inline Tensor& Tensor::mul_(const Scalar& other) {
  LOOM_STABLE_OP("aten::mul_.Scalar").call_tensor(*this, other);
  return *this;
}

// ---- operators ----

/// a + b (aten::add.Tensor, broadcasting).
inline Tensor operator+(const Tensor& a, const Tensor& b) { return a.add(b); }
/// a - b (aten::sub.Tensor).
inline Tensor operator-(const Tensor& a, const Tensor& b) { return a.sub(b); }
/// a * b (aten::mul.Tensor).
inline Tensor operator*(const Tensor& a, const Tensor& b) { return a.mul(b); }
/// a / b (aten::div.Tensor).
inline Tensor operator/(const Tensor& a, const Tensor& b) { return a.div(b); }
/// a + s (aten::add.Scalar).
inline Tensor operator+(const Tensor& a, const Scalar& s) { return a.add(s); }
/// a - s (aten::sub.Scalar).
inline Tensor operator-(const Tensor& a, const Scalar& s) { return a.sub(s); }
/// a * s (aten::mul.Scalar).
inline Tensor operator*(const Tensor& a, const Scalar& s) { return a.mul(s); }
/// a / s (aten::div.Scalar).
inline Tensor operator/(const Tensor& a, const Scalar& s) { return a.div(s); }
/// s + a.
inline Tensor operator+(const Scalar& s, const Tensor& a) { return a.add(s); }
/// s - a, as (-a) + s.
inline Tensor operator-(const Scalar& s, const Tensor& a) { return a.neg().add(s); }
/// s * a.
inline Tensor operator*(const Scalar& s, const Tensor& a) { return a.mul(s); }
/// s / a, as reciprocal(a) * s.
inline Tensor operator/(const Scalar& s, const Tensor& a) { return a.reciprocal().mul(s); }
/// -a (aten::neg).
inline Tensor operator-(const Tensor& a) { return a.neg(); }
/// a += b in place (aten::add_.Tensor).
inline Tensor& operator+=(Tensor& a, const Tensor& b) { return a.add_(b); }
/// a -= b in place (aten::sub_.Tensor).
inline Tensor& operator-=(Tensor& a, const Tensor& b) { return a.sub_(b); }
/// a *= b in place (aten::mul_.Tensor).
inline Tensor& operator*=(Tensor& a, const Tensor& b) { return a.mul_(b); }
/// a *= s in place (aten::mul_.Scalar).
inline Tensor& operator*=(Tensor& a, const Scalar& s) { return a.mul_(s); }

/// aten::matmul.
inline Tensor matmul(const Tensor& a, const Tensor& b) { return a.matmul(b); }
/// aten::mm.
inline Tensor mm(const Tensor& a, const Tensor& b) { return a.mm(b); }
/// aten::cat.
inline Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0) {
  return LOOM_STABLE_OP("aten::cat").call_tensor(tensors, dim);
}
/// aten::stack.
inline Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0) {
  return LOOM_STABLE_OP("aten::stack").call_tensor(tensors, dim);
}
/// aten::where.self: condition ? a : b.
inline Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  return LOOM_STABLE_OP("aten::where.self").call_tensor(condition, a, b);
}
/// aten::addmm: beta * self + alpha * (mat1 @ mat2), as a linear layer's x @ w + b.
inline Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2,
                    const Scalar& beta = 1, const Scalar& alpha = 1) {
  return LOOM_STABLE_OP("aten::addmm").call_tensor(self, mat1, mat2, beta, alpha);
}

}  // namespace loom::stable
