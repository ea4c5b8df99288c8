#pragma once
/// @file
/// loom::Tensor, the user-facing handle on a TensorImpl.
///
/// The core knows no op: what is defined here is what needs no kernel (geometry,
/// allocation, metadata views, element access, description). The op methods
/// (`x.matmul(w).relu()`) are only declared here; their one-line definitions call the op
/// packs' free functions through the dispatcher and live in "loom/ops/tensor_methods.h"
/// (included by "loom/loom.h"). See Note [Tensor methods].

#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "loom/core/error.h"
#include "loom/core/scalar.h"
#include "loom/core/tensor_impl.h"

namespace loom {

/// Options for making a tensor: dtype, device, requires_grad.
struct TensorOptions {
  DType dtype = DType::Float32;  ///< element type
  Device device{};               ///< where the memory lives
  bool requires_grad = false;    ///< record gradients
  /// A copy with another dtype.
  TensorOptions with(DType d) const {
    auto o = *this;
    o.dtype = d;
    return o;
  }
  /// A copy with another device.
  TensorOptions with(Device d) const {
    auto o = *this;
    o.device = d;
    return o;
  }
};

/// @cond INTERNAL
template <typename T>
struct CppTypeToDType;
class TensorIndex;
namespace autograd {
class Node;
}  // namespace autograd
#define LOOM_DTYPE_OF(T, D)                  \
  template <>                                \
  struct CppTypeToDType<T> {                 \
    static constexpr DType value = DType::D; \
  }
LOOM_DTYPE_OF(bool, Bool);
LOOM_DTYPE_OF(uint8_t, UInt8);
LOOM_DTYPE_OF(int8_t, Int8);
LOOM_DTYPE_OF(int16_t, Int16);
LOOM_DTYPE_OF(int32_t, Int32);
LOOM_DTYPE_OF(int64_t, Int64);
LOOM_DTYPE_OF(float, Float32);
LOOM_DTYPE_OF(double, Float64);
#undef LOOM_DTYPE_OF
/// @endcond

/// Maps a C++ element type to its DType (float -> Float32, int64_t -> Int64, ...).
template <typename T>
inline constexpr DType dtype_of = CppTypeToDType<T>::value;

/// A tensor handle: cheap to copy (shares the TensorImpl), may be undefined.
class Tensor {
 public:
  /// An undefined tensor.
  Tensor() = default;
  /// Wraps an impl.
  explicit Tensor(boost::intrusive_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  /// Uninitialised memory from the device's allocator, contiguous.
  static Tensor empty(IntArrayRef sizes, TensorOptions options = {});
  /// A CPU tensor holding a copy of values with the given sizes (numel must match).
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values, IntArrayRef sizes);
  /// A 0-dim CPU tensor holding v.
  template <typename T>
  static Tensor scalar(T v) {
    return from_vector<T>({v}, {});
  }

  /// True if a TensorImpl is held.
  bool defined() const { return static_cast<bool>(impl_); }
  /// The impl (nullptr if undefined).
  TensorImpl* impl() const { return impl_.get(); }
  /// The impl pointer.
  const boost::intrusive_ptr<TensorImpl>& impl_ptr() const { return impl_; }

