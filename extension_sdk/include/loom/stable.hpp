#pragma once
/// @file
/// loom::stable, a header-only C++17 wrapper over Loom's stable C ABI (loom/capi.h).
///
/// What it adds to the C table: RAII handles (a Tensor copy is a retain, its destructor a
/// release), exceptions instead of statuses, operators and op methods (`(x.matmul(w) +
/// b).relu().sum()`), a variadic boxed op call (`Op::find("aten::mm").call_tensor(a, b)`), and
/// registration from C++ lambdas whose exceptions become statuses. It depends on nothing but
/// loom/capi.h and the C++ standard library, so an app or extension built with another
/// compiler or standard library than Loom's stays compatible: only the C table crosses.
///
///     #include <loom/stable.hpp>
///     namespace ls = loom::stable;
///     ls::init();
///     auto x = ls::Tensor::from_data({1.f, 2.f, 3.f, 4.f}, {2, 2});
///     x.set_requires_grad(true);
///     auto y = (x * x).sum();
///     y.backward();
///     std::vector<float> g = x.grad().to_vector<float>();  // 2x
///
/// Note [Stable wrapper costs]: everything here is inline and goes through api(), the table
/// fetched once (a function-local static). An op method finds its op once (a static local
/// Op per method) and boxes its arguments into a std::array of LoomValue on the stack, so a
/// call costs one OpCall and no heap allocation on the client side. Returned tensors are
/// adopted, not retained again.

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <list>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "loom/capi.h"

#if defined(__GNUC__)
/// Marks the error paths cold and out of line so that the success path stays small.
#define LOOM_STABLE_COLD __attribute__((noinline, cold))
#else
/// Marks the error paths cold and out of line so that the success path stays small.
#define LOOM_STABLE_COLD
#endif

/// The C++ wrapper over the stable C ABI.
namespace loom::stable {

// ======================================================================================
// Errors
// ======================================================================================

/// An error reported by Loom (or by this wrapper): the C ABI's error code and the message,
/// word for word what Loom's C++ API would have said.
class Error : public std::runtime_error {
 public:
  /// An error with a LOOM_* code and a message.
  Error(LoomErrorCode code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  /// The LOOM_* error code (LOOM_VALUE_ERROR, LOOM_TYPE_ERROR, ...).
  LoomErrorCode code() const noexcept { return code_; }

 private:
  LoomErrorCode code_;
};

/// A bad value: shapes that do not match, a negative size (LOOM_VALUE_ERROR).
class ValueError : public Error {
 public:
  /// An error with the given message.
  explicit ValueError(const std::string& m, LoomErrorCode c = LOOM_VALUE_ERROR) : Error(c, m) {}
};
/// A bad type: wrong dtype, wrong argument kind (LOOM_TYPE_ERROR).
class TypeError : public Error {
 public:
  /// An error with the given message.
  explicit TypeError(const std::string& m, LoomErrorCode c = LOOM_TYPE_ERROR) : Error(c, m) {}
};
/// An index out of range (LOOM_INDEX_ERROR).
class IndexError : public Error {
 public:
  /// An error with the given message.
  explicit IndexError(const std::string& m, LoomErrorCode c = LOOM_INDEX_ERROR) : Error(c, m) {}
};
/// Tensors on different devices, a device that is missing (LOOM_DEVICE_ERROR).
class DeviceError : public Error {
 public:
  /// An error with the given message.
  explicit DeviceError(const std::string& m, LoomErrorCode c = LOOM_DEVICE_ERROR)
      : Error(c, m) {}
};
/// No such op, or no kernel for these inputs (LOOM_NOT_IMPLEMENTED).
class NotImplementedError : public Error {
 public:
  /// An error with the given message.
  explicit NotImplementedError(const std::string& m, LoomErrorCode c = LOOM_NOT_IMPLEMENTED)
      : Error(c, m) {}
};
/// A definition or kernel that conflicts (LOOM_REGISTRATION_ERROR).
class RegistrationError : public Error {
 public:
  /// An error with the given message.
  explicit RegistrationError(const std::string& m, LoomErrorCode c = LOOM_REGISTRATION_ERROR)
      : Error(c, m) {}
};
/// A plugin file refused (LOOM_PLUGIN_ERROR).
class PluginError : public Error {
 public:
  /// An error with the given message.
  explicit PluginError(const std::string& m, LoomErrorCode c = LOOM_PLUGIN_ERROR)
      : Error(c, m) {}
};
/// Backward through a freed graph, in-place on a saved tensor (LOOM_AUTOGRAD_ERROR).
class AutogradError : public Error {
 public:
  /// An error with the given message.
  explicit AutogradError(const std::string& m, LoomErrorCode c = LOOM_AUTOGRAD_ERROR)
      : Error(c, m) {}
};
/// Misuse of the API: a null handle, a too-small buffer (LOOM_INVALID_ARGUMENT).
class InvalidArgumentError : public Error {
 public:
  /// An error with the given message.
  explicit InvalidArgumentError(const std::string& m, LoomErrorCode c = LOOM_INVALID_ARGUMENT)
      : Error(c, m) {}
};
/// An allocation failed (LOOM_OUT_OF_MEMORY).
class OutOfMemoryError : public Error {
 public:
  /// An error with the given message.
  explicit OutOfMemoryError(const std::string& m, LoomErrorCode c = LOOM_OUT_OF_MEMORY)
      : Error(c, m) {}
};

/// Throws the Error subclass of code with message (Error itself for LOOM_ERROR and codes
/// this header does not know).
[[noreturn]] LOOM_STABLE_COLD inline void throw_error(LoomErrorCode code,
                                                      const std::string& message) {
  switch (code) {
    case LOOM_VALUE_ERROR: throw ValueError(message);
    case LOOM_TYPE_ERROR: throw TypeError(message);
    case LOOM_INDEX_ERROR: throw IndexError(message);
    case LOOM_DEVICE_ERROR: throw DeviceError(message);
    case LOOM_NOT_IMPLEMENTED: throw NotImplementedError(message);
    case LOOM_REGISTRATION_ERROR: throw RegistrationError(message);
    case LOOM_PLUGIN_ERROR: throw PluginError(message);
    case LOOM_AUTOGRAD_ERROR: throw AutogradError(message);
    case LOOM_INVALID_ARGUMENT: throw InvalidArgumentError(message);
    case LOOM_OUT_OF_MEMORY: throw OutOfMemoryError(message);
    default: throw Error(code, message);
  }
}

/// @cond INTERNAL
namespace detail {
/// Fetches the table, or throws when the loaded library is older than this header.
LOOM_STABLE_COLD inline const LoomApi* fetch_api() {
  const LoomApi* table = loom_get_api(LOOM_API_VERSION);
  if (table == nullptr) {
    throw Error(LOOM_ERROR, "loom_get_api: the loaded libloom implements API version " +
                                std::to_string(loom_api_version()) +
                                ", older than version " + std::to_string(LOOM_API_VERSION) +
                                " this program was built against; install a newer Loom");
  }
  return table;
}
}  // namespace detail
/// @endcond

/// The C function table (version LOOM_API_VERSION), fetched once. Throws Error when the
/// loaded libloom is older than this header.
inline const LoomApi* api() {
  static const LoomApi* const table = detail::fetch_api();
  return table;
}

/// Throws the exception of status (and releases it); a status the caller owns.
[[noreturn]] LOOM_STABLE_COLD inline void throw_status(LoomStatus* status) {
  const LoomApi* a = api();
  const LoomErrorCode code = a->StatusCode(status);
  std::string message = a->StatusMessage(status);
  a->StatusRelease(status);
  throw_error(code, message);
}

/// Does nothing for NULL (success); otherwise throws the status as an Error subclass.
inline void check(LoomStatus* status) {
  if (status != nullptr) throw_status(status);
}

// ======================================================================================
// DType and Device
// ======================================================================================

/// A device as text: "cpu", "cuda", "cuda:0".
using Device = std::string;

/// An element type: a token looked up by name in the loaded library (never an ordinal fixed
/// at compile time, Note [Stable ABI rules]).
class DType {
 public:
  /// An invalid dtype (token -1).
  DType() = default;
  /// Wraps a token returned by the library.
  explicit DType(int32_t token) noexcept : token_(token) {}
  /// The dtype named name ("float32", "float", "int64", "long", "bool", ...); throws on an
  /// unknown name.
  static DType from_name(const char* name) {
    int32_t token = -1;
    check(api()->DTypeFromName(name, &token));
    return DType(token);
  }
  /// from_name for a std::string.
  static DType from_name(const std::string& name) { return from_name(name.c_str()); }
  /// The token (what LOOM_VALUE_DTYPE values and the C calls take).
  int32_t token() const noexcept { return token_; }
  /// The canonical name ("float32"); "invalid" for a token the library does not know.
  const char* name() const {
    const char* n = api()->DTypeName(token_);
    return n != nullptr ? n : "invalid";
  }
  /// Bytes per element.
  size_t itemsize() const {
    size_t size = 0;
    check(api()->DTypeItemSize(token_, &size));
    return size;
  }
  /// Same token.
  friend bool operator==(DType a, DType b) noexcept { return a.token_ == b.token_; }
  /// Different token.
  friend bool operator!=(DType a, DType b) noexcept { return a.token_ != b.token_; }
  /// Prints the name.
  friend std::ostream& operator<<(std::ostream& os, DType d) { return os << d.name(); }

 private:
  int32_t token_ = -1;
};

/// The dtypes by name, each looked up once and cached.
namespace dtype {
/// bool.
inline DType bool_() { static const DType d = DType::from_name("bool"); return d; }
/// uint8.
inline DType uint8() { static const DType d = DType::from_name("uint8"); return d; }
/// int8.
inline DType int8() { static const DType d = DType::from_name("int8"); return d; }
/// int16.
inline DType int16() { static const DType d = DType::from_name("int16"); return d; }
/// int32.
inline DType int32() { static const DType d = DType::from_name("int32"); return d; }
/// int64.
inline DType int64() { static const DType d = DType::from_name("int64"); return d; }
/// float16.
inline DType float16() { static const DType d = DType::from_name("float16"); return d; }
/// bfloat16.
inline DType bfloat16() { static const DType d = DType::from_name("bfloat16"); return d; }
/// float32.
inline DType float32() { static const DType d = DType::from_name("float32"); return d; }
/// float64.
inline DType float64() { static const DType d = DType::from_name("float64"); return d; }
}  // namespace dtype

/// The dtype of a C++ element type (float -> float32, int64_t -> int64, bool -> bool, ...).
template <typename T>
DType dtype_of() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, bool>) {
    return dtype::bool_();
  } else if constexpr (std::is_same_v<U, float>) {
    return dtype::float32();
  } else if constexpr (std::is_same_v<U, double>) {
    return dtype::float64();
  } else if constexpr (std::is_integral_v<U> && std::is_signed_v<U> && sizeof(U) == 8) {
    return dtype::int64();
  } else if constexpr (std::is_integral_v<U> && std::is_signed_v<U> && sizeof(U) == 4) {
    return dtype::int32();
  } else if constexpr (std::is_integral_v<U> && std::is_signed_v<U> && sizeof(U) == 2) {
    return dtype::int16();
  } else if constexpr (std::is_integral_v<U> && std::is_signed_v<U> && sizeof(U) == 1) {
    return dtype::int8();
  } else if constexpr (std::is_same_v<U, uint8_t>) {
    return dtype::uint8();
  } else {
    static_assert(std::is_same_v<U, bool>,
                  "dtype_of<T>: T must be bool, float, double, int8/16/32/64_t or uint8_t");
    return DType();
  }
}

