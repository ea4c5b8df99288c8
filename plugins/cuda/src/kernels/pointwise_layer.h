#pragma once
// The few-lines-per-op layer of the CUDA pointwise kernels (the CPU's unary_run / binary_run in
// ops/core/cpu/tensor_iterator.h): variants (fn, fn_, fn.out, Tensor/Scalar forms) of an op
// described by a name, an op code of the generic kernel, dtype categories and a result rule,
// and their registration. Shared by pointwise_ops.cpp and activation_ops.cpp.
#include <string>
#include <string_view>

#include "kernels/cuda_iterator.h"
#include "loom/core/str_cat.h"
#include "loom/dispatcher/library.h"

namespace loom::cuda::pointwise {

using kernels::PointwiseLaunch;
using kernels::PwOp;

inline PointwiseLaunch launch_of(PwOp op) {
  PointwiseLaunch p;
  p.op = op;
  return p;
}

// ---- the few-lines-per-op layer (the CPU's unary_run / binary_run) --------------------------

inline Tensor unary_run(std::string_view name, PwOp op, unsigned cats, ResultRule rule,
                        const Tensor& self, const Tensor* out, bool inplace,
                        PointwiseLaunch p = PointwiseLaunch{}) {
  CudaIterator it(name);
  it.add_input("self", self).set_rule(rule).set_variant_output(out, inplace);
  it.build();
  check_dtype_category(name, it.common_dtype(), cats);
  p.op = op;
  it.run(p);
  return it.finish();
}

inline Tensor binary_run(std::string_view name, PwOp op, unsigned cats, ResultRule rule,
                         const Tensor& self, const Tensor& other, const Tensor* out, bool inplace) {
  CudaIterator it(name);
  it.add_input("self", self).add_input("other", other).set_rule(rule);
  it.set_variant_output(inplace ? &self : out, inplace);
  it.build();
  check_dtype_category(name, it.common_dtype(), cats);
  it.run(launch_of(op));
  return it.finish();
}

inline Tensor binary_scalar_run(std::string_view name, PwOp op, unsigned cats, ResultRule rule,
                                const Tensor& self, const Scalar& other, const Tensor* out,
                                bool inplace) {
  CudaIterator it(name);
  it.add_input("self", self).add_scalar(other).set_rule(rule);
  it.set_variant_output(inplace ? &self : out, inplace);
  it.build();
  check_dtype_category(name, it.common_dtype(), cats);
  it.run(launch_of(op));
  return it.finish();
}

using ops::meta::variant_name;  // the names of an op's variants in messages

template <typename Op>
Tensor unary_fn(const Tensor& self) {
  return unary_run(variant_name<Op>(""), Op::kOp, Op::kCats, Op::kRule, self, nullptr, false);
}
template <typename Op>
Tensor& unary_inplace(Tensor& self) {
  unary_run(variant_name<Op>("_"), Op::kOp, Op::kCats, Op::kRule, self, &self, true);
  return self;
}
template <typename Op>
Tensor& unary_out(const Tensor& self, Tensor& out) {
  unary_run(variant_name<Op>(".out"), Op::kOp, Op::kCats, Op::kRule, self, &out, false);
  return out;
}
template <typename Op>
Tensor binary_fn(const Tensor& self, const Tensor& other) {
  return binary_run(variant_name<Op>(""), Op::kOp, Op::kCats, Op::kRule, self, other, nullptr,
                    false);
}
template <typename Op>
Tensor& binary_inplace(Tensor& self, const Tensor& other) {
  binary_run(variant_name<Op>("_"), Op::kOp, Op::kCats, Op::kRule, self, other, &self, true);
  return self;
}
template <typename Op>
Tensor& binary_out(const Tensor& self, const Tensor& other, Tensor& out) {
  binary_run(variant_name<Op>(".out"), Op::kOp, Op::kCats, Op::kRule, self, other, &out, false);
  return out;
}
template <typename Op>
Tensor binary_scalar_fn(const Tensor& self, const Scalar& other) {
  return binary_scalar_run(variant_name<Op>(""), Op::kOp, Op::kCats, Op::kRule, self, other,
                           nullptr, false);
}
template <typename Op>
Tensor& binary_scalar_inplace(Tensor& self, const Scalar& other) {
  binary_scalar_run(variant_name<Op>("_"), Op::kOp, Op::kCats, Op::kRule, self, other, &self, true);
  return self;
}
template <typename Op>
Tensor& binary_scalar_out(const Tensor& self, const Scalar& other, Tensor& out) {
  binary_scalar_run(variant_name<Op>(".out"), Op::kOp, Op::kCats, Op::kRule, self, other, &out,
                    false);
  return out;
}

#define LOOM_CUDA_OP(Name, name, op, cats, rule)          \
  struct Name {                                           \
    static constexpr std::string_view kName = name;       \
    static constexpr PwOp kOp = PwOp::op;                 \
    static constexpr unsigned kCats = cats;               \
    static constexpr ResultRule kRule = ResultRule::rule; \
  }

// ---- registration helpers ----------------------------------------------------------------------

template <typename Op>
void register_unary(Library& m) {
  m.impl(Op::kName, &unary_fn<Op>);
  m.impl(str_cat(Op::kName, "_"), &unary_inplace<Op>);
  m.impl(str_cat(Op::kName, ".out"), &unary_out<Op>);
}

template <typename Op>
void register_tensor_scalar(Library& m, std::string_view base) {
  m.impl(str_cat(base, ".Tensor"), &binary_fn<Op>);
  m.impl(str_cat(base, "_.Tensor"), &binary_inplace<Op>);
  m.impl(str_cat(base, ".Tensor_out"), &binary_out<Op>);
  m.impl(str_cat(base, ".Scalar"), &binary_scalar_fn<Op>);
  m.impl(str_cat(base, "_.Scalar"), &binary_scalar_inplace<Op>);
  m.impl(str_cat(base, ".Scalar_out"), &binary_scalar_out<Op>);
}

template <typename Op>
void register_binary(Library& m) {
  m.impl(Op::kName, &binary_fn<Op>);
  m.impl(str_cat(Op::kName, "_"), &binary_inplace<Op>);
  m.impl(str_cat(Op::kName, ".out"), &binary_out<Op>);
}

}  // namespace loom::cuda::pointwise
