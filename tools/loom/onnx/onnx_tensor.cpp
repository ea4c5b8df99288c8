// TensorProto <-> loom::Tensor. Element reads walk the tensor's strides themselves, so that
// comparing a result never depends on the kernels under test.
#include "onnx_tensor.h"

#include <cstring>

#include "loom/core/half.h"
#include "loom/core/str_cat.h"

namespace loom::onnx {

std::optional<DType> to_dtype(int32_t data_type) {
  switch (static_cast<DataType>(data_type)) {
    case DataType::Float: return DType::Float32;
    case DataType::UInt8: return DType::UInt8;
    case DataType::Int8: return DType::Int8;
    case DataType::Int16: return DType::Int16;
    case DataType::Int32: return DType::Int32;
    case DataType::Int64: return DType::Int64;
    case DataType::Bool: return DType::Bool;
    case DataType::Float16: return DType::Float16;
    case DataType::Double: return DType::Float64;
    case DataType::BFloat16: return DType::BFloat16;
    default: return std::nullopt;
  }
}

DataType to_data_type(DType dtype) {
  switch (dtype) {
    case DType::Bool: return DataType::Bool;
    case DType::UInt8: return DataType::UInt8;
    case DType::Int8: return DataType::Int8;
    case DType::Int16: return DataType::Int16;
    case DType::Int32: return DataType::Int32;
    case DType::Int64: return DataType::Int64;
    case DType::Float16: return DataType::Float16;
    case DType::BFloat16: return DataType::BFloat16;
    case DType::Float32: return DataType::Float;
    case DType::Float64: return DataType::Double;
  }
  return DataType::Undefined;
}

DType to_dtype_or_skip(int32_t data_type, std::string_view what) {
  const std::optional<DType> d = to_dtype(data_type);
  if (!d) throw NotSupported(str_cat(what, ": data type ", data_type_name(data_type)));
  return *d;
}

namespace {

template <typename T, typename Src>
void fill_from(Tensor& t, const std::vector<Src>& src, std::string_view what,
               std::string_view field, size_t numel) {
  if (src.size() != numel) {
    throw ProtoError(str_cat(what, ": ", field, " holds ", src.size(), " values but the dims need ",
                             numel));
  }
  T* out = static_cast<T*>(t.data_ptr());
  for (size_t i = 0; i < numel; ++i) out[i] = static_cast<T>(src[i]);
}

}  // namespace

Tensor to_tensor(const TensorProto& proto) {
  const std::string what = str_cat("tensor '", proto.name, "'");
  if (proto.data_location == 1) throw NotSupported(str_cat(what, ": external data"));
  if (proto.has_segment) throw NotSupported(str_cat(what, ": segmented tensor"));
  const DType dtype = to_dtype_or_skip(proto.data_type, what);
  for (int64_t d : proto.dims) {
    if (d < 0) throw ProtoError(str_cat(what, ": negative dim ", d));
  }
  Tensor t = Tensor::empty(proto.dims, TensorOptions{}.with(dtype));
  const size_t numel = static_cast<size_t>(t.numel());
  const size_t bytes = numel * element_size(dtype);
  if (proto.has_raw_data) {
    if (proto.raw_data.size() != bytes) {
      throw ProtoError(str_cat(what, ": raw_data holds ", proto.raw_data.size(),
                               " bytes but the dims need ", bytes, " (", numel, " x ",
                               dtype_name(dtype), ")"));
    }
    if (bytes != 0) std::memcpy(t.data_ptr(), proto.raw_data.data(), bytes);  // little-endian
    return t;
  }
  switch (dtype) {
    case DType::Float32: fill_from<float>(t, proto.float_data, what, "float_data", numel); break;
    case DType::Float64: fill_from<double>(t, proto.double_data, what, "double_data", numel); break;
    case DType::Int64: fill_from<int64_t>(t, proto.int64_data, what, "int64_data", numel); break;
    case DType::Int32: fill_from<int32_t>(t, proto.int32_data, what, "int32_data", numel); break;
    case DType::Int16: fill_from<int16_t>(t, proto.int32_data, what, "int32_data", numel); break;
    case DType::Int8: fill_from<int8_t>(t, proto.int32_data, what, "int32_data", numel); break;
    case DType::UInt8: fill_from<uint8_t>(t, proto.int32_data, what, "int32_data", numel); break;
    case DType::Bool: {
      std::vector<uint8_t> bits(proto.int32_data.begin(), proto.int32_data.end());
      for (uint8_t& b : bits) b = b != 0;
      fill_from<uint8_t>(t, bits, what, "int32_data", numel);
      break;
    }
    // 16-bit floats travel as their bit patterns in int32_data.
    case DType::Float16:
    case DType::BFloat16: fill_from<uint16_t>(t, proto.int32_data, what, "int32_data", numel); break;
  }
  return t;
}

namespace {

/// Calls visit(element address) for every element in row-major order.
template <typename Visit>
void for_each_element(const Tensor& t, Visit visit) {
  const int64_t n = t.numel();
  if (n == 0) return;
  const int64_t ndim = t.dim();
  const IntArrayRef sizes = t.sizes();
  const IntArrayRef strides = t.strides();
  const char* base = static_cast<const char*>(t.data_ptr());
  const int64_t es = static_cast<int64_t>(t.element_size());
  std::vector<int64_t> index(static_cast<size_t>(ndim), 0);
  int64_t offset = 0;
  for (int64_t i = 0; i < n; ++i) {
    visit(base + offset * es);
    for (int64_t d = ndim - 1; d >= 0; --d) {
      if (++index[d] < sizes[d]) {
        offset += strides[d];
        break;
      }
      offset -= (sizes[d] - 1) * strides[d];
      index[d] = 0;
    }
  }
}

template <typename Out>
Out read_as(const void* p, DType dtype) {
  switch (dtype) {
    case DType::Bool: return static_cast<Out>(*static_cast<const uint8_t*>(p) != 0);
    case DType::UInt8: return static_cast<Out>(*static_cast<const uint8_t*>(p));
    case DType::Int8: return static_cast<Out>(*static_cast<const int8_t*>(p));
    case DType::Int16: return static_cast<Out>(*static_cast<const int16_t*>(p));
    case DType::Int32: return static_cast<Out>(*static_cast<const int32_t*>(p));
    case DType::Int64: return static_cast<Out>(*static_cast<const int64_t*>(p));
    case DType::Float16: return static_cast<Out>(half_to_float(*static_cast<const uint16_t*>(p)));
    case DType::BFloat16:
      return static_cast<Out>(bfloat16_to_float(*static_cast<const uint16_t*>(p)));
    case DType::Float32: return static_cast<Out>(*static_cast<const float*>(p));
    case DType::Float64: return static_cast<Out>(*static_cast<const double*>(p));
  }
  return Out{};
}

}  // namespace

std::vector<double> to_doubles(const Tensor& t) {
  std::vector<double> out;
  out.reserve(static_cast<size_t>(t.numel()));
  const DType dtype = t.dtype();
  for_each_element(t, [&](const void* p) { out.push_back(read_as<double>(p, dtype)); });
  return out;
}

std::vector<int64_t> to_int64s(const Tensor& t) {
  LOOM_CHECK_T(TypeError, is_integral(t.dtype()), "to_int64s: expected an integral tensor, got ",
               t.describe());
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(t.numel()));
  const DType dtype = t.dtype();
  for_each_element(t, [&](const void* p) { out.push_back(read_as<int64_t>(p, dtype)); });
  return out;
}

}  // namespace loom::onnx
