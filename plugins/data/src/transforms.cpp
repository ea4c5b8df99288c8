// Per-sample transforms (loom/data/transforms.h), on raw CPU memory: no op pack needed.

#include "loom/data/transforms.h"

#include <cmath>
#include <cstring>

#include "loom/ops/core.h"
#include "tensor_bytes.h"

namespace loom::data {

int64_t uniform_int(SampleRng& rng, int64_t n) {
  LOOM_CHECK(n >= 1, "uniform_int: n must be >= 1, got ", n);
  const uint64_t un = static_cast<uint64_t>(n);
  // Reject the top partial block of 2^64 so that every value is equally likely.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % un;
  uint64_t x;
  do {
    x = rng();
  } while (x >= limit);
  return static_cast<int64_t>(x % un);
}

double uniform_real(SampleRng& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

Tensor Transform::operator()(const Tensor& input) const {
  SampleRng rng = sample_generator(0);
  return apply(input, rng);
}

Tensor ToTensor::apply(const Tensor& input, SampleRng&) const {
  LOOM_CHECK_T(TypeError, input.dtype() == DType::UInt8,
               "ToTensor: expected a uint8 image (HW or HWC), got ", input.describe());
  LOOM_CHECK(input.dim() == 2 || input.dim() == 3,
             "ToTensor: expected an image of 2 (HW) or 3 (HWC) dims, got ", input.describe());
  const Tensor src = detail::cpu_contiguous(input);
  const int64_t h = src.size(0), w = src.size(1), c = src.dim() == 3 ? src.size(2) : 1;
  Tensor out = Tensor::empty({c, h, w});
  const uint8_t* in = src.data_ptr<uint8_t>();
  float* o = out.data_ptr<float>();
  if (c == 1) {  // HW: one contiguous sweep (vectorized)
    for (int64_t i = 0; i < h * w; ++i) o[i] = static_cast<float>(in[i]) / 255.0f;
    return out;
  }
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t k = 0; k < c; ++k)
        o[(k * h + y) * w + x] = static_cast<float>(in[(y * w + x) * c + k]) / 255.0f;
  return out;
}

Normalize::Normalize(std::vector<double> mean, std::vector<double> std)
    : mean_(std::move(mean)), std_(std::move(std)) {
  LOOM_CHECK(!mean_.empty() && mean_.size() == std_.size(),
             "Normalize: mean and std must be non-empty lists of one length, got ", mean_.size(),
             " means and ", std_.size(), " stds");
  for (double s : std_)
    LOOM_CHECK(s != 0.0, "Normalize: std evaluated to zero, leading to division by zero.");
}

Tensor Normalize::apply(const Tensor& input, SampleRng&) const {
  LOOM_CHECK(input.dim() >= 3, "Normalize: expected a tensor image of size (..., C, H, W), got ",
             input.describe());
  LOOM_CHECK_T(TypeError, is_floating_point(input.dtype()),
               "Normalize: expected a floating-point tensor image, got ", input.describe());
  Tensor src = input.dtype() == DType::Float32 ? input : loom::to(input, DType::Float32);
  src = detail::cpu_contiguous(src);
  const int64_t c = src.size(-3), plane = src.size(-2) * src.size(-1);
  const int64_t lists = static_cast<int64_t>(mean_.size());
  LOOM_CHECK(lists == 1 || lists == c, "Normalize: ", lists, " means and stds for an image of ", c,
             " channels (", src.describe(), ")");
  Tensor out = Tensor::empty(src.sizes());
  const float* in = src.data_ptr<float>();
  float* o = out.data_ptr<float>();
  const int64_t outer = src.numel() / (c * plane);
  for (int64_t n = 0; n < outer; ++n)
    for (int64_t k = 0; k < c; ++k) {
      // In float, as PyTorch's tensor.sub_(mean).div_(std) on a float32 image.
      const auto m = static_cast<float>(mean_[lists == 1 ? 0 : k]);
      const auto s = static_cast<float>(std_[lists == 1 ? 0 : k]);
      const int64_t base = (n * c + k) * plane;
      for (int64_t i = 0; i < plane; ++i) o[base + i] = (in[base + i] - m) / s;
    }
  return out;
}

RandomCrop::RandomCrop(int64_t size, int64_t padding) : RandomCrop(size, size, padding) {}

RandomCrop::RandomCrop(int64_t height, int64_t width, int64_t padding)
    : height_(height), width_(width), padding_(padding) {
  LOOM_CHECK(height >= 1 && width >= 1, "RandomCrop: size must be positive, got ", height, "x",
             width);
  LOOM_CHECK(padding >= 0, "RandomCrop: padding must be >= 0, got ", padding);
}

Tensor RandomCrop::apply(const Tensor& input, SampleRng& rng) const {
  LOOM_CHECK(input.dim() == 2 || input.dim() == 3,
             "RandomCrop: expected an image of shape (C, H, W) or (H, W), got ", input.describe());
  const Tensor src = detail::cpu_contiguous(input);
  const bool chw = src.dim() == 3;
  const int64_t c = chw ? src.size(0) : 1, h = src.size(-2), w = src.size(-1);
  const int64_t ph = h + 2 * padding_, pw = w + 2 * padding_;
  LOOM_CHECK(ph >= height_ && pw >= width_, "RandomCrop: required crop size (", height_, ", ",
             width_, ") is larger than the padded input image size (", ph, ", ", pw, ")");
  // torchvision draws the top, then the left, and draws nothing when the window is the image.
  int64_t top = 0, left = 0;
  if (!(ph == height_ && pw == width_)) {
    top = uniform_int(rng, ph - height_ + 1);
    left = uniform_int(rng, pw - width_ + 1);
  }
  std::vector<int64_t> sizes =
      chw ? std::vector<int64_t>{c, height_, width_} : std::vector<int64_t>{height_, width_};
  Tensor out = Tensor::empty(sizes, TensorOptions{}.with(src.dtype()));
  const size_t e = src.element_size();
  const char* in = static_cast<const char*>(src.data_ptr());
  char* o = static_cast<char*>(out.data_ptr());
  std::memset(o, 0, out.numel() * e);
  // Output column x reads input column left + x - padding; the valid ones form one range.
  const int64_t x0 = std::max<int64_t>(0, padding_ - left);
  const int64_t x1 = std::min<int64_t>(width_, w + padding_ - left);
  for (int64_t k = 0; k < c; ++k)
    for (int64_t y = 0; y < height_; ++y) {
      const int64_t sy = top + y - padding_;
      if (sy < 0 || sy >= h || x1 <= x0) continue;
      const int64_t sx = left + x0 - padding_;
      std::memcpy(o + ((k * height_ + y) * width_ + x0) * e, in + ((k * h + sy) * w + sx) * e,
                  (x1 - x0) * e);
    }
  return out;
}

RandomHorizontalFlip::RandomHorizontalFlip(double p) : p_(p) {
  LOOM_CHECK(p >= 0.0 && p <= 1.0, "RandomHorizontalFlip: p must be in [0, 1], got ", p);
}

Tensor RandomHorizontalFlip::apply(const Tensor& input, SampleRng& rng) const {
  LOOM_CHECK(input.dim() >= 1, "RandomHorizontalFlip: expected at least one dim, got ",
             input.describe());
  const bool flip = uniform_real(rng) < p_;
  const Tensor src = detail::cpu_contiguous(input);
  Tensor out = Tensor::empty(src.sizes(), TensorOptions{}.with(src.dtype()));
  const size_t e = src.element_size();
  const int64_t w = src.size(-1), rows = w == 0 ? 0 : src.numel() / w;
  const char* in = static_cast<const char*>(src.data_ptr());
  char* o = static_cast<char*>(out.data_ptr());
  if (!flip) {
    std::memcpy(o, in, src.numel() * e);
    return out;
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t x = 0; x < w; ++x)
      std::memcpy(o + (r * w + x) * e, in + (r * w + (w - 1 - x)) * e, e);
  return out;
}

Compose::Compose(std::vector<std::shared_ptr<const Transform>> transforms)
    : transforms_(std::move(transforms)) {
  for (size_t i = 0; i < transforms_.size(); ++i)
    LOOM_CHECK(transforms_[i] != nullptr, "Compose: transform ", i, " is null");
}

Tensor Compose::apply(const Tensor& input, SampleRng& rng) const {
  Tensor x = input;
  for (const auto& t : transforms_) x = t->apply(x, rng);
  return x;
}

}  // namespace loom::data
