// The protobuf wire reader and the ONNX message decoders (field numbers from onnx.proto).
#include "onnx_proto.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>
#include <sstream>

#include "loom/core/str_cat.h"

namespace loom::onnx {

std::optional<uint64_t> decode_varint(std::string_view& bytes) {
  uint64_t result = 0;
  for (size_t i = 0; i < 10; ++i) {
    if (i >= bytes.size()) return std::nullopt;
    const uint8_t b = static_cast<uint8_t>(bytes[i]);
    // The tenth byte may only carry the 64th bit.
    if (i == 9 && b > 1) return std::nullopt;
    result |= uint64_t{b & 0x7fu} << (7 * i);
    if ((b & 0x80u) == 0) {
      bytes.remove_prefix(i + 1);
      return result;
    }
  }
  return std::nullopt;
}

void WireReader::fail_at(size_t offset, std::string_view problem) const {
  throw ProtoError(str_cat("malformed ", message_, ": ", problem, " at byte ", offset, " of ",
                           data_.size()));
}

void WireReader::fail(const WireField& field, std::string_view field_name,
                      std::string_view problem) const {
  throw ProtoError(str_cat("malformed ", message_, ": field ", field.number, " (", field_name,
                           ") ", problem));
}

uint64_t WireReader::read_varint(std::string_view what) {
  std::string_view rest = data_.substr(pos_);
  const std::optional<uint64_t> v = decode_varint(rest);
  if (!v) {
    // Truncated if the input ends while every byte so far asks for another one.
    const bool truncated = rest.size() < 10 && std::all_of(rest.begin(), rest.end(), [](char c) {
                             return (static_cast<uint8_t>(c) & 0x80u) != 0;
                           });
    fail_at(pos_, str_cat(truncated ? "truncated " : "overlong ", what));
  }
  pos_ = data_.size() - rest.size();
  return *v;
}

bool WireReader::next(WireField& field) {
  if (pos_ >= data_.size()) return false;
  const size_t start = pos_;
  const uint64_t tag = read_varint("field tag");
  const uint64_t number = tag >> 3;
  if (number == 0 || number > 0x1fffffff) fail_at(start, str_cat("invalid field number ", number));
  field = WireField{};
  field.number = static_cast<uint32_t>(number);
  switch (tag & 7) {
    case 0:
      field.type = WireType::Varint;
      field.value = read_varint(str_cat("varint of field ", number));
      return true;
    case 1:
      field.type = WireType::Fixed64;
      if (data_.size() - pos_ < 8) fail_at(pos_, str_cat("truncated fixed64 of field ", number));
      std::memcpy(&field.value, data_.data() + pos_, 8);  // little-endian hosts only (x86, arm)
      pos_ += 8;
      return true;
    case 2: {
      field.type = WireType::LengthDelimited;
      const uint64_t length = read_varint(str_cat("length of field ", number));
      if (length > data_.size() - pos_) {
        fail_at(pos_, str_cat("field ", number, " claims ", length, " bytes but ",
                              data_.size() - pos_, " remain"));
      }
      field.bytes = data_.substr(pos_, length);
      pos_ += length;
      return true;
    }
    case 5: {
      field.type = WireType::Fixed32;
      if (data_.size() - pos_ < 4) fail_at(pos_, str_cat("truncated fixed32 of field ", number));
      uint32_t v = 0;
      std::memcpy(&v, data_.data() + pos_, 4);
      field.value = v;
      pos_ += 4;
      return true;
    }
    default:
      fail_at(start, str_cat("unsupported wire type ", tag & 7, " of field ", number));
  }
}

namespace {

template <typename T>
void append_varints_impl(WireReader& r, const WireField& f, std::string_view field_name,
                         std::vector<T>& out) {
  if (f.type == WireType::Varint) {
    out.push_back(static_cast<T>(f.value));
    return;
  }
  if (f.type != WireType::LengthDelimited) r.fail(f, field_name, "is not a varint");
  std::string_view rest = f.bytes;
  while (!rest.empty()) {
    const std::optional<uint64_t> v = decode_varint(rest);
    if (!v) r.fail(f, field_name, "holds a truncated packed varint");
    out.push_back(static_cast<T>(*v));
  }
}

template <typename T, typename Bits>
void append_fixed_impl(WireReader& r, const WireField& f, std::string_view field_name,
                       WireType single, std::vector<T>& out) {
  if (f.type == single) {
    out.push_back(std::bit_cast<T>(static_cast<Bits>(f.value)));
    return;
  }
  if (f.type != WireType::LengthDelimited) {
    r.fail(f, field_name, str_cat("is not a fixed", 8 * sizeof(T)));
  }
  if (f.bytes.size() % sizeof(T) != 0) {
    r.fail(f, field_name,
           str_cat("holds ", f.bytes.size(), " packed bytes, not a multiple of ", sizeof(T)));
  }
  const size_t n = f.bytes.size() / sizeof(T);
  const size_t old = out.size();
  out.resize(old + n);
  std::memcpy(out.data() + old, f.bytes.data(), n * sizeof(T));
}

std::string_view expect_bytes(WireReader& r, const WireField& f, std::string_view field_name) {
  if (f.type != WireType::LengthDelimited) r.fail(f, field_name, "is not length-delimited");
  return f.bytes;
}

uint64_t expect_varint(WireReader& r, const WireField& f, std::string_view field_name) {
  if (f.type != WireType::Varint) r.fail(f, field_name, "is not a varint");
  return f.value;
}

/// Decodes a nested message, adding the field's name to a nested error's message.
template <typename Parse>
auto parse_nested(WireReader& r, const WireField& f, std::string_view field_name, Parse parse) {
  const std::string_view bytes = expect_bytes(r, f, field_name);
  try {
    return parse(bytes);
  } catch (const ProtoError& e) {
    throw ProtoError(str_cat(e.what(), " (in ", field_name, ")"));
  }
}

ValueKind parse_type_kind(std::string_view bytes, int32_t* elem_type) {
  WireReader r(bytes, "TypeProto");
  WireField f;
  ValueKind kind = ValueKind::Unknown;
  while (r.next(f)) {
    switch (f.number) {
      case 1: {  // tensor_type: TypeProto.Tensor { int32 elem_type = 1; shape = 2; }
        kind = ValueKind::Tensor;
        WireReader t(expect_bytes(r, f, "tensor_type"), "TypeProto.Tensor");
        WireField g;
        while (t.next(g)) {
          if (g.number == 1) *elem_type = static_cast<int32_t>(expect_varint(t, g, "elem_type"));
        }
        break;
      }
      case 4: kind = ValueKind::Sequence; break;
      case 5: kind = ValueKind::Map; break;
      case 8: kind = ValueKind::SparseTensor; break;
      case 9: kind = ValueKind::Optional; break;
      default: break;
    }
  }
  return kind;
}

ValueInfoProto parse_value_info(std::string_view bytes) {
  WireReader r(bytes, "ValueInfoProto");
  WireField f;
  ValueInfoProto v;
  while (r.next(f)) {
    if (f.number == 1) {
      v.name = std::string(expect_bytes(r, f, "name"));
    } else if (f.number == 2) {
      v.kind = parse_nested(r, f, "type",
                            [&](std::string_view b) { return parse_type_kind(b, &v.elem_type); });
    }
  }
  return v;
}

OperatorSetId parse_opset(std::string_view bytes) {
  WireReader r(bytes, "OperatorSetIdProto");
  WireField f;
  OperatorSetId o;
  while (r.next(f)) {
    if (f.number == 1) o.domain = std::string(expect_bytes(r, f, "domain"));
    if (f.number == 2) o.version = static_cast<int64_t>(expect_varint(r, f, "version"));
  }
  return o;
}

}  // namespace

void append_varints(WireReader& r, const WireField& f, std::string_view field_name,
                    std::vector<int64_t>& out) {
  append_varints_impl(r, f, field_name, out);
}
void append_varints(WireReader& r, const WireField& f, std::string_view field_name,
                    std::vector<int32_t>& out) {
  append_varints_impl(r, f, field_name, out);
}
void append_varints(WireReader& r, const WireField& f, std::string_view field_name,
                    std::vector<uint64_t>& out) {
  append_varints_impl(r, f, field_name, out);
}
void append_fixed32s(WireReader& r, const WireField& f, std::string_view field_name,
                     std::vector<float>& out) {
  append_fixed_impl<float, uint32_t>(r, f, field_name, WireType::Fixed32, out);
}
void append_fixed64s(WireReader& r, const WireField& f, std::string_view field_name,
                     std::vector<double>& out) {
  append_fixed_impl<double, uint64_t>(r, f, field_name, WireType::Fixed64, out);
}

std::string data_type_name(int32_t data_type) {
  static constexpr const char* kNames[] = {
      "UNDEFINED", "FLOAT",  "UINT8",  "INT8",   "UINT16",    "INT16",      "INT32",   "INT64",
      "STRING",    "BOOL",   "FLOAT16", "DOUBLE", "UINT32",   "UINT64",     "COMPLEX64",
      "COMPLEX128", "BFLOAT16"};
  if (data_type >= 0 && data_type < static_cast<int32_t>(std::size(kNames))) {
    return kNames[data_type];
  }
  return str_cat("DataType(", data_type, ")");
}

TensorProto parse_tensor(std::string_view bytes) {
  WireReader r(bytes, "TensorProto");
  WireField f;
  TensorProto t;
  while (r.next(f)) {
    switch (f.number) {
      case 1: append_varints(r, f, "dims", t.dims); break;
      case 2: t.data_type = static_cast<int32_t>(expect_varint(r, f, "data_type")); break;
      case 3: t.has_segment = true; break;
      case 4: append_fixed32s(r, f, "float_data", t.float_data); break;
      case 5: append_varints(r, f, "int32_data", t.int32_data); break;
      case 6: t.string_data.emplace_back(expect_bytes(r, f, "string_data")); break;
      case 7: append_varints(r, f, "int64_data", t.int64_data); break;
      case 8: t.name = std::string(expect_bytes(r, f, "name")); break;
      case 9:
        t.raw_data = std::string(expect_bytes(r, f, "raw_data"));
        t.has_raw_data = true;
        break;
      case 10: append_fixed64s(r, f, "double_data", t.double_data); break;
      case 11: append_varints(r, f, "uint64_data", t.uint64_data); break;
      case 14: t.data_location = static_cast<int32_t>(expect_varint(r, f, "data_location")); break;
      default: break;
    }
  }
  return t;
}

AttributeProto parse_attribute(std::string_view bytes) {
  WireReader r(bytes, "AttributeProto");
  WireField f;
  AttributeProto a;
  while (r.next(f)) {
    switch (f.number) {
      case 1: a.name = std::string(expect_bytes(r, f, "name")); break;
      case 2:
        if (f.type != WireType::Fixed32) r.fail(f, "f", "is not a fixed32");
        a.f = std::bit_cast<float>(static_cast<uint32_t>(f.value));
        break;
      case 3: a.i = static_cast<int64_t>(expect_varint(r, f, "i")); break;
      case 4: a.s = std::string(expect_bytes(r, f, "s")); break;
      case 5: a.t.push_back(parse_nested(r, f, "t", parse_tensor)); break;
      case 6:
      case 11: a.has_graph = true; break;
      case 7: append_fixed32s(r, f, "floats", a.floats); break;
      case 8: append_varints(r, f, "ints", a.ints); break;
      case 9: a.strings.emplace_back(expect_bytes(r, f, "strings")); break;
      case 10: a.tensors.push_back(parse_nested(r, f, "tensors", parse_tensor)); break;
      case 20: a.type = static_cast<int32_t>(expect_varint(r, f, "type")); break;
      case 21: a.ref_attr_name = std::string(expect_bytes(r, f, "ref_attr_name")); break;
      case 22:
      case 23: a.has_sparse_tensor = true; break;
      default: break;
    }
  }
  return a;
}

NodeProto parse_node(std::string_view bytes) {
  WireReader r(bytes, "NodeProto");
  WireField f;
  NodeProto n;
  while (r.next(f)) {
    switch (f.number) {
      case 1: n.input.emplace_back(expect_bytes(r, f, "input")); break;
      case 2: n.output.emplace_back(expect_bytes(r, f, "output")); break;
      case 3: n.name = std::string(expect_bytes(r, f, "name")); break;
      case 4: n.op_type = std::string(expect_bytes(r, f, "op_type")); break;
      case 5: n.attribute.push_back(parse_nested(r, f, "attribute", parse_attribute)); break;
      case 7: n.domain = std::string(expect_bytes(r, f, "domain")); break;
      default: break;
    }
  }
  return n;
}

GraphProto parse_graph(std::string_view bytes) {
  WireReader r(bytes, "GraphProto");
  WireField f;
  GraphProto g;
  while (r.next(f)) {
    switch (f.number) {
      case 1: g.node.push_back(parse_nested(r, f, "node", parse_node)); break;
      case 2: g.name = std::string(expect_bytes(r, f, "name")); break;
      case 5: g.initializer.push_back(parse_nested(r, f, "initializer", parse_tensor)); break;
      case 11: g.input.push_back(parse_nested(r, f, "input", parse_value_info)); break;
      case 12: g.output.push_back(parse_nested(r, f, "output", parse_value_info)); break;
      case 15: g.has_sparse_initializer = true; break;
      default: break;
    }
  }
  return g;
}

ModelProto parse_model(std::string_view bytes) {
  WireReader r(bytes, "ModelProto");
  WireField f;
  ModelProto m;
  while (r.next(f)) {
    switch (f.number) {
      case 1: m.ir_version = static_cast<int64_t>(expect_varint(r, f, "ir_version")); break;
      case 7:
        m.graph = parse_nested(r, f, "graph", parse_graph);
        m.has_graph = true;
        break;
      case 8: m.opset_import.push_back(parse_nested(r, f, "opset_import", parse_opset)); break;
      case 25: m.has_functions = true; break;
      default: break;
    }
  }
  return m;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ProtoError(str_cat("cannot open ", path));
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) throw ProtoError(str_cat("cannot read ", path));
  return std::move(s).str();
}

std::optional<int64_t> opset_version(const ModelProto& model, std::string_view domain) {
  auto canonical = [](std::string_view d) { return d == "ai.onnx" ? std::string_view() : d; };
  std::optional<int64_t> version;
  for (const OperatorSetId& o : model.opset_import) {
    if (canonical(o.domain) == canonical(domain)) {
      version = version ? std::max(*version, o.version) : o.version;
    }
  }
  return version;
}

}  // namespace loom::onnx
