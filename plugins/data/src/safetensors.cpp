// safetensors checkpoints (loom/data/safetensors.h): Note [Atomic save], Note [Checked load],
// Note [Checksums].

#include "loom/data/safetensors.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "tensor_bytes.h"

static_assert(std::endian::native == std::endian::little,
              "safetensors stores little-endian data; a big-endian host needs byte swaps here");

namespace loom::data::safetensors {
namespace {

using json = nlohmann::ordered_json;

// The reference implementation's limit on the header length.
constexpr uint64_t kMaxHeaderSize = 100'000'000;
// JSON nesting deeper than this is refused before parsing (a valid header nests 3 deep).
constexpr int kMaxDepth = 64;

struct DTypeCode {
  const char* code;
  DType dtype;
  int rank;  // the reference Dtype enum order; the writer lays out larger ranks first
};
constexpr DTypeCode kCodes[] = {
    {"BOOL", DType::Bool, 0},  {"U8", DType::UInt8, 1},     {"I8", DType::Int8, 2},
    {"I16", DType::Int16, 5},  {"F16", DType::Float16, 7},  {"BF16", DType::BFloat16, 8},
    {"I32", DType::Int32, 9},  {"F32", DType::Float32, 11}, {"F64", DType::Float64, 12},
    {"I64", DType::Int64, 13},
};

const DTypeCode& code_of(DType t) {
  for (const DTypeCode& c : kCodes)
    if (c.dtype == t) return c;
  throw TypeError(str_cat("safetensors: no dtype code for ", dtype_name(t)));
}

std::optional<DType> dtype_of_code(std::string_view s) {
  for (const DTypeCode& c : kCodes)
    if (s == c.code) return c.dtype;
  return std::nullopt;
}

[[noreturn]] void fail(std::string_view file, const std::string& problem) {
  throw ValueError(str_cat("safetensors: '", file, "': ", problem));
}

// A dtype code and a shape as Note [Checksums] writes them: "F32[2,3]", "I64[]".
std::string dtype_and_shape(std::string_view code, IntArrayRef sizes) {
  std::string s = str_cat(code, "[");
  for (size_t i = 0; i < sizes.size(); ++i) str_append(&s, i ? "," : "", sizes[i]);
  return s + "]";
}

uLong crc_of(uLong crc, const void* p, uint64_t n) {
  // crc32_z(crc, nullptr, 0) returns the initial value, not crc: an empty tensor's data
  // pointer may be null.
  if (n == 0) return crc;
  return ::crc32_z(crc, static_cast<const Bytef*>(p), static_cast<z_size_t>(n));
}

// Note [Checksums]: a tensor's CRC-32 (dtype code and shape, then data bytes).
uint32_t tensor_crc(std::string_view code, IntArrayRef sizes, const void* data, uint64_t bytes) {
  const std::string prefix = dtype_and_shape(code, sizes);
  return static_cast<uint32_t>(
      crc_of(crc_of(::crc32_z(0, nullptr, 0), prefix.data(), prefix.size()), data, bytes));
}

// Note [Checksums]: the metadata's CRC-32 (each key and value followed by a NUL, key order).
uint32_t metadata_crc(const Metadata& metadata) {
  uLong crc = ::crc32_z(0, nullptr, 0);
  for (const auto& [k, v] : metadata) {
    crc = crc_of(crc, k.c_str(), k.size() + 1);
    crc = crc_of(crc, v.c_str(), v.size() + 1);
  }
  return static_cast<uint32_t>(crc);
}

std::string hex32(uint32_t v) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

// The header and the tensors in data order, as the reference writer makes them.
struct Plan {
  std::string header;  // JSON plus padding
  std::vector<Tensor> data;
  uint64_t data_size = 0;
};

Plan plan(const TensorList& tensors, const Metadata& metadata, const WriteOptions& options) {
  LOOM_CHECK(!metadata.contains(std::string(kChecksumKey)), "safetensors: the metadata key '",
             kChecksumKey, "' is reserved for Loom's checksums (Note [Checksums])");
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, t] = tensors[i];
    LOOM_CHECK(!name.empty(), "safetensors: tensor ", i, " has an empty name");
    LOOM_CHECK(name != "__metadata__", "safetensors: '__metadata__' cannot name a tensor");
    LOOM_CHECK(t.defined(), "safetensors: tensor '", name, "' is undefined");
    code_of(t.dtype());
    order[i] = i;
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int ra = code_of(tensors[a].second.dtype()).rank;
    const int rb = code_of(tensors[b].second.dtype()).rank;
    return ra != rb ? ra > rb : tensors[a].first < tensors[b].first;
  });
  for (size_t k = 1; k < order.size(); ++k)
    LOOM_CHECK(tensors[order[k]].first != tensors[order[k - 1]].first, "safetensors: tensor name '",
               tensors[order[k]].first, "' appears twice");
  Plan p;
  for (size_t i : order) p.data.push_back(detail::cpu_contiguous(tensors[i].second));
  Metadata stored = metadata;
  if (options.checksums) {
    json sums = json::object();
    for (size_t k = 0; k < order.size(); ++k) {
      const Tensor& t = p.data[k];
      sums[tensors[order[k]].first] =
          hex32(tensor_crc(code_of(t.dtype()).code, t.sizes(), t.data_ptr(),
                           static_cast<uint64_t>(t.numel()) * t.element_size()));
    }
    sums["__metadata__"] = hex32(metadata_crc(metadata));
    stored[std::string(kChecksumKey)] = sums.dump();
  }
  json header = json::object();
  if (!stored.empty()) {
    json m = json::object();
    for (const auto& [k, v] : stored) m[k] = v;
    header["__metadata__"] = std::move(m);
  }
  for (size_t k = 0; k < order.size(); ++k) {
    const Tensor& t = p.data[k];
    const uint64_t bytes = static_cast<uint64_t>(t.numel()) * t.element_size();
    header[tensors[order[k]].first] = {{"dtype", code_of(t.dtype()).code},
                                       {"shape", t.sizes().vec()},
                                       {"data_offsets", {p.data_size, p.data_size + bytes}}};
    p.data_size += bytes;
  }
  p.header = header.dump();
  p.header.append((8 - p.header.size() % 8) % 8, ' ');
  return p;
}

