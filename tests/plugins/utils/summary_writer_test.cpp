// SummaryWriter (plugins/utils/src/summary_writer.cpp, event_file.cpp, png_encode.cpp): the
// TFRecord framing read back byte by byte, the CRC32C against its published check value, the
// Event messages as protobuf text, PNGs decoded by libpng, buffering, and the errors.
// tensorboard_reader_test.sh reads the same kind of file with TensorBoard's own reader.

#include "loom/utils/summary_writer.h"

#include <gtest/gtest.h>
#include <png.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "event_file.h"
#include "loom/core/error.h"

namespace loom::utils {
namespace {

namespace fs = std::filesystem;
using detail::event_text;
using detail::read_records;

/// A fresh folder, removed afterwards.
class SummaryWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("loom_summary_writer_test." + std::to_string(::getpid()) + "." +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
  }
  void TearDown() override { fs::remove_all(dir); }

  /// The event texts of the file, the file_version record first.
  static std::vector<std::string> events(const std::string& path) {
    std::vector<std::string> out;
    for (const std::string& r : read_records(path)) out.push_back(event_text(r));
    return out;
  }

  fs::path dir;
};

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

uint64_t le(const std::string& s, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(static_cast<unsigned char>(s[at + i])) << (8 * i);
  return v;
}

bool contains(const std::string& text, const std::string& piece) {
  return text.find(piece) != std::string::npos;
}

/// Expects f() to throw E whose message holds every piece.
template <typename E, typename F>
void expect_error(F&& f, const std::vector<std::string>& pieces) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected one mentioning " << pieces[0];
  } catch (const E& e) {
    for (const std::string& p : pieces)
      EXPECT_TRUE(contains(e.what(), p)) << p << " not in: " << e.what();
  }
}

