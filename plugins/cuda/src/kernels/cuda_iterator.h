#pragma once
/// @file
/// The host half of the CUDA pointwise kernels: PyTorch's broadcasting and type promotion,
/// output allocation and checks, input casts and dimension coalescing, exactly as the
/// reference CPU TensorIterator (ops/core/cpu/tensor_iterator.h) does them, then one launch
/// of the generic pointwise kernel (kernels/pointwise.cuh) on the current stream.

#include <optional>
#include <string_view>
#include <vector>

#include "kernels/kernel_api.h"
#include "loom/core/scalar.h"
#include "loom/core/tensor.h"
#include "loom/core/tensor_impl.h"
#include "loom/ops/meta/pointwise.h"

namespace loom::cuda {

/// The kernel-side code of a dtype.
inline kernels::Dt to_dt(DType d) { return static_cast<kernels::Dt>(static_cast<int8_t>(d)); }

// Dtype categories, PyTorch's dtype names, broadcasting, promotion and output kinds: the rules
// every backend shares (loom/ops/meta/pointwise.h).
using ops::meta::broadcast_shapes;
using ops::meta::check_dtype_category;
using ops::meta::kAllTypes;
using ops::meta::kBool;
using ops::meta::kFloats;
using ops::meta::kInts;
using ops::meta::OutputKind;
using ops::meta::ResultRule;
using ops::meta::torch_type_name;

/// Element strides of each operand over shape (right-aligned; 0 where broadcast; a null
/// operand is a scalar), coalesced and innermost first (Note [CUDA kernel geometry]).
kernels::Geometry make_geometry(std::string_view op, IntArrayRef shape,
                                const std::vector<const Tensor*>& operands);

/// See the file comment.
class CudaIterator {
 public:
  /// op names the call in errors.
  explicit CudaIterator(std::string_view op) : op_(op) {}
  /// A tensor input; promote = false keeps it out of type promotion (where's condition); it
  /// is still read as the common dtype. A 0-d CPU tensor is taken as a scalar input (as
  /// PyTorch lets a CPU scalar tensor join a CUDA op), still promoting as a 0-d tensor.
  CudaIterator& add_input(std::string_view name, const Tensor& t, bool promote = true);
  /// A scalar input (a wrapped number in promotion unless promote is false; the kernel
  /// reads its value, converted to the computation type).
  CudaIterator& add_scalar(const Scalar& s, bool promote = true);
  /// A Scalar that only takes part in promotion (clamp's bounds: the kernel gets their values
  /// as op parameters).
  CudaIterator& add_promotion_scalar(const Scalar& s);
  /// Where the result goes (default: a new tensor).
  CudaIterator& set_output(const Tensor& out, OutputKind kind) {
    out_ = out;
    kind_ = kind;
    return *this;
  }
  /// Sets the output for a kernel variant: none (new), out= (out), or self (inplace).
  CudaIterator& set_variant_output(const Tensor* out, bool inplace) {
    if (inplace) return set_output(*out, OutputKind::InPlace);
    if (out != nullptr) return set_output(*out, OutputKind::Out);
    return *this;
  }
  /// The result rule.
  CudaIterator& set_rule(ResultRule r) {
    rule_ = r;
    return *this;
  }
  /// Promotes, broadcasts, checks devices and shapes, allocates, casts inputs.
  void build();
  /// The dtype inputs are read as (after build()).
  DType common_dtype() const { return common_; }
  /// The dtype the kernel writes (after build()).
  DType result_dtype() const { return result_; }
  /// The broadcast shape.
  IntArrayRef shape() const { return {shape_.data(), shape_.size()}; }
  /// Runs op over every element; p carries op, scalar parameters (p0..p2) and the
  /// zero-division flag; the iterator fills in dtype, pointers, scalar inputs.
  void run(kernels::PointwiseLaunch p);
  /// Writes into out=/self (casting if needed), bumps their version, returns the result.
  Tensor finish();
  /// The op name given at construction.
  std::string_view op() const { return op_; }
  /// The device index the iterator runs on (after build()).
  int device() const { return device_; }

 private:
  struct Operand {
    std::string_view name;
    Tensor tensor;  // undefined for a scalar
    std::optional<Scalar> scalar;
    bool promote = true;
    bool from_cpu_tensor = false;  // scalar holds a 0-d CPU tensor's value
  };
  std::string_view op_;
  std::vector<Operand> inputs_;
  ops::meta::ResultTypeState promotion_;
  Tensor out_;
  OutputKind kind_ = OutputKind::New;
  ResultRule rule_ = ResultRule::Common;
  DType common_ = DType::Float32, result_ = DType::Float32;
  DimVector shape_;
  int64_t numel_ = 0;
  Tensor result_buf_;
  int device_ = 0;
};

/// Fills the three precisions of scalar slot k from a Scalar (Scalar::to<C>()).
void set_slot(kernels::ScalarSlots& s, int k, const Scalar& v);
/// Fills scalar slot k from a double parameter (static_cast<C>(v), as the CPU functors).
void set_slot_double(kernels::ScalarSlots& s, int k, double v);

/// Runs a PointwiseLaunch whose op may divide integers by zero and throws the CPU's
/// "ZeroDivisionError" ValueError if it did (one device-to-host read).
void run_checking_zero_division(CudaIterator& it, kernels::PointwiseLaunch p);

}  // namespace loom::cuda