std::string length_prefix(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return s;
}

struct Entry {
  std::string name;
  DType dtype;
  std::vector<int64_t> sizes;
  uint64_t begin, end;
  std::optional<uint32_t> crc;  // Note [Checksums]; set when the file has checksums
};

struct Header {
  std::vector<Entry> entries;  // sorted by begin
  Metadata metadata;           // without kChecksumKey
  bool checksummed = false;
};

uint64_t header_length(const unsigned char* p8, uint64_t file_size, std::string_view file) {
  if (file_size < 8)
    fail(file, str_cat("file is truncated: ", file_size,
                       " bytes, too short for the 8-byte header length"));
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t{p8[i]} << (8 * i);
  if (n > kMaxHeaderSize)
    fail(file, str_cat("header length ", n, " exceeds the limit of ", kMaxHeaderSize, " bytes"));
  if (n > file_size - 8)
    fail(file, str_cat("file is truncated: the header length is ", n, " bytes but only ",
                       file_size - 8, " bytes follow the length field"));
  return n;
}

uint64_t as_u64(const json& v, std::string_view file, const std::string& what) {
  if (!v.is_number_integer() ||
      (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0))
    fail(file, str_cat(what, " must be a non-negative integer, got ", v.dump()));
  return v.get<uint64_t>();
}

