#pragma once
/// @file
/// ONNX tensors as Loom tensors: data types, TensorProto -> Tensor, and element reads for
/// comparing results.

#include <cstdint>
#include <optional>
#include <vector>

#include "loom/core/error.h"
#include "loom/core/tensor.h"
#include "onnx_proto.h"

namespace loom::onnx {

/// A well-formed model or value this runner does not run (an unmapped op, a data type Loom
/// lacks, an attribute combination no mapping handles). `loom conformance onnx` reports it
/// as SKIP, where every other error is a FAIL.
class NotSupported : public Error {
 public:
  using Error::Error;
};

/// The Loom dtype of an ONNX data type; nullopt for the ones Loom lacks (strings, unsigned
/// 16/32/64-bit, complex, 8-bit floats).
std::optional<DType> to_dtype(int32_t data_type);
/// The ONNX data type of a Loom dtype.
DataType to_data_type(DType dtype);
/// The Loom dtype of an ONNX data type. @throws NotSupported naming it if Loom lacks it
DType to_dtype_or_skip(int32_t data_type, std::string_view what);

/// A CPU tensor holding the TensorProto's values (raw_data or the typed field).
/// @throws NotSupported for a data type Loom lacks or external data; ProtoError if the values
///         do not fill the dims
Tensor to_tensor(const TensorProto& proto);

/// Reads a contiguous copy of every element as double (bool as 0/1, 16-bit floats widened).
std::vector<double> to_doubles(const Tensor& t);
/// Reads a contiguous copy of every element of an integral or bool tensor as int64.
std::vector<int64_t> to_int64s(const Tensor& t);

}  // namespace loom::onnx