TEST(Crc32cTest, MatchesTheCheckValue) {
  // The CRC-32C catalogue's check value for "123456789", and an empty input.
  EXPECT_EQ(detail::crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(detail::crc32c("", 0), 0u);
  // 32 zero bytes: the iSCSI test vector (RFC 3720, B.4).
  const std::string zeros(32, '\0');
  EXPECT_EQ(detail::crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  const uint32_t c = 0xE3069283u;
  EXPECT_EQ(detail::masked_crc32c("123456789", 9), ((c >> 15) | (c << 17)) + 0xa282ead8u);
}

TEST_F(SummaryWriterTest, FramesEveryRecordWithLengthAndMaskedCrcs) {
  std::string path;
  {
    SummaryWriter w(dir.string());
    path = w.file_path();
    w.add_scalar("loss", 0.5, 1);
    w.add_scalar("loss", 0.25, 2);
  }
  EXPECT_EQ(fs::path(path).parent_path(), dir);
  EXPECT_EQ(fs::path(path).filename().string().rfind("events.out.tfevents.", 0), 0u);
  // Walk the file by hand: length, its CRC, payload, its CRC, to the last byte.
  const std::string bytes = read_bytes(path);
  size_t pos = 0;
  int records = 0;
  while (pos < bytes.size()) {
    ASSERT_LE(pos + 12, bytes.size());
    const uint64_t n = le(bytes, pos, 8);
    EXPECT_EQ(le(bytes, pos + 8, 4), detail::masked_crc32c(bytes.data() + pos, 8));
    ASSERT_LE(pos + 16 + n, bytes.size());
    EXPECT_EQ(le(bytes, pos + 12 + n, 4), detail::masked_crc32c(bytes.data() + pos + 12, n));
    pos += 16 + n;
    ++records;
  }
  EXPECT_EQ(pos, bytes.size());
  EXPECT_EQ(records, 3);
  const std::vector<std::string> e = events(path);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_TRUE(contains(e[0], "file_version: \"brain.Event:2\"")) << e[0];
  EXPECT_TRUE(contains(e[1], "step: 1")) << e[1];
  EXPECT_TRUE(contains(e[1], "tag: \"loss\"")) << e[1];
  EXPECT_TRUE(contains(e[1], "simple_value: 0.5")) << e[1];
  EXPECT_TRUE(contains(e[2], "simple_value: 0.25")) << e[2];
}

TEST_F(SummaryWriterTest, ReaderRefusesACorruptRecord) {
  std::string path;
  {
    SummaryWriter w(dir.string());
    path = w.file_path();
    w.add_scalar("x", 1, 0);
  }
  std::string bytes = read_bytes(path);
  const size_t second = 16 + le(bytes, 0, 8);
  bytes[second + 14] ^= 1;  // a payload byte of the second record
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  expect_error<Error>([&] { read_records(path); },
                      {path, "record 1", "byte " + std::to_string(second), "payload's CRC"});
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(0, second + 5);
  expect_error<Error>([&] { read_records(path); }, {"record 1", "truncated header"});
}

TEST_F(SummaryWriterTest, ExplicitWallTimeAndStep) {
  SummaryWriter w(dir.string());
  w.add_scalar("a/b", -3, 1234567890123, 1700000000.25);
  w.flush();
  const std::vector<std::string> e = events(w.file_path());
  ASSERT_EQ(e.size(), 2u);
  EXPECT_TRUE(contains(e[1], "wall_time: 1700000000.25")) << e[1];
  EXPECT_TRUE(contains(e[1], "step: 1234567890123")) << e[1];
  EXPECT_TRUE(contains(e[1], "simple_value: -3")) << e[1];
}

TEST_F(SummaryWriterTest, BuffersUpToMaxQueueThenWrites) {
  SummaryWriterOptions o;
  o.max_queue = 3;
  o.flush_secs = 1e9;
  SummaryWriter w(dir.string(), o);
  EXPECT_EQ(read_records(w.file_path()).size(), 1u);  // file_version at once
  w.add_scalar("x", 1, 0);
  w.add_scalar("x", 2, 1);
  EXPECT_EQ(read_records(w.file_path()).size(), 1u);
  w.add_scalar("x", 3, 2);
  EXPECT_EQ(read_records(w.file_path()).size(), 4u);
  w.add_scalar("x", 4, 3);
  w.flush();
  EXPECT_EQ(read_records(w.file_path()).size(), 5u);
  // flush_secs 0: every call writes.
  o.max_queue = 100;
  o.flush_secs = 0;
  SummaryWriter now((dir / "now").string(), o);
  now.add_scalar("x", 1, 0);
  EXPECT_EQ(read_records(now.file_path()).size(), 2u);
}

TEST_F(SummaryWriterTest, PurgeStepStartsTheFileWithASessionStart) {
  SummaryWriterOptions o;
  o.purge_step = 42;
  SummaryWriter w(dir.string(), o);
  const std::vector<std::string> e = events(w.file_path());
  ASSERT_EQ(e.size(), 2u);
  EXPECT_TRUE(contains(e[0], "file_version")) << e[0];
  EXPECT_TRUE(contains(e[1], "step: 42")) << e[1];
  EXPECT_TRUE(contains(e[1], "session_log {\n  status: START")) << e[1];
}

TEST_F(SummaryWriterTest, WritersNeverShareAFile) {
  SummaryWriter a(dir.string()), b(dir.string());
  SummaryWriterOptions o;
  o.filename_suffix = ".eval";
  SummaryWriter c(dir.string(), o);
  EXPECT_NE(a.file_path(), b.file_path());
  EXPECT_EQ(c.file_path().substr(c.file_path().size() - 5), ".eval");
}

TEST_F(SummaryWriterTest, Histogram) {
  SummaryWriter w(dir.string());
  w.add_histogram("h", Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}), 7, 3);
  // A strided view (every other element of 0..9): 0 2 4 6 8, as int64.
  std::vector<int64_t> ten(10);
  for (int i = 0; i < 10; ++i) ten[i] = i;
  const Tensor base = Tensor::from_vector<int64_t>(ten, {10});
  w.add_histogram("strided", base.as_strided_view({5}, {2}, 0), 8, 2);
  w.add_histogram("constant", Tensor::from_vector<double>({2.5, 2.5}, {2}), 9);
  w.flush();
  const std::vector<std::string> e = events(w.file_path());
  ASSERT_EQ(e.size(), 4u);
  // Buckets [1, 2) [2, 3) [3, 4]: 1, 1, 2.
  for (const char* piece :
       {"min: 1", "max: 4", "num: 4", "sum: 10", "sum_squares: 30", "bucket_limit: 2",
        "bucket_limit: 3", "bucket_limit: 4", "bucket: 1", "bucket: 2"}) {
    EXPECT_TRUE(contains(e[1], piece)) << piece << " not in " << e[1];
  }
  // [0, 4) [4, 8]: 0 2 | 4 6 8 (min 0 is proto3's default value, which is not written).
  EXPECT_FALSE(contains(e[2], "min:")) << e[2];
  for (const char* piece : {"max: 8", "num: 5", "sum: 20", "sum_squares: 120", "bucket_limit: 4",
                            "bucket_limit: 8", "bucket: 2", "bucket: 3"}) {
    EXPECT_TRUE(contains(e[2], piece)) << piece << " not in " << e[2];
  }
  EXPECT_TRUE(contains(e[3], "bucket_limit: 2.5")) << e[3];
  EXPECT_TRUE(contains(e[3], "bucket: 2")) << e[3];
}