// ======================================================================================
// Scalar and Tensor
// ======================================================================================

/// A number argument (the schema's Scalar): an integer, a floating-point value or a bool,
/// kept as the kind it was given in (so that int tensor + 1 stays int).
class Scalar {
 public:
  /// A bool.
  Scalar(bool b) noexcept {  // NOLINT(google-explicit-constructor)
    v_.kind = LOOM_VALUE_BOOL;
    v_.u.b = b;
  }
  /// An integer (any integral type but bool).
  template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>,
                                         int> = 0>
  Scalar(T i) noexcept {  // NOLINT(google-explicit-constructor)
    v_.kind = LOOM_VALUE_INT;
    v_.u.i = static_cast<int64_t>(i);
  }
  /// A floating-point value.
  template <typename T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Scalar(T f) noexcept {  // NOLINT(google-explicit-constructor)
    v_.kind = LOOM_VALUE_FLOAT;
    v_.u.f = static_cast<double>(f);
  }
  /// The boxed value (kind INT, FLOAT or BOOL).
  const LoomValue& boxed() const noexcept { return v_; }
  /// The value as a double.
  double to_double() const noexcept {
    return v_.kind == LOOM_VALUE_FLOAT ? v_.u.f
           : v_.kind == LOOM_VALUE_INT ? static_cast<double>(v_.u.i)
                                       : (v_.u.b ? 1.0 : 0.0);
  }

 private:
  LoomValue v_ = make();
  /// A zeroed value with struct_size set.
  static LoomValue make() noexcept {
    LoomValue v;
    std::memset(&v, 0, sizeof(v));
    v.struct_size = sizeof(LoomValue);
    return v;
  }
};

/// A reference-counted handle on a Loom tensor (a LoomTensor*). Copying retains, moving
/// steals, the destructor releases. A default-constructed Tensor is undefined (holds NULL,
/// as a missing gradient is).
class Tensor {
 public:
  /// An undefined tensor.
  Tensor() noexcept {}  // NOLINT(modernize-use-equals-default): used in default arguments
  /// Shares o's tensor (one more reference).
  Tensor(const Tensor& o) : ptr_(o.ptr_ != nullptr ? api()->TensorRetain(o.ptr_) : nullptr) {}
  /// Takes o's reference; o becomes undefined.
  Tensor(Tensor&& o) noexcept : ptr_(o.ptr_) { o.ptr_ = nullptr; }
  /// Shares o's tensor.
  Tensor& operator=(const Tensor& o) {
    Tensor copy(o);
    std::swap(ptr_, copy.ptr_);
    return *this;
  }
  /// Takes o's reference.
  Tensor& operator=(Tensor&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    return *this;
  }
  /// Drops the reference.
  ~Tensor() {
    if (ptr_ != nullptr) api()->TensorRelease(ptr_);
  }

  /// Takes over one reference of t (what C calls hand out); NULL gives an undefined tensor.
  static Tensor adopt(LoomTensor* t) noexcept {
    Tensor r;
    r.ptr_ = t;
    return r;
  }
  /// Shares a borrowed t (adds a reference); NULL gives an undefined tensor.
  static Tensor borrow(const LoomTensor* t) {
    return adopt(t != nullptr ? api()->TensorRetain(const_cast<LoomTensor*>(t)) : nullptr);
  }
  /// The handle (still owned by this Tensor); NULL if undefined.
  LoomTensor* get() const noexcept { return ptr_; }
  /// Gives up the reference to the caller (who must TensorRelease it); leaves this undefined.
  LoomTensor* release() noexcept {
    LoomTensor* p = ptr_;
    ptr_ = nullptr;
    return p;
  }
  /// True if a tensor is held.
  bool defined() const noexcept { return ptr_ != nullptr; }

  // ---- making tensors ----

  /// A tensor holding a copy of numel elements at data (contiguous, row-major, host memory)
  /// with the given sizes, dtype and device.
  static Tensor from_data(const void* data, const std::vector<int64_t>& sizes, DType dtype,
                          const Device& device = "cpu") {
    LoomTensor* out = nullptr;
    check(api()->TensorFromData(data, sizes.data(), sizes.size(), dtype.token(), device.c_str(),
                                &out));
    return adopt(out);
  }
  /// A tensor holding a copy of values with the given sizes (the product must be
  /// values.size()); dtype from T.
  template <typename T>
  static Tensor from_data(const std::vector<T>& values, const std::vector<int64_t>& sizes,
                          const Device& device = "cpu") {
    static_assert(!std::is_same_v<T, bool>, "from_data: std::vector<bool> has no data(); pass "
                                            "a bool array with the pointer overload");
    check_count(values.size(), sizes);
    return from_data(values.data(), sizes, dtype_of<T>(), device);
  }
  /// A 1-d tensor holding a copy of values; dtype from T.
  template <typename T>
  static Tensor from_data(const std::vector<T>& values, const Device& device = "cpu") {
    return from_data(values, {static_cast<int64_t>(values.size())}, device);
  }
  /// A tensor from a braced list with the given sizes: `from_data({1.f, 2.f, 3.f, 4.f}, {2, 2})`.
  template <typename T>
  static Tensor from_data(std::initializer_list<T> values, const std::vector<int64_t>& sizes,
                          const Device& device = "cpu") {
    check_count(values.size(), sizes);
    return from_data(values.begin(), sizes, dtype_of<T>(), device);
  }
  /// A 1-d tensor from a braced list: `from_data({1.0, 2.0})` (float64).
  template <typename T>
  static Tensor from_data(std::initializer_list<T> values) {
    return from_data(values.begin(), {static_cast<int64_t>(values.size())}, dtype_of<T>(), "cpu");
  }
  /// A 0-dim tensor holding v; dtype from T.
  template <typename T>
  static Tensor scalar(T v, const Device& device = "cpu") {
    return from_data(&v, {}, dtype_of<T>(), device);
  }
  /// Uninitialised memory.
  static Tensor empty(const std::vector<int64_t>& sizes, DType dtype = dtype::float32(),
                      const Device& device = "cpu") {
    LoomTensor* out = nullptr;
    check(api()->TensorEmpty(sizes.data(), sizes.size(), dtype.token(), device.c_str(), &out));
    return adopt(out);
  }
  /// Zeros.
  static Tensor zeros(const std::vector<int64_t>& sizes, DType dtype = dtype::float32(),
                      const Device& device = "cpu") {
    LoomTensor* out = nullptr;
    check(api()->TensorZeros(sizes.data(), sizes.size(), dtype.token(), device.c_str(), &out));
    return adopt(out);
  }
  /// Ones (aten::ones).
  static Tensor ones(const std::vector<int64_t>& sizes, DType dtype = dtype::float32(),
                     const Device& device = "cpu");
  /// Every element fill_value (aten::full).
  static Tensor full(const std::vector<int64_t>& sizes, const Scalar& fill_value,
                     DType dtype = dtype::float32(), const Device& device = "cpu");
  /// Uniform samples in [0, 1) (aten::rand; seeded by manual_seed).
  static Tensor rand(const std::vector<int64_t>& sizes, DType dtype = dtype::float32(),
                     const Device& device = "cpu");
  /// Standard normal samples (aten::randn; seeded by manual_seed).
  static Tensor randn(const std::vector<int64_t>& sizes, DType dtype = dtype::float32(),
                      const Device& device = "cpu");
  /// 0, 1, ..., end - 1 (aten::arange; int64 unless dtype is given).
  static Tensor arange(int64_t end, std::optional<DType> dtype = std::nullopt,
                       const Device& device = "cpu");

  // ---- metadata ----

