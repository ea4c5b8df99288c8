#pragma once
/// @file
/// Scalar and Tensor (RAII over LoomTensor*: making, metadata, data, autograd); the op
/// methods are declared here and defined in loom/stable/tensor_ops.hpp.
/// Part of loom/stable.hpp (include that).

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "loom/stable/dtype.hpp"

namespace loom::stable {

/// A number argument (the schema's Scalar): an integer, a floating-point value or a bool,
/// kept as the kind it was given in (so that int tensor + 1 stays int).
class Scalar {
 public:
  /// A bool (exactly: a pointer does not convert).
  template <typename T, std::enable_if_t<std::is_same_v<T, bool>, int> = 0>
  Scalar(T b) noexcept {  // NOLINT(google-explicit-constructor)
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
    static_assert(!std::is_same_v<T, bool>,
                  "from_data: std::vector<bool> has no data(); pass "
                  "a bool array with the pointer overload");
    check_count(values.size(), sizes);
    return from_data(values.data(), sizes, dtype_of<T>(), device);
  }
  /// A 1-d CPU tensor holding a copy of values; dtype from T.
  template <typename T>
  static Tensor from_data(const std::vector<T>& values) {
    return from_data(values, {static_cast<int64_t>(values.size())});
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
  /// The value of a one-element tensor converted to T (any device). An integer T of an int64
  /// tensor is read exactly (not through double, which holds integers up to 2^53 only).
  template <typename T = double>
  T item() const {
    double v = 0;
    check(api()->TensorItem(ptr_, &v));  // checks the element count, with Loom's message
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      if (dtype() == dtype::int64()) {
        int64_t exact = 0;
        check(api()->TensorCopyToHost(ptr_, &exact, sizeof(exact)));
        return static_cast<T>(exact);
      }
    }
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
  /// aten::prod over every element.
  Tensor prod() const;
  /// aten::var over every element (unbiased: divide by n - 1).
  Tensor var(bool unbiased = true) const;
  /// aten::std over every element.
  Tensor std(bool unbiased = true) const;
  /// aten::logsumexp.
  Tensor logsumexp(const std::vector<int64_t>& dims, bool keepdim = false) const;
  /// aten::cumsum.
  Tensor cumsum(int64_t dim) const;

  /// aten::index_select.
  Tensor index_select(int64_t dim, const Tensor& index) const;
  /// aten::gather.
  Tensor gather(int64_t dim, const Tensor& index) const;
  /// aten::masked_fill.Scalar: value where mask is true.
  Tensor masked_fill(const Tensor& mask, const Scalar& value) const;
  /// aten::chunk: chunks pieces along dim (views).
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  /// aten::split.Tensor: pieces of split_size along dim (views; the last may be smaller).
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;

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
  std::vector<int64_t> dims(LoomStatus* (*fn)(const LoomTensor*, int64_t*, size_t, size_t*)) const {
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

}  // namespace loom::stable
