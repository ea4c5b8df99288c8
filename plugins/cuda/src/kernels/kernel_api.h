#pragma once
/// @file
/// The plain-data boundary between the CUDA kernels (.cu, compiled by nvcc without Loom
/// headers) and their host halves (.cpp: argument checks, outputs, registration). Everything
/// here is POD: pointers, sizes, strides in elements, dtype codes, a cudaStream_t.
///
/// Note [CUDA kernel geometry]: the host half broadcasts, promotes and coalesces dimensions
/// (kernels/cuda_iterator.cpp) and hands the kernels a Geometry: ndim <= kMaxDims sizes,
/// stored innermost first, and per operand (0 = output) strides in elements (0 where
/// broadcast). A kernel maps an output linear index to each operand's offset with the
/// OffsetCalculator (offset_calculator.cuh): 32-bit arithmetic when every index and offset
/// fits in int32, 64-bit otherwise. When all operands are contiguous (or a 0-stride scalar)
/// the kernel skips the calculator and uses vector loads.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace loom::cuda::kernels {

/// Element type codes; the numbering is loom::DType's (static_assert'ed in cuda_iterator.cpp).
enum class Dt : int8_t {
  Bool,
  UInt8,
  Int8,
  Int16,
  Int32,
  Int64,
  Float16,
  BFloat16,
  Float32,
  Float64,
};

/// Most dims after coalescing a kernel takes (Loom tensors have at most this many non-unit,
/// non-mergeable dims in practice; the host throws a ValueError naming the op beyond it).
inline constexpr int kMaxDims = 12;
/// Most operands of one pointwise kernel: the output and three inputs.
inline constexpr int kMaxOperands = 4;

/// Note [CUDA kernel geometry].
struct Geometry {
  int ndim = 0;                                  ///< number of (coalesced) dims, >= 1
  int64_t sizes[kMaxDims] = {};                  ///< innermost first
  int64_t strides[kMaxOperands][kMaxDims] = {};  ///< per operand, in elements
};

/// The pointwise operations of the generic kernel (pointwise.cuh). One kernel per storage
/// dtype switches on the op at run time, which keeps template instantiations few (Note
/// [Pointwise op codes] in pointwise.cuh).
enum class PwOp : int32_t {
  // unary: f(x)
  Identity,
  Neg,
  Abs,
  Sign,
  Exp,
  Exp2,
  Log,
  Log2,
  Log1p,
  Expm1,
  Sqrt,
  Rsqrt,
  Reciprocal,
  Sin,
  Cos,
  Tan,
  Tanh,
  Sigmoid,
  Erf,
  Floor,
  Ceil,
  Round,
  Trunc,
  RoundDecimals,  ///< p0 = 10^|decimals|, i0 = decimals < 0
  Relu,
  Hardtanh,   ///< p0 = lo, p1 = hi
  LeakyRelu,  ///< p0 = slope
  Elu,        ///< p0 = negcoef, p1 = poscoef, p2 = input_scale
  Gelu,       ///< i0 = tanh approximation
  Silu,
  Mish,
  Hardsigmoid,
  Hardswish,
  Selu,
  Softplus,  ///< p0 = beta, p1 = threshold
  NanToNum,  ///< p0 = nan, p1 = posinf, p2 = neginf
  BitwiseNot,
  ClampScalar,  ///< p0 = min, p1 = max; i2 bit 0 = has min, bit 1 = has max
  // binary: f(x, y)
  Add,  ///< x + p0 * y
  Mul,
  Div,
  DivTrunc,
  DivFloor,
  Remainder,
  Fmod,
  Pow,
  PowScalarExp,  ///< pow with a scalar exponent y: x*x for 2, sqrt for 0.5
  Maximum,
  Minimum,
  Atan2,
  BitwiseAnd,
  BitwiseOr,
  BitwiseXor,
  ThresholdBackward,  ///< x = grad, y = self, p0 = threshold
  ClampMin,           ///< clamp(x, min = y)
  ClampMax,           ///< clamp(x, max = y)
  MaskScale,          ///< x * y * p0 (native_dropout_backward: grad * mask * scale)
  MaskedFill,         ///< y != 0 ? z : x (masked_fill: self, mask, value)
  // ternary: f(x, y, z)
  Where,    ///< x != 0 ? y : z
  Addcmul,  ///< x + p0 * y * z
  Addcdiv,  ///< x + p0 * (y / z)
  Lerp,     ///< lerp(x, y, weight z)
  Clamp,    ///< clamp(x, y, z)
  // predicates: bool f(x, y) (bool_out)
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  LogicalAnd,
  LogicalOr,
  LogicalXor,
  LogicalNot,  ///< unary
};