  /// Number of dimensions.
  int64_t dim() const {
    size_t n = 0;
    check(api()->TensorDim(ptr_, &n));
    return static_cast<int64_t>(n);
  }
  /// Number of elements.
  int64_t numel() const {
    int64_t n = 0;
    check(api()->TensorNumel(ptr_, &n));
    return n;
  }
  /// Sizes.
  std::vector<int64_t> sizes() const { return dims(api()->TensorSizes); }
  /// Strides, in elements.
  std::vector<int64_t> strides() const { return dims(api()->TensorStrides); }
  /// Size of dim (negative counts from the end); throws IndexError out of range.
  int64_t size(int64_t dim) const { return sizes()[wrap_dim(dim, "size")]; }
  /// Stride of dim (negative counts from the end); throws IndexError out of range.
  int64_t stride(int64_t dim) const { return strides()[wrap_dim(dim, "stride")]; }
  /// Element type.
  DType dtype() const {
    int32_t token = -1;
    check(api()->TensorDType(ptr_, &token));
    return DType(token);
  }
  /// Device as text ("cpu", "cuda:0").
  Device device() const {
    char buf[64];
    check(api()->TensorDevice(ptr_, buf, sizeof(buf)));
    return Device(buf);
  }
  /// True if the tensor lives on a CUDA device.
  bool is_cuda() const { return device().compare(0, 4, "cuda") == 0; }
  /// Address of element 0 (storage offset applied); nullptr for 0 elements.
  void* data_ptr() const {
    void* p = nullptr;
    check(api()->TensorDataPtr(ptr_, &p));
    return p;
  }
  /// Typed address of element 0; throws TypeError if T does not match dtype().
  template <typename T>
  T* data_ptr() const {
    check_element_type<T>("data_ptr");
    return static_cast<T*>(data_ptr());
  }
  /// The elements in row-major order, copied to the host (any strides, any device); throws
  /// TypeError if T does not match dtype().
  template <typename T>
  std::vector<T> to_vector() const {
    check_element_type<T>("to_vector");
    const auto n = static_cast<size_t>(numel());
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<unsigned char> raw(n);
      check(api()->TensorCopyToHost(ptr_, raw.data(), n));
      return std::vector<bool>(raw.begin(), raw.end());
    } else {
      std::vector<T> out(n);
      check(api()->TensorCopyToHost(ptr_, out.data(), n * sizeof(T)));
      return out;
    }
  }
  /// The value of a one-element tensor, converted from double to T.
  template <typename T = double>
  T item() const {
    double v = 0;
    check(api()->TensorItem(ptr_, &v));
    return static_cast<T>(v);
  }
  /// "[2, 3] cpu float32": Loom's description, as error messages show tensors.
  std::string describe() const {
    if (ptr_ == nullptr) return "undefined tensor";
    char buf[256];
    LoomStatus* st = api()->TensorDescribe(ptr_, buf, sizeof(buf));
    if (st == nullptr) return buf;
    api()->StatusRelease(st);
    std::vector<char> big(1 << 16);
    check(api()->TensorDescribe(ptr_, big.data(), big.size()));
    return big.data();
  }
  /// Prints describe().
  friend std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.describe(); }

  // ---- autograd ----

  /// Whether the tensor records operations for gradients.
  bool requires_grad() const {
    bool r = false;
    check(api()->TensorRequiresGrad(ptr_, &r));
    return r;
  }
  /// Sets requires_grad on a leaf floating-point tensor; returns *this.
  Tensor& set_requires_grad(bool requires_grad = true) {
    check(api()->TensorSetRequiresGrad(ptr_, requires_grad));
    return *this;
  }
  /// The accumulated gradient (undefined if none).
  Tensor grad() const {
    LoomTensor* g = nullptr;
    check(api()->TensorGrad(ptr_, &g));
    return adopt(g);
  }
  /// Replaces the gradient (an undefined grad removes it, as zero_grad(set_to_none=True)).
  void set_grad(const Tensor& grad) { check(api()->TensorSetGrad(ptr_, grad.get())); }
  /// A tensor sharing the data, cut from the graph.
  Tensor detach() const {
    LoomTensor* out = nullptr;
    check(api()->TensorDetach(ptr_, &out));
    return adopt(out);
  }
  /// Backpropagates from this tensor. Without grad it must have one element (ones are used);
  /// retain_graph keeps the graph for another backward.
  void backward(const Tensor& grad = Tensor(), bool retain_graph = false) const {
    check(api()->Backward(ptr_, grad.get(), retain_graph));
  }

  // ---- ops (each calls one registered op by name; see Note [Stable wrapper costs]) ----

  /// aten::reshape.
  Tensor reshape(const std::vector<int64_t>& shape) const;
  /// aten::view.
  Tensor view(const std::vector<int64_t>& size) const;
  /// aten::flatten.using_ints.
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  /// aten::squeeze.
  Tensor squeeze() const;
  /// aten::squeeze.dim.
  Tensor squeeze(int64_t dim) const;
  /// aten::unsqueeze.
  Tensor unsqueeze(int64_t dim) const;
  /// aten::transpose.int.
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  /// aten::permute.
  Tensor permute(const std::vector<int64_t>& dims) const;
  /// aten::t (2-d transpose).
  Tensor t() const;
  /// aten::expand.
  Tensor expand(const std::vector<int64_t>& size) const;
  /// aten::narrow.
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  /// aten::select.int.
  Tensor select(int64_t dim, int64_t index) const;
  /// aten::contiguous.
  Tensor contiguous() const;
  /// aten::clone.
  Tensor clone() const;
  /// A copy converted to dtype (aten::to.dtype; *this when it already has it).
  Tensor to(DType dtype) const;
  /// A copy on device (*this when it is already there); differentiable.
  Tensor to(const Device& device) const;
  /// to(std::string(device)).
  Tensor to(const char* device) const { return to(Device(device)); }
  /// to("cpu").
  Tensor cpu() const { return to(Device("cpu")); }

  /// aten::neg.
  Tensor neg() const;
  /// aten::abs.
  Tensor abs() const;
  /// aten::exp.
  Tensor exp() const;
  /// aten::log.
  Tensor log() const;
  /// aten::sqrt.
  Tensor sqrt() const;
  /// aten::rsqrt.
  Tensor rsqrt() const;
  /// aten::sin.
  Tensor sin() const;
  /// aten::cos.
  Tensor cos() const;
  /// aten::tanh.
  Tensor tanh() const;
  /// aten::sigmoid.
  Tensor sigmoid() const;
  /// aten::relu.
  Tensor relu() const;
  /// aten::silu.
  Tensor silu() const;
  /// aten::reciprocal.
  Tensor reciprocal() const;
  /// aten::clamp (either bound may be omitted).
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  /// aten::pow.Tensor_Scalar.
  Tensor pow(const Scalar& exponent) const;
  /// aten::pow.Tensor_Tensor.
  Tensor pow(const Tensor& exponent) const;

  /// aten::add.Tensor: *this + alpha * other.
  Tensor add(const Tensor& other, const Scalar& alpha) const;
  /// aten::add.Tensor with alpha 1.
  Tensor add(const Tensor& other) const;
  /// aten::add.Scalar.
  Tensor add(const Scalar& other) const;
  /// aten::sub.Tensor: *this - alpha * other.
  Tensor sub(const Tensor& other, const Scalar& alpha) const;
  /// aten::sub.Tensor with alpha 1.
  Tensor sub(const Tensor& other) const;
  /// aten::sub.Scalar.
  Tensor sub(const Scalar& other) const;
  /// aten::mul.Tensor.
  Tensor mul(const Tensor& other) const;
  /// aten::mul.Scalar.
  Tensor mul(const Scalar& other) const;
  /// aten::div.Tensor.
  Tensor div(const Tensor& other) const;
  /// aten::div.Scalar.
  Tensor div(const Scalar& other) const;
  /// aten::maximum.
  Tensor maximum(const Tensor& other) const;
  /// aten::minimum.
  Tensor minimum(const Tensor& other) const;
  /// aten::eq.Tensor.
  Tensor eq(const Tensor& other) const;
  /// aten::eq.Scalar.
  Tensor eq(const Scalar& other) const;
  /// aten::ne.Tensor.
  Tensor ne(const Tensor& other) const;
  /// aten::ne.Scalar.
  Tensor ne(const Scalar& other) const;
  /// aten::lt.Tensor.
  Tensor lt(const Tensor& other) const;
  /// aten::lt.Scalar.
  Tensor lt(const Scalar& other) const;
  /// aten::le.Tensor.
  Tensor le(const Tensor& other) const;
  /// aten::le.Scalar.
  Tensor le(const Scalar& other) const;
  /// aten::gt.Tensor.
  Tensor gt(const Tensor& other) const;
  /// aten::gt.Scalar.
  Tensor gt(const Scalar& other) const;
  /// aten::ge.Tensor.
  Tensor ge(const Tensor& other) const;
  /// aten::ge.Scalar.
  Tensor ge(const Scalar& other) const;

  /// aten::sum over every element.
  Tensor sum() const;
  /// aten::sum.dim_IntList.
  Tensor sum(const std::vector<int64_t>& dims, bool keepdim = false) const;
  /// aten::mean over every element.
  Tensor mean() const;
  /// aten::mean.dim.
  Tensor mean(const std::vector<int64_t>& dims, bool keepdim = false) const;
  /// aten::max over every element.
  Tensor max() const;
  /// aten::min over every element.
  Tensor min() const;
  /// aten::argmax (over the flattened tensor when dim is omitted).
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  /// aten::norm.Scalar.
  Tensor norm(const Scalar& p) const;
  /// aten::norm.Scalar with p = 2.
  Tensor norm() const;
  /// aten::softmax.int.
  Tensor softmax(int64_t dim) const;
  /// aten::log_softmax.int.
  Tensor log_softmax(int64_t dim) const;

  /// aten::matmul.
  Tensor matmul(const Tensor& other) const;
  /// aten::mm.
  Tensor mm(const Tensor& mat2) const;
  /// aten::bmm.
  Tensor bmm(const Tensor& mat2) const;
  /// aten::dot.
  Tensor dot(const Tensor& other) const;

  /// aten::copy_: copies src (broadcast, converted) into *this.
  Tensor& copy_(const Tensor& src);
  /// aten::fill_.Scalar.
  Tensor& fill_(const Scalar& value);
  /// aten::zero_.
  Tensor& zero_();
  /// aten::add_.Tensor: *this += alpha * other.
  Tensor& add_(const Tensor& other, const Scalar& alpha);
  /// aten::add_.Tensor with alpha 1.
  Tensor& add_(const Tensor& other);
  /// aten::sub_.Tensor: *this -= alpha * other.
  Tensor& sub_(const Tensor& other, const Scalar& alpha);
  /// aten::sub_.Tensor with alpha 1.
  Tensor& sub_(const Tensor& other);
  /// aten::mul_.Tensor.
  Tensor& mul_(const Tensor& other);
  /// aten::mul_.Scalar.
  Tensor& mul_(const Scalar& other);

 private:
  /// Throws ValueError unless sizes hold count elements.
  static void check_count(size_t count, const std::vector<int64_t>& sizes) {
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    if (n != static_cast<int64_t>(count)) {
      std::string shape = "[";
      for (size_t i = 0; i < sizes.size(); ++i) {
        shape += (i ? ", " : "") + std::to_string(sizes[i]);
      }
      throw ValueError("Tensor::from_data: " + std::to_string(count) +
                       " values do not fill sizes " + shape + "] (" + std::to_string(n) +
                       " elements)");
    }
  }
  /// Reads sizes or strides through entry fn.
  std::vector<int64_t> dims(LoomStatus* (*fn)(const LoomTensor*, int64_t*, size_t,
                                              size_t*)) const {
    int64_t buf[8];
    size_t n = 0;
    LoomStatus* st = fn(ptr_, buf, 8, &n);
    if (st == nullptr) return std::vector<int64_t>(buf, buf + n);
    if (n <= 8) throw_status(st);
    api()->StatusRelease(st);
    std::vector<int64_t> out(n);
    check(fn(ptr_, out.data(), out.size(), &n));
    return out;
  }
  /// dim wrapped into [0, dim()), or IndexError naming fn.
  size_t wrap_dim(int64_t d, const char* fn) const {
    const int64_t n = dim();
    const int64_t w = d < 0 ? d + n : d;
    if (w < 0 || w >= n) {
      throw IndexError(std::string(fn) + ": dimension " + std::to_string(d) +
                       " out of range for a " + std::to_string(n) + "-d tensor " + describe());
    }
    return static_cast<size_t>(w);
  }
  /// Throws TypeError if T is not the element type.
  template <typename T>
  void check_element_type(const char* fn) const {
    const DType want = dtype_of<T>();
    const DType have = dtype();
    if (want != have) {
      throw TypeError(std::string("Tensor::") + fn + "<" + want.name() + ">: the tensor " +
                      describe() + " holds " + have.name() + " elements");
    }
  }

  LoomTensor* ptr_ = nullptr;
};

// Note [Tensor lists without copies]: a std::vector<Tensor> is handed to the C ABI as its
// array of LoomTensor* (a Tensor is exactly one pointer, standard layout), so boxing a
// Tensor[] argument allocates nothing.
static_assert(sizeof(Tensor) == sizeof(LoomTensor*) && std::is_standard_layout_v<Tensor>,
              "Tensor must be exactly one LoomTensor* (Note [Tensor lists without copies])");

// ======================================================================================
// Value
// ======================================================================================