TEST_F(SummaryWriterTest, HistogramErrorsNameTheCall) {
  SummaryWriter w(dir.string());
  const float nan = std::numeric_limits<float>::quiet_NaN();
  expect_error<ValueError>(
      [&] {
        w.add_histogram("w", Tensor::from_vector<float>({1, nan, nan}, {3}), 0);
      },
      {"add_histogram", "'w'", "shape [3]", "float32", "2 NaN or infinite"});
  expect_error<ValueError>(
      [&] {
        w.add_histogram("w", Tensor::empty({0, 4}), 0);
      },
      {"add_histogram", "no elements", "shape [0, 4]"});
  expect_error<ValueError>(
      [&] { w.add_histogram("w", Tensor::from_vector<float>({1}, {1}), 0, 0); },
      {"add_histogram", "bins must be >= 1, got 0"});
}

/// The pixels of a PNG decoded by libpng as the given format.
std::vector<uint8_t> decode_png(const std::string& png, int& width, int& height, int& channels) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  EXPECT_TRUE(png_image_begin_read_from_memory(&image, png.data(), png.size())) << image.message;
  width = static_cast<int>(image.width);
  height = static_cast<int>(image.height);
  channels = static_cast<int>(PNG_IMAGE_SAMPLE_CHANNELS(image.format));
  std::vector<uint8_t> pixels(PNG_IMAGE_SIZE(image));
  EXPECT_TRUE(png_image_finish_read(&image, nullptr, pixels.data(), 0, nullptr)) << image.message;
  return pixels;
}

/// The encoded image of an add_image event's record: the last field written, so the bytes from
/// the PNG signature to the end.
std::string image_bytes(const std::string& record) {
  const size_t at = record.find("\x89PNG");
  EXPECT_NE(at, std::string::npos);
  return record.substr(at, record.size() - at);
}

TEST_F(SummaryWriterTest, ImagesArePngsOfThePixels) {
  SummaryWriter w(dir.string());
  // CHW float: 3 channels, 2 rows, 2 columns; values clamped to [0, 1].
  std::vector<float> chw = {0, 1,     0.5f, 2,   // R
                            0, 0,     1,    -1,  // G
                            1, 0.25f, 0,    0};  // B
  w.add_image("rgb", Tensor::from_vector<float>(chw, {3, 2, 2}), 3);
  // HW uint8 grey.
  w.add_image("grey", Tensor::from_vector<uint8_t>({0, 10, 200, 255, 7, 9}, {2, 3}), 4, "HW");
  // HWC uint8 RGBA, one pixel.
  w.add_image("rgba", Tensor::from_vector<uint8_t>({1, 2, 3, 4}, {1, 1, 4}), 5, "HWC");
  w.flush();
  const std::vector<std::string> records = read_records(w.file_path());
  ASSERT_EQ(records.size(), 4u);
  const std::string text = event_text(records[1]);
  EXPECT_TRUE(contains(text, "height: 2")) << text;
  EXPECT_TRUE(contains(text, "width: 2")) << text;
  EXPECT_TRUE(contains(text, "colorspace: 3")) << text;
  int width = 0, height = 0, channels = 0;
  std::vector<uint8_t> px = decode_png(image_bytes(records[1]), width, height, channels);
  EXPECT_EQ(width, 2);
  EXPECT_EQ(height, 2);
  EXPECT_EQ(channels, 3);
  // 0.25 -> 63.75 -> 64 and 0.5 -> 127.5 -> 128: rounded; 2 and -1 clamped.
  EXPECT_EQ(px, (std::vector<uint8_t>{0, 0, 255, 255, 0, 64, 128, 255, 0, 255, 0, 0}));
  px = decode_png(image_bytes(records[2]), width, height, channels);
  EXPECT_EQ(channels, 1);
  EXPECT_EQ(width, 3);
  EXPECT_EQ(px, (std::vector<uint8_t>{0, 10, 200, 255, 7, 9}));
  px = decode_png(image_bytes(records[3]), width, height, channels);
  EXPECT_EQ(channels, 4);
  EXPECT_EQ(px, (std::vector<uint8_t>{1, 2, 3, 4}));
}

