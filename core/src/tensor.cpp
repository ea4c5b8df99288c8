#include "loom/core/tensor.h"

#include <cmath>
#include <ostream>

#include "loom/core/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "loom/core/half.h"

namespace loom {

std::string sizes_str(IntArrayRef sizes) {
  return loom::str_cat("[", absl::StrJoin(sizes, ", "), "]");
}

int64_t wrap_dim(int64_t dim, int64_t ndim) {
  const int64_t n = std::max<int64_t>(ndim, 1);  // a 0-dim tensor accepts dims -1 and 0
  LOOM_CHECK_T(IndexError, dim >= -n && dim < n,
               "Dimension out of range (expected to be in range of [", -n, ", ", n - 1,
               "], but got ", dim, ")");
  return dim < 0 ? dim + n : dim;
}

void Tensor::throw_undefined() {
  LOOM_THROW(ValueError, "the tensor is undefined (a default-constructed Tensor holds no data)");
}

Tensor Tensor::empty(IntArrayRef sizes, TensorOptions options) {
  int64_t numel = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    LOOM_CHECK(sizes[i] >= 0, "empty: negative dimension ", sizes[i], " in sizes ",
               sizes_str(sizes));
    LOOM_CHECK(!__builtin_mul_overflow(numel, sizes[i], &numel), "empty: sizes ",
               sizes_str(sizes), " overflow the number of elements");
  }
  // The byte count must fit in int64 too: TensorImpl's bounds check computes in int64.
  int64_t nbytes = 0;
  LOOM_CHECK(!__builtin_mul_overflow(numel, static_cast<int64_t>(loom::element_size(options.dtype)),
                                     &nbytes),
             "empty: sizes ", sizes_str(sizes), " of ", dtype_name(options.dtype),
             " overflow the number of bytes");
  Storage storage = Storage::allocate(static_cast<size_t>(nbytes), options.device);
  auto strides = contiguous_strides(sizes);
  Tensor t(boost::intrusive_ptr<TensorImpl>(
      new TensorImpl(std::move(storage), options.dtype, sizes, strides, 0)));
  if (options.requires_grad) t.set_requires_grad(true);
  return t;
}

namespace {
// Unlike wrap_dim (where a 0-dim tensor accepts dims 0 and -1, as reductions do), size() and
// stride() have no dimension to return for a 0-dim tensor (PyTorch's wrap_scalar=false).
int64_t wrap_dim_no_scalar(int64_t dim, int64_t ndim) {
  LOOM_CHECK_T(IndexError, ndim > 0, "dimension specified as ", dim,
               " but tensor has no dimensions");
  return wrap_dim(dim, ndim);
}
}  // namespace

int64_t Tensor::size(int64_t dim) const { return sizes()[wrap_dim_no_scalar(dim, this->dim())]; }
int64_t Tensor::stride(int64_t dim) const {
  return strides()[wrap_dim_no_scalar(dim, this->dim())];
}

Tensor Tensor::as_strided_view(IntArrayRef sizes, IntArrayRef strides,
                               int64_t storage_offset) const {
  auto* self = checked();
  boost::intrusive_ptr<TensorImpl> view(
      new TensorImpl(self->storage(), self->dtype(), sizes, strides, storage_offset));
  view->share_version_counter(*self);
  return Tensor(std::move(view));
}

std::string Tensor::describe() const {
  if (!impl_) return "undefined";
  return loom::str_cat(sizes_str(sizes()), " ", device().str(), " ", dtype_name(dtype()));
}

namespace {
// One element as a Scalar of its category; integers stay int64, never through double.
Scalar read_element(const void* p, DType t) {
  switch (t) {
    // Read bool as a byte: uninitialised memory may hold values other than 0 and 1.
    case DType::Bool: return Scalar(*static_cast<const uint8_t*>(p) != 0);
    case DType::UInt8: return Scalar(int64_t{*static_cast<const uint8_t*>(p)});
    case DType::Int8: return Scalar(int64_t{*static_cast<const int8_t*>(p)});
    case DType::Int16: return Scalar(int64_t{*static_cast<const int16_t*>(p)});
    case DType::Int32: return Scalar(int64_t{*static_cast<const int32_t*>(p)});
    case DType::Int64: return Scalar(*static_cast<const int64_t*>(p));
    case DType::Float16: return Scalar(half_to_float(*static_cast<const uint16_t*>(p)));
    case DType::BFloat16: return Scalar(bfloat16_to_float(*static_cast<const uint16_t*>(p)));
    case DType::Float32: return Scalar(*static_cast<const float*>(p));
    case DType::Float64: return Scalar(*static_cast<const double*>(p));
  }
  return Scalar();
}

std::string format_element(double v, DType t) {
  if (t == DType::Bool) return v != 0 ? "True" : "False";
  if (!is_floating_point(t)) return loom::str_cat(static_cast<int64_t>(v));
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == std::floor(v) && std::fabs(v) < 1e16) return absl::StrFormat("%.0f.", v);
  return absl::StrFormat("%.4f", v);
}

void append_values(const Tensor& t, int64_t dim, int64_t offset, int indent, std::string* out) {
  const char* base = static_cast<const char*>(t.storage().data());
  const auto es = static_cast<int64_t>(t.element_size());
  if (dim == t.dim()) {
    loom::str_append(
        out, format_element(read_element(base + offset * es, t.dtype()).to_double(), t.dtype()));
    return;
  }
  out->push_back('[');
  const int64_t n = t.size(dim);
  for (int64_t i = 0; i < n; ++i) {
    if (i > 0) {
      out->push_back(',');
      if (dim + 1 < t.dim()) {
        out->append(static_cast<size_t>(t.dim() - dim - 1), '\n');
        out->append(static_cast<size_t>(indent + dim + 1), ' ');
      } else {
        out->push_back(' ');
      }
    }
    append_values(t, dim + 1, offset + i * t.stride(dim), indent, out);
  }
  out->push_back(']');
}
}  // namespace

Scalar Tensor::item() const {
  LOOM_CHECK(numel() == 1, "item(): a Tensor with ", numel(),
             " elements cannot be converted to Scalar (tensor ", describe(), ")");
  LOOM_CHECK_T(DeviceError, device().is_cpu(), "item(): tensor ", describe(),
               " is not on the CPU; copy it to cpu first");
  return read_element(data_ptr(), dtype());
}

namespace detail {
double read_scalar_as_double(const Tensor& t) { return t.item().to_double(); }
}  // namespace detail

std::string Tensor::str() const {
  if (!impl_) return "tensor(undefined)";
  if (!device().is_cpu() || storage().data() == nullptr && numel() > 0) {
    return loom::str_cat("tensor(<", describe(), ">)");
  }
  std::string out = "tensor(";
  if (numel() == 0) {
    out += "[]";
  } else {
    append_values(*this, 0, storage_offset(), 7, &out);
  }
  if (dtype() != DType::Float32 && dtype() != DType::Int64 && dtype() != DType::Bool) {
    loom::str_append(&out, ", dtype=", dtype_name(dtype()));
  }
  out += ")";
  return out;
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace loom