/// The kind of a Value (the LOOM_VALUE_* kinds).
enum class ValueKind : int32_t {
  None = LOOM_VALUE_NONE,              ///< None
  Tensor = LOOM_VALUE_TENSOR,          ///< a tensor
  Int = LOOM_VALUE_INT,                ///< int64
  Float = LOOM_VALUE_FLOAT,            ///< double
  Bool = LOOM_VALUE_BOOL,              ///< bool
  String = LOOM_VALUE_STRING,          ///< a string
  IntList = LOOM_VALUE_INT_LIST,       ///< int64[]
  TensorList = LOOM_VALUE_TENSOR_LIST, ///< Tensor[]
  FloatList = LOOM_VALUE_FLOAT_LIST,   ///< double[]
  DType = LOOM_VALUE_DTYPE,            ///< a dtype
};

/// The name of a kind ("Tensor", "int", ...), for messages.
inline const char* kind_name(ValueKind k) {
  switch (k) {
    case ValueKind::None: return "None";
    case ValueKind::Tensor: return "Tensor";
    case ValueKind::Int: return "int";
    case ValueKind::Float: return "float";
    case ValueKind::Bool: return "bool";
    case ValueKind::String: return "str";
    case ValueKind::IntList: return "int[]";
    case ValueKind::TensorList: return "Tensor[]";
    case ValueKind::FloatList: return "float[]";
    case ValueKind::DType: return "ScalarType";
  }
  return "unknown";
}

/// An owned op argument or return: None, a Tensor, an int, a float, a bool, a string, an int
/// list, a float list, a tensor list or a dtype. What Op::call returns and what kernels
/// registered from C++ receive (copies of the borrowed C values).
class Value {
 public:
  /// None.
  Value() noexcept = default;
  /// None.
  Value(std::nullopt_t) noexcept {}  // NOLINT(google-explicit-constructor)
  /// A tensor (an undefined one boxes as a NULL tensor).
  Value(Tensor t) : kind_(ValueKind::Tensor), tensor_(std::move(t)) {}  // NOLINT
  /// A bool.
  Value(bool b) noexcept : kind_(ValueKind::Bool) { b_ = b; }  // NOLINT
  /// An integer.
  template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>,
                                         int> = 0>
  Value(T i) noexcept : kind_(ValueKind::Int) {  // NOLINT(google-explicit-constructor)
    i_ = static_cast<int64_t>(i);
  }
  /// A floating-point value.
  template <typename T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Value(T f) noexcept : kind_(ValueKind::Float) {  // NOLINT(google-explicit-constructor)
    f_ = static_cast<double>(f);
  }
  /// A Scalar (INT, FLOAT or BOOL).
  Value(const Scalar& s) noexcept  // NOLINT(google-explicit-constructor)
      : kind_(static_cast<ValueKind>(s.boxed().kind)) {
    const LoomValue& v = s.boxed();
    if (v.kind == LOOM_VALUE_INT) i_ = v.u.i;
    if (v.kind == LOOM_VALUE_FLOAT) f_ = v.u.f;
    if (v.kind == LOOM_VALUE_BOOL) b_ = v.u.b;
  }
  /// A string.
  Value(std::string s) : kind_(ValueKind::String), s_(std::move(s)) {}  // NOLINT
  /// A string.
  Value(const char* s) : kind_(ValueKind::String), s_(s) {}  // NOLINT
  /// An int list.
  Value(std::vector<int64_t> v) : kind_(ValueKind::IntList), ints_(std::move(v)) {}  // NOLINT
  /// A float list.
  Value(std::vector<double> v) : kind_(ValueKind::FloatList), floats_(std::move(v)) {}  // NOLINT
  /// A tensor list.
  Value(std::vector<Tensor> v)  // NOLINT(google-explicit-constructor)
      : kind_(ValueKind::TensorList), tensors_(std::move(v)) {}
  /// A dtype.
  Value(DType d) noexcept : kind_(ValueKind::DType) { i_ = d.token(); }  // NOLINT

  /// A copy of a C value (tensors retained, strings and lists copied); v stays the caller's.
  static Value from_borrowed(const LoomValue& v) {
    switch (v.kind) {
      case LOOM_VALUE_NONE: return Value();
      case LOOM_VALUE_TENSOR: return Value(Tensor::borrow(v.u.tensor));
      case LOOM_VALUE_INT: return Value(v.u.i);
      case LOOM_VALUE_FLOAT: return Value(v.u.f);
      case LOOM_VALUE_BOOL: return Value(v.u.b);
      case LOOM_VALUE_STRING: return Value(v.u.s != nullptr ? v.u.s : "");
      case LOOM_VALUE_INT_LIST:
        return Value(std::vector<int64_t>(v.u.ints.data, v.u.ints.data + v.u.ints.size));
      case LOOM_VALUE_FLOAT_LIST:
        return Value(std::vector<double>(v.u.floats.data, v.u.floats.data + v.u.floats.size));
      case LOOM_VALUE_TENSOR_LIST: {
        std::vector<Tensor> ts;
        ts.reserve(v.u.tensors.size);
        for (size_t i = 0; i < v.u.tensors.size; ++i) {
          ts.push_back(Tensor::borrow(v.u.tensors.data[i]));
        }
        return Value(std::move(ts));
      }
      case LOOM_VALUE_DTYPE: return Value(DType(static_cast<int32_t>(v.u.i)));
      default:
        throw TypeError("Value: unknown LoomValue kind " + std::to_string(v.kind) +
                        " (a newer library than this header?)");
    }
  }
  /// Takes over a value the library handed out: a tensor is adopted (v is left None); other
  /// kinds are copied and stay v's (release v with ValuesRelease as usual).
  static Value adopt(LoomValue& v) {
    if (v.kind == LOOM_VALUE_TENSOR) {
      Value r(Tensor::adopt(v.u.tensor));
      v.kind = LOOM_VALUE_NONE;
      v.u.tensor = nullptr;
      return r;
    }
    return from_borrowed(v);
  }

  /// The kind.
  ValueKind kind() const noexcept { return kind_; }
  /// True for None.
  bool is_none() const noexcept { return kind_ == ValueKind::None; }
  /// True for a tensor.
  bool is_tensor() const noexcept { return kind_ == ValueKind::Tensor; }
  /// True for an int.
  bool is_int() const noexcept { return kind_ == ValueKind::Int; }
  /// True for a float.
  bool is_double() const noexcept { return kind_ == ValueKind::Float; }
  /// True for a bool.
  bool is_bool() const noexcept { return kind_ == ValueKind::Bool; }
  /// True for a string.
  bool is_string() const noexcept { return kind_ == ValueKind::String; }

  /// The tensor; throws TypeError for another kind.
  const Tensor& to_tensor() const {
    expect(ValueKind::Tensor);
    return tensor_;
  }
  /// The int (a bool converts); throws TypeError for another kind.
  int64_t to_int() const {
    if (kind_ == ValueKind::Bool) return b_ ? 1 : 0;
    expect(ValueKind::Int);
    return i_;
  }
  /// The number as a double (an int or bool converts); throws TypeError for another kind.
  double to_double() const {
    if (kind_ == ValueKind::Int) return static_cast<double>(i_);
    if (kind_ == ValueKind::Bool) return b_ ? 1.0 : 0.0;
    expect(ValueKind::Float);
    return f_;
  }
  /// The bool; throws TypeError for another kind.
  bool to_bool() const {
    expect(ValueKind::Bool);
    return b_;
  }
  /// The string; throws TypeError for another kind.
  const std::string& to_string() const {
    expect(ValueKind::String);
    return s_;
  }
  /// The int list; throws TypeError for another kind.
  const std::vector<int64_t>& to_int_list() const {
    expect(ValueKind::IntList);
    return ints_;
  }
  /// The float list; throws TypeError for another kind.
  const std::vector<double>& to_double_list() const {
    expect(ValueKind::FloatList);
    return floats_;
  }
  /// The tensor list; throws TypeError for another kind.
  const std::vector<Tensor>& to_tensor_list() const {
    expect(ValueKind::TensorList);
    return tensors_;
  }
  /// The dtype; throws TypeError for another kind.
  DType to_dtype() const {
    expect(ValueKind::DType);
    return DType(static_cast<int32_t>(i_));
  }
  /// The number as a Scalar (INT, FLOAT or BOOL); throws TypeError for another kind.
  Scalar to_scalar() const {
    if (kind_ == ValueKind::Int) return Scalar(i_);
    if (kind_ == ValueKind::Bool) return Scalar(b_);
    expect(ValueKind::Float);
    return Scalar(f_);
  }

  /// Writes a borrowed C view of this value into out (valid while this Value lives).
  void box(LoomValue& out) const noexcept {
    out.kind = static_cast<LoomValueKind>(kind_);
    switch (kind_) {
      case ValueKind::None: break;
      case ValueKind::Tensor: out.u.tensor = tensor_.get(); break;
      case ValueKind::Int:
      case ValueKind::DType: out.u.i = i_; break;
      case ValueKind::Float: out.u.f = f_; break;
      case ValueKind::Bool: out.u.b = b_; break;
      case ValueKind::String: out.u.s = s_.c_str(); break;
      case ValueKind::IntList:
        out.u.ints.data = ints_.data();
        out.u.ints.size = ints_.size();
        break;
      case ValueKind::FloatList:
        out.u.floats.data = floats_.data();
        out.u.floats.size = floats_.size();
        break;
      case ValueKind::TensorList:
        out.u.tensors.data = reinterpret_cast<LoomTensor* const*>(tensors_.data());
        out.u.tensors.size = tensors_.size();
        break;
    }
  }

 private:
  /// Throws TypeError unless the kind is k.
  void expect(ValueKind k) const {
    if (kind_ != k) {
      throw TypeError(std::string("Value: expected ") + kind_name(k) + ", got " +
                      kind_name(kind_));
    }
  }

  ValueKind kind_ = ValueKind::None;
  Tensor tensor_;
  int64_t i_ = 0;
  double f_ = 0;
  bool b_ = false;
  std::string s_;
  std::vector<int64_t> ints_;
  std::vector<double> floats_;
  std::vector<Tensor> tensors_;
};

