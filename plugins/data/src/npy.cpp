// NumPy .npy files (loom/data/datasets.h): format versions 1.0, 2.0 and 3.0.

#include <cstring>
#include <fstream>
#include <iterator>

#include "loom/data/datasets.h"
#include "tensor_bytes.h"

namespace loom::data {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

std::optional<DType> dtype_of_descr(const std::string& d) {
  if (d.size() < 2) return std::nullopt;
  const char order = d[0];
  const std::string code = d.substr(1);
  const bool one_byte = code == "b1" || code == "u1" || code == "i1";
  if (!(order == '<' || order == '|' || order == '=' || (one_byte && order == '>')))
    return std::nullopt;
  if (order == '|' && !one_byte) return std::nullopt;
  if (code == "b1") return DType::Bool;
  if (code == "u1") return DType::UInt8;
  if (code == "i1") return DType::Int8;
  if (code == "i2") return DType::Int16;
  if (code == "i4") return DType::Int32;
  if (code == "i8") return DType::Int64;
  if (code == "f2") return DType::Float16;
  if (code == "f4") return DType::Float32;
  if (code == "f8") return DType::Float64;
  return std::nullopt;
}

const char* descr_of(DType t) {
  switch (t) {
    case DType::Bool:
      return "|b1";
    case DType::UInt8:
      return "|u1";
    case DType::Int8:
      return "|i1";
    case DType::Int16:
      return "<i2";
    case DType::Int32:
      return "<i4";
    case DType::Int64:
      return "<i8";
    case DType::Float16:
      return "<f2";
    case DType::Float32:
      return "<f4";
    case DType::Float64:
      return "<f8";
    case DType::BFloat16:
      return nullptr;
  }
  return nullptr;
}

// The value text after 'key': in a header dict literal; throws if the key is missing.
size_t value_pos(const std::string& header, const std::string& key, const std::string& path) {
  for (const char q : {'\'', '"'}) {
    const std::string k = str_cat(std::string(1, q), key, std::string(1, q));
    size_t p = header.find(k);
    if (p == std::string::npos) continue;
    p = header.find(':', p + k.size());
    LOOM_CHECK(p != std::string::npos, "load_npy: '", path, "': malformed header (no ':' after ",
               key, "): ", header);
    p = header.find_first_not_of(" \t", p + 1);
    LOOM_CHECK(p != std::string::npos, "load_npy: '", path, "': malformed header: ", header);
    return p;
  }
  throw ValueError(str_cat("load_npy: '", path, "': header has no '", key, "' key: ", header));
}

}  // namespace

