#pragma once
// The TFRecord framing of event files (Note [Event files] in loom/utils/summary_writer.h):
// CRC32C, the mask, writing records to a file and reading them back (tests, tools).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace loom::utils::detail {

/// CRC-32C (Castagnoli) of n bytes, as the TFRecord format uses it.
uint32_t crc32c(const void* data, size_t n);

/// The CRC-32C of n bytes, masked as TFRecord stores it: rotated right by 15 bits, plus
/// 0xa282ead8 (a CRC of data that itself holds CRCs is then not a degenerate value).
uint32_t masked_crc32c(const void* data, size_t n);

/// Appends payload to out as one framed record (16 bytes of framing around it).
void append_record(std::string& out, std::string_view payload);

/// The payloads of the records of the file at path, every length and CRC checked. Throws
/// loom::Error naming the file, the record's offset and what is wrong (a truncated record, a
/// CRC mismatch).
std::vector<std::string> read_records(const std::string& path);

/// An event file opened for appending: a new file (never an existing one), written with
/// write(2) so that a failure is seen at once, with its reason.
class RecordFile {
 public:
  /// Creates path (it must not exist). Throws loom::Error naming the path and the reason.
  explicit RecordFile(std::string path);
  /// Closes the file (errors ignored; call close() to see them).
  ~RecordFile();
  RecordFile(const RecordFile&) = delete;
  RecordFile& operator=(const RecordFile&) = delete;
  /// Writes bytes at the end. Throws loom::Error naming the file and the reason.
  void write(std::string_view bytes);
  /// Closes the file. Throws loom::Error naming the file and the reason.
  void close();
  /// The file's path.
  const std::string& path() const { return path_; }
  /// True until close().
  bool is_open() const { return fd_ >= 0; }

 private:
  std::string path_;
  int fd_ = -1;
};

/// The Event of a record as protobuf text (for tests and debugging): "wall_time: ... step:
/// ... summary { value { tag: ... simple_value: ... } }". Throws loom::Error if the payload
/// is not an Event.
std::string event_text(std::string_view payload);

}  // namespace loom::utils::detail
