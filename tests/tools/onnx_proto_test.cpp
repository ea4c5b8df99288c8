// The ONNX protobuf reader (tools/loom/onnx/onnx_proto.cpp) and TensorProto -> Tensor
// (onnx_tensor.cpp) on hand-built byte strings: varints, packed and unpacked repeated fields,
// nested messages, and truncated or garbled input, which must throw ProtoError and never crash.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "loom/core/half.h"
#include "onnx_proto.h"
#include "onnx_tensor.h"
#include "onnx_test_encoder.h"

namespace {

using namespace loom::onnx;
using namespace onnx_test;

TEST(OnnxVarint, DecodesOneToTenBytes) {
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{127}, uint64_t{128}, uint64_t{300},
                     uint64_t{1} << 35, std::numeric_limits<uint64_t>::max()}) {
    std::string bytes = varint(v) + "tail";
    std::string_view view = bytes;
    const std::optional<uint64_t> got = decode_varint(view);
    ASSERT_TRUE(got.has_value()) << v;
    EXPECT_EQ(*got, v);
    EXPECT_EQ(view, "tail");
  }
  EXPECT_EQ(varint(300), std::string("\xac\x02"));
  EXPECT_EQ(varint(std::numeric_limits<uint64_t>::max()).size(), 10u);
}

TEST(OnnxVarint, RefusesTruncatedAndOverlong) {
  std::string_view truncated("\x80\x80", 2);
  EXPECT_FALSE(decode_varint(truncated).has_value());
  std::string_view empty;
  EXPECT_FALSE(decode_varint(empty).has_value());
  // Ten bytes whose last carries more than the 64th bit.
  std::string_view overflow("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", 10);
  EXPECT_FALSE(decode_varint(overflow).has_value());
  std::string_view eleven("\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", 11);
  EXPECT_FALSE(decode_varint(eleven).has_value());
}

TEST(OnnxWireReader, ReadsEachWireType) {
  const std::string bytes = varint_field(1, 150) + fixed32_field(2, 1.5f) +
                            bytes_field(3, "abc") + tag(4, 1) + std::string("\x01\0\0\0\0\0\0\0", 8);
  WireReader r(bytes, "Test");
  WireField f;
  ASSERT_TRUE(r.next(f));
  EXPECT_EQ(f.number, 1u);
  EXPECT_EQ(f.type, WireType::Varint);
  EXPECT_EQ(f.value, 150u);
  ASSERT_TRUE(r.next(f));
  EXPECT_EQ(f.type, WireType::Fixed32);
  EXPECT_EQ(std::bit_cast<float>(static_cast<uint32_t>(f.value)), 1.5f);
  ASSERT_TRUE(r.next(f));
  EXPECT_EQ(f.type, WireType::LengthDelimited);
  EXPECT_EQ(f.bytes, "abc");
  ASSERT_TRUE(r.next(f));
  EXPECT_EQ(f.type, WireType::Fixed64);
  EXPECT_EQ(f.value, 1u);
  EXPECT_FALSE(r.next(f));
}