// JSON keeps the last of two equal keys, so a header naming a tensor twice would silently
// drop one entry (and then report its data as a gap). Repeats are refused by name instead,
// at any depth: a tensor, a field of one entry, a metadata key.
json parse_refusing_repeats(std::string_view text, std::string_view file) {
  std::vector<std::set<std::string>> open;  // the keys seen, per open object (and array)
  std::string entry;                        // the top-level name being read
  const json::parser_callback_t callback = [&](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        open.emplace_back();
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!open.empty()) open.pop_back();
        break;
      case json::parse_event_t::key: {
        const std::string& key = parsed.get_ref<const std::string&>();
        if (open.size() == 1) entry = key;
        if (open.empty() || open.back().insert(key).second) break;
        const std::string what =
            entry == "__metadata__" ? std::string("__metadata__") : str_cat("tensor '", entry, "'");
        if (open.size() == 1) fail(file, str_cat(what, " appears twice in the header"));
        fail(file, str_cat(what, ": key \"", key, "\" appears twice"));
      }
      default:
        break;
    }
    return true;
  };
  return json::parse(text.begin(), text.end(), callback);
}

// Takes the checksums (Note [Checksums]) out of h.metadata into its entries, checking their
// form, that every tensor has one and none names a missing tensor, and the metadata's.
void take_checksums(Header& h, std::string_view file) {
  const auto it = h.metadata.find(std::string(kChecksumKey));
  if (it == h.metadata.end()) return;
  const std::string where = str_cat("__metadata__ '", kChecksumKey, "'");
  nlohmann::json sums;
  try {
    sums = nlohmann::json::parse(it->second);
  } catch (const nlohmann::json::exception& e) {
    fail(file, str_cat(where, " is not valid JSON: ", e.what()));
  }
  if (!sums.is_object()) fail(file, str_cat(where, " is not a JSON object: ", it->second));
  std::map<std::string, uint32_t> crcs;
  for (auto s = sums.begin(); s != sums.end(); ++s) {
    const std::string* v =
        s.value().is_string() ? s.value().get_ptr<const std::string*>() : nullptr;
    if (v == nullptr || v->size() != 8 || v->find_first_not_of("0123456789abcdef") != v->npos)
      fail(file, str_cat(where, ": the checksum of '", s.key(),
                         "' is not 8 lowercase hex digits: ", s.value().dump()));
    crcs[s.key()] = static_cast<uint32_t>(std::stoul(*v, nullptr, 16));
  }
  h.metadata.erase(it);
  const auto meta = crcs.find("__metadata__");
  if (meta == crcs.end()) fail(file, str_cat(where, " has no checksum of the metadata"));
  if (const uint32_t got = metadata_crc(h.metadata); got != meta->second)
    fail(file, str_cat("__metadata__: checksum mismatch (stored ", hex32(meta->second),
                       ", computed ", hex32(got), "): the metadata was changed after writing"));
  crcs.erase(meta);
  for (Entry& e : h.entries) {
    const auto c = crcs.find(e.name);
    if (c == crcs.end())
      fail(file, str_cat("tensor '", e.name, "' has no checksum in ", where,
                         " (a tensor added by another writer?)"));
    e.crc = c->second;
    crcs.erase(c);
  }
  if (!crcs.empty())
    fail(file, str_cat(where, " has a checksum of tensor '", crcs.begin()->first,
                       "', which the file does not hold"));
  h.checksummed = true;
}

