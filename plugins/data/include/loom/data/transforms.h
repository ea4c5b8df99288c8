#pragma once
/// @file
/// Per-sample transforms (torchvision.transforms): ToTensor, Normalize, RandomCrop,
/// RandomHorizontalFlip, Compose. Each takes one CPU tensor and the sample's generator
/// (Note [Sample randomness] in loom/data/dataset.h) and returns a new tensor; none needs
/// an op pack beyond dtype conversion of non-float32 input to Normalize.

#include <cstdint>
#include <memory>
#include <vector>

#include "loom/data/dataset.h"

namespace loom::data {

/// A transform of one field of a sample. Implementations are immutable (apply is const)
/// so one object serves every worker thread.
class Transform {
 public:
  /// Destroys the transform.
  virtual ~Transform() = default;
  /// The transformed input; random choices come from rng only.
  virtual Tensor apply(const Tensor& input, SampleRng& rng) const = 0;
  /// apply with the generator of sample 0 of the thread's context (for a quick call
  /// outside a dataset).
  Tensor operator()(const Tensor& input) const;
};

/// uint8 image, HWC (H, W, C) or HW, to float32 CHW in [0, 1] (value / 255), as
/// torchvision's ToTensor. Throws TypeError for other dtypes, ValueError for other ranks.
class ToTensor final : public Transform {
 public:
  /// The float32 CHW image.
  Tensor apply(const Tensor& input, SampleRng& rng) const override;
};

/// (x - mean[c]) / std[c] per channel c of a CHW float image (the first dim is the
/// channel); one mean/std value applies to every channel. Output float32.
class Normalize final : public Transform {
 public:
  /// Throws ValueError for empty lists, lists of different lengths, or a std of 0.
  Normalize(std::vector<double> mean, std::vector<double> std);
  /// The normalized image; throws ValueError if the channel count is not the lists' length.
  Tensor apply(const Tensor& input, SampleRng& rng) const override;

 private:
  std::vector<double> mean_, std_;
};

/// A random height x width window of a (C, H, W) or (H, W) image, after padding every
/// side by `padding` zeros (torchvision's RandomCrop(size, padding) with fill 0). The
/// window's top is uniform in [0, H + 2p - height], its left in [0, W + 2p - width].
class RandomCrop final : public Transform {
 public:
  /// A square crop of size x size. Throws ValueError for size < 1 or padding < 0.
  explicit RandomCrop(int64_t size, int64_t padding = 0);
  /// A height x width crop.
  RandomCrop(int64_t height, int64_t width, int64_t padding);
  /// The crop; throws ValueError if the padded image is smaller than the window.
  Tensor apply(const Tensor& input, SampleRng& rng) const override;

 private:
  int64_t height_, width_, padding_;
};

/// Mirrors the last dim (width) with probability p.
class RandomHorizontalFlip final : public Transform {
 public:
  /// Throws ValueError unless 0 <= p <= 1.
  explicit RandomHorizontalFlip(double p = 0.5);
  /// The input, flipped or not (always a new tensor).
  Tensor apply(const Tensor& input, SampleRng& rng) const override;

 private:
  double p_;
};

/// Runs transforms in order, each on the previous one's output, all drawing from the
/// same sample generator.
class Compose final : public Transform {
 public:
  /// Throws ValueError for a null transform.
  explicit Compose(std::vector<std::shared_ptr<const Transform>> transforms);
  /// The last transform's output.
  Tensor apply(const Tensor& input, SampleRng& rng) const override;

 private:
  std::vector<std::shared_ptr<const Transform>> transforms_;
};

/// A uniform integer in [0, n) from rng (n >= 1), with rejection so that no value is
/// favoured; the same on every platform (unlike std::uniform_int_distribution).
int64_t uniform_int(SampleRng& rng, int64_t n);
/// A uniform double in [0, 1) with 53 random bits.
double uniform_real(SampleRng& rng);

}  // namespace loom::data
