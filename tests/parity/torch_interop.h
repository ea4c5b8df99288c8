#pragma once
// What the libtorch parity suites share: loading Loom's packs, dtypes and CPU tensors
// copied into libtorch, and GoogleTest names for op parameters.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <array>
#include <cctype>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "loom/dispatcher/ivalue.h"
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

/// For a tensor argument (list element elem, or -1 for a lone tensor), the libtorch tensor to
/// pass instead of a copy (a leaf the test differentiates), or nullptr.
using GivenTensor = std::function<const at::Tensor*(int elem)>;

/// A Loom argument as a c10 IValue (nullopt if it has no libtorch form here): tensors are
/// copied (undefined ones become None) unless given supplies one.
inline std::optional<c10::IValue> to_torch(const IValue& v, const GivenTensor& given = {}) {
  auto tensor = [&](const Tensor& t, int elem) {
    const at::Tensor* g = given ? given(elem) : nullptr;
    return g ? *g : to_torch(t);
  };
  switch (v.tag()) {
    case IValue::Tag::None:
      return c10::IValue();
    case IValue::Tag::Tensor:
      if (!v.to_tensor().defined()) return c10::IValue();
      return c10::IValue(tensor(v.to_tensor(), -1));
    case IValue::Tag::Int:
      return c10::IValue(v.to_int());
    case IValue::Tag::Double:
      return c10::IValue(v.to_double());
    case IValue::Tag::Bool:
      return c10::IValue(v.to_bool());
    case IValue::Tag::String:
      return c10::IValue(v.to_string());
    case IValue::Tag::IntList:
      return c10::IValue(v.to_int_list());
    case IValue::Tag::DoubleList:
      return c10::IValue(v.to_double_list());
    case IValue::Tag::DType: {
      auto t = torch_dtype(v.to_dtype());
      return t ? std::optional<c10::IValue>(c10::IValue(*t)) : std::nullopt;
    }
    case IValue::Tag::Device:
      if (!v.to_device().is_cpu()) return std::nullopt;
      return c10::IValue(c10::Device(c10::kCPU));
    case IValue::Tag::BoolList: {
      std::vector<bool> b = v.to_bool_list();
      if (b.size() == 3) return c10::IValue(std::array<bool, 3>{b[0], b[1], b[2]});
      if (b.size() == 2) return c10::IValue(std::array<bool, 2>{b[0], b[1]});
      return std::nullopt;
    }
    case IValue::Tag::OptionalTensorList: {
      c10::List<c10::optional<at::Tensor>> list;
      for (const auto& t : v.to_optional_tensor_list()) {
        list.push_back(t ? c10::optional<at::Tensor>(to_torch(*t)) : c10::nullopt);
      }
      return c10::IValue(list);
    }
    case IValue::Tag::TensorList: {
      std::vector<at::Tensor> list;
      const std::vector<Tensor>& ts = v.to_tensor_list();
      for (size_t j = 0; j < ts.size(); ++j) list.push_back(tensor(ts[j], static_cast<int>(j)));
      return c10::IValue(list);
    }
    default:
      return std::nullopt;
  }
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