/// @cond INTERNAL
namespace detail {
template <typename T>
struct is_optional : std::false_type {};
template <typename T>
struct is_optional<std::optional<T>> : std::true_type {};
template <typename T>
inline constexpr bool dependent_false = false;

/// A zeroed LoomValue with struct_size set.
inline void clear(LoomValue& v) noexcept {
  std::memset(&v, 0, sizeof(v));
  v.struct_size = sizeof(LoomValue);
}

/// Boxes one C++ argument into v (a borrowed view: x must outlive the call).
template <typename A>
void box(LoomValue& v, const A& x) {
  using D = std::decay_t<A>;
  if constexpr (std::is_same_v<D, Tensor>) {
    v.kind = LOOM_VALUE_TENSOR;
    v.u.tensor = x.get();
  } else if constexpr (std::is_same_v<D, bool>) {
    v.kind = LOOM_VALUE_BOOL;
    v.u.b = x;
  } else if constexpr (std::is_integral_v<D>) {
    v.kind = LOOM_VALUE_INT;
    v.u.i = static_cast<int64_t>(x);
  } else if constexpr (std::is_floating_point_v<D>) {
    v.kind = LOOM_VALUE_FLOAT;
    v.u.f = static_cast<double>(x);
  } else if constexpr (std::is_same_v<D, const char*> || std::is_same_v<D, char*>) {
    v.kind = LOOM_VALUE_STRING;
    v.u.s = x;
  } else if constexpr (std::is_same_v<D, std::string>) {
    v.kind = LOOM_VALUE_STRING;
    v.u.s = x.c_str();
  } else if constexpr (std::is_same_v<D, std::vector<int64_t>>) {
    v.kind = LOOM_VALUE_INT_LIST;
    v.u.ints.data = x.data();
    v.u.ints.size = x.size();
  } else if constexpr (std::is_same_v<D, std::vector<double>>) {
    v.kind = LOOM_VALUE_FLOAT_LIST;
    v.u.floats.data = x.data();
    v.u.floats.size = x.size();
  } else if constexpr (std::is_same_v<D, std::vector<Tensor>>) {
    v.kind = LOOM_VALUE_TENSOR_LIST;
    v.u.tensors.data = reinterpret_cast<LoomTensor* const*>(x.data());
    v.u.tensors.size = x.size();
  } else if constexpr (std::is_same_v<D, std::nullopt_t>) {
    v.kind = LOOM_VALUE_NONE;
  } else if constexpr (is_optional<D>::value) {
    if (x.has_value()) {
      box(v, *x);
    } else {
      v.kind = LOOM_VALUE_NONE;
    }
  } else if constexpr (std::is_same_v<D, DType>) {
    v.kind = LOOM_VALUE_DTYPE;
    v.u.i = x.token();
  } else if constexpr (std::is_same_v<D, Scalar>) {
    v.kind = x.boxed().kind;
    v.u = x.boxed().u;
  } else if constexpr (std::is_same_v<D, Value>) {
    x.box(v);
  } else if constexpr (std::is_same_v<D, LoomValue>) {
    v = x;
    v.struct_size = sizeof(LoomValue);
  } else {
    static_assert(dependent_false<D>,
                  "Op::call: an argument must be a Tensor, bool, integer, floating-point, "
                  "const char*/std::string, std::vector<int64_t>/<double>/<Tensor>, "
                  "std::nullopt/std::optional, DType, Scalar or Value");
  }
}
}  // namespace detail
/// @endcond

// ======================================================================================
// Op
// ======================================================================================

/// A registered operator, found once by name and called with boxed arguments in schema order
/// (trailing defaults may be omitted). Cheap to copy (a pointer valid for the process).
class Op {
 public:
  /// The most returns Op::call collects.
  static constexpr size_t kMaxReturns = 8;

  /// No op.
  Op() noexcept = default;
  /// Wraps a handle from OpFind.
  explicit Op(const LoomOp* op) noexcept : op_(op) {}
  /// The op named name ("aten::mm", "add.Tensor", "myops::scale"); throws
  /// NotImplementedError naming close matches for an unknown name.
  static Op find(const char* name) {
    const LoomOp* op = nullptr;
    check(api()->OpFind(name, &op));
    return Op(op);
  }
  /// find for a std::string.
  static Op find(const std::string& name) { return find(name.c_str()); }
  /// The handle.
  const LoomOp* get() const noexcept { return op_; }
  /// True if an op is held.
  explicit operator bool() const noexcept { return op_ != nullptr; }
  /// The schema text.
  std::string schema() const {
    const char* s = api()->OpSchema(op_);
    return s != nullptr ? s : "";
  }

  /// Calls the op with already boxed arguments; returns every return.
  std::vector<Value> call_boxed(const LoomValue* args, size_t num_args) const {
    std::array<LoomValue, kMaxReturns> rets;
    for (LoomValue& r : rets) detail::clear(r);
    size_t n = 0;
    check(api()->OpCall(op_, args, num_args, rets.data(), rets.size(), &n));
    std::vector<Value> out;
    out.reserve(n);
    for (size_t i = 0; i < n; ++i) out.push_back(Value::adopt(rets[i]));
    api()->ValuesRelease(rets.data(), n);
    return out;
  }
  /// Calls the op with already boxed arguments; returns its first return, which must be a
  /// tensor (TypeError otherwise).
  Tensor call_boxed_tensor(const LoomValue* args, size_t num_args) const {
    std::array<LoomValue, 2> rets;
    detail::clear(rets[0]);
    detail::clear(rets[1]);
    size_t n = 0;
    check(api()->OpCall(op_, args, num_args, rets.data(), rets.size(), &n));
    if (n >= 1 && rets[0].kind == LOOM_VALUE_TENSOR) {
      Tensor t = Tensor::adopt(rets[0].u.tensor);
      rets[0].kind = LOOM_VALUE_NONE;
      if (n > 1) api()->ValuesRelease(rets.data() + 1, n - 1);
      return t;
    }
    api()->ValuesRelease(rets.data(), n);
    throw_not_a_tensor(n == 0 ? ValueKind::None : static_cast<ValueKind>(rets[0].kind));
  }

  /// Calls the op: each argument is boxed (Tensor, bool, integers, floats, strings,
  /// std::vector<int64_t>/<double>/<Tensor>, std::nullopt, std::optional, DType, Scalar,
  /// Value) into a stack array; returns every return.
  template <typename... A>
  std::vector<Value> call(const A&... args) const {
    std::array<LoomValue, sizeof...(A) == 0 ? 1 : sizeof...(A)> boxed;
    box_all(boxed, args...);
    return call_boxed(boxed.data(), sizeof...(A));
  }
  /// Calls the op like call and returns its first return as a Tensor.
  template <typename... A>
  Tensor call_tensor(const A&... args) const {
    std::array<LoomValue, sizeof...(A) == 0 ? 1 : sizeof...(A)> boxed;
    box_all(boxed, args...);
    return call_boxed_tensor(boxed.data(), sizeof...(A));
  }

 private:
  /// Boxes args into boxed.
  template <size_t N, typename... A>
  static void box_all(std::array<LoomValue, N>& boxed, const A&... args) {
    for (LoomValue& v : boxed) detail::clear(v);
    size_t i = 0;
    (detail::box(boxed[i++], args), ...);
    (void)i;
  }
  /// The TypeError of call_tensor on an op whose first return is not a tensor.
  [[noreturn]] LOOM_STABLE_COLD void throw_not_a_tensor(ValueKind got) const {
    throw TypeError("Op::call_tensor: " + schema() + " returned " + kind_name(got) +
                    ", not a Tensor; use Op::call");
  }

  const LoomOp* op_ = nullptr;
};

/// @cond INTERNAL
/// The op of a method, found on first use (a static local per call site).
#define LOOM_STABLE_OP(NAME)                                  \
  ([]() -> const ::loom::stable::Op& {                        \
    static const ::loom::stable::Op op = ::loom::stable::Op::find(NAME); \
    return op;                                                \
  }())
/// @endcond

// ---- Tensor's op methods ----

inline Tensor Tensor::ones(const std::vector<int64_t>& sizes, DType dtype, const Device& device) {
  return LOOM_STABLE_OP("aten::ones").call_tensor(sizes, dtype, std::nullopt, device);
}
inline Tensor Tensor::full(const std::vector<int64_t>& sizes, const Scalar& fill_value,
                           DType dtype, const Device& device) {
  return LOOM_STABLE_OP("aten::full").call_tensor(sizes, fill_value, dtype, std::nullopt, device);
}
inline Tensor Tensor::rand(const std::vector<int64_t>& sizes, DType dtype, const Device& device) {
  return LOOM_STABLE_OP("aten::rand").call_tensor(sizes, dtype, std::nullopt, device);
}
inline Tensor Tensor::randn(const std::vector<int64_t>& sizes, DType dtype,
                            const Device& device) {
  return LOOM_STABLE_OP("aten::randn").call_tensor(sizes, dtype, std::nullopt, device);
}
inline Tensor Tensor::arange(int64_t end, std::optional<DType> dtype, const Device& device) {
  return LOOM_STABLE_OP("aten::arange").call_tensor(end, dtype, std::nullopt, device);
}

inline Tensor Tensor::reshape(const std::vector<int64_t>& shape) const {
  return LOOM_STABLE_OP("aten::reshape").call_tensor(*this, shape);
}
inline Tensor Tensor::view(const std::vector<int64_t>& size) const {
  return LOOM_STABLE_OP("aten::view").call_tensor(*this, size);
}
inline Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  return LOOM_STABLE_OP("aten::flatten.using_ints").call_tensor(*this, start_dim, end_dim);
}
inline Tensor Tensor::squeeze() const {
  return LOOM_STABLE_OP("aten::squeeze").call_tensor(*this);
}
inline Tensor Tensor::squeeze(int64_t dim) const {
  return LOOM_STABLE_OP("aten::squeeze.dim").call_tensor(*this, dim);
}
inline Tensor Tensor::unsqueeze(int64_t dim) const {
  return LOOM_STABLE_OP("aten::unsqueeze").call_tensor(*this, dim);
}
inline Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  return LOOM_STABLE_OP("aten::transpose.int").call_tensor(*this, dim0, dim1);
}
inline Tensor Tensor::permute(const std::vector<int64_t>& dims) const {
  return LOOM_STABLE_OP("aten::permute").call_tensor(*this, dims);
}
inline Tensor Tensor::t() const { return LOOM_STABLE_OP("aten::t").call_tensor(*this); }
inline Tensor Tensor::expand(const std::vector<int64_t>& size) const {
  return LOOM_STABLE_OP("aten::expand").call_tensor(*this, size);
}
inline Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const {
  return LOOM_STABLE_OP("aten::narrow").call_tensor(*this, dim, start, length);
}
inline Tensor Tensor::select(int64_t dim, int64_t index) const {
  return LOOM_STABLE_OP("aten::select.int").call_tensor(*this, dim, index);
}
inline Tensor Tensor::contiguous() const {
  return LOOM_STABLE_OP("aten::contiguous").call_tensor(*this);
}
inline Tensor Tensor::clone() const { return LOOM_STABLE_OP("aten::clone").call_tensor(*this); }
inline Tensor Tensor::to(DType dtype) const {
  if (this->dtype() == dtype) return *this;
  return LOOM_STABLE_OP("aten::to.dtype").call_tensor(*this, dtype);
}
inline Tensor Tensor::to(const Device& device) const {
  if (this->device() == device) return *this;
  Tensor out = empty(sizes(), dtype(), device);
  out.copy_(*this);
  return out;
}

