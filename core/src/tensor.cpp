#include "loom/core/tensor.h"

#include <cmath>
#include <ostream>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "loom/core/half.h"
#include "loom/core/str_cat.h"
#include "loom/core/value_reads.h"

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
  const int d = static_cast<int>(options.dtype);
  LOOM_CHECK_T(TypeError, d >= 0 && d < kNumDTypes, "empty: invalid dtype value ", d,
               " (valid values are 0 to ", kNumDTypes - 1, ")");
  int64_t numel = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    LOOM_CHECK(sizes[i] >= 0, "empty: negative dimension ", sizes[i], " in sizes ",
               sizes_str(sizes));
    LOOM_CHECK(!__builtin_mul_overflow(numel, sizes[i], &numel), "empty: sizes ", sizes_str(sizes),
               " overflow the number of elements");
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
    case DType::Bool:
      return Scalar(*static_cast<const uint8_t*>(p) != 0);
    case DType::UInt8:
      return Scalar(int64_t{*static_cast<const uint8_t*>(p)});
    case DType::Int8:
      return Scalar(int64_t{*static_cast<const int8_t*>(p)});
    case DType::Int16:
      return Scalar(int64_t{*static_cast<const int16_t*>(p)});
    case DType::Int32:
      return Scalar(int64_t{*static_cast<const int32_t*>(p)});
    case DType::Int64:
      return Scalar(*static_cast<const int64_t*>(p));
    case DType::Float16:
      return Scalar(half_to_float(*static_cast<const uint16_t*>(p)));
    case DType::BFloat16:
      return Scalar(bfloat16_to_float(*static_cast<const uint16_t*>(p)));
    case DType::Float32:
      return Scalar(*static_cast<const float*>(p));
    case DType::Float64:
      return Scalar(*static_cast<const double*>(p));
  }
  return Scalar();
}

// Printing follows PyTorch's torch/_tensor_str.py with its default print options, so that
// str() of a Loom tensor reads like repr() of the same torch tensor.
constexpr int kPrecision = 4;         // digits after the point
constexpr int64_t kThreshold = 1000;  // more elements than this are summarised
constexpr int64_t kEdgeItems = 3;     // elements shown at each end of a summarised dimension
constexpr int kLineWidth = 80;

// Calls f(offset) for every element str() shows: all of them, or when summarising only the
// first and last kEdgeItems of each dimension (PyTorch's get_summarized_data).
template <typename F>
void for_each_shown(const Tensor& t, int64_t dim, int64_t offset, bool summarize, F& f) {
  if (dim == t.dim()) {
    f(offset);
    return;
  }
  const int64_t n = t.sizes()[dim], stride = t.strides()[dim];
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) i = n - kEdgeItems;
    for_each_shown(t, dim + 1, offset + i * stride, summarize, f);
  }
}

std::string format_double(double v, char conversion) {
  if (std::isnan(v)) return "nan";  // printf would say "-nan" for a negative NaN
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return conversion == 'e' ? absl::StrFormat("%.*e", kPrecision, v)
                           : absl::StrFormat("%.*f", kPrecision, v);
}

// PyTorch's _Formatter: one format for all elements, chosen from the values shown, and the
// width of the widest so that columns line up.
class ElementFormatter {
 public:
  ElementFormatter(const Tensor& t, bool summarize)
      : base_(static_cast<const char*>(t.storage().data())),
        dtype_(t.dtype()),
        element_size_(static_cast<int64_t>(t.element_size())),
        floating_(is_floating_point(t.dtype())) {
    if (!floating_) {
      auto widest = [&](int64_t off) {
        max_width_ = std::max(max_width_, static_cast<int>(plain(off).size()));
      };
      for_each_shown(t, 0, t.storage_offset(), summarize, widest);
      return;
    }
    std::vector<double> finite;  // the nonzero finite values
    auto collect = [&](int64_t off) {
      const double v = value(off).to_double();
      if (std::isfinite(v) && v != 0) finite.push_back(v);
    };
    for_each_shown(t, 0, t.storage_offset(), summarize, collect);
    if (finite.empty()) return;  // only zeros and non-finite values: "0.", "nan", "inf"
    double lo = std::fabs(finite[0]), hi = lo;
    for (double v : finite) {
      lo = std::min(lo, std::fabs(v));
      hi = std::max(hi, std::fabs(v));
      if (v != std::ceil(v)) int_mode_ = false;
    }
    sci_mode_ = hi / lo > 1000.0 || hi > 1.0e8 || (!int_mode_ && lo < 1.0e-4);
    for (double v : finite) {
      const int w = sci_mode_   ? static_cast<int>(format_double(v, 'e').size())
                    : int_mode_ ? static_cast<int>(absl::StrFormat("%.0f", v).size()) + 1
                                : static_cast<int>(format_double(v, 'f').size());
      max_width_ = std::max(max_width_, w);
    }
  }

  int width() const { return max_width_; }

  // The element at storage offset off, right-aligned to width().
  std::string format(int64_t off) const {
    std::string s;
    if (!floating_) {
      s = plain(off);
    } else {
      const double v = value(off).to_double();
      if (sci_mode_) {
        s = format_double(v, 'e');
      } else if (int_mode_) {
        s = std::isfinite(v) ? absl::StrFormat("%.0f.", v) : format_double(v, 'f');
      } else {
        s = format_double(v, 'f');
      }
    }
    if (static_cast<int>(s.size()) < max_width_) s.insert(0, max_width_ - s.size(), ' ');
    return s;
  }

 private:
  Scalar value(int64_t off) const { return read_element(base_ + off * element_size_, dtype_); }
  std::string plain(int64_t off) const {
    const Scalar v = value(off);
    return v.is_bool() ? (v.to<bool>() ? "True" : "False") : loom::str_cat(v.to_int());
  }