/// Scalar slots of a pointwise call: op parameters (p0..p2) and the values of inputs given
/// as Scalars (slot 3 + k for input k), each in the three precisions a kernel may compute in,
/// filled by the host with the CPU kernels' arithmetic (Scalar::to<C>()).
inline constexpr int kNumScalarSlots = 6;
inline constexpr int kScalarInputSlot = 3;
struct ScalarSlots {
  double d[kNumScalarSlots] = {};   ///< for double computation
  float f[kNumScalarSlots] = {};    ///< for float computation (float, float16, bfloat16)
  int64_t i[kNumScalarSlots] = {};  ///< for integer and bool computation
};

/// One pointwise launch (kernels/pointwise.cuh).
struct PointwiseLaunch {
  PwOp op = PwOp::Identity;
  Dt dtype = Dt::Float32;      ///< storage dtype of every memory input (and of the output unless
                               ///< bool_out)
  bool bool_out = false;       ///< the output is bool (predicates)
  int nin = 0;                 ///< number of inputs (1..3), memory or scalar
  unsigned scalar_inputs = 0;  ///< bit k: input k is scalar slot 3 + k, not memory
  void* out = nullptr;
  const void* in[3] = {nullptr, nullptr, nullptr};
  ScalarSlots s;
  int* zero_division_flag = nullptr;  ///< set to 1 by integer division by zero (may be null)
};

/// Runs a pointwise op over geometry g with numel outputs on stream.
void launch_pointwise(const PointwiseLaunch& p, const Geometry& g, int64_t numel,
                      cudaStream_t stream);

/// dst[i] = convert(src[i]) over g (operand 0 = dst, 1 = src), with the CPU's conversion
/// rules (convert<To, From> in ops/core/cpu/elementwise.h).
void launch_copy(void* dst, Dt dst_dtype, const void* src, Dt src_dtype, const Geometry& g,
                 int64_t numel, cudaStream_t stream);

/// Writes the element_size-byte pattern `bits` into every element over g (operand 0).
void launch_fill(void* dst, int element_size, uint64_t bits, const Geometry& g, int64_t numel,
                 cudaStream_t stream);

/// arange into contiguous dst: exact integer steps (start_i + k * step_i) or floating ones
/// (start_d + k * step_d), stored with the CPU's store rules.
void launch_arange(void* dst, Dt dtype, int64_t n, bool exact, int64_t start_i, int64_t step_i,
                   double start_d, double step_d, cudaStream_t stream);

/// Reductions of a contiguous input viewed as [outer, red, inner] over its middle axis (the
/// host permutes or copies so the reduced dims form that middle block).
enum class RedOp : int32_t {
  Sum,
  Prod,
  Mean,
  Max,
  Min,
  ArgMax,
  ArgMin,
  All,
  Any,
  Var,
  Norm,
  LogSumExp,
};
/// Which vector norm RedOp::Norm computes (the CPU's NormKind).
enum class NormKind : int32_t { Zero, One, Two, Inf, NegInf, General };
struct ReduceLaunch {
  RedOp op = RedOp::Sum;
  Dt in_dtype = Dt::Float32;
  Dt out_dtype = Dt::Float32;  ///< of out (and mean_out)
  const void* in = nullptr;
  void* out = nullptr;         ///< outer * inner values (null for ArgMax/ArgMin)
  int64_t* indices = nullptr;  ///< Max/Min/ArgMax/ArgMin: index along red (may be null)
  void* mean_out = nullptr;    ///< Var: the mean too (var_mean), or null
  int64_t outer = 1, red = 1, inner = 1;
  double correction = 1;               ///< Var: divisor max(0, red - correction)
  bool take_sqrt = false;              ///< Var: std
  NormKind norm_kind = NormKind::Two;  ///< Norm: which norm
  double norm_p = 2;                   ///< Norm: the order of NormKind::General
  void* workspace = nullptr;           ///< reduce_workspace_bytes(*this) bytes (when nonzero)
};
/// Device scratch a reduction needs (partial results of split rows); 0 for most shapes.
size_t reduce_workspace_bytes(const ReduceLaunch& r);
/// Whether launch_reduce takes r with its inner > 1 as it is (a column reduction); if not, the
/// host copies the input so that the reduced axis is innermost (inner = 1).
bool reduce_takes_columns(const ReduceLaunch& r);
/// Runs a reduction on stream.
void launch_reduce(const ReduceLaunch& r, cudaStream_t stream);