Header parse_header(std::string_view text, uint64_t data_size, std::string_view file) {
  if (text.empty() || text[0] != '{')
    fail(file, "header does not start with '{' (not a safetensors file?)");
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxDepth) fail(file, "header JSON nests too deeply");
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  json j;
  try {
    j = parse_refusing_repeats(text, file);
  } catch (const json::exception& e) {
    fail(file, str_cat("header is not valid JSON: ", e.what()));
  }
  if (!j.is_object()) fail(file, "header is not a JSON object");
  Header h;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& name = it.key();
    const json& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) fail(file, "__metadata__ is not an object of strings");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string())
          fail(file, str_cat("__metadata__ value of '", m.key(),
                             "' is not a string: ", m.value().dump()));
        h.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const std::string where = str_cat("tensor '", name, "'");
    if (!v.is_object()) fail(file, str_cat(where, " is not a JSON object"));
    for (const char* key : {"dtype", "shape", "data_offsets"})
      if (!v.contains(key)) fail(file, str_cat(where, " has no \"", key, "\""));
    const json& d = v["dtype"];
    if (!d.is_string()) fail(file, str_cat(where, ": dtype is not a string: ", d.dump()));
    const std::optional<DType> dtype = dtype_of_code(d.get<std::string>());
    if (!dtype)
      fail(file, str_cat(where, " has unknown dtype \"", d.get<std::string>(),
                         "\" (supported: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL)"));
    const json& s = v["shape"];
    if (!s.is_array()) fail(file, str_cat(where, ": shape is not an array: ", s.dump()));
    Entry e{name, *dtype, {}, 0, 0, std::nullopt};
    unsigned __int128 numel = 1, extent = 1;  // extent: the product with 0 dims as 1
    for (const json& dim : s) {
      const uint64_t n = as_u64(dim, file, str_cat(where, ": each shape entry"));
      if (n > static_cast<uint64_t>(INT64_MAX)) fail(file, str_cat(where, ": shape too large"));
      e.sizes.push_back(static_cast<int64_t>(n));
      numel *= n;
      if (extent <= static_cast<unsigned __int128>(INT64_MAX)) extent *= n == 0 ? 1 : n;
      if (numel > (static_cast<unsigned __int128>(1) << 64))
        fail(file, str_cat(where, ": shape ", s.dump(), " has too many elements"));
    }
    // Even with no elements, a tensor's strides must fit in int64.
    if (extent > static_cast<unsigned __int128>(INT64_MAX))
      fail(file, str_cat(where, ": shape ", s.dump(), " is too large (its strides overflow)"));
    const json& o = v["data_offsets"];
    if (!o.is_array() || o.size() != 2)
      fail(file, str_cat(where, ": data_offsets must be [begin, end], got ", o.dump()));
    e.begin = as_u64(o[0], file, str_cat(where, ": data_offsets begin"));
    e.end = as_u64(o[1], file, str_cat(where, ": data_offsets end"));
    if (e.end < e.begin)
      fail(file, str_cat(where, ": data_offsets [", e.begin, ", ", e.end, "] end before begin"));
    const unsigned __int128 bytes = numel * element_size(*dtype);
    if (bytes != e.end - e.begin)
      fail(file,
           str_cat(where, ": shape ", sizes_str(e.sizes), " of ", d.get<std::string>(), " needs ",
                   static_cast<uint64_t>(std::min<unsigned __int128>(bytes, UINT64_MAX)),
                   " bytes but data_offsets [", e.begin, ", ", e.end, "] hold ", e.end - e.begin));
    h.entries.push_back(std::move(e));
  }
  std::sort(h.entries.begin(), h.entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t at = 0;
  for (const Entry& e : h.entries) {
    if (e.begin < at)
      fail(file, str_cat("tensor '", e.name, "' data_offsets [", e.begin, ", ", e.end,
                         "] overlap the previous tensor, which ends at ", at));
    if (e.begin > at)
      fail(file, str_cat("gap in the data: tensor '", e.name, "' begins at ", e.begin,
                         " but the previous data ends at ", at));
    at = e.end;
  }
  if (at > data_size)
    fail(file, str_cat("file is truncated: the tensors need ", at, " data bytes, the file has ",
                       data_size));
  if (at < data_size)
    fail(file, str_cat("the tensors cover ", at, " data bytes but the file has ", data_size, " (",
                       data_size - at, " bytes unaccounted for)"));
  take_checksums(h, file);
  return h;
}

