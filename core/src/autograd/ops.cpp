#include "autograd/ops.h"

#include <cmath>

#include "loom/core/half.h"
#include "loom/dispatcher/dispatcher.h"

namespace loom::autograd::ops {
namespace {

OperatorHandle op(std::string_view name) {
  return Dispatcher::instance().find_op_or_throw(name);
}

Stack call(OperatorHandle h, Stack stack) {
  h.call_boxed(stack);
  return stack;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  static const auto h =
      op("aten::add.Tensor").typed<Tensor(const Tensor&, const Tensor&, const Scalar&)>();
  return h(a, b, Scalar(int64_t{1}));
}

void add_(const Tensor& self, const Tensor& other) {
  static const auto h =
      op("aten::add_.Tensor").typed<Tensor(const Tensor&, const Tensor&, const Scalar&)>();
  h(self, other, Scalar(int64_t{1}));
}

Tensor zeros(IntArrayRef sizes, DType dtype, Device device) {
  static const OperatorHandle h = op("aten::zeros");
  return call(h, {IValue(sizes), IValue(dtype), IValue(), IValue(device)})[0].to_tensor();
}

Tensor ones_like(const Tensor& t) {
  static const OperatorHandle h = op("aten::ones_like");
  return call(h, {IValue(t)})[0].to_tensor();
}

Tensor sum_to(const Tensor& t, IntArrayRef sizes) {
  if (t.sizes() == sizes) return t;
  const int64_t lead = t.dim() - static_cast<int64_t>(sizes.size());
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < t.dim(); ++i) {
    if (i < lead || (sizes[i - lead] == 1 && t.size(i) != 1)) dims.push_back(i);
  }
  static const OperatorHandle sum = op("aten::sum.dim_IntList");
  static const OperatorHandle view = op("aten::reshape");
  Tensor r = t;
  if (!dims.empty()) r = call(sum, {IValue(r), IValue(dims), IValue(true)})[0].to_tensor();
  return call(view, {IValue(r), IValue(sizes)})[0].to_tensor();
}

Tensor to_dtype(const Tensor& t, DType dtype) {
  static const OperatorHandle h = op("aten::to.dtype");
  return call(h, {IValue(t), IValue(dtype)})[0].to_tensor();
}

Tensor clone(const Tensor& t) {
  static const OperatorHandle h = op("aten::clone");
  return call(h, {IValue(t)})[0].to_tensor();
}

Tensor contiguous(const Tensor& t) { return t.is_contiguous() ? t : clone(t); }

Tensor as_strided(const Tensor& t, IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  static const OperatorHandle h = op("aten::as_strided");
  return call(h, {IValue(t), IValue(sizes), IValue(strides), IValue(offset)})[0].to_tensor();
}

Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, DType dtype, Device device) {
  // Storage for exactly the elements the geometry reaches.
  int64_t span = 1;
  bool empty = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    empty |= sizes[i] == 0;
    span += (sizes[i] - 1) * strides[i];
  }
  Tensor flat = Tensor::empty({empty ? 0 : span}, TensorOptions{}.with(dtype).with(device));
  return flat.as_strided_view(sizes, strides, 0);
}

void copy_(const Tensor& self, const Tensor& src) {
  static const OperatorHandle h = op("aten::copy_");
  call(h, {IValue(self), IValue(src)});
}

void zero_(const Tensor& self) {
  static const OperatorHandle h = op("aten::zero_");
  call(h, {IValue(self)});
}

bool has_nonfinite(const Tensor& t) {
  if (!is_floating_point(t.dtype()) || t.numel() == 0) return false;
  Tensor c = to_dtype(t, DType::Float64);
  if (!c.device().is_cpu()) {
    Tensor host = Tensor::empty(c.sizes(), TensorOptions{}.with(DType::Float64));
    copy_(host, c);
    c = host;
  }
  c = contiguous(c);
  const double* p = c.data_ptr<double>();
  for (int64_t i = 0; i < c.numel(); ++i) {
    if (!std::isfinite(p[i])) return true;
  }
  return false;
}

}  // namespace loom::autograd::ops