TEST_F(SummaryWriterTest, ImageErrorsNameTheArgument) {
  SummaryWriter w(dir.string());
  expect_error<TypeError>(
      [&] {
        w.add_image("i", Tensor::from_vector<int32_t>({1, 2, 3, 4}, {1, 2, 2}), 0);
      },
      {"add_image", "img", "'i'", "float32 or float64 in [0, 1] or uint8", "int32",
       "shape [1, 2, 2]"});
  expect_error<ValueError>(
      [&] {
        w.add_image("i", Tensor::from_vector<float>({1, 2}, {2, 1, 1}), 0);
      },
      {"add_image", "1, 3 or 4 channels", "shape [2, 1, 1]"});
  expect_error<ValueError>(
      [&] {
        w.add_image("i", Tensor::from_vector<float>({1, 2}, {2}), 0);
      },
      {"add_image", "3 dimensions (CHW)", "shape [2]"});
  expect_error<ValueError>(
      [&] {
        w.add_image("i", Tensor::from_vector<float>({1}, {1, 1}), 0, "WH");
      },
      {"add_image", "dataformats", "\"WH\""});
}

TEST_F(SummaryWriterTest, TextAndHParamsGoToTheirPlugins) {
  SummaryWriter w(dir.string());
  w.add_text("notes", "**hello** world", 2);
  w.add_hparams({{"lr", 0.01}, {"optimizer", "adam"}, {"batch_size", 64}, {"nesterov", false}},
                {{"hparam/accuracy", 0.875}});
  w.flush();
  const std::vector<std::string> e = events(w.file_path());
  ASSERT_EQ(e.size(), 6u);  // version, text, experiment, start, the metric, end
  EXPECT_TRUE(contains(e[1], "plugin_name: \"text\"")) << e[1];
  EXPECT_TRUE(contains(e[1], "dtype: DT_STRING")) << e[1];
  EXPECT_TRUE(contains(e[1], "string_val: \"**hello** world\"")) << e[1];
  EXPECT_TRUE(contains(e[2], "tag: \"_hparams_/experiment\"")) << e[2];
  EXPECT_TRUE(contains(e[2], "plugin_name: \"hparams\"")) << e[2];
  EXPECT_TRUE(contains(e[3], "tag: \"_hparams_/session_start_info\"")) << e[3];
  EXPECT_TRUE(contains(e[4], "tag: \"hparam/accuracy\"")) << e[4];
  EXPECT_TRUE(contains(e[4], "simple_value: 0.875")) << e[4];
  EXPECT_TRUE(contains(e[5], "tag: \"_hparams_/session_end_info\"")) << e[5];
  expect_error<ValueError>([&] { w.add_hparams({}, {}); }, {"add_hparams", "hparams is empty"});
}

TEST_F(SummaryWriterTest, AddScalarsAndHParamsRunsAreSubfolders) {
  SummaryWriter w(dir.string());
  w.add_scalars("loss", {{"train", 1.5}, {"test/a", 2.5}}, 3);
  w.add_hparams({{"lr", 0.1}}, {{"acc", 0.5}}, "trial1");
  w.flush();
  ASSERT_TRUE(fs::is_directory(dir / "loss_train"));
  ASSERT_TRUE(fs::is_directory(dir / "loss_test_a"));
  ASSERT_TRUE(fs::is_directory(dir / "trial1"));
  for (const char* sub : {"loss_train", "loss_test_a"}) {
    const auto it = fs::directory_iterator(dir / sub);
    const std::vector<std::string> e = events(it->path().string());
    ASSERT_EQ(e.size(), 2u);
    EXPECT_TRUE(contains(e[1], "tag: \"loss\"")) << e[1];
    EXPECT_TRUE(contains(
        e[1], std::string(sub) == "loss_train" ? "simple_value: 1.5" : "simple_value: 2.5"));
  }
  EXPECT_EQ(events(w.file_path()).size(), 1u);  // the main file holds none of them
}

TEST_F(SummaryWriterTest, UnwritableFolderNamesPathAndReason) {
  fs::create_directories(dir);
  const fs::path file = dir / "a_file";
  std::ofstream(file) << "x";
  const std::string inside = (file / "run").string();
  expect_error<Error>([&] { SummaryWriter w(inside); },
                      {"SummaryWriter", inside, "Not a directory"});
  expect_error<Error>([&] { SummaryWriter w(file.string()); },
                      {"SummaryWriter", file.string(), "is a file, not a folder"});
}

TEST_F(SummaryWriterTest, ClosedWriterRefusesMoreEvents) {
  SummaryWriter w(dir.string());
  w.add_scalar("x", 1, 0);
  w.close();
  w.close();  // again: nothing
  EXPECT_EQ(read_records(w.file_path()).size(), 2u);
  expect_error<Error>([&] { w.add_scalar("x", 1, 1); },
                      {"SummaryWriter::add_scalar", w.file_path(), "closed"});
}

}  // namespace
}  // namespace loom::utils