// The file's tensors: read(destination, entry) fills each one's bytes, which are then checked
// against its checksum (Note [Checksums]) before anything else looks at them.
template <typename Read>
File materialize(const Header& h, std::string_view file, const Read& read) {
  File f;
  f.metadata = h.metadata;
  f.verified = h.checksummed;
  for (const Entry& e : h.entries) {
    Tensor t = Tensor::empty(e.sizes, TensorOptions{}.with(e.dtype));
    const uint64_t bytes = e.end - e.begin;
    if (bytes > 0) read(static_cast<char*>(t.data_ptr()), e);
    if (e.crc) {
      const uint32_t got = tensor_crc(code_of(e.dtype).code, e.sizes, t.data_ptr(), bytes);
      if (got != *e.crc)
        fail(file, str_cat("tensor '", e.name, "': checksum mismatch (stored ", hex32(*e.crc),
                           ", computed ", hex32(got), " over ",
                           dtype_and_shape(code_of(e.dtype).code, e.sizes), " and ", bytes,
                           " data bytes): the file is corrupt"));
    }
    // Bytes other than 0 and 1 are not valid C++ bools; normalise them (after the checksum,
    // which covers the bytes as stored).
    if (e.dtype == DType::Bool) {
      auto* b = static_cast<unsigned char*>(t.data_ptr());
      for (int64_t i = 0; i < t.numel(); ++i) b[i] = b[i] != 0;
    }
    f.tensors.emplace_back(e.name, std::move(t));
  }
  return f;
}

// The process id in a temporary file's name ".<target>.tmp-<pid>-<n>" (Note [Atomic save]),
// or nullopt if name is not one (of target's, when target is given).
std::optional<pid_t> temporary_pid(std::string_view name, std::string_view target) {
  const size_t tmp = name.rfind(".tmp-");
  if (name.empty() || name[0] != '.' || tmp == std::string_view::npos || tmp < 2) return {};
  if (!target.empty() && name.substr(1, tmp - 1) != target) return {};
  const std::string_view rest = name.substr(tmp + 5);
  const size_t dash = rest.find('-');
  if (dash == 0 || dash == std::string_view::npos || dash > 10 || dash + 1 == rest.size())
    return {};
  if (rest.find_first_not_of("0123456789-") != std::string_view::npos ||
      rest.find('-', dash + 1) != std::string_view::npos)
    return {};
  const long long pid = std::stoll(std::string(rest.substr(0, dash)));
  if (pid <= 0 || pid > INT_MAX) return {};
  return static_cast<pid_t>(pid);
}

std::string system_error(const char* what, const std::string& path) {
  return str_cat(what, " '", path, "': ", std::strerror(errno));
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }

 private:
  int fd_;
};

void write_all(int fd, const char* p, size_t n, const std::string& path) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, std::min<size_t>(n, size_t{1} << 30));
    if (w < 0) {
      if (errno == EINTR) continue;
      throw ValueError(str_cat("safetensors: ", system_error("cannot write", path)));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void read_all(int fd, char* p, size_t n, uint64_t offset, const std::string& path) {
  while (n > 0) {
    const ssize_t r =
        ::pread(fd, p, std::min<size_t>(n, size_t{1} << 30), static_cast<off_t>(offset));
    if (r < 0) {
      if (errno == EINTR) continue;
      throw ValueError(str_cat("safetensors: ", system_error("cannot read", path)));
    }
    if (r == 0) fail(path, "file is truncated (it shrank while being read)");
    p += r;
    n -= static_cast<size_t>(r);
    offset += static_cast<uint64_t>(r);
  }
}

}  // namespace

const Tensor& File::at(std::string_view name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return t;
  std::string names;
  for (const auto& [n, t] : tensors) names += (names.empty() ? "" : ", ") + n;
  throw IndexError(str_cat("safetensors: no tensor named '", name, "' (the file holds: ",
                           names.empty() ? std::string("nothing") : names, ")"));
}

bool File::contains(std::string_view name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return true;
  return false;
}

std::string_view dtype_code(DType t) { return code_of(t).code; }

std::string serialize(const TensorList& tensors, const Metadata& metadata,
                      const WriteOptions& options) {
  const Plan p = plan(tensors, metadata, options);
  std::string out = length_prefix(p.header.size()) + p.header;
  out.reserve(out.size() + p.data_size);
  for (const Tensor& t : p.data)
    out.append(static_cast<const char*>(t.data_ptr()), t.numel() * t.element_size());
  return out;
}

