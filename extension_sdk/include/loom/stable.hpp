#pragma once
/// @file
/// loom::stable, a header-only C++17 wrapper over Loom's stable C ABI (loom/capi.h).
///
/// What it adds to the C table: RAII handles (a Tensor copy is a retain, its destructor a
/// release), exceptions instead of statuses, operators and op methods (`(x.matmul(w) +
/// b).relu().sum()`), a variadic boxed op call (`Op::find("aten::mm").call_tensor(a, b)`), and
/// registration from C++ lambdas whose exceptions become statuses. It depends on nothing but
/// loom/capi.h and the C++ standard library, so an app or extension built with another
/// compiler or standard library than Loom's stays compatible: only the C table crosses.
///
///     #include <loom/stable.hpp>
///     namespace ls = loom::stable;
///     ls::init();
///     auto x = ls::Tensor::from_data({1.f, 2.f, 3.f, 4.f}, {2, 2});
///     x.set_requires_grad(true);
///     auto y = (x * x).sum();
///     y.backward();
///     std::vector<float> g = x.grad().to_vector<float>();  // 2x
///
/// Note [Stable wrapper costs]: everything here is inline and goes through api(), the table
/// fetched once (a function-local static). An op method finds its op once (a static local
/// Op per method) and boxes its arguments into a std::array of LoomValue on the stack, so a
/// call costs one OpCall and no heap allocation on the client side. Returned tensors are
/// adopted, not retained again.

#include "loom/stable/dtype.hpp"
#include "loom/stable/error.hpp"
#include "loom/stable/extension.hpp"
#include "loom/stable/library.hpp"
#include "loom/stable/op.hpp"
#include "loom/stable/runtime.hpp"
#include "loom/stable/tensor.hpp"
#include "loom/stable/tensor_ops.hpp"
#include "loom/stable/value.hpp"
