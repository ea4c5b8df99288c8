// Datasets, worker info and sample generators (loom/data/dataset.h).

#include "loom/data/dataset.h"

#include "loom/data/transforms.h"
#include "loom/ops/indexing.h"
#include "worker_context.h"

namespace loom::data {

std::shared_ptr<IterableDataset> IterableDataset::clone() const {
  throw ValueError(
      "IterableDataset: this dataset does not override clone(), so it can be iterated by "
      "DataLoader only with num_workers = 0 (each worker iterates its own copy)");
}

TensorDataset::TensorDataset(std::vector<Tensor> tensors) : tensors_(std::move(tensors)) {
  LOOM_CHECK(!tensors_.empty(), "TensorDataset: expected at least one tensor");
  for (size_t k = 0; k < tensors_.size(); ++k) {
    LOOM_CHECK(tensors_[k].defined() && tensors_[k].dim() >= 1, "TensorDataset: tensor ", k,
               " must be defined and have at least one dimension");
    LOOM_CHECK(tensors_[k].size(0) == tensors_[0].size(0),
               "TensorDataset: size mismatch between tensors: tensor 0 has ", tensors_[0].size(0),
               " rows, tensor ", k, " has ", tensors_[k].size(0));
  }
}

int64_t TensorDataset::size() const { return tensors_[0].size(0); }

Tensor select_row(const Tensor& t, int64_t index) {
  const int64_t n = t.size(0);
  LOOM_CHECK_T(IndexError, index >= 0 && index < n, "index ", index,
               " is out of bounds for a dataset of size ", n);
  const IntArrayRef sizes = t.sizes(), strides = t.strides();
  return t.as_strided_view(IntArrayRef(sizes.data() + 1, sizes.size() - 1),
                           IntArrayRef(strides.data() + 1, strides.size() - 1),
                           t.storage_offset() + index * t.stride(0));
}

Sample TensorDataset::get(int64_t index) const {
  Sample s;
  s.reserve(tensors_.size());
  for (const Tensor& t : tensors_) s.push_back(select_row(t, index));
  return s;
}

std::optional<std::vector<Tensor>> TensorDataset::get_many(
    const std::vector<int64_t>& indices) const {
  const int64_t n = size();
  for (int64_t i : indices) {
    LOOM_CHECK_T(IndexError, i >= 0 && i < n, "TensorDataset: index ", i,
                 " is out of range for a dataset of ", n, " samples");
  }
  const Tensor index =
      Tensor::from_vector(indices, std::vector<int64_t>{static_cast<int64_t>(indices.size())});
  std::vector<Tensor> out;
  out.reserve(tensors_.size());
  for (const Tensor& t : tensors_) out.push_back(index_select(t, 0, index));
  return out;
}

TransformDataset::TransformDataset(std::shared_ptr<const Dataset> base,
                                   std::shared_ptr<const Transform> transform, int field)
    : base_(std::move(base)), transform_(std::move(transform)), field_(field) {
  LOOM_CHECK(base_ && transform_, "TransformDataset: base and transform must not be null");
  LOOM_CHECK(field_ >= 0, "TransformDataset: field must be >= 0, got ", field_);
}

int64_t TransformDataset::size() const { return base_->size(); }

Sample TransformDataset::get(int64_t index) const {
  Sample s = base_->get(index);
  LOOM_CHECK_T(IndexError, field_ < static_cast<int>(s.size()), "TransformDataset: field ", field_,
               " requested but sample ", index, " has ", s.size(), " fields");
  SampleRng rng = sample_generator(index);
  s[field_] = transform_->apply(s[field_], rng);
  return s;
}

namespace {
thread_local SampleContext tls_context;
thread_local std::optional<WorkerInfo> tls_worker;
}  // namespace

namespace detail {
void set_worker_info(std::optional<WorkerInfo> info) { tls_worker = info; }
}  // namespace detail

std::optional<WorkerInfo> get_worker_info() { return tls_worker; }

SampleContextGuard::SampleContextGuard(SampleContext context) : previous_(tls_context) {
  tls_context = context;
}
SampleContextGuard::~SampleContextGuard() { tls_context = previous_; }

SampleContext current_sample_context() { return tls_context; }

namespace {
uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}
}  // namespace

uint64_t mix_seed(uint64_t a, uint64_t b, uint64_t c) {
  return splitmix64(splitmix64(splitmix64(a) ^ b) ^ c);
}

SampleRng sample_generator(int64_t index) {
  const SampleContext c = tls_context;
  return SampleRng(mix_seed(c.seed, static_cast<uint64_t>(c.epoch), static_cast<uint64_t>(index)));
}

}  // namespace loom::data