std::string temporary_name(std::string_view target, int64_t pid, uint64_t n) {
  return str_cat(".", target, ".tmp-", pid, "-", n);
}

std::vector<std::string> remove_stale_temporaries(const std::string& dir, std::string_view target) {
  std::vector<std::string> removed;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::optional<pid_t> pid = temporary_pid(it->path().filename().string(), target);
    // kill(pid, 0) fails with ESRCH only when no such process exists (EPERM: it does).
    if (!pid || it->symlink_status(ec).type() != std::filesystem::file_type::regular ||
        ::kill(*pid, 0) == 0 || errno != ESRCH)
      continue;
    const std::string path = it->path().string();
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      throw ValueError(
          str_cat("safetensors: ", system_error("cannot remove the stale temporary file", path)));
    removed.push_back(path);
  }
  return removed;
}

void save_file(const std::string& path, const TensorList& tensors, const Metadata& metadata,
               const WriteOptions& options) {
  const Plan p = plan(tensors, metadata, options);
  const std::filesystem::path target(path);
  std::filesystem::path dir = target.parent_path();
  if (dir.empty()) dir = ".";
  static std::atomic<uint64_t> counter{0};
  const std::string tmp =
      (dir / temporary_name(target.filename().string(), ::getpid(), counter++)).string();
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.get() < 0)
    throw ValueError(str_cat("safetensors: cannot save '", path,
                             "': ", system_error("cannot create the temporary file", tmp)));
  try {
    const std::string prefix = length_prefix(p.header.size()) + p.header;
    write_all(fd.get(), prefix.data(), prefix.size(), tmp);
    for (const Tensor& t : p.data)
      write_all(fd.get(), static_cast<const char*>(t.data_ptr()), t.numel() * t.element_size(),
                tmp);
    if (::fsync(fd.get()) != 0)
      throw ValueError(str_cat("safetensors: ", system_error("cannot fsync", tmp)));
    if (::close(fd.release()) != 0)
      throw ValueError(str_cat("safetensors: ", system_error("cannot close", tmp)));
    if (::rename(tmp.c_str(), path.c_str()) != 0)
      throw ValueError(str_cat("safetensors: cannot save '", path,
                               "': ", system_error("cannot rename the temporary file", tmp)));
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  // The rename is durable once the folder's entry is on disk.
  Fd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dfd.get() < 0 || ::fsync(dfd.get()) != 0)
    throw ValueError(str_cat("safetensors: saved '", path, "' but ",
                             system_error("cannot fsync its folder", dir.string())));
}

File load_file(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw ValueError(str_cat("safetensors: ", system_error("cannot open", path)));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    throw ValueError(str_cat("safetensors: ", system_error("cannot stat", path)));
  if (!S_ISREG(st.st_mode)) fail(path, "not a regular file");
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  unsigned char p8[8] = {};
  if (size >= 8) read_all(fd.get(), reinterpret_cast<char*>(p8), 8, 0, path);
  const uint64_t n = header_length(p8, size, path);
  std::string text(n, '\0');
  read_all(fd.get(), text.data(), n, 8, path);
  const Header h = parse_header(text, size - 8 - n, path);
  return materialize(h, path, [&](char* dst, const Entry& e) {
    read_all(fd.get(), dst, e.end - e.begin, 8 + n + e.begin, path);
  });
}

File deserialize(std::string_view bytes, std::string_view name) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const uint64_t n = header_length(p, bytes.size(), name);
  const Header h = parse_header(bytes.substr(8, n), bytes.size() - 8 - n, name);
  const char* data = bytes.data() + 8 + n;
  return materialize(h, name, [&](char* dst, const Entry& e) {
    std::memcpy(dst, data + e.begin, e.end - e.begin);
  });
}

}  // namespace loom::data::safetensors