  /// Sizes.
  IntArrayRef sizes() const { return checked()->sizes(); }
  /// Strides, in elements.
  IntArrayRef strides() const { return checked()->strides(); }
  /// Size of dim (negative dims count from the end); throws IndexError out of range or on a
  /// 0-dim tensor.
  int64_t size(int64_t dim) const;
  /// Stride of dim (negative dims count from the end); throws IndexError as size() does.
  int64_t stride(int64_t dim) const;
  /// Number of dimensions.
  int64_t dim() const { return checked()->dim(); }
  /// Number of elements.
  int64_t numel() const { return checked()->numel(); }
  /// Element type.
  DType dtype() const { return checked()->dtype(); }
  /// Device.
  Device device() const { return checked()->device(); }
  /// Offset into storage, in elements.
  int64_t storage_offset() const { return checked()->storage_offset(); }
  /// Bytes per element.
  size_t element_size() const { return loom::element_size(dtype()); }
  /// True if row-major contiguous.
  bool is_contiguous() const { return checked()->is_contiguous(); }
  /// The storage.
  const Storage& storage() const { return checked()->storage(); }
  /// Keys for dispatch (empty for an undefined tensor).
  DispatchKeySet key_set() const { return impl_ ? impl_->key_set() : DispatchKeySet(); }
  /// Address of element 0; nullptr for a tensor without elements.
  void* data_ptr() const { return checked()->data(); }
  /// Typed address of element 0; throws TypeError if T does not match dtype().
  template <typename T>
  T* data_ptr() const;
  /// The single element of a one-element CPU tensor, as PyTorch's Tensor::item(): an
  /// integral Scalar for integer dtypes (exact for every int64), floating for floating
  /// dtypes, bool for bool. Throws ValueError unless numel() is 1, DeviceError off the CPU.
  Scalar item() const;
  /// item() converted to T (C++ conversion rules; an integer never goes through double).
  template <typename T>
  T item() const;

  /// Current version (bumped by in-place ops; shared with views).
  uint32_t version() const { return checked()->version(); }
  /// Records an in-place write.
  void bump_version() const { checked()->bump_version(); }
  /// Whether gradients are recorded.
  bool requires_grad() const { return impl_ && impl_->requires_grad(); }
  /// Sets requires_grad; returns *this.
  const Tensor& set_requires_grad(bool value) const {
    checked()->set_requires_grad(value);
    return *this;
  }
  /// PyTorch's requires_grad_(): as set_requires_grad.
  const Tensor& requires_grad_(bool value = true) const { return set_requires_grad(value); }

  // Autograd (defined in the core's autograd engine; see loom/autograd/).
  /// The accumulated gradient (undefined until a backward reaches this leaf, or after
  /// zero_grad with set_to_none). Non-leaves have one only after retain_grad().
  Tensor grad() const;
  /// Replaces .grad (undefined clears it); returns *this.
  const Tensor& set_grad(const Tensor& grad) const;
  /// The node that made this tensor (null for leaves and tensors outside autograd).
  std::shared_ptr<autograd::Node> grad_fn() const;
  /// True for tensors made by the user (no grad_fn), whether or not they require grad.
  bool is_leaf() const;
  /// Which output of grad_fn() this tensor is.
  uint32_t output_nr() const;
  /// Makes backward store this non-leaf's gradient in grad() (no-op on leaves).
  void retain_grad() const;
  /// True after retain_grad() on a non-leaf.
  bool retains_grad() const;
  /// Runs backward from this tensor (gradient may be omitted for one-element tensors);
  /// see loom::autograd::backward.
  void backward(const Tensor& gradient = Tensor(), std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false) const;
  /// Registers a hook on this tensor's gradient: it sees the gradient and may return a
  /// replacement (or an undefined tensor to keep it). Returns an id for remove_hook.
  int register_hook(std::function<Tensor(const Tensor&)> hook) const;
  /// Removes a hook registered with register_hook; false if there was none.
  bool remove_hook(int id) const;
  /// True if this tensor was made by a view op from a tensor that required grad.
  bool is_view() const;
  /// The base of a view (undefined otherwise).
  Tensor base() const;
  /// Cuts this tensor out of the graph in place (it becomes a leaf); returns *this.
  const Tensor& detach_() const;

  /// A view sharing storage and version counter, with new geometry. Checked
  /// against the storage bounds.
  Tensor as_strided_view(IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset) const;
  /// PyTorch's resize_ (a metadata change, so it lives in the core): contiguous geometry of
  /// sizes at the same storage offset; the storage grows when too small (views of it see
  /// the new memory), elements beyond the old size are uninitialised. Returns *this.
  const Tensor& resize_(IntArrayRef sizes) const {
    checked()->resize_contiguous(sizes);
    return *this;
  }
  /// True if both share one storage.
  bool is_alias_of(const Tensor& other) const { return storage().is_alias_of(other.storage()); }
  /// True if both are the same TensorImpl.
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }

