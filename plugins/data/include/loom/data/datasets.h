#pragma once
/// @file
/// Datasets read from files: IDX (MNIST, Fashion-MNIST; gzip or plain), CSV, NumPy .npy.
/// Every reader checks the format before trusting it and throws loom::Error naming the
/// file and the problem (missing, truncated, bad magic, sizes that disagree).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loom/data/dataset.h"
#include "loom/data/transforms.h"

namespace loom::data {

/// Reads an IDX file (the MNIST format: magic bytes 0, 0, type, ndim; then ndim big-endian
/// uint32 sizes, big-endian data), gzip-compressed or not (zlib detects which). Types:
/// 0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64. Throws
/// ValueError for a missing or unreadable file, a bad magic, a truncated file or trailing
/// bytes, each naming the path.
Tensor read_idx(const std::string& path);

/// MNIST-format images and labels (MNIST, Fashion-MNIST, KMNIST): sample i is
/// {image, label} with image uint8 [28, 28] (or transform(image) when a transform is
/// given, e.g. ToTensor → float32 [1, 28, 28]) and label an int64 scalar.
class MnistDataset : public Dataset {
 public:
  /// Reads `root`/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz] (the .gz name is tried
  /// first). Throws ValueError if a file is missing or malformed, if the images are not
  /// [N, H, W] uint8, the labels not [N] uint8, or the two counts differ.
  MnistDataset(const std::string& root, bool train = true,
               std::shared_ptr<const Transform> transform = nullptr);
  /// Number of images.
  int64_t size() const override;
  /// {image, label}.
  Sample get(int64_t index) const override;
  /// All images, uint8 [N, H, W].
  const Tensor& images() const { return images_; }
  /// All labels, int64 [N].
  const Tensor& labels() const { return labels_; }

 private:
  Tensor images_, labels_;
  std::shared_ptr<const Transform> transform_;
};

/// How CsvDataset reads a file.
struct CsvOptions {
  bool header = true;    ///< the first line names the columns
  char delimiter = ',';  ///< field separator
  /// The label column by name (needs header) ...
  std::optional<std::string> label_name;
  /// ... or by index (negative counts from the end); neither: no label field.
  std::optional<int64_t> label_index;
};

/// A CSV file of numbers: sample i is {features float32 [F], label int64 scalar} (or
/// just {features} without a label column). Empty lines are skipped.
class CsvDataset : public Dataset {
 public:
  /// Reads the whole file. Throws ValueError naming path, line and column for a missing
  /// file, a row with another number of fields, a field that is not a number, a label
  /// that is not an integer, or an unknown label column.
  CsvDataset(const std::string& path, CsvOptions options = {});
  /// Number of rows.
  int64_t size() const override;
  /// {features, label} (or {features}).
  Sample get(int64_t index) const override;
  /// The feature column names (empty without header).
  const std::vector<std::string>& feature_names() const { return feature_names_; }
  /// All features, float32 [N, F].
  const Tensor& features() const { return features_; }
  /// All labels, int64 [N] (undefined without a label column).
  const Tensor& labels() const { return labels_; }

 private:
  Tensor features_, labels_;
  std::vector<std::string> feature_names_;
};

/// Reads a NumPy .npy file (format versions 1.0, 2.0, 3.0) into a contiguous CPU tensor:
/// dtypes '<f4' '<f8' '<f2' '<i8' '<i4' '<i2' '|i1' '|u1' '|b1' (and '=' / '|' spellings
/// of the same), C or Fortran order (a Fortran array is returned in C order with the same
/// shape and values). Throws ValueError naming the path for a missing or truncated file,
/// a bad magic or version, a malformed header, a big-endian or unsupported dtype.
Tensor load_npy(const std::string& path);

/// Writes t (any supported dtype, any strides, CPU or copied to the CPU) as a version 1.0
/// .npy in C order. Throws ValueError if the file cannot be written.
void save_npy(const std::string& path, const Tensor& t);

/// Samples from .npy files: TensorDataset over load_npy of each path (first dims must agree).
class NpyDataset : public TensorDataset {
 public:
  /// Loads every path (e.g. {"x.npy", "y.npy"}).
  explicit NpyDataset(const std::vector<std::string>& paths);
};

}  // namespace loom::data
