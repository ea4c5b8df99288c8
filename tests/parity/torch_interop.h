#pragma once
// What the libtorch parity suites share: loading Loom's packs, dtypes and CPU tensors
// copied into libtorch, and GoogleTest names for op parameters.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "loom/dispatcher/plugin_loader.h"
#include "ops_test_util.h"

namespace loom::parity {

/// Loads ops_core and ops_nn once.
inline void load_plugins() {
  static std::once_flag once;
  std::call_once(once, [] {
    PluginLoader::instance().load("ops_core");
    PluginLoader::instance().load("ops_nn");
  });
}

/// libtorch's scalar type for a Loom dtype.
inline std::optional<at::ScalarType> torch_dtype(DType d) {
  switch (d) {
    case DType::Bool:
      return at::kBool;
    case DType::UInt8:
      return at::kByte;
    case DType::Int8:
      return at::kChar;
    case DType::Int16:
      return at::kShort;
    case DType::Int32:
      return at::kInt;
    case DType::Int64:
      return at::kLong;
    case DType::Float16:
      return at::kHalf;
    case DType::BFloat16:
      return at::kBFloat16;
    case DType::Float32:
      return at::kFloat;
    case DType::Float64:
      return at::kDouble;
  }
  return std::nullopt;
}

/// A libtorch copy (contiguous) of a Loom CPU tensor.
inline at::Tensor to_torch(const Tensor& t) {
  const Tensor c =
      t.is_contiguous() ? t : testing::make_tensor(testing::to_doubles(t), t.sizes(), t.dtype());
  std::vector<int64_t> sizes(c.sizes().begin(), c.sizes().end());
  at::Tensor out = at::empty(sizes, at::TensorOptions().dtype(*torch_dtype(c.dtype())));
  if (c.numel() > 0) std::memcpy(out.data_ptr(), c.data_ptr(), c.numel() * c.element_size());
  return out;
}

/// "aten::add.Tensor" -> "aten__add_Tensor" (GoogleTest parameter names).
inline std::string case_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  for (char& ch : n) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return n;
}

}  // namespace loom::parity