  /// "[2, 3] cpu float32" — used in error messages.
  std::string describe() const;
  /// The values, PyTorch-style: "tensor([[1., 2.],\n        [3., 4.]])" (CPU only).
  std::string str() const;

  // Note [Tensor methods]
  // PyTorch's methods, declared in the core and defined (inline, one line each, forwarding
  // to the free function of the same name) in loom/ops/tensor_methods.h, so the core
  // stays free of ops and a method costs exactly what the free function costs. A program
  // that calls one must include that header (or loom/loom.h) and load the op pack.

  // Shape and views.
  /// Method form of loom::view (self is *this); see loom/ops/tensor_methods.h.
  Tensor view(IntArrayRef size) const;
  /// Method form of loom::reshape (self is *this); see loom/ops/tensor_methods.h.
  Tensor reshape(IntArrayRef shape) const;
  /// Method form of loom::view_as (self is *this); see loom/ops/tensor_methods.h.
  Tensor view_as(const Tensor& other) const;
  /// Method form of loom::reshape_as (self is *this); see loom/ops/tensor_methods.h.
  Tensor reshape_as(const Tensor& other) const;
  /// Method form of loom::flatten (self is *this); see loom/ops/tensor_methods.h.
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  /// Method form of loom::unflatten (self is *this); see loom/ops/tensor_methods.h.
  Tensor unflatten(int64_t dim, IntArrayRef sizes) const;
  /// Method form of loom::squeeze (self is *this); see loom/ops/tensor_methods.h.
  Tensor squeeze() const;
  /// Method form of loom::squeeze (self is *this); see loom/ops/tensor_methods.h.
  Tensor squeeze(int64_t dim) const;
  /// Method form of loom::unsqueeze (self is *this); see loom/ops/tensor_methods.h.
  Tensor unsqueeze(int64_t dim) const;
  /// Method form of loom::transpose (self is *this); see loom/ops/tensor_methods.h.
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  /// Method form of loom::permute (self is *this); see loom/ops/tensor_methods.h.
  Tensor permute(IntArrayRef dims) const;
  /// Method form of loom::t (self is *this); see loom/ops/tensor_methods.h.
  Tensor t() const;
  /// Method form of loom::expand (self is *this); see loom/ops/tensor_methods.h.
  Tensor expand(IntArrayRef size) const;
  /// Method form of loom::expand_as (self is *this); see loom/ops/tensor_methods.h.
  Tensor expand_as(const Tensor& other) const;
  /// Method form of loom::narrow (self is *this); see loom/ops/tensor_methods.h.
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  /// Method form of loom::select (self is *this); see loom/ops/tensor_methods.h.
  Tensor select(int64_t dim, int64_t index) const;
  /// Method form of loom::contiguous (self is *this); see loom/ops/tensor_methods.h.
  Tensor contiguous() const;
  /// Method form of loom::split (self is *this); see loom/ops/tensor_methods.h.
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  /// Method form of loom::chunk (self is *this); see loom/ops/tensor_methods.h.
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  /// Method form of loom::unbind (self is *this); see loom/ops/tensor_methods.h.
  std::vector<Tensor> unbind(int64_t dim = 0) const;
  /// Method form of loom::repeat (self is *this); see loom/ops/tensor_methods.h.
  Tensor repeat(IntArrayRef repeats) const;
  /// Method form of loom::flip (self is *this); see loom/ops/tensor_methods.h.
  Tensor flip(IntArrayRef dims) const;
  /// Method form of loom::tril (self is *this); see loom/ops/tensor_methods.h.
  Tensor tril(int64_t diagonal = 0) const;
  /// Method form of loom::triu (self is *this); see loom/ops/tensor_methods.h.
  Tensor triu(int64_t diagonal = 0) const;