inline Tensor Tensor::neg() const { return LOOM_STABLE_OP("aten::neg").call_tensor(*this); }
inline Tensor Tensor::abs() const { return LOOM_STABLE_OP("aten::abs").call_tensor(*this); }
inline Tensor Tensor::exp() const { return LOOM_STABLE_OP("aten::exp").call_tensor(*this); }
inline Tensor Tensor::log() const { return LOOM_STABLE_OP("aten::log").call_tensor(*this); }
inline Tensor Tensor::sqrt() const { return LOOM_STABLE_OP("aten::sqrt").call_tensor(*this); }
inline Tensor Tensor::rsqrt() const { return LOOM_STABLE_OP("aten::rsqrt").call_tensor(*this); }
inline Tensor Tensor::sin() const { return LOOM_STABLE_OP("aten::sin").call_tensor(*this); }
inline Tensor Tensor::cos() const { return LOOM_STABLE_OP("aten::cos").call_tensor(*this); }
inline Tensor Tensor::tanh() const { return LOOM_STABLE_OP("aten::tanh").call_tensor(*this); }
inline Tensor Tensor::sigmoid() const {
  return LOOM_STABLE_OP("aten::sigmoid").call_tensor(*this);
}
inline Tensor Tensor::relu() const { return LOOM_STABLE_OP("aten::relu").call_tensor(*this); }
inline Tensor Tensor::silu() const { return LOOM_STABLE_OP("aten::silu").call_tensor(*this); }
inline Tensor Tensor::reciprocal() const {
  return LOOM_STABLE_OP("aten::reciprocal").call_tensor(*this);
}
inline Tensor Tensor::clamp(std::optional<Scalar> min, std::optional<Scalar> max) const {
  return LOOM_STABLE_OP("aten::clamp").call_tensor(*this, min, max);
}
inline Tensor Tensor::pow(const Scalar& exponent) const {
  return LOOM_STABLE_OP("aten::pow.Tensor_Scalar").call_tensor(*this, exponent);
}
inline Tensor Tensor::pow(const Tensor& exponent) const {
  return LOOM_STABLE_OP("aten::pow.Tensor_Tensor").call_tensor(*this, exponent);
}

inline Tensor Tensor::add(const Tensor& other, const Scalar& alpha) const {
  return LOOM_STABLE_OP("aten::add.Tensor").call_tensor(*this, other, alpha);
}
inline Tensor Tensor::add(const Tensor& other) const {
  return LOOM_STABLE_OP("aten::add.Tensor").call_tensor(*this, other);
}
inline Tensor Tensor::add(const Scalar& other) const {
  return LOOM_STABLE_OP("aten::add.Scalar").call_tensor(*this, other);
}
inline Tensor Tensor::sub(const Tensor& other, const Scalar& alpha) const {
  return LOOM_STABLE_OP("aten::sub.Tensor").call_tensor(*this, other, alpha);
}
inline Tensor Tensor::sub(const Tensor& other) const {
  return LOOM_STABLE_OP("aten::sub.Tensor").call_tensor(*this, other);
}
inline Tensor Tensor::sub(const Scalar& other) const {
  return LOOM_STABLE_OP("aten::sub.Scalar").call_tensor(*this, other);
}
inline Tensor Tensor::mul(const Tensor& other) const {
  return LOOM_STABLE_OP("aten::mul.Tensor").call_tensor(*this, other);
}
inline Tensor Tensor::mul(const Scalar& other) const {
  return LOOM_STABLE_OP("aten::mul.Scalar").call_tensor(*this, other);
}
inline Tensor Tensor::div(const Tensor& other) const {
  return LOOM_STABLE_OP("aten::div.Tensor").call_tensor(*this, other);
}
inline Tensor Tensor::div(const Scalar& other) const {
  return LOOM_STABLE_OP("aten::div.Scalar").call_tensor(*this, other);
}
inline Tensor Tensor::maximum(const Tensor& other) const {
  return LOOM_STABLE_OP("aten::maximum").call_tensor(*this, other);
}
inline Tensor Tensor::minimum(const Tensor& other) const {
  return LOOM_STABLE_OP("aten::minimum").call_tensor(*this, other);
}
inline Tensor Tensor::eq(const Tensor& o) const {
  return LOOM_STABLE_OP("aten::eq.Tensor").call_tensor(*this, o);
}
inline Tensor Tensor::eq(const Scalar& o) const {
  return LOOM_STABLE_OP("aten::eq.Scalar").call_tensor(*this, o);
}
inline Tensor Tensor::ne(const Tensor& o) const {
  return LOOM_STABLE_OP("aten::ne.Tensor").call_tensor(*this, o);
}
inline Tensor Tensor::ne(const Scalar& o) const {
  return LOOM_STABLE_OP("aten::ne.Scalar").call_tensor(*this, o);
}
inline Tensor Tensor::lt(const Tensor& o) const {
  return LOOM_STABLE_OP("aten::lt.Tensor").call_tensor(*this, o);
}
inline Tensor Tensor::lt(const Scalar& o) const {
  return LOOM_STABLE_OP("aten::lt.Scalar").call_tensor(*this, o);
}
inline Tensor Tensor::le(const Tensor& o) const {
  return LOOM_STABLE_OP("aten::le.Tensor").call_tensor(*this, o);
}
inline Tensor Tensor::le(const Scalar& o) const {
  return LOOM_STABLE_OP("aten::le.Scalar").call_tensor(*this, o);
}
inline Tensor Tensor::gt(const Tensor& o) const {
  return LOOM_STABLE_OP("aten::gt.Tensor").call_tensor(*this, o);
}
inline Tensor Tensor::gt(const Scalar& o) const {
  return LOOM_STABLE_OP("aten::gt.Scalar").call_tensor(*this, o);
}
inline Tensor Tensor::ge(const Tensor& o) const {
  return LOOM_STABLE_OP("aten::ge.Tensor").call_tensor(*this, o);
}
inline Tensor Tensor::ge(const Scalar& o) const {
  return LOOM_STABLE_OP("aten::ge.Scalar").call_tensor(*this, o);
}

inline Tensor Tensor::sum() const { return LOOM_STABLE_OP("aten::sum").call_tensor(*this); }
inline Tensor Tensor::sum(const std::vector<int64_t>& dims, bool keepdim) const {
  return LOOM_STABLE_OP("aten::sum.dim_IntList").call_tensor(*this, dims, keepdim);
}
inline Tensor Tensor::mean() const { return LOOM_STABLE_OP("aten::mean").call_tensor(*this); }
inline Tensor Tensor::mean(const std::vector<int64_t>& dims, bool keepdim) const {
  return LOOM_STABLE_OP("aten::mean.dim").call_tensor(*this, dims, keepdim);
}
inline Tensor Tensor::max() const { return LOOM_STABLE_OP("aten::max").call_tensor(*this); }
inline Tensor Tensor::min() const { return LOOM_STABLE_OP("aten::min").call_tensor(*this); }
inline Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const {
  return LOOM_STABLE_OP("aten::argmax").call_tensor(*this, dim, keepdim);
}
inline Tensor Tensor::norm(const Scalar& p) const {
  return LOOM_STABLE_OP("aten::norm.Scalar").call_tensor(*this, p);
}
inline Tensor Tensor::norm() const {
  return LOOM_STABLE_OP("aten::norm.Scalar").call_tensor(*this);
}
inline Tensor Tensor::softmax(int64_t dim) const {
  return LOOM_STABLE_OP("aten::softmax.int").call_tensor(*this, dim);
}
inline Tensor Tensor::log_softmax(int64_t dim) const {
  return LOOM_STABLE_OP("aten::log_softmax.int").call_tensor(*this, dim);
}

inline Tensor Tensor::matmul(const Tensor& other) const {
  return LOOM_STABLE_OP("aten::matmul").call_tensor(*this, other);
}
inline Tensor Tensor::mm(const Tensor& mat2) const {
  return LOOM_STABLE_OP("aten::mm").call_tensor(*this, mat2);
}
inline Tensor Tensor::bmm(const Tensor& mat2) const {
  return LOOM_STABLE_OP("aten::bmm").call_tensor(*this, mat2);
}
inline Tensor Tensor::dot(const Tensor& other) const {
  return LOOM_STABLE_OP("aten::dot").call_tensor(*this, other);
}

inline Tensor& Tensor::copy_(const Tensor& src) {
  LOOM_STABLE_OP("aten::copy_").call_tensor(*this, src);
  return *this;
}
inline Tensor& Tensor::fill_(const Scalar& value) {
  LOOM_STABLE_OP("aten::fill_.Scalar").call_tensor(*this, value);
  return *this;
}
inline Tensor& Tensor::zero_() {
  LOOM_STABLE_OP("aten::zero_").call_tensor(*this);
  return *this;
}
inline Tensor& Tensor::add_(const Tensor& other, const Scalar& alpha) {
  LOOM_STABLE_OP("aten::add_.Tensor").call_tensor(*this, other, alpha);
  return *this;
}
inline Tensor& Tensor::add_(const Tensor& other) {
  LOOM_STABLE_OP("aten::add_.Tensor").call_tensor(*this, other);
  return *this;
}
inline Tensor& Tensor::sub_(const Tensor& other, const Scalar& alpha) {
  LOOM_STABLE_OP("aten::sub_.Tensor").call_tensor(*this, other, alpha);
  return *this;
}
inline Tensor& Tensor::sub_(const Tensor& other) {
  LOOM_STABLE_OP("aten::sub_.Tensor").call_tensor(*this, other);
  return *this;
}
inline Tensor& Tensor::mul_(const Tensor& other) {
  LOOM_STABLE_OP("aten::mul_.Tensor").call_tensor(*this, other);
  return *this;
}
inline Tensor& Tensor::mul_(const Scalar& other) {
  LOOM_STABLE_OP("aten::mul_.Scalar").call_tensor(*this, other);
  return *this;
}

// ---- operators ----

/// a + b (aten::add.Tensor, broadcasting).
inline Tensor operator+(const Tensor& a, const Tensor& b) { return a.add(b); }
/// a - b (aten::sub.Tensor).
inline Tensor operator-(const Tensor& a, const Tensor& b) { return a.sub(b); }
/// a * b (aten::mul.Tensor).
inline Tensor operator*(const Tensor& a, const Tensor& b) { return a.mul(b); }
/// a / b (aten::div.Tensor).
inline Tensor operator/(const Tensor& a, const Tensor& b) { return a.div(b); }
/// a + s (aten::add.Scalar).
inline Tensor operator+(const Tensor& a, const Scalar& s) { return a.add(s); }
/// a - s (aten::sub.Scalar).
inline Tensor operator-(const Tensor& a, const Scalar& s) { return a.sub(s); }
/// a * s (aten::mul.Scalar).
inline Tensor operator*(const Tensor& a, const Scalar& s) { return a.mul(s); }
/// a / s (aten::div.Scalar).
inline Tensor operator/(const Tensor& a, const Scalar& s) { return a.div(s); }
/// s + a.
inline Tensor operator+(const Scalar& s, const Tensor& a) { return a.add(s); }
/// s - a, as (-a) + s.
inline Tensor operator-(const Scalar& s, const Tensor& a) { return a.neg().add(s); }
/// s * a.
inline Tensor operator*(const Scalar& s, const Tensor& a) { return a.mul(s); }
/// s / a, as reciprocal(a) * s.
inline Tensor operator/(const Scalar& s, const Tensor& a) { return a.reciprocal().mul(s); }
/// -a (aten::neg).
inline Tensor operator-(const Tensor& a) { return a.neg(); }
/// a += b in place (aten::add_.Tensor).
inline Tensor& operator+=(Tensor& a, const Tensor& b) { return a.add_(b); }
/// a -= b in place (aten::sub_.Tensor).
inline Tensor& operator-=(Tensor& a, const Tensor& b) { return a.sub_(b); }
/// a *= b in place (aten::mul_.Tensor).
inline Tensor& operator*=(Tensor& a, const Tensor& b) { return a.mul_(b); }
/// a *= s in place (aten::mul_.Scalar).
inline Tensor& operator*=(Tensor& a, const Scalar& s) { return a.mul_(s); }

