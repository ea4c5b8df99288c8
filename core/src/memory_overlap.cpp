// Memory overlap checks (Note [Memory overlap] in loom/core/memory_overlap.h). Everything is
// computed from storage offsets in bytes, never from data pointers, so tensors without memory
// (meta tensors, empty storages) compare the same way.
#include "loom/core/memory_overlap.h"

#include <algorithm>

#include "absl/container/inlined_vector.h"
#include "loom/core/error.h"
#include "loom/core/str_cat.h"

namespace loom {
namespace {

// The bytes of its storage a tensor with elements can touch: [begin, end).
struct ByteRange {
  int64_t begin = 0, end = 0;
};

ByteRange byte_range(const Tensor& t) {
  const auto es = static_cast<int64_t>(t.element_size());
  int64_t lo = t.storage_offset() * es, hi = lo;
  for (int64_t d = 0; d < t.dim(); ++d) {
    const int64_t span = (t.size(d) - 1) * t.stride(d) * es;
    (span < 0 ? lo : hi) += span;
  }
  return {lo, hi + es};
}

std::string where(std::string_view name, const Tensor& t) {
  return str_cat(name, ": ", t.describe(), ", storage offset ", t.storage_offset());
}

[[noreturn]] void throw_overlap(std::string_view op, const Tensor& written,
                                std::string_view input_name, const Tensor& input) {
  LOOM_THROW(ValueError, op,
             ": unsupported operation: some elements of the input tensor and the written-to "
             "tensor refer to a single memory location. Please clone() the tensor before "
             "performing the operation. (input ",
             where(input_name, input), "; written-to ", where("tensor", written), ")");
}

}  // namespace

bool is_non_overlapping_and_dense(const Tensor& t) {
  if (t.is_contiguous()) return true;
  const int64_t n = t.dim();
  absl::InlinedVector<int64_t, 6> order;
  for (int64_t d = 0; d < n; ++d) {
    if (t.size(d) != 1) order.push_back(d);
  }
  std::sort(order.begin(), order.end(),
            [&](int64_t a, int64_t b) { return t.stride(a) < t.stride(b); });
  int64_t expected = 1;
  for (int64_t d : order) {
    if (t.stride(d) != expected) return false;
    expected *= t.size(d);
  }
  return true;
}

MemOverlap has_internal_overlap(const Tensor& t) {
  if (is_non_overlapping_and_dense(t)) return MemOverlap::No;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) > 1 && t.stride(d) == 0) return MemOverlap::Yes;
  }
  return MemOverlap::TooHard;
}

MemOverlapStatus get_overlap_status(const Tensor& a, const Tensor& b) {
  if (a.is_same(b)) return MemOverlapStatus::Full;
  if (a.numel() == 0 || b.numel() == 0 || !a.is_alias_of(b)) return MemOverlapStatus::No;
  if (a.storage().nbytes() == 0) return MemOverlapStatus::No;
  const ByteRange ra = byte_range(a), rb = byte_range(b);
  if (ra.end <= rb.begin || rb.end <= ra.begin) return MemOverlapStatus::No;
  if (!is_non_overlapping_and_dense(a) || !is_non_overlapping_and_dense(b)) {
    return MemOverlapStatus::TooHard;
  }
  if (ra.begin == rb.begin && ra.end == rb.end && a.element_size() == b.element_size() &&
      a.sizes() == b.sizes() && a.strides() == b.strides()) {
    return MemOverlapStatus::Full;
  }
  return MemOverlapStatus::Partial;
}

void assert_no_internal_overlap(std::string_view op, const Tensor& t) {
  LOOM_CHECK(has_internal_overlap(t) != MemOverlap::Yes, op,
             ": unsupported operation: more than one element of the written-to tensor refers to "
             "a single memory location. Please clone() the tensor before performing the "
             "operation. (written-to tensor: ",
             t.describe(), ", strides ", sizes_str(t.strides()), ")");
}

bool check_input_overlap(std::string_view op, const Tensor& written, std::string_view input_name,
                         const Tensor& input, bool allow_full) {
  if (!written.defined() || !input.defined()) return false;
  const MemOverlapStatus s = get_overlap_status(written, input);
  if (s == MemOverlapStatus::Partial || (s == MemOverlapStatus::Full && !allow_full)) {
    throw_overlap(op, written, input_name, input);
  }
  return s == MemOverlapStatus::TooHard;
}

}  // namespace loom