/// cumsum (prod = false) / cumprod along the middle axis of a contiguous [outer, len, inner]
/// tensor of dtype into out (same layout): floats accumulate in double, integers wrap in
/// int64, as the CPU kernels.
void launch_scan(Dt dtype, const void* in, void* out, int64_t outer, int64_t len, int64_t inner,
                 bool prod, cudaStream_t stream);

/// Random numbers into contiguous dst (Philox4x32-10, subsequence = thread, offset given).
enum class RandOp : int32_t { Uniform, Normal, Bernoulli, RandInt };
struct RandomLaunch {
  RandOp op = RandOp::Uniform;
  Dt dtype = Dt::Float32;  ///< of out (and of p_tensor)
  void* out = nullptr;
  int64_t numel = 0;
  double a = 0, b = 1;             ///< uniform [a, b); normal mean a, std b; bernoulli p = a
  const void* p_tensor = nullptr;  ///< bernoulli with per-element probabilities (contiguous)
  int64_t low = 0;                 ///< randint: low + (64 random bits % range)
  uint64_t range = 1;
  uint64_t seed = 0, offset = 0;
};
/// Runs a random fill on stream.
void launch_random(const RandomLaunch& r, cudaStream_t stream);
/// Number of 32-bit values each thread of launch_random draws (for philox_seed_offset).
uint64_t random_increment(int64_t numel);

/// native_dropout: mask[i] = u >= p (bool), out[i] = x[i] * mask[i] * scale, contiguous.
void launch_dropout(Dt dtype, const void* x, void* out, bool* mask, int64_t numel, double p,
                    double scale, uint64_t seed, uint64_t offset, cudaStream_t stream);

/// Gather along one dim over geometry g (operands: 0 = out, 1 = index, 2 = self with the
/// gathered dim's stride 0): out[o] = self[s + index[i] * self_dim_stride]. element_size is
/// 1, 2, 4 or 8; index is int64 or int32. An index outside [0, bound) is not read; it sets
/// bad[0] = 1 and bad[1] = its value (bad: two int64 on the device).
void launch_gather(void* out, const void* self, const void* index, bool index_is_int32,
                   int element_size, int64_t self_dim_stride, int64_t bound, const Geometry& g,
                   int64_t numel, int64_t* bad, cudaStream_t stream);

/// How launch_scatter writes: dst = src, dst = value, or dst += alpha * src (atomically).
enum class ScatterMode : int32_t { Copy, Value, Add };
/// Scatter along one dim over geometry g (operands: 0 = dst with the scattered dim's stride
/// 0, 1 = index, 2 = src): dst[d + index[i] * dst_dim_stride] (op) src[s]. Copy and Value move
/// element_size-byte words (any dtype; Value writes value_bits); Add needs a dtype with
/// atomics (scatter_add_supported) and adds alpha (alpha_d for floats, alpha_i for integers)
/// times src. Bad indices as launch_gather.
struct ScatterLaunch {
  ScatterMode mode = ScatterMode::Copy;
  Dt dtype = Dt::Float32;
  void* dst = nullptr;
  const void* src = nullptr;
  const void* index = nullptr;
  bool index_is_int32 = false;
  int64_t dst_dim_stride = 0, bound = 0;
  double alpha_d = 1;
  int64_t alpha_i = 1;
  uint64_t value_bits = 0;
  bool wrap_negative = false;  ///< an index in [-bound, 0) counts from the end (index_fill)
  int64_t* bad = nullptr;
};
/// Runs a scatter on stream.
void launch_scatter(const ScatterLaunch& s, const Geometry& g, int64_t numel, cudaStream_t stream);
/// Whether ScatterMode::Add supports dtype (float32/64, float16, bfloat16, int32, int64).
bool scatter_add_supported(Dt dtype);

/// tril (upper = false) / triu (upper = true) in place on a contiguous [batch, rows, cols]
/// tensor: zeroes the elements outside the triangle of the diagonal-th diagonal.
void launch_triangle(void* data, int element_size, int64_t batch, int64_t rows, int64_t cols,
                     int64_t diagonal, bool upper, cudaStream_t stream);

}  // namespace loom::cuda::kernels