  const char* base_;
  DType dtype_;
  int64_t element_size_;
  bool floating_;
  bool int_mode_ = true;
  bool sci_mode_ = false;
  int max_width_ = 1;
};

// PyTorch's _tensor_str_with_formatter / _vector_str.
void append_values(const Tensor& t, const ElementFormatter& fmt, int64_t dim, int64_t offset,
                   int indent, bool summarize, std::string* out) {
  if (dim == t.dim()) {  // a 0-dim tensor
    out->append(fmt.format(offset));
    return;
  }
  const int64_t n = t.sizes()[dim], stride = t.strides()[dim];
  const bool elide = summarize && n > 2 * kEdgeItems;
  out->push_back('[');
  if (dim + 1 == t.dim()) {
    const int per_line = std::max(1, (kLineWidth - indent) / (fmt.width() + 2));
    int on_line = 0;
    for (int64_t i = 0; i < n; ++i) {
      const bool ellipsis = elide && i == kEdgeItems;
      if (i > 0) {
        if (on_line == per_line) {
          out->append(",\n");
          out->append(static_cast<size_t>(indent + 1), ' ');
          on_line = 0;
        } else {
          out->append(", ");
        }
      }
      if (ellipsis) {
        out->append(" ...");
        i = n - kEdgeItems - 1;
      } else {
        out->append(fmt.format(offset + i * stride));
      }
      ++on_line;
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      if (i > 0) {
        out->push_back(',');
        out->append(static_cast<size_t>(t.dim() - dim - 1), '\n');
        out->append(static_cast<size_t>(indent + 1), ' ');
      }
      if (elide && i == kEdgeItems) {
        out->append("...");
        i = n - kEdgeItems - 1;
      } else {
        append_values(t, fmt, dim + 1, offset + i * stride, indent + 1, summarize, out);
      }
    }
  }
  out->push_back(']');
}

// "(2, 3)", "(5,)": a Python tuple, as PyTorch's size= suffix shows it.
std::string size_tuple(IntArrayRef sizes) {
  if (sizes.size() == 1) return loom::str_cat("(", sizes[0], ",)");
  return loom::str_cat("(", absl::StrJoin(sizes, ", "), ")");
}

// PyTorch's _add_suffixes: ", suffix" on the last line, or on a new line past kLineWidth.
void append_suffixes(const std::vector<std::string>& suffixes, int indent, std::string* out) {
  const size_t last_newline = out->rfind('\n');
  int64_t line_len = static_cast<int64_t>(out->size()) -
                     (last_newline == std::string::npos ? -1 : static_cast<int64_t>(last_newline)) +
                     1;
  for (const std::string& suffix : suffixes) {
    const auto len = static_cast<int64_t>(suffix.size());
    if (line_len + len + 2 > kLineWidth) {
      out->append(",\n");
      out->append(static_cast<size_t>(indent), ' ');
      line_len = indent + len;
    } else {
      out->append(", ");
      line_len += len + 2;
    }
    out->append(suffix);
  }
  out->push_back(')');
}
}  // namespace

namespace {
thread_local uint64_t t_host_value_reads = 0;
}  // namespace

uint64_t host_value_reads() { return t_host_value_reads; }

Scalar Tensor::item() const {
  ++t_host_value_reads;  // loom/core/value_reads.h
  LOOM_CHECK(numel() == 1, "item(): a Tensor with ", numel(),
             " elements cannot be converted to Scalar (tensor ", describe(), ")");
  LOOM_CHECK_T(NotImplementedError, !device().is_meta(),
               "Tensor.item() cannot be called on meta tensors (tensor ", describe(), ")");
  LOOM_CHECK_T(DeviceError, device().is_cpu(), "item(): tensor ", describe(),
               " is not on the CPU; copy it to cpu first");
  return read_element(data_ptr(), dtype());
}

namespace detail {
double read_scalar_as_double(const Tensor& t) { return t.item().to_double(); }
}  // namespace detail

std::string Tensor::str() const {
  if (!impl_) return "tensor(undefined)";
  const std::string prefix = "tensor(";
  const int indent = static_cast<int>(prefix.size());
  std::string out = prefix;
  std::vector<std::string> suffixes;
  const std::string torch_dtype = loom::str_cat("dtype=torch.", dtype_name(dtype()));
  if (!device().is_cpu()) suffixes.push_back(loom::str_cat("device='", device().str(), "'"));
  if (!device().is_cpu() || (storage().data() == nullptr && numel() > 0)) {
    // The core cannot read other devices' memory: as PyTorch prints a meta tensor.
    out += "...";
    suffixes.push_back(loom::str_cat("size=", size_tuple(sizes())));
    if (dtype() != default_float_dtype()) suffixes.push_back(torch_dtype);
  } else if (numel() == 0) {
    out += "[]";
    if (dim() != 1) suffixes.push_back(loom::str_cat("size=", size_tuple(sizes())));
    // No element shows whether an empty tensor is int64, so only float32 goes unsaid.
    if (dtype() != default_float_dtype()) suffixes.push_back(torch_dtype);
  } else {
    const bool summarize = numel() > kThreshold;
    const ElementFormatter fmt(*this, summarize);
    append_values(*this, fmt, 0, storage_offset(), indent, summarize, &out);
    if (dtype() != default_float_dtype() && dtype() != DType::Int64 && dtype() != DType::Bool) {
      suffixes.push_back(torch_dtype);
    }
  }
  if (requires_grad()) suffixes.push_back("requires_grad=True");
  append_suffixes(suffixes, indent, &out);
  return out;
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace loom