void expect_proto_error(const std::string& bytes, const std::string& fragment) {
  try {
    (void)parse_tensor(bytes);
    ADD_FAILURE() << "no error for " << fragment;
  } catch (const ProtoError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(OnnxWireReader, TruncatedFieldsThrowProtoError) {
  expect_proto_error(std::string("\x08", 1), "truncated varint of field 1");
  expect_proto_error(std::string("\x08\x80", 2), "truncated varint of field 1");
  expect_proto_error(tag(4, 5) + "ab", "truncated fixed32 of field 4");
  expect_proto_error(tag(10, 1) + "abc", "truncated fixed64 of field 10");
  expect_proto_error(tag(9, 2) + varint(10) + "abc", "claims 10 bytes but 3 remain");
  expect_proto_error(std::string("\x80", 1), "truncated field tag");
}

TEST(OnnxWireReader, GarbledFieldsThrowProtoError) {
  expect_proto_error(tag(1, 3), "unsupported wire type 3");
  expect_proto_error(tag(1, 7), "unsupported wire type 7");
  expect_proto_error(std::string("\x00\x01", 2), "invalid field number 0");
  // dims as a fixed32, data_type as bytes, float_data packed with a stray byte.
  expect_proto_error(fixed32_field(1, 1.0f), "field 1 (dims) is not a varint");
  expect_proto_error(bytes_field(2, "x"), "field 2 (data_type) is not a varint");
  expect_proto_error(bytes_field(4, "12345"), "not a multiple of 4");
  expect_proto_error(bytes_field(1, "\x80"), "truncated packed varint");
}

TEST(OnnxTensorProto, PackedAndUnpackedRepeatedFieldsAgree) {
  const std::string packed = packed_varints(1, {2, 3}) + varint_field(2, 7) +
                             packed_varints(7, {-1, 0, 1, 1LL << 40, -(1LL << 40), 5});
  const std::string unpacked = unpacked_varints(1, {2, 3}) + varint_field(2, 7) +
                               unpacked_varints(7, {-1, 0, 1}) +
                               packed_varints(7, {1LL << 40, -(1LL << 40)}) +
                               varint_field(7, 5);
  for (const std::string& bytes : {packed, unpacked}) {
    const TensorProto t = parse_tensor(bytes);
    EXPECT_EQ(t.dims, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(t.data_type, 7);
    EXPECT_EQ(t.int64_data, (std::vector<int64_t>{-1, 0, 1, 1LL << 40, -(1LL << 40), 5}));
  }
  // float_data: fixed32 one by one, or packed.
  const TensorProto a = parse_tensor(fixed32_field(4, 1.0f) + fixed32_field(4, -2.5f));
  const TensorProto b = parse_tensor(packed_floats(4, {1.0f, -2.5f}));
  EXPECT_EQ(a.float_data, b.float_data);
  EXPECT_EQ(a.float_data, (std::vector<float>{1.0f, -2.5f}));
}

TEST(OnnxTensorProto, NegativeInt32ValuesArriveSignExtended) {
  // int32 -3 is written as a 10-byte varint of its 64-bit sign extension.
  const TensorProto t = parse_tensor(packed_varints(5, {-3, 7}));
  EXPECT_EQ(t.int32_data, (std::vector<int32_t>{-3, 7}));
}

TEST(OnnxTensorProto, UnknownFieldsAreSkipped) {
  const std::string bytes = varint_field(99, 1) + bytes_field(12, "doc") + varint_field(2, 1) +
                            tag(50, 5) + "abcd" + packed_varints(1, {1}) + packed_floats(4, {3.0f});
  const TensorProto t = parse_tensor(bytes);
  EXPECT_EQ(t.data_type, 1);
  EXPECT_EQ(t.float_data, (std::vector<float>{3.0f}));
}

TEST(OnnxTensor, FromTypedFieldsAndRawData) {
  const loom::Tensor f = to_tensor(parse_tensor(float_tensor("x", {2, 2}, {1, 2, 3, 4})));
  EXPECT_EQ(f.dtype(), loom::DType::Float32);
  EXPECT_EQ(to_doubles(f), (std::vector<double>{1, 2, 3, 4}));

  const loom::Tensor i = to_tensor(parse_tensor(int64_tensor("i", {3}, {-5, 0, 5})));
  EXPECT_EQ(to_int64s(i), (std::vector<int64_t>{-5, 0, 5}));

  // raw_data is little-endian and fixed width: two int16 values.
  const std::string raw = packed_varints(1, {2}) + varint_field(2, 5) +
                          bytes_field(9, std::string("\x01\x00\xff\xff", 4));
  const loom::Tensor s = to_tensor(parse_tensor(raw));
  EXPECT_EQ(s.dtype(), loom::DType::Int16);
  EXPECT_EQ(to_int64s(s), (std::vector<int64_t>{1, -1}));

  // float16 and bool travel in int32_data.
  const uint16_t h = loom::float_to_half(0.5f);
  const loom::Tensor half = to_tensor(parse_tensor(packed_varints(1, {1}) + varint_field(2, 10) +
                                                   packed_varints(5, {h})));
  EXPECT_EQ(half.dtype(), loom::DType::Float16);
  EXPECT_EQ(to_doubles(half), (std::vector<double>{0.5}));
  const loom::Tensor b = to_tensor(parse_tensor(packed_varints(1, {3}) + varint_field(2, 9) +
                                                packed_varints(5, {1, 0, 2})));
  EXPECT_EQ(b.dtype(), loom::DType::Bool);
  EXPECT_EQ(to_int64s(b), (std::vector<int64_t>{1, 0, 1}));

  // No dims: a scalar.
  const loom::Tensor scalar = to_tensor(parse_tensor(varint_field(2, 1) + fixed32_field(4, 7.0f)));
  EXPECT_EQ(scalar.dim(), 0);
  EXPECT_EQ(to_doubles(scalar), (std::vector<double>{7.0}));
}

TEST(OnnxTensor, SizeMismatchesAndUnsupportedTypes) {
  EXPECT_THROW(to_tensor(parse_tensor(float_tensor("x", {2, 2}, {1, 2, 3}))), ProtoError);
  const std::string short_raw = packed_varints(1, {2}) + varint_field(2, 1) + bytes_field(9, "abc");
  try {
    (void)to_tensor(parse_tensor(short_raw));
    ADD_FAILURE() << "no error";
  } catch (const ProtoError& e) {
    EXPECT_NE(std::string(e.what()).find("raw_data holds 3 bytes but the dims need 8"),
              std::string::npos)
        << e.what();
  }
  // UINT16, STRING, COMPLEX64: Loom has no such dtype.
  for (int type : {4, 8, 14}) {
    EXPECT_THROW(to_tensor(parse_tensor(varint_field(2, type))), NotSupported) << type;
  }
  EXPECT_THROW(to_tensor(parse_tensor(packed_varints(1, {-1}) + varint_field(2, 1))), ProtoError);
  EXPECT_EQ(data_type_name(16), "BFLOAT16");
  EXPECT_EQ(data_type_name(99), "DataType(99)");
}

std::string sample_model() {
  const std::string alpha = bytes_field(1, "alpha") + varint_field(20, 1) + fixed32_field(2, 0.25f);
  const std::string axes = bytes_field(1, "axes") + varint_field(20, 7) + packed_varints(8, {0, -1});
  const std::string mode = bytes_field(1, "mode") + varint_field(20, 3) + bytes_field(4, "edge");
  const std::string value =
      bytes_field(1, "value") + varint_field(20, 4) + bytes_field(5, float_tensor("v", {1}, {2}));
  const std::string n = node("Foo", {"x", ""}, {"y"}, {alpha, axes, mode, value}) +
                        bytes_field(7, "ai.onnx") + bytes_field(3, "node0");
  return model(13, {n}, {"x"}, {"y"});
}

TEST(OnnxModelProto, DecodesGraphNodesAndAttributes) {
  const ModelProto m = parse_model(sample_model());
  EXPECT_EQ(m.ir_version, 8);
  ASSERT_TRUE(m.has_graph);
  EXPECT_EQ(opset_version(m, ""), 13);
  EXPECT_EQ(opset_version(m, "ai.onnx"), 13);
  EXPECT_FALSE(opset_version(m, "com.example").has_value());
  ASSERT_EQ(m.graph.node.size(), 1u);
  const NodeProto& n = m.graph.node[0];
  EXPECT_EQ(n.op_type, "Foo");
  EXPECT_EQ(n.domain, "ai.onnx");
  EXPECT_EQ(n.name, "node0");
  EXPECT_EQ(n.input, (std::vector<std::string>{"x", ""}));
  EXPECT_EQ(n.output, (std::vector<std::string>{"y"}));
  ASSERT_EQ(n.attribute.size(), 4u);
  EXPECT_EQ(n.attribute[0].f, 0.25f);
  EXPECT_EQ(n.attribute[1].ints, (std::vector<int64_t>{0, -1}));
  EXPECT_EQ(n.attribute[2].s, "edge");
  ASSERT_EQ(n.attribute[3].t.size(), 1u);
  EXPECT_EQ(n.attribute[3].t[0].float_data, (std::vector<float>{2}));
  ASSERT_EQ(m.graph.input.size(), 1u);
  EXPECT_EQ(m.graph.input[0].name, "x");
  EXPECT_EQ(m.graph.input[0].kind, ValueKind::Tensor);
  EXPECT_EQ(m.graph.input[0].elem_type, 1);
  EXPECT_EQ(m.graph.output[0].name, "y");
}

TEST(OnnxModelProto, NestedErrorsNameTheirField) {
  const std::string bad_node = bytes_field(1, std::string("\x0a\x05x", 3));  // claims 5 bytes
  try {
    (void)parse_graph(bad_node);
    ADD_FAILURE() << "no error";
  } catch (const ProtoError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("malformed NodeProto"), std::string::npos) << what;
    EXPECT_NE(what.find("(in node)"), std::string::npos) << what;
  }
}

TEST(OnnxModelProto, EveryTruncationAndByteFlipFailsCleanly) {
  const std::string bytes = sample_model();
  // Each prefix either decodes (a message may end between fields) or throws ProtoError.
  for (size_t n = 0; n < bytes.size(); ++n) {
    try {
      (void)parse_model(bytes.substr(0, n));
    } catch (const ProtoError&) {
    }
  }
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (uint8_t flip : {0x01, 0x80, 0xff}) {
      std::string garbled = bytes;
      garbled[i] = static_cast<char>(garbled[i] ^ flip);
      try {
        (void)parse_model(garbled);
      } catch (const ProtoError&) {
      }
    }
  }
  EXPECT_THROW(parse_model(bytes.substr(0, bytes.size() - 1)), ProtoError);
}

TEST(OnnxFiles, MissingFileThrowsProtoError) {
  EXPECT_THROW(read_file("/nonexistent/model.onnx"), ProtoError);
}

}  // namespace
