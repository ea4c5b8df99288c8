#pragma once
/// @file
/// A small reader of the protobuf wire format and decoders for the ONNX messages that
/// `loom conformance onnx` needs (ModelProto, GraphProto, NodeProto, AttributeProto,
/// TensorProto, ValueInfoProto). Field numbers are onnx.proto's. Unknown fields are skipped,
/// as protobuf does; truncated or garbled input throws ProtoError, never crashes.
///
/// Note [Repeated scalars on the wire]: a repeated numeric field may arrive packed (one
/// length-delimited field holding the values back to back, proto3's default) or unpacked
/// (one field per value, proto2's default). Parsers must accept both, so the decoders here
/// append either form to the same vector (append_varints, append_fixed32s, ...).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loom/core/error.h"

namespace loom::onnx {

/// Input that is not a well-formed protobuf message of the expected type.
class ProtoError : public Error {
 public:
  using Error::Error;
};

/// The wire types protobuf encodes in a field's tag (groups, 3 and 4, are refused).
enum class WireType : uint8_t { Varint = 0, Fixed64 = 1, LengthDelimited = 2, Fixed32 = 5 };

/// One field as read from the wire: its number and type, and its payload.
struct WireField {
  uint32_t number = 0;              ///< the field number
  WireType type = WireType::Varint;  ///< how the payload is encoded
  uint64_t value = 0;               ///< Varint, Fixed64, Fixed32: the raw bits
  std::string_view bytes;           ///< LengthDelimited: the payload (a view into the input)
};

/// Reads the fields of one message, in order. Views into `data`, which must outlive it.
class WireReader {
 public:
  /// @param message the message type, for errors ("TensorProto")
  WireReader(std::string_view data, std::string_view message) : data_(data), message_(message) {}
  /// Reads the next field into `field`; false at the end of the message.
  /// @throws ProtoError on a truncated or malformed field
  bool next(WireField& field);
  /// Throws ProtoError saying that `field` of this message is malformed.
  [[noreturn]] void fail(const WireField& field, std::string_view field_name,
                         std::string_view problem) const;

