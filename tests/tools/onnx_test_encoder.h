#pragma once
// A minimal protobuf encoder for the ONNX tests: builds TensorProto, NodeProto and ModelProto
// byte strings by hand, so the reader is tested against bytes whose every field is known.
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

namespace onnx_test {

inline std::string varint(uint64_t v) {
  std::string out;
  do {
    uint8_t b = v & 0x7f;
    v >>= 7;
    if (v != 0) b |= 0x80;
    out.push_back(static_cast<char>(b));
  } while (v != 0);
  return out;
}

inline std::string tag(uint32_t field, uint32_t wire_type) {
  return varint((uint64_t{field} << 3) | wire_type);
}

inline std::string varint_field(uint32_t field, uint64_t v) { return tag(field, 0) + varint(v); }

inline std::string bytes_field(uint32_t field, const std::string& payload) {
  return tag(field, 2) + varint(payload.size()) + payload;
}

inline std::string fixed32_field(uint32_t field, float v) {
  std::string out = tag(field, 5);
  char b[4];
  std::memcpy(b, &v, 4);
  return out + std::string(b, 4);
}

/// A packed repeated varint field.
inline std::string packed_varints(uint32_t field, const std::vector<int64_t>& values) {
  std::string payload;
  for (int64_t v : values) payload += varint(static_cast<uint64_t>(v));
  return bytes_field(field, payload);
}

/// An unpacked repeated varint field: one field per value.
inline std::string unpacked_varints(uint32_t field, const std::vector<int64_t>& values) {
  std::string out;
  for (int64_t v : values) out += varint_field(field, static_cast<uint64_t>(v));
  return out;
}

/// A packed repeated float field.
inline std::string packed_floats(uint32_t field, const std::vector<float>& values) {
  std::string payload(values.size() * 4, '\0');
  if (!values.empty()) std::memcpy(payload.data(), values.data(), payload.size());
  return bytes_field(field, payload);
}

/// A float TensorProto (packed dims and float_data) named `name`.
inline std::string float_tensor(const std::string& name, const std::vector<int64_t>& dims,
                                const std::vector<float>& values) {
  return packed_varints(1, dims) + varint_field(2, 1) + packed_floats(4, values) +
         bytes_field(8, name);
}

/// An int64 TensorProto (packed dims and int64_data).
inline std::string int64_tensor(const std::string& name, const std::vector<int64_t>& dims,
                                const std::vector<int64_t>& values) {
  return packed_varints(1, dims) + varint_field(2, 7) + packed_varints(7, values) +
         bytes_field(8, name);
}

/// An INT attribute.
inline std::string int_attribute(const std::string& name, int64_t v) {
  return bytes_field(1, name) + varint_field(20, 2) + varint_field(3, static_cast<uint64_t>(v));
}

/// A NodeProto.
inline std::string node(const std::string& op_type, std::initializer_list<std::string> inputs,
                        std::initializer_list<std::string> outputs,
                        std::initializer_list<std::string> attributes = {}) {
  std::string out;
  for (const std::string& i : inputs) out += bytes_field(1, i);
  for (const std::string& o : outputs) out += bytes_field(2, o);
  out += bytes_field(4, op_type);
  for (const std::string& a : attributes) out += bytes_field(5, a);
  return out;
}

/// A ValueInfoProto of a float tensor (TypeProto.tensor_type.elem_type = FLOAT).
inline std::string float_value_info(const std::string& name) {
  return bytes_field(1, name) + bytes_field(2, bytes_field(1, varint_field(1, 1)));
}

/// A ModelProto importing the default opset `opset`, with a graph of the given nodes,
/// float inputs and float outputs.
inline std::string model(int64_t opset, const std::vector<std::string>& nodes,
                         const std::vector<std::string>& inputs,
                         const std::vector<std::string>& outputs) {
  std::string graph;
  for (const std::string& n : nodes) graph += bytes_field(1, n);
  graph += bytes_field(2, "g");
  for (const std::string& i : inputs) graph += bytes_field(11, float_value_info(i));
  for (const std::string& o : outputs) graph += bytes_field(12, float_value_info(o));
  return varint_field(1, 8) + bytes_field(7, graph) +
         bytes_field(8, bytes_field(1, "") + varint_field(2, static_cast<uint64_t>(opset)));
}

}  // namespace onnx_test
