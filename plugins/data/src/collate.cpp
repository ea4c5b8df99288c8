// Collate functions (loom/data/dataloader.h): stacking and padding on raw CPU memory, so
// batching needs no op pack for CPU samples.

#include <algorithm>
#include <cstring>

#include "loom/core/half.h"
#include "loom/data/dataloader.h"
#include "loom/ops/core.h"
#include "tensor_bytes.h"

namespace loom::data {
namespace {

// Writes value, converted to dtype t, into n elements at dst.
void fill_elements(char* dst, int64_t n, DType t, double value) {
  if (n <= 0) return;
  const size_t e = element_size(t);
  char one[8] = {};
  switch (t) {
    case DType::Bool:
      *reinterpret_cast<bool*>(one) = value != 0;
      break;
    case DType::UInt8:
      *reinterpret_cast<uint8_t*>(one) = static_cast<uint8_t>(value);
      break;
    case DType::Int8:
      *reinterpret_cast<int8_t*>(one) = static_cast<int8_t>(value);
      break;
    case DType::Int16:
      *reinterpret_cast<int16_t*>(one) = static_cast<int16_t>(value);
      break;
    case DType::Int32:
      *reinterpret_cast<int32_t*>(one) = static_cast<int32_t>(value);
      break;
    case DType::Int64:
      *reinterpret_cast<int64_t*>(one) = static_cast<int64_t>(value);
      break;
    case DType::Float16:
      *reinterpret_cast<uint16_t*>(one) = float_to_half(static_cast<float>(value));
      break;
    case DType::BFloat16:
      *reinterpret_cast<uint16_t*>(one) = float_to_bfloat16(static_cast<float>(value));
      break;
    case DType::Float32:
      *reinterpret_cast<float*>(one) = static_cast<float>(value);
      break;
    case DType::Float64:
      *reinterpret_cast<double*>(one) = value;
      break;
  }
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * e, one, e);
}

bool all_cpu(const std::vector<Sample>& samples, size_t field) {
  for (const Sample& s : samples)
    if (!s[field].device().is_cpu()) return false;
  return true;
}

void check_samples(const std::vector<Sample>& samples, const char* who) {
  LOOM_CHECK(!samples.empty(), who, ": expected at least one sample");
  for (size_t i = 1; i < samples.size(); ++i)
    LOOM_CHECK(samples[i].size() == samples[0].size(), who,
               ": each sample in a batch should have the same number of fields; sample 0 has ",
               samples[0].size(), ", sample ", i, " has ", samples[i].size());
}

// stack(field `field` of every sample) along a new dim 0.
Tensor stack_field(const std::vector<Sample>& samples, size_t field, const char* who) {
  const Tensor& first = samples[0][field];
  for (size_t i = 1; i < samples.size(); ++i) {
    const Tensor& t = samples[i][field];
    LOOM_CHECK(t.sizes() == first.sizes(), who, ": stack expects each tensor to be equal size, ",
               "but got ", sizes_str(first.sizes()), " at sample 0 and ", sizes_str(t.sizes()),
               " at sample ", i, " (field ", field, ")");
    LOOM_CHECK_T(TypeError, t.dtype() == first.dtype(), who, ": field ", field, " has dtype ",
                 dtype_name(first.dtype()), " at sample 0 and ", dtype_name(t.dtype()),
                 " at sample ", i);
  }
  if (!all_cpu(samples, field)) {
    std::vector<Tensor> parts;
    for (const Sample& s : samples) parts.push_back(s[field]);
    return loom::stack(parts, 0);
  }
  std::vector<int64_t> sizes{static_cast<int64_t>(samples.size())};
  sizes.insert(sizes.end(), first.sizes().begin(), first.sizes().end());
  Tensor out = Tensor::empty(sizes, TensorOptions{}.with(first.dtype()));
  const size_t bytes = first.numel() * first.element_size();
  char* o = static_cast<char*>(out.data_ptr());
  for (size_t i = 0; i < samples.size(); ++i) {
    const Tensor c = detail::cpu_contiguous(samples[i][field]);
    if (bytes) std::memcpy(o + i * bytes, c.data_ptr(), bytes);
  }
  return out;
}

// Pads field `field` along dim 0 to the longest; returns {padded batch, lengths}.
std::pair<Tensor, Tensor> pad_field(const std::vector<Sample>& samples, size_t field,
                                    double padding_value) {
  const Tensor& first = samples[0][field];
  LOOM_CHECK(first.dim() >= 1, "pad_collate: field ", field,
             " must have at least one dim to pad, got ", first.describe());
  int64_t longest = 0;
  std::vector<int64_t> lengths;
  for (size_t i = 0; i < samples.size(); ++i) {
    const Tensor& t = samples[i][field];
    LOOM_CHECK(t.dim() == first.dim() &&
                   std::equal(t.sizes().begin() + 1, t.sizes().end(), first.sizes().begin() + 1),
               "pad_collate: field ", field, " may differ only in its first dim, got ",
               sizes_str(first.sizes()), " at sample 0 and ", sizes_str(t.sizes()), " at sample ",
               i);
    LOOM_CHECK_T(TypeError, t.dtype() == first.dtype(), "pad_collate: field ", field, " has dtype ",
                 dtype_name(first.dtype()), " at sample 0 and ", dtype_name(t.dtype()),
                 " at sample ", i);
    lengths.push_back(t.size(0));
    longest = std::max(longest, t.size(0));
  }
  std::vector<int64_t> sizes{static_cast<int64_t>(samples.size()), longest};
  sizes.insert(sizes.end(), first.sizes().begin() + 1, first.sizes().end());
  Tensor out = Tensor::empty(sizes, TensorOptions{}.with(first.dtype()));
  const int64_t row = first.numel() / std::max<int64_t>(first.size(0), 1) *
                      static_cast<int64_t>(first.element_size());
  const int64_t row_elems = row / static_cast<int64_t>(first.element_size());
  char* o = static_cast<char*>(out.data_ptr());
  for (size_t i = 0; i < samples.size(); ++i) {
    const Tensor c = detail::cpu_contiguous(samples[i][field]);
    char* dst = o + static_cast<int64_t>(i) * longest * row;
    if (lengths[i] > 0) std::memcpy(dst, c.data_ptr(), lengths[i] * row);
    fill_elements(dst + lengths[i] * row, (longest - lengths[i]) * row_elems, first.dtype(),
                  padding_value);
  }
  return {out, Tensor::from_vector<int64_t>(lengths, {static_cast<int64_t>(lengths.size())})};
}

}  // namespace

Batch default_collate(std::vector<Sample> samples) {
  check_samples(samples, "default_collate");
  Batch out;
  for (size_t f = 0; f < samples[0].size(); ++f)
    out.push_back(stack_field(samples, f, "default_collate"));
  return out;
}

CollateFn pad_collate(std::vector<int> fields, double padding_value) {
  return [fields = std::move(fields), padding_value](std::vector<Sample> samples) {
    check_samples(samples, "pad_collate");
    const size_t nfields = samples[0].size();
    for (int f : fields)
      LOOM_CHECK(f >= 0 && static_cast<size_t>(f) < nfields, "pad_collate: field ", f,
                 " requested but samples have ", nfields, " fields");
    Batch out(nfields);
    std::vector<Tensor> lengths;
    for (size_t f = 0; f < nfields; ++f) {
      if (std::find(fields.begin(), fields.end(), static_cast<int>(f)) == fields.end())
        out[f] = stack_field(samples, f, "pad_collate");
    }
    for (int f : fields) {
      auto [padded, len] = pad_field(samples, f, padding_value);
      out[f] = padded;
      lengths.push_back(len);
    }
    out.insert(out.end(), lengths.begin(), lengths.end());
    return out;
  };
}

}  // namespace loom::data
