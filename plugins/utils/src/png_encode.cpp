// PNG encoding (png_encode.h), with libpng's simplified API: no setjmp/longjmp in our code, errors
// come back as a flag and a message.
#include "png_encode.h"

#include <png.h>

#include <cstring>

#include "loom/core/error.h"

namespace loom::utils::detail {

std::string encode_png(const uint8_t* pixels, int64_t height, int64_t width, int channels) {
  static const png_uint_32 kFormats[] = {PNG_FORMAT_GRAY, PNG_FORMAT_GA, PNG_FORMAT_RGB,
                                         PNG_FORMAT_RGBA};
  LOOM_CHECK(channels >= 1 && channels <= 4, "encode_png: channels must be 1 to 4, got ", channels);
  LOOM_CHECK(height > 0 && width > 0 && height <= 0x7fffffff && width <= 0x7fffffff,
             "encode_png: bad image size ", height, "x", width);
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(width);
  image.height = static_cast<png_uint_32>(height);
  image.format = kFormats[channels - 1];
  // The first call sizes the output, the second writes it.
  png_alloc_size_t size = 0;
  auto failed = [&](const char* stage) {
    const std::string why = image.message;
    png_image_free(&image);
    return Error(str_cat("add_image: PNG encoding failed (", stage, "): ", why));
  };
  if (!png_image_write_to_memory(&image, nullptr, &size, 0, pixels, 0, nullptr)) {
    throw failed("sizing");
  }
  std::string out(size, '\0');
  if (!png_image_write_to_memory(&image, out.data(), &size, 0, pixels, 0, nullptr)) {
    throw failed("writing");
  }
  out.resize(size);
  return out;
}

}  // namespace loom::utils::detail