  // Copy and conversion.
  /// Method form of loom::to (self is *this); see loom/ops/tensor_methods.h.
  Tensor to(DType dtype) const;
  /// This tensor on device: *this if already there, else a copy through the target backend.
  Tensor to(Device device) const;
  /// Method form of loom::clone (self is *this); see loom/ops/tensor_methods.h.
  Tensor clone() const;
  /// A new tensor sharing storage and version counter, without autograd history.
  Tensor detach() const;
  /// Method form of loom::copy_ (self is *this); see loom/ops/tensor_methods.h.
  const Tensor& copy_(const Tensor& src) const;
  /// Method form of loom::fill_ (self is *this); see loom/ops/tensor_methods.h.
  const Tensor& fill_(const Scalar& value) const;
  /// Method form of loom::zero_ (self is *this); see loom/ops/tensor_methods.h.
  const Tensor& zero_() const;

  // Pointwise.
  /// Method form of loom::neg (self is *this); see loom/ops/tensor_methods.h.
  Tensor neg() const;
  /// Method form of loom::abs (self is *this); see loom/ops/tensor_methods.h.
  Tensor abs() const;
  /// Method form of loom::exp (self is *this); see loom/ops/tensor_methods.h.
  Tensor exp() const;
  /// Method form of loom::log (self is *this); see loom/ops/tensor_methods.h.
  Tensor log() const;
  /// Method form of loom::sqrt (self is *this); see loom/ops/tensor_methods.h.
  Tensor sqrt() const;
  /// Method form of loom::rsqrt (self is *this); see loom/ops/tensor_methods.h.
  Tensor rsqrt() const;
  /// Method form of loom::sin (self is *this); see loom/ops/tensor_methods.h.
  Tensor sin() const;
  /// Method form of loom::cos (self is *this); see loom/ops/tensor_methods.h.
  Tensor cos() const;
  /// Method form of loom::tanh (self is *this); see loom/ops/tensor_methods.h.
  Tensor tanh() const;
  /// Method form of loom::sigmoid (self is *this); see loom/ops/tensor_methods.h.
  Tensor sigmoid() const;
  /// Method form of loom::relu (self is *this); see loom/ops/tensor_methods.h.
  Tensor relu() const;
  /// Method form of loom::gelu (self is *this); see loom/ops/tensor_methods.h.
  Tensor gelu(std::string_view approximate = "none") const;
  /// Method form of loom::silu (self is *this); see loom/ops/tensor_methods.h.
  Tensor silu() const;
  /// Method form of loom::reciprocal (self is *this); see loom/ops/tensor_methods.h.
  Tensor reciprocal() const;
  /// Method form of loom::floor (self is *this); see loom/ops/tensor_methods.h.
  Tensor floor() const;
  /// Method form of loom::ceil (self is *this); see loom/ops/tensor_methods.h.
  Tensor ceil() const;
  /// Method form of loom::round (self is *this); see loom/ops/tensor_methods.h.
  Tensor round() const;
  /// Method form of loom::sign (self is *this); see loom/ops/tensor_methods.h.
  Tensor sign() const;
  /// Method form of loom::logical_not (self is *this); see loom/ops/tensor_methods.h.
  Tensor logical_not() const;
  /// Method form of loom::clamp (self is *this); see loom/ops/tensor_methods.h.
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  /// Method form of loom::pow (self is *this); see loom/ops/tensor_methods.h.
  Tensor pow(const Tensor& exponent) const;
  /// Method form of loom::pow (self is *this); see loom/ops/tensor_methods.h.
  Tensor pow(const Scalar& exponent) const;
  /// Method form of loom::add (self is *this); see loom/ops/tensor_methods.h.
  Tensor add(const Tensor& other, const Scalar& alpha = 1) const;
  /// Method form of loom::add (self is *this); see loom/ops/tensor_methods.h.
  Tensor add(const Scalar& other, const Scalar& alpha = 1) const;
  /// Method form of loom::sub (self is *this); see loom/ops/tensor_methods.h.
  Tensor sub(const Tensor& other, const Scalar& alpha = 1) const;
  /// Method form of loom::sub (self is *this); see loom/ops/tensor_methods.h.
  Tensor sub(const Scalar& other, const Scalar& alpha = 1) const;
  /// Method form of loom::mul (self is *this); see loom/ops/tensor_methods.h.
  Tensor mul(const Tensor& other) const;
  /// Method form of loom::mul (self is *this); see loom/ops/tensor_methods.h.
  Tensor mul(const Scalar& other) const;
  /// Method form of loom::div (self is *this); see loom/ops/tensor_methods.h.
  Tensor div(const Tensor& other) const;
  /// Method form of loom::div (self is *this); see loom/ops/tensor_methods.h.
  Tensor div(const Scalar& other) const;
  /// Method form of loom::add_ (self is *this); see loom/ops/tensor_methods.h.
  const Tensor& add_(const Tensor& other, const Scalar& alpha = 1) const;
  /// Method form of loom::add_ (self is *this); see loom/ops/tensor_methods.h.
  const Tensor& add_(const Scalar& other, const Scalar& alpha = 1) const;
  /// Method form of loom::sub_ (self is *this); see loom/ops/tensor_methods.h.
  const Tensor& sub_(const Tensor& other, const Scalar& alpha = 1) const;
  /// Method form of loom::mul_ (self is *this); see loom/ops/tensor_methods.h.
  const Tensor& mul_(const Tensor& other) const;
  /// Method form of loom::mul_ (self is *this); see loom/ops/tensor_methods.h.
  const Tensor& mul_(const Scalar& other) const;
  /// Method form of loom::div_ (self is *this); see loom/ops/tensor_methods.h.
  const Tensor& div_(const Tensor& other) const;
  /// Method form of loom::div_ (self is *this); see loom/ops/tensor_methods.h.
  const Tensor& div_(const Scalar& other) const;
  /// Method form of loom::relu_ (self is *this); see loom/ops/tensor_methods.h.
  const Tensor& relu_() const;
  /// Method form of loom::clamp_ (self is *this); see loom/ops/tensor_methods.h.
  const Tensor& clamp_(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  /// Method form of loom::maximum (self is *this); see loom/ops/tensor_methods.h.
  Tensor maximum(const Tensor& other) const;
  /// Method form of loom::minimum (self is *this); see loom/ops/tensor_methods.h.
  Tensor minimum(const Tensor& other) const;
  /// Method form of loom::eq (self is *this); see loom/ops/tensor_methods.h.
  Tensor eq(const Tensor& other) const;
  /// Method form of loom::eq (self is *this); see loom/ops/tensor_methods.h.
  Tensor eq(const Scalar& other) const;
  /// Method form of loom::ne (self is *this); see loom/ops/tensor_methods.h.
  Tensor ne(const Tensor& other) const;
  /// Method form of loom::ne (self is *this); see loom/ops/tensor_methods.h.
  Tensor ne(const Scalar& other) const;
  /// Method form of loom::lt (self is *this); see loom/ops/tensor_methods.h.
  Tensor lt(const Tensor& other) const;
  /// Method form of loom::lt (self is *this); see loom/ops/tensor_methods.h.
  Tensor lt(const Scalar& other) const;
  /// Method form of loom::le (self is *this); see loom/ops/tensor_methods.h.
  Tensor le(const Tensor& other) const;
  /// Method form of loom::le (self is *this); see loom/ops/tensor_methods.h.
  Tensor le(const Scalar& other) const;
  /// Method form of loom::gt (self is *this); see loom/ops/tensor_methods.h.
  Tensor gt(const Tensor& other) const;
  /// Method form of loom::gt (self is *this); see loom/ops/tensor_methods.h.
  Tensor gt(const Scalar& other) const;
  /// Method form of loom::ge (self is *this); see loom/ops/tensor_methods.h.
  Tensor ge(const Tensor& other) const;
  /// Method form of loom::ge (self is *this); see loom/ops/tensor_methods.h.
  Tensor ge(const Scalar& other) const;
  /// Method form of loom::where (self is *this); see loom/ops/tensor_methods.h.
  Tensor where(const Tensor& condition, const Tensor& other) const;
  /// Method form of loom::masked_fill (self is *this); see loom/ops/tensor_methods.h.
  Tensor masked_fill(const Tensor& mask, const Scalar& value) const;
  /// Method form of loom::masked_fill_ (self is *this); see loom/ops/tensor_methods.h.
  const Tensor& masked_fill_(const Tensor& mask, const Scalar& value) const;

  // Reductions.
  /// Method form of loom::sum (self is *this); see loom/ops/tensor_methods.h.
  Tensor sum(std::optional<DType> dtype = std::nullopt) const;
  /// Method form of loom::sum (self is *this); see loom/ops/tensor_methods.h.
  Tensor sum(IntArrayRef dim, bool keepdim = false, std::optional<DType> dtype = std::nullopt) const;
  /// Method form of loom::mean (self is *this); see loom/ops/tensor_methods.h.
  Tensor mean(std::optional<DType> dtype = std::nullopt) const;
  /// Method form of loom::mean (self is *this); see loom/ops/tensor_methods.h.
  Tensor mean(IntArrayRef dim, bool keepdim = false, std::optional<DType> dtype = std::nullopt) const;
  /// Method form of loom::prod (self is *this); see loom/ops/tensor_methods.h.
  Tensor prod(std::optional<DType> dtype = std::nullopt) const;
  /// Method form of loom::max (self is *this); see loom/ops/tensor_methods.h.
  Tensor max() const;
  /// Method form of loom::max (self is *this); see loom/ops/tensor_methods.h.
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;
  /// Method form of loom::min (self is *this); see loom/ops/tensor_methods.h.
  Tensor min() const;
  /// Method form of loom::min (self is *this); see loom/ops/tensor_methods.h.
  std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
  /// Method form of loom::amax (self is *this); see loom/ops/tensor_methods.h.
  Tensor amax(IntArrayRef dim = {}, bool keepdim = false) const;
  /// Method form of loom::amin (self is *this); see loom/ops/tensor_methods.h.
  Tensor amin(IntArrayRef dim = {}, bool keepdim = false) const;
  /// Method form of loom::argmax (self is *this); see loom/ops/tensor_methods.h.
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  /// Method form of loom::argmin (self is *this); see loom/ops/tensor_methods.h.
  Tensor argmin(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  /// Method form of loom::var (self is *this); see loom/ops/tensor_methods.h.
  Tensor var(bool unbiased = true) const;
  /// Method form of loom::std (self is *this); see loom/ops/tensor_methods.h.
  Tensor std(bool unbiased = true) const;
  /// Method form of loom::norm (self is *this); see loom/ops/tensor_methods.h.
  Tensor norm(const Scalar& p = 2) const;
  /// Method form of loom::logsumexp (self is *this); see loom/ops/tensor_methods.h.
  Tensor logsumexp(IntArrayRef dim, bool keepdim = false) const;
  /// Method form of loom::all (self is *this); see loom/ops/tensor_methods.h.
  Tensor all() const;
  /// Method form of loom::any (self is *this); see loom/ops/tensor_methods.h.
  Tensor any() const;
  /// Method form of loom::cumsum (self is *this); see loom/ops/tensor_methods.h.
  Tensor cumsum(int64_t dim) const;
  /// Method form of loom::softmax (self is *this); see loom/ops/tensor_methods.h.
  Tensor softmax(int64_t dim) const;
  /// Method form of loom::log_softmax (self is *this); see loom/ops/tensor_methods.h.
  Tensor log_softmax(int64_t dim) const;

  // Linear algebra.
  /// Method form of loom::matmul (self is *this); see loom/ops/tensor_methods.h.
  Tensor matmul(const Tensor& other) const;
  /// Method form of loom::mm (self is *this); see loom/ops/tensor_methods.h.
  Tensor mm(const Tensor& mat2) const;
  /// Method form of loom::bmm (self is *this); see loom/ops/tensor_methods.h.
  Tensor bmm(const Tensor& mat2) const;
  /// Method form of loom::dot (self is *this); see loom/ops/tensor_methods.h.
  Tensor dot(const Tensor& other) const;

  // Indexing and sorting.
  /// Method form of loom::index_select (self is *this); see loom/ops/tensor_methods.h.
  Tensor index_select(int64_t dim, const Tensor& index) const;
  /// Method form of loom::gather (self is *this); see loom/ops/tensor_methods.h.
  Tensor gather(int64_t dim, const Tensor& index) const;
  /// Method form of loom::scatter (self is *this); see loom/ops/tensor_methods.h.
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src) const;
  /// Method form of loom::scatter_add (self is *this); see loom/ops/tensor_methods.h.
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const;
  /// Method form of loom::masked_select (self is *this); see loom/ops/tensor_methods.h.
  Tensor masked_select(const Tensor& mask) const;
  /// Method form of loom::nonzero (self is *this); see loom/ops/tensor_methods.h.
  Tensor nonzero() const;
  /// Method form of loom::topk (self is *this); see loom/ops/tensor_methods.h.
  std::tuple<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true,
                                  bool sorted = true) const;
  /// Method form of loom::sort (self is *this); see loom/ops/tensor_methods.h.
  std::tuple<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false) const;
  /// Method form of loom::argsort (self is *this); see loom/ops/tensor_methods.h.
  Tensor argsort(int64_t dim = -1, bool descending = false) const;
  /// PyTorch's x[...] in C++: `x.index({Slice(0, 10), 1, None, Ellipsis, mask})`.
  Tensor index(ArrayRef<TensorIndex> indices) const;
  /// x[...] = value.
  const Tensor& index_put_(ArrayRef<TensorIndex> indices, const Tensor& value) const;
  /// x[...] = value (a number).
  const Tensor& index_put_(ArrayRef<TensorIndex> indices, const Scalar& value) const;

 private:
  TensorImpl* checked() const {
    if (__builtin_expect(!impl_, 0)) throw_undefined();
    return impl_.get();
  }
  [[noreturn]] static void throw_undefined();
  boost::intrusive_ptr<TensorImpl> impl_;
};

