// TFRecord framing of event files (event_file.h).
#include "event_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <boost/crc.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "loom/core/error.h"

namespace loom::utils::detail {
namespace {

// CRC-32C: the Castagnoli polynomial, reflected, initial value and final XOR all ones.
using Crc32c = boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true>;

constexpr uint32_t kMaskDelta = 0xa282ead8u;

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t get_le(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

}  // namespace

uint32_t crc32c(const void* data, size_t n) {
  Crc32c crc;
  crc.process_bytes(data, n);
  return crc.checksum();
}

uint32_t masked_crc32c(const void* data, size_t n) {
  const uint32_t crc = crc32c(data, n);
  return ((crc >> 15) | (crc << 17)) + kMaskDelta;
}

void append_record(std::string& out, std::string_view payload) {
  const size_t start = out.size();
  put_le(out, payload.size(), 8);
  put_le(out, masked_crc32c(out.data() + start, 8), 4);
  out.append(payload);
  put_le(out, masked_crc32c(payload.data(), payload.size()), 4);
}

std::vector<std::string> read_records(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(str_cat("read_records: cannot open ", path, ": ", std::strerror(errno)));
  }
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> records;
  size_t pos = 0;
  while (pos < data.size()) {
    auto fail = [&](const std::string& what) {
      throw Error(str_cat("read_records: ", path, ": record ", records.size(), " at byte ", pos,
                          ": ", what));
    };
    if (data.size() - pos < 12)
      fail("truncated header (" + std::to_string(data.size() - pos) + " bytes)");
    const uint64_t length = get_le(data.data() + pos, 8);
    if (get_le(data.data() + pos + 8, 4) != masked_crc32c(data.data() + pos, 8)) {
      fail("the length's CRC does not match");
    }
    if (length > data.size() - pos - 12 || data.size() - pos - 12 - length < 4) {
      fail("truncated payload (length " + std::to_string(length) + ")");
    }
    const char* payload = data.data() + pos + 12;
    if (get_le(payload + length, 4) != masked_crc32c(payload, length)) {
      fail("the payload's CRC does not match");
    }
    records.emplace_back(payload, length);
    pos += 12 + length + 4;
  }
  return records;
}

RecordFile::RecordFile(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw Error(
        str_cat("SummaryWriter: cannot create the event file ", path_, ": ", std::strerror(errno)));
  }
}

RecordFile::~RecordFile() {
  if (fd_ >= 0) ::close(fd_);
}

void RecordFile::write(std::string_view bytes) {
  if (fd_ < 0) throw Error(str_cat("SummaryWriter: the event file ", path_, " is closed"));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      throw Error(str_cat("SummaryWriter: cannot write the event file ", path_, ": ",
                          n < 0 ? std::strerror(errno) : "no bytes written"));
    }
    done += static_cast<size_t>(n);
  }
}

void RecordFile::close() {
  if (fd_ < 0) return;
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    throw Error(
        str_cat("SummaryWriter: cannot close the event file ", path_, ": ", std::strerror(errno)));
  }
}

}  // namespace loom::utils::detail