/// aten::matmul.
inline Tensor matmul(const Tensor& a, const Tensor& b) { return a.matmul(b); }
/// aten::mm.
inline Tensor mm(const Tensor& a, const Tensor& b) { return a.mm(b); }
/// aten::cat.
inline Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0) {
  return LOOM_STABLE_OP("aten::cat").call_tensor(tensors, dim);
}
/// aten::stack.
inline Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0) {
  return LOOM_STABLE_OP("aten::stack").call_tensor(tensors, dim);
}
/// aten::where.self: condition ? a : b.
inline Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  return LOOM_STABLE_OP("aten::where.self").call_tensor(condition, a, b);
}

// ======================================================================================
// Library state: init, grad mode, seeds, devices, plugins
// ======================================================================================

/// Loads the default plugins (ops_core, and ops_nn / cpu_onednn / cuda when installed);
/// idempotent. Call once before using ops.
inline void init() { check(api()->Init()); }
/// Loom's version ("0.1.0").
inline std::string version() { return api()->VersionString(); }
/// Seeds every generator (CPU and loaded devices).
inline void manual_seed(uint64_t seed) { check(api()->ManualSeed(seed)); }
/// Whether this thread records gradients.
inline bool grad_enabled() { return api()->GradEnabled(); }
/// Turns grad mode on or off on this thread; returns the previous setting.
inline bool set_grad_enabled(bool enabled) { return api()->SetGradEnabled(enabled); }

/// Turns grad mode off for its scope (torch.no_grad()) and restores the previous mode.
class NoGradGuard {
 public:
  /// Turns grad mode off.
  NoGradGuard() : prev_(api()->SetGradEnabled(false)) {}
  /// Restores the previous mode.
  ~NoGradGuard() { api()->SetGradEnabled(prev_); }
  /// Not copyable.
  NoGradGuard(const NoGradGuard&) = delete;
  /// Not copyable.
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

/// Devices.
namespace device {
/// The number of usable devices of a type ("cuda"); 0 with no plugin or no usable device.
inline int32_t count(const char* type) {
  int32_t n = 0;
  check(api()->DeviceCount(type, &n, nullptr));
  return n;
}
/// Why count(type) is 0 ("" when it is not), a sentence from the device plugin.
inline std::string unavailable_reason(const char* type) {
  int32_t n = 0;
  const char* reason = nullptr;
  check(api()->DeviceCount(type, &n, &reason));
  return reason != nullptr ? reason : "";
}
/// True if at least one device of the type is usable.
inline bool is_available(const char* type) { return count(type) > 0; }
/// The native current stream of a device ("cuda:0": a cudaStream_t); nullptr without streams.
inline void* current_stream(const Device& device) {
  void* s = nullptr;
  check(api()->DeviceCurrentStream(device.c_str(), &s));
  return s;
}
/// Waits until the device has finished its queued work.
inline void synchronize(const Device& device) { check(api()->DeviceSynchronize(device.c_str())); }
}  // namespace device

/// Plugins.
namespace plugins {
/// A loaded plugin's name and version.
struct PluginInfo {
  std::string name;     ///< e.g. "ops_core"
  std::string version;  ///< the plugin's own version
};
/// Loads a plugin by name ("cpu_onednn") or path to a .so; throws PluginError with the
/// loader's reason.
inline void load(const std::string& name_or_path) {
  check(api()->PluginLoad(name_or_path.c_str()));
}
/// Unloads a plugin by name (its registrations are undone).
inline void unload(const std::string& name) { check(api()->PluginUnload(name.c_str())); }
/// The loaded plugins.
inline std::vector<PluginInfo> list() {
  size_t n = 0;
  check(api()->PluginCount(&n));
  std::vector<PluginInfo> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const char* name = nullptr;
    const char* ver = nullptr;
    check(api()->PluginInfo(i, &name, &ver));
    out.push_back({name != nullptr ? name : "", ver != nullptr ? ver : ""});
  }
  return out;
}
/// True if a plugin of that name is loaded.
inline bool is_loaded(const std::string& name) {
  for (const PluginInfo& p : list()) {
    if (p.name == name) return true;
  }
  return false;
}
}  // namespace plugins

// ======================================================================================
// Registering ops, kernels and derivatives
// ======================================================================================

/// What a custom op's backward sees: saved tensor inputs and outputs, the gradients of the
/// outputs; it sets one gradient per tensor input that needs one.
class BackwardContext {
 public:
  /// Wraps the library's context (valid during the backward call).
  explicit BackwardContext(LoomBackwardContext* ctx) noexcept : ctx_(ctx) {}
  /// Number of tensor inputs (the op's tensor arguments, in schema order).
  size_t num_inputs() const { return api()->BackwardNumInputs(ctx_); }
  /// Number of outputs.
  size_t num_outputs() const { return api()->BackwardNumOutputs(ctx_); }
  /// Saved tensor input i.
  Tensor input(size_t i) const {
    const LoomTensor* t = nullptr;
    check(api()->BackwardInput(ctx_, i, &t));
    return Tensor::borrow(t);
  }
  /// Saved output i.
  Tensor output(size_t i) const {
    const LoomTensor* t = nullptr;
    check(api()->BackwardOutput(ctx_, i, &t));
    return Tensor::borrow(t);
  }
  /// The gradient of output i (zeros if none arrived).
  Tensor grad_output(size_t i) const {
    const LoomTensor* t = nullptr;
    check(api()->BackwardGradOutput(ctx_, i, &t));
    return Tensor::borrow(t);
  }
  /// Whether tensor input i needs a gradient.
  bool needs_input_grad(size_t i) const { return api()->BackwardNeedsInputGrad(ctx_, i); }
  /// Sets the gradient of tensor input i.
  void set_grad_input(size_t i, const Tensor& grad) {
    check(api()->BackwardSetGradInput(ctx_, i, grad.get()));
  }
  /// The non-tensor argument at schema position `position` (copied).
  Value argument(size_t position) const {
    LoomValue v;
    detail::clear(v);
    check(api()->BackwardArgument(ctx_, position, &v));
    return Value::from_borrowed(v);
  }
  /// The C context.
  LoomBackwardContext* get() const noexcept { return ctx_; }

 private:
  LoomBackwardContext* ctx_;
};

/// @cond INTERNAL
namespace detail {
/// The status for the exception being handled (call only inside a catch block); never lets
/// an exception out.
inline LoomStatus* status_from_current_exception() noexcept {
  try {
    try {
      throw;
    } catch (const Error& e) {
      return api()->StatusCreate(e.code(), e.what());
    } catch (const std::bad_alloc& e) {
      return api()->StatusCreate(LOOM_OUT_OF_MEMORY, e.what());
    } catch (const std::invalid_argument& e) {
      return api()->StatusCreate(LOOM_VALUE_ERROR, e.what());
    } catch (const std::out_of_range& e) {
      return api()->StatusCreate(LOOM_INDEX_ERROR, e.what());
    } catch (const std::exception& e) {
      return api()->StatusCreate(LOOM_ERROR, e.what());
    } catch (...) {
      return api()->StatusCreate(LOOM_ERROR, "a C++ exception of unknown type");
    }
  } catch (...) {
    return api()->StatusCreate(LOOM_OUT_OF_MEMORY, "out of memory while reporting an error");
  }
}

/// Deletes a heap-allocated F (the release function of a registration).
template <typename F>
void delete_callable(void* p) {
  delete static_cast<F*>(p);
}

/// Writes one kernel result into the C returns (tensors as new references).
inline void write_return(Value&& v, LoomValue* rets, size_t i, size_t num_returns) {
  if (i >= num_returns) {
    throw ValueError("kernel returned more values than the schema's " +
                     std::to_string(num_returns));
  }
  LoomValue& out = rets[i];
  switch (v.kind()) {
    case ValueKind::Tensor:
      out.kind = LOOM_VALUE_TENSOR;
      out.u.tensor = Tensor(v.to_tensor()).release();
      break;
    case ValueKind::None:
    case ValueKind::Int:
    case ValueKind::Float:
    case ValueKind::Bool:
    case ValueKind::DType: v.box(out); break;
    default:
      throw TypeError(std::string("a kernel registered through loom::stable cannot return ") +
                      kind_name(v.kind()) + " (the C ABI does not say who frees it)");
  }
}

/// The LoomKernelFn of a C++ callable F(const std::vector<Value>&) returning Tensor, Value or
/// std::vector<Value>.
template <typename F>
LoomStatus* kernel_trampoline(void* user_data, const LoomValue* args, size_t num_args,
                              LoomValue* rets, size_t num_returns) noexcept {
  try {
    std::vector<Value> in;
    in.reserve(num_args);
    const size_t stride = num_args > 0 ? args[0].struct_size : sizeof(LoomValue);
    for (size_t i = 0; i < num_args; ++i) {
      const auto* v = reinterpret_cast<const LoomValue*>(reinterpret_cast<const char*>(args) +
                                                         i * stride);
      in.push_back(Value::from_borrowed(*v));
    }
    auto& f = *static_cast<F*>(user_data);
    using R = std::decay_t<decltype(f(in))>;
    // Writes into a scratch copy first so that a failure leaves no half-written returns.
    std::vector<LoomValue> out(num_returns);
    for (LoomValue& v : out) clear(v);
    size_t written = 0;
    try {
      if constexpr (std::is_same_v<R, std::vector<Value>>) {
        std::vector<Value> r = f(in);
        for (Value& v : r) write_return(std::move(v), out.data(), written++, num_returns);
      } else {
        static_assert(std::is_convertible_v<R, Value>,
                      "a kernel must return Tensor, Value or std::vector<Value>");
        write_return(Value(f(in)), out.data(), written++, num_returns);
      }
      if (written != num_returns) {
        throw ValueError("kernel returned " + std::to_string(written) +
                         " values but the schema has " + std::to_string(num_returns));
      }
    } catch (...) {
      for (LoomValue& v : out) {
        if (v.kind == LOOM_VALUE_TENSOR) api()->TensorRelease(v.u.tensor);
      }
      throw;
    }
    // Copy with the library's own stride (it may be newer than this header).
    const size_t rstride = num_returns > 0 && rets[0].struct_size != 0 ? rets[0].struct_size
                                                                        : sizeof(LoomValue);
    for (size_t i = 0; i < num_returns; ++i) {
      auto* dst = reinterpret_cast<LoomValue*>(reinterpret_cast<char*>(rets) + i * rstride);
      const uint32_t size = dst->struct_size;
      std::memcpy(dst, &out[i], sizeof(LoomValue) < rstride ? sizeof(LoomValue) : rstride);
      dst->struct_size = size != 0 ? size : static_cast<uint32_t>(sizeof(LoomValue));
    }
    return nullptr;
  } catch (...) {
    return status_from_current_exception();
  }
}

/// The LoomKernelFn of a raw boxed C++ callable F(const LoomValue*, size_t, LoomValue*,
/// size_t).
template <typename F>
LoomStatus* boxed_trampoline(void* user_data, const LoomValue* args, size_t num_args,
                             LoomValue* rets, size_t num_returns) noexcept {
  try {
    (*static_cast<F*>(user_data))(args, num_args, rets, num_returns);
    return nullptr;
  } catch (...) {
    return status_from_current_exception();
  }
}

/// The LoomBackwardFn of a C++ callable F(BackwardContext&).
template <typename F>
LoomStatus* backward_trampoline(void* user_data, LoomBackwardContext* ctx) noexcept {
  try {
    BackwardContext c(ctx);
    (*static_cast<F*>(user_data))(c);
    return nullptr;
  } catch (...) {
    return status_from_current_exception();
  }
}
}  // namespace detail
/// @endcond