Tensor load_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  LOOM_CHECK(in.good(), "load_npy: cannot open '", path, "'");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LOOM_CHECK(bytes.size() >= 10 && std::memcmp(bytes.data(), kMagic, 6) == 0, "load_npy: '", path,
             "' is not a .npy file (bad magic string)");
  const int major = static_cast<unsigned char>(bytes[6]);
  const int minor = static_cast<unsigned char>(bytes[7]);
  LOOM_CHECK((major == 1 || major == 2 || major == 3) && minor == 0, "load_npy: '", path,
             "' has format version ", major, ".", minor, "; supported: 1.0, 2.0, 3.0");
  size_t header_len, start;
  const auto* u = reinterpret_cast<const unsigned char*>(bytes.data());
  if (major == 1) {
    header_len = u[8] | (size_t{u[9]} << 8);
    start = 10;
  } else {
    LOOM_CHECK(bytes.size() >= 12, "load_npy: '", path, "' is truncated in its header");
    header_len = u[8] | (size_t{u[9]} << 8) | (size_t{u[10]} << 16) | (size_t{u[11]} << 24);
    start = 12;
  }
  LOOM_CHECK(bytes.size() >= start + header_len, "load_npy: '", path,
             "' is truncated in its header (", header_len, " header bytes declared, ",
             bytes.size() - start, " present)");
  const std::string header = bytes.substr(start, header_len);
  const size_t data_start = start + header_len;

  size_t p = value_pos(header, "descr", path);
  LOOM_CHECK(header[p] == '\'' || header[p] == '"', "load_npy: '", path,
             "': only simple dtypes are supported (descr is not a string): ", header);
  const size_t q = header.find(header[p], p + 1);
  LOOM_CHECK(q != std::string::npos, "load_npy: '", path, "': malformed descr: ", header);
  const std::string descr = header.substr(p + 1, q - p - 1);
  const std::optional<DType> dtype = dtype_of_descr(descr);
  LOOM_CHECK(dtype.has_value(), "load_npy: '", path, "' has dtype '", descr,
             "'; supported: little-endian '<f2' '<f4' '<f8' '<i2' '<i4' '<i8', '|i1' '|u1' '|b1'",
             descr.size() > 0 && descr[0] == '>' ? " (big-endian data is not supported)" : "");

  p = value_pos(header, "fortran_order", path);
  bool fortran;
  if (header.compare(p, 4, "True") == 0)
    fortran = true;
  else if (header.compare(p, 5, "False") == 0)
    fortran = false;
  else
    throw ValueError(
        str_cat("load_npy: '", path, "': fortran_order is neither True nor False: ", header));

  p = value_pos(header, "shape", path);
  LOOM_CHECK(header[p] == '(', "load_npy: '", path, "': shape is not a tuple: ", header);
  const size_t close = header.find(')', p);
  LOOM_CHECK(close != std::string::npos, "load_npy: '", path, "': unterminated shape: ", header);
  std::vector<int64_t> shape;
  __int128 numel = 1;
  {
    size_t i = p + 1;
    while (i < close) {
      while (i < close && (header[i] == ' ' || header[i] == ',')) ++i;
      if (i >= close) break;
      int64_t v = 0;
      size_t digits = 0;
      while (i < close && header[i] >= '0' && header[i] <= '9') {
        LOOM_CHECK(v < (int64_t{1} << 56), "load_npy: '", path, "': dimension too large: ", header);
        v = v * 10 + (header[i] - '0');
        ++i, ++digits;
      }
      if (i < close && header[i] == 'L') ++i;  // Python 2 longs
      LOOM_CHECK(digits > 0 && (i >= close || header[i] == ',' || header[i] == ' '), "load_npy: '",
                 path, "': malformed shape: ", header);
      shape.push_back(v);
      numel *= v;
      LOOM_CHECK(numel < (static_cast<__int128>(1) << 62), "load_npy: '", path,
                 "': shape too large: ", header);
    }
  }
  const size_t e = element_size(*dtype);
  const __int128 need = numel * static_cast<__int128>(e);
  const size_t have = bytes.size() - data_start;
  LOOM_CHECK(need == static_cast<__int128>(have), "load_npy: '", path, "' ",
             need > static_cast<__int128>(have) ? "is truncated" : "has trailing bytes", ": shape ",
             sizes_str(shape), " of '", descr, "' needs ", static_cast<int64_t>(need),
             " data bytes, the file has ", have);
  Tensor t = Tensor::empty(shape, TensorOptions{}.with(*dtype));
  const char* src = bytes.data() + data_start;
  if (!fortran || shape.size() <= 1) {
    if (need > 0) std::memcpy(t.data_ptr(), src, static_cast<size_t>(need));
  } else {
    // Column-major: element (i0, i1, ...) sits at i0 + s0 * (i1 + s1 * ...).
    std::vector<int64_t> strides(shape.size());
    int64_t s = 1;
    for (size_t d = 0; d < shape.size(); ++d) {
      strides[d] = s;
      s *= shape[d];
    }
    detail::copy_strided(static_cast<char*>(t.data_ptr()), src, shape, strides, e);
  }
  if (*dtype == DType::Bool) {  // numpy writes 0/1, but only 0/1 are valid bools here
    auto* b = static_cast<unsigned char*>(t.data_ptr());
    for (int64_t i = 0; i < t.numel(); ++i) b[i] = b[i] != 0;
  }
  return t;
}

void save_npy(const std::string& path, const Tensor& t) {
  const char* descr = descr_of(t.dtype());
  LOOM_CHECK_T(TypeError, descr != nullptr, "save_npy: NumPy has no dtype for ", t.describe());
  const Tensor c = detail::cpu_contiguous(t);
  std::string shape = "(";
  for (int64_t d = 0; d < c.dim(); ++d)
    shape += str_cat(c.size(d), c.dim() == 1 ? "," : "", d + 1 < c.dim() ? ", " : "");
  shape += ")";
  std::string header =
      str_cat("{'descr': '", descr, "', 'fortran_order': False, 'shape': ", shape, ", }");
  // Pad with spaces so that magic + version + length + header is a multiple of 64, '\n' last.
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  LOOM_CHECK(out.good(), "save_npy: cannot open '", path, "' for writing");
  out.write(kMagic, 6);
  const char version[2] = {1, 0};
  out.write(version, 2);
  const char len[2] = {static_cast<char>(header.size() & 0xff),
                       static_cast<char>(header.size() >> 8)};
  out.write(len, 2);
  out << header;
  out.write(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size());
  out.close();
  LOOM_CHECK(!out.fail(), "save_npy: writing '", path, "' failed");
}

namespace {
std::vector<Tensor> load_all(const std::vector<std::string>& paths) {
  std::vector<Tensor> out;
  for (const std::string& p : paths) out.push_back(load_npy(p));
  return out;
}
}  // namespace

NpyDataset::NpyDataset(const std::vector<std::string>& paths) : TensorDataset(load_all(paths)) {}

}  // namespace loom::data
