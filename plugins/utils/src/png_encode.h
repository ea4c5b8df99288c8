#pragma once
// PNG encoding of 8-bit images (libpng's simplified API) for SummaryWriter::add_image.
#include <cstdint>
#include <string>

namespace loom::utils::detail {

/// The PNG file of a height x width image of 8-bit pixels, row-major, channels (1 grey,
/// 2 grey + alpha, 3 RGB, 4 RGBA) interleaved per pixel. Throws loom::Error with libpng's
/// message if encoding fails.
std::string encode_png(const uint8_t* pixels, int64_t height, int64_t width, int channels);

}  // namespace loom::utils::detail