/// A set of registrations (op definitions, kernels, derivatives) for one namespace.
///
/// Made by Library::create (owned by the caller: destroying it undoes every registration)
/// or, inside a stable extension, by PluginRegistrar::library (owned by the plugin: undone
/// when it unloads). Move-only. Callables are kept on the heap until the registration is
/// undone; their exceptions become statuses (no exception crosses the C boundary).
class Library {
 public:
  /// A library for namespace ns owned by the caller. ns = nullptr owns no namespace: use it
  /// for kernels of ops defined elsewhere, with qualified names ("aten::add.Tensor").
  static Library create(const char* ns) {
    LoomLibrary* lib = nullptr;
    check(api()->LibraryCreate(ns, &lib));
    return Library(lib, /*owned=*/true);
  }
  /// create for a std::string.
  static Library create(const std::string& ns) { return create(ns.c_str()); }
  /// Wraps a C library; owned: release it in the destructor.
  Library(LoomLibrary* lib, bool owned) noexcept : lib_(lib), owned_(owned) {}
  /// Takes o's library.
  Library(Library&& o) noexcept : lib_(o.lib_), owned_(o.owned_) { o.lib_ = nullptr; }
  /// Takes o's library (undoing this one's first).
  Library& operator=(Library&& o) noexcept {
    std::swap(lib_, o.lib_);
    std::swap(owned_, o.owned_);
    return *this;
  }
  /// Not copyable.
  Library(const Library&) = delete;
  /// Not copyable.
  Library& operator=(const Library&) = delete;
  /// Undoes the registrations of an owned library.
  ~Library() {
    if (owned_ && lib_ != nullptr) api()->LibraryRelease(lib_);
  }

  /// The C handle.
  LoomLibrary* get() const noexcept { return lib_; }
  /// Undoes an owned library's registrations now (the Library is empty afterwards).
  void reset() noexcept {
    if (owned_ && lib_ != nullptr) api()->LibraryRelease(lib_);
    lib_ = nullptr;
  }

  /// Defines an op from a schema ("scale(Tensor x, float k) -> Tensor").
  Library& def(const char* schema) {
    check(api()->LibraryDef(lib_, schema));
    return *this;
  }
  /// def for a std::string.
  Library& def(const std::string& schema) { return def(schema.c_str()); }

  /// Registers a kernel of op for dispatch_key ("CPU", "CUDA"): f(const std::vector<Value>&
  /// args) returning a Tensor or Value (one return) or std::vector<Value> (one per return).
  /// Its exceptions become statuses with their code (Error) and message.
  template <typename F>
  Library& impl(const char* op, const char* dispatch_key, F f) {
    using Fn = std::decay_t<F>;
    auto* holder = new Fn(std::move(f));
    LoomStatus* st = api()->LibraryImpl(lib_, op, dispatch_key, &detail::kernel_trampoline<Fn>,
                                        holder, &detail::delete_callable<Fn>);
    if (st != nullptr) {
      delete holder;  // Note: the library never took it, so release is not called.
      throw_status(st);
    }
    return *this;
  }
  /// impl with the typed convenience signature: f returns the op's single tensor.
  Library& impl_tensor_fn(const char* op, const char* dispatch_key,
                          std::function<Tensor(const std::vector<Value>&)> f) {
    return impl(op, dispatch_key, std::move(f));
  }
  /// Registers a raw boxed kernel f(const LoomValue* args, size_t num_args, LoomValue*
  /// returns, size_t num_returns) that writes the C returns itself (tensors as new references,
  /// e.g. Tensor::release()); no copies of the arguments are made. Exceptions become statuses.
  template <typename F>
  Library& impl_boxed(const char* op, const char* dispatch_key, F f) {
    using Fn = std::decay_t<F>;
    auto* holder = new Fn(std::move(f));
    LoomStatus* st = api()->LibraryImpl(lib_, op, dispatch_key, &detail::boxed_trampoline<Fn>,
                                        holder, &detail::delete_callable<Fn>);
    if (st != nullptr) {
      delete holder;
      throw_status(st);
    }
    return *this;
  }
  /// Gives op a derivative f(BackwardContext&), which sets a gradient for each tensor input
  /// that needs one. Its exceptions become statuses.
  template <typename F>
  Library& impl_backward(const char* op, F f) {
    using Fn = std::decay_t<F>;
    auto* holder = new Fn(std::move(f));
    LoomStatus* st = api()->LibraryImplBackward(lib_, op, &detail::backward_trampoline<Fn>,
                                                holder, &detail::delete_callable<Fn>);
    if (st != nullptr) {
      delete holder;
      throw_status(st);
    }
    return *this;
  }

 private:
  LoomLibrary* lib_ = nullptr;
  bool owned_ = false;
};

/// What a stable extension's register function receives (LOOM_STABLE_EXTENSION): gives
/// Libraries owned by the loading plugin, undone when it unloads.
class PluginRegistrar {
 public:
  /// Wraps the loader's context (valid during register_plugin).
  explicit PluginRegistrar(LoomPluginContext* ctx) noexcept : ctx_(ctx) {}
  /// A library for namespace ns (nullptr: none, for kernels of ops defined elsewhere) owned
  /// by the plugin; the reference stays valid during registration.
  Library& library(const char* ns) {
    LoomLibrary* lib = nullptr;
    check(api()->PluginLibrary(ctx_, ns, &lib));
    libraries_.emplace_back(lib, /*owned=*/false);
    return libraries_.back();
  }
  /// library for a std::string.
  Library& library(const std::string& ns) { return library(ns.c_str()); }
  /// The loader's context.
  LoomPluginContext* context() const noexcept { return ctx_; }

 private:
  LoomPluginContext* ctx_;
  std::list<Library> libraries_;
};

/// @cond INTERNAL
namespace detail {
/// Runs a stable extension's register function: 0, or non-zero with the message of its
/// exception in error.
template <typename F>
int run_register(LoomPluginContext* ctx, char* error, size_t capacity, F&& register_fn) noexcept {
  std::string message;
  try {
    PluginRegistrar registrar(ctx);
    register_fn(registrar);
    return 0;
  } catch (const std::exception& e) {
    try {
      message = e.what();
    } catch (...) {
    }
  } catch (...) {
    message = "a C++ exception of unknown type";
  }
  if (error != nullptr && capacity > 0) {
    const size_t n = message.size() < capacity - 1 ? message.size() : capacity - 1;
    std::memcpy(error, message.data(), n);
    error[n] = '\0';
  }
  return 1;
}
}  // namespace detail
/// @endcond

}  // namespace loom::stable

#if defined(_WIN32)
/// How the manifest entry point is exported.
#define LOOM_STABLE_EXPORT __declspec(dllexport)
#elif defined(__GNUC__)
/// How the manifest entry point is exported.
#define LOOM_STABLE_EXPORT __attribute__((visibility("default")))
#else
/// How the manifest entry point is exported.
#define LOOM_STABLE_EXPORT
#endif

#if defined(__VERSION__)
/// The build information stamped into a stable extension's manifest.
#define LOOM_STABLE_BUILD_INFO "stable ABI v" LOOM_STABLE_STR(LOOM_API_VERSION) ", " __VERSION__
#else
/// The build information stamped into a stable extension's manifest.
#define LOOM_STABLE_BUILD_INFO "stable ABI v" LOOM_STABLE_STR(LOOM_API_VERSION)
#endif
/// Stringizes a macro's value.
#define LOOM_STABLE_STR(x) LOOM_STABLE_STR_(x)
/// Implementation of LOOM_STABLE_STR.
#define LOOM_STABLE_STR_(x) #x

/// Declares a stable-ABI extension (once per shared library): its name, version, one-line
/// description and the function that registers everything, called with a
/// loom::stable::PluginRegistrar& (a function name or a non-capturing lambda):
///
///     static void register_myops(loom::stable::PluginRegistrar& r) {
///       auto& m = r.library("myops");
///       m.def("scale(Tensor x, float k) -> Tensor");
///       m.impl("scale", "CPU", [](const std::vector<loom::stable::Value>& a) { ... });
///     }
///     LOOM_STABLE_EXTENSION("myops", "1.0", "my custom ops", register_myops)
///
/// An exception from the register function refuses the plugin with its message.
#define LOOM_STABLE_EXTENSION(NAME, VERSION, DESCRIPTION, REGISTER_FN) \
  LOOM_STABLE_EXTENSION_DEPS(NAME, VERSION, DESCRIPTION, REGISTER_FN, nullptr)

/// LOOM_STABLE_EXTENSION with the names of plugins that must load first, e.g.
/// `LOOM_STABLE_EXTENSION_DEPS("myops", "1.0", "...", reg, "ops_core")`.
#define LOOM_STABLE_EXTENSION_DEPS(NAME, VERSION, DESCRIPTION, REGISTER_FN, ...)           \
  static int loom_stable_register_plugin_(LoomPluginContext* ctx, char* error,              \
                                          size_t capacity) {                                \
    return ::loom::stable::detail::run_register(ctx, error, capacity, REGISTER_FN);         \
  }                                                                                         \
  extern "C" LOOM_STABLE_EXPORT const LoomPluginManifest* loom_plugin_manifest(void) {      \
    static const char* const deps[] = {__VA_ARGS__, nullptr};                               \
    static const LoomPluginManifest manifest = {sizeof(LoomPluginManifest),                 \
                                                LOOM_PLUGIN_ABI_MAJOR,                      \
                                                LOOM_PLUGIN_ABI_MINOR,                      \
                                                NAME,                                       \
                                                VERSION,                                    \
                                                DESCRIPTION,                                \
                                                deps,                                       \
                                                LOOM_STABLE_BUILD_INFO,                     \
                                                &loom_stable_register_plugin_,              \
                                                nullptr};                                   \
    return &manifest;                                                                       \
  }