/// Streams Tensor::str().
std::ostream& operator<<(std::ostream& os, const Tensor& t);
/// "[2, 3]".
std::string sizes_str(IntArrayRef sizes);
/// Normalises a possibly negative dim against ndim; throws IndexError with PyTorch's
/// wording ("Dimension out of range (expected to be in range of [-2, 1], but got 2)").
int64_t wrap_dim(int64_t dim, int64_t ndim);

template <typename T>
T* Tensor::data_ptr() const {
  LOOM_CHECK_T(TypeError, dtype() == dtype_of<T>, "data_ptr<", dtype_name(dtype_of<T>),
               ">: tensor ", describe(), " has dtype ", dtype_name(dtype()));
  return static_cast<T*>(data_ptr());
}

template <typename T>
Tensor Tensor::from_vector(const std::vector<T>& values, IntArrayRef sizes) {
  Tensor t = empty(sizes, TensorOptions{}.with(dtype_of<T>));
  LOOM_CHECK(static_cast<size_t>(t.numel()) == values.size(), "from_vector: ", values.size(),
             " values do not fill sizes ", sizes_str(sizes), " (", t.numel(), " elements)");
  T* out = t.data_ptr<T>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

namespace detail {
/// Reads element 0 of a one-element CPU tensor as double (any dtype); item().to_double().
double read_scalar_as_double(const Tensor& t);
}  // namespace detail

template <typename T>
T Tensor::item() const {
  return item().to<T>();
}

}  // namespace loom
