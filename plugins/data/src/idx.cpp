// IDX files and MNIST-format datasets (loom/data/datasets.h).

#include <zlib.h>

#include <cstring>
#include <filesystem>

#include "loom/data/datasets.h"

namespace loom::data {
namespace {

// Reads a whole file through zlib (gzip or plain: gzread passes plain files through).
std::string read_maybe_gzip(const std::string& path) {
  LOOM_CHECK(std::filesystem::is_regular_file(path), "read_idx: cannot open '", path,
             "': no such file");
  gzFile f = gzopen(path.c_str(), "rb");
  LOOM_CHECK(f != nullptr, "read_idx: cannot open '", path, "': ", std::strerror(errno));
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const int n = gzread(f, buf, sizeof buf);
    if (n < 0) {
      int code = 0;
      std::string msg = gzerror(f, &code);
      gzclose(f);
      throw ValueError(str_cat("read_idx: '", path, "' is corrupt or truncated (zlib: ", msg, ")"));
    }
    if (n == 0) break;
    out.append(buf, n);
  }
  // A gzip stream cut short reads as end-of-file; gzclose_r reports it as Z_BUF_ERROR.
  const int rc = gzclose(f);
  LOOM_CHECK(rc == Z_OK, "read_idx: '", path, "' is truncated (the gzip stream ends early)");
  return out;
}

uint32_t be32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

}  // namespace

Tensor read_idx(const std::string& path) {
  const std::string bytes = read_maybe_gzip(path);
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  LOOM_CHECK(bytes.size() >= 4, "read_idx: '", path, "' is truncated: ", bytes.size(),
             " bytes, an IDX header needs at least 4");
  LOOM_CHECK(p[0] == 0 && p[1] == 0, "read_idx: '", path,
             "' is not an IDX file (bad magic number: the first two bytes must be 0)");
  DType dtype;
  switch (p[2]) {
    case 0x08:
      dtype = DType::UInt8;
      break;
    case 0x09:
      dtype = DType::Int8;
      break;
    case 0x0B:
      dtype = DType::Int16;
      break;
    case 0x0C:
      dtype = DType::Int32;
      break;
    case 0x0D:
      dtype = DType::Float32;
      break;
    case 0x0E:
      dtype = DType::Float64;
      break;
    default:
      throw ValueError(
          str_cat("read_idx: '", path, "' has an unknown IDX data type 0x", absl::Hex(p[2])));
  }
  const int ndim = p[3];
  LOOM_CHECK(ndim >= 1, "read_idx: '", path, "' declares 0 dimensions");
  const size_t header = 4 + 4 * static_cast<size_t>(ndim);
  LOOM_CHECK(bytes.size() >= header, "read_idx: '", path, "' is truncated in its header (", ndim,
             " dims need ", header, " bytes, the file has ", bytes.size(), ")");
  std::vector<int64_t> sizes;
  __int128 numel = 1;
  for (int d = 0; d < ndim; ++d) {
    sizes.push_back(be32(p + 4 + 4 * d));
    numel *= sizes.back();
  }
  const size_t e = element_size(dtype);
  const __int128 expected = header + numel * static_cast<__int128>(e);
  LOOM_CHECK(expected == static_cast<__int128>(bytes.size()), "read_idx: '", path, "' ",
             expected > static_cast<__int128>(bytes.size()) ? "is truncated" : "has trailing bytes",
             ": sizes ", sizes_str(sizes), " of ", dtype_name(dtype), " need ",
             static_cast<int64_t>(expected), " bytes, the file has ", bytes.size());
  Tensor t = Tensor::empty(sizes, TensorOptions{}.with(dtype));
  char* out = static_cast<char*>(t.data_ptr());
  const char* in = bytes.data() + header;
  const int64_t n = t.numel();
  if (e == 1) {
    std::memcpy(out, in, n);
  } else {
    for (int64_t i = 0; i < n; ++i)  // big-endian on disk
      for (size_t b = 0; b < e; ++b) out[i * e + b] = in[i * e + (e - 1 - b)];
  }
  return t;
}

namespace {
std::string find_idx(const std::string& root, const std::string& stem) {
  const std::filesystem::path dir(root);
  for (const std::string& name : {stem + ".gz", stem}) {
    if (std::filesystem::is_regular_file(dir / name)) return (dir / name).string();
  }
  throw ValueError(str_cat("MnistDataset: cannot find '", (dir / (stem + ".gz")).string(),
                           "' (nor '", (dir / stem).string(), "')"));
}
}  // namespace

MnistDataset::MnistDataset(const std::string& root, bool train,
                           std::shared_ptr<const Transform> transform)
    : transform_(std::move(transform)) {
  const std::string prefix = train ? "train" : "t10k";
  const std::string images_path = find_idx(root, prefix + "-images-idx3-ubyte");
  const std::string labels_path = find_idx(root, prefix + "-labels-idx1-ubyte");
  images_ = read_idx(images_path);
  const Tensor labels = read_idx(labels_path);
  LOOM_CHECK(images_.dim() == 3 && images_.dtype() == DType::UInt8, "MnistDataset: '", images_path,
             "' should hold uint8 images [N, H, W], got ", images_.describe());
  LOOM_CHECK(labels.dim() == 1 && labels.dtype() == DType::UInt8, "MnistDataset: '", labels_path,
             "' should hold uint8 labels [N], got ", labels.describe());
  LOOM_CHECK(images_.size(0) == labels.size(0), "MnistDataset: '", images_path, "' holds ",
             images_.size(0), " images but '", labels_path, "' holds ", labels.size(0), " labels");
  labels_ = Tensor::empty({labels.size(0)}, TensorOptions{}.with(DType::Int64));
  const uint8_t* l = labels.data_ptr<uint8_t>();
  int64_t* o = labels_.data_ptr<int64_t>();
  for (int64_t i = 0; i < labels.size(0); ++i) o[i] = l[i];
}

int64_t MnistDataset::size() const { return images_.size(0); }

Sample MnistDataset::get(int64_t index) const {
  Tensor image = select_row(images_, index);
  if (transform_) {
    SampleRng rng = sample_generator(index);
    image = transform_->apply(image, rng);
  }
  return {image, select_row(labels_, index)};
}

}  // namespace loom::data