 private:
  uint64_t read_varint(std::string_view what);
  [[noreturn]] void fail_at(size_t offset, std::string_view problem) const;
  std::string_view data_;
  std::string_view message_;
  size_t pos_ = 0;
};

/// Decodes one varint from the front of `bytes`, advancing it; nullopt if truncated or longer
/// than 10 bytes.
std::optional<uint64_t> decode_varint(std::string_view& bytes);

/// Appends a repeated varint field's values, packed or not (Note [Repeated scalars on the
/// wire]). int32 values arrive sign-extended to 64 bits and are truncated back.
/// @throws ProtoError naming field_name if the field has another wire type or is truncated
void append_varints(WireReader& r, const WireField& f, std::string_view field_name,
                    std::vector<int64_t>& out);
/// As append_varints, for an int32 field.
void append_varints(WireReader& r, const WireField& f, std::string_view field_name,
                    std::vector<int32_t>& out);
/// As append_varints, for a uint64 field.
void append_varints(WireReader& r, const WireField& f, std::string_view field_name,
                    std::vector<uint64_t>& out);
/// Appends a repeated float field's values (fixed32), packed or not.
void append_fixed32s(WireReader& r, const WireField& f, std::string_view field_name,
                     std::vector<float>& out);
/// Appends a repeated double field's values (fixed64), packed or not.
void append_fixed64s(WireReader& r, const WireField& f, std::string_view field_name,
                     std::vector<double>& out);

/// TensorProto.DataType, as onnx.proto numbers it.
enum class DataType : int32_t {
  Undefined = 0,
  Float = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Double = 11,
  UInt32 = 12,
  UInt64 = 13,
  Complex64 = 14,
  Complex128 = 15,
  BFloat16 = 16,
};

/// onnx.proto's name of a data type ("FLOAT", "INT64"); "DataType(N)" for a number it lacks.
std::string data_type_name(int32_t data_type);

/// A serialized tensor (TensorProto): the fields Loom reads.
struct TensorProto {
  std::vector<int64_t> dims;          ///< 1: the shape (empty: a scalar)
  int32_t data_type = 0;              ///< 2: a DataType
  std::vector<float> float_data;      ///< 4
  std::vector<int32_t> int32_data;    ///< 5: also int8/uint8/int16/uint16/bool/float16 bits
  std::vector<std::string> string_data;  ///< 6
  std::vector<int64_t> int64_data;    ///< 7
  std::string name;                   ///< 8
  std::string raw_data;               ///< 9: little-endian, fixed width
  bool has_raw_data = false;          ///< raw_data was present (it may be empty)
  std::vector<double> double_data;    ///< 10
  std::vector<uint64_t> uint64_data;  ///< 11
  int32_t data_location = 0;          ///< 14: 0 DEFAULT, 1 EXTERNAL
  bool has_segment = false;           ///< 3: a segment of a larger tensor
};

/// AttributeProto.AttributeType, as onnx.proto numbers it.
enum class AttributeType : int32_t {
  Undefined = 0,
  Float = 1,
  Int = 2,
  String = 3,
  Tensor = 4,
  Graph = 5,
  Floats = 6,
  Ints = 7,
  Strings = 8,
  Tensors = 9,
  Graphs = 10,
  SparseTensor = 11,
  SparseTensors = 12,
  TypeProto = 13,
  TypeProtos = 14,
};

/// A node's attribute (AttributeProto). Graph and sparse values are only noted, not decoded.
struct AttributeProto {
  std::string name;                  ///< 1
  int32_t type = 0;                  ///< 20: an AttributeType
  float f = 0;                       ///< 2
  int64_t i = 0;                     ///< 3
  std::string s;                     ///< 4
  std::vector<TensorProto> t;        ///< 5: zero or one tensor
  std::vector<float> floats;         ///< 7
  std::vector<int64_t> ints;         ///< 8
  std::vector<std::string> strings;  ///< 9
  std::vector<TensorProto> tensors;  ///< 10
  bool has_graph = false;            ///< 6 or 11: a subgraph (If, Loop, Scan)
  bool has_sparse_tensor = false;    ///< 22 or 23
  std::string ref_attr_name;         ///< 21: a reference into a function's attributes
};

/// One node of a graph (NodeProto).
struct NodeProto {
  std::vector<std::string> input;         ///< 1: "" marks an omitted optional input
  std::vector<std::string> output;        ///< 2: "" marks an omitted optional output
  std::string name;                       ///< 3
  std::string op_type;                    ///< 4
  std::string domain;                     ///< 7: "" or "ai.onnx" is the default domain
  std::vector<AttributeProto> attribute;  ///< 5
};

/// What kind of value a graph input or output is (TypeProto's oneof).
enum class ValueKind { Unknown, Tensor, Sequence, Map, Optional, SparseTensor };

/// A graph input or output (ValueInfoProto), with its type reduced to what Loom needs.
struct ValueInfoProto {
  std::string name;                     ///< 1
  ValueKind kind = ValueKind::Unknown;  ///< which TypeProto alternative field 2 holds
  int32_t elem_type = 0;                ///< TypeProto.Tensor.elem_type, for a tensor
};

/// A computation graph (GraphProto).
struct GraphProto {
  std::vector<NodeProto> node;           ///< 1, in topological order
  std::string name;                      ///< 2
  std::vector<TensorProto> initializer;  ///< 5
  std::vector<ValueInfoProto> input;     ///< 11
  std::vector<ValueInfoProto> output;    ///< 12
  bool has_sparse_initializer = false;   ///< 15
};

/// An operator set the model imports (OperatorSetIdProto).
struct OperatorSetId {
  std::string domain;   ///< 1: "" or "ai.onnx" is the default domain
  int64_t version = 0;  ///< 2
};

/// A model (ModelProto): the fields Loom reads.
struct ModelProto {
  int64_t ir_version = 0;                    ///< 1
  std::vector<OperatorSetId> opset_import;   ///< 8
  GraphProto graph;                          ///< 7
  bool has_graph = false;                    ///< field 7 was present
  bool has_functions = false;                ///< 25: model-local functions
};

/// Decodes a TensorProto. @throws ProtoError
TensorProto parse_tensor(std::string_view bytes);
/// Decodes an AttributeProto. @throws ProtoError
AttributeProto parse_attribute(std::string_view bytes);
/// Decodes a NodeProto. @throws ProtoError
NodeProto parse_node(std::string_view bytes);
/// Decodes a GraphProto. @throws ProtoError
GraphProto parse_graph(std::string_view bytes);
/// Decodes a ModelProto. @throws ProtoError
ModelProto parse_model(std::string_view bytes);

/// The whole content of a file. @throws ProtoError if it cannot be read
std::string read_file(const std::string& path);

/// The opset version the model imports for a domain ("" and "ai.onnx" are the same domain);
/// nullopt if it imports none.
std::optional<int64_t> opset_version(const ModelProto& model, std::string_view domain);

}  // namespace loom::onnx
