// safetensors (plugins/data/src/safetensors.cpp): the published layout byte for byte, round
// trips of every dtype, every corruption the reader must refuse, checksums, atomic saving
// under SIGKILL, stale temporary files, and interop with Python's safetensors.

#include "loom/data/safetensors.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "data_test_util.h"

namespace loom::data::safetensors {
namespace {

using loom::data::testing::read_bytes;
using loom::data::testing::ScratchDir;
using loom::data::testing::values;
using loom::data::testing::write_bytes;

class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override { loom::init(); }
  ScratchDir dir;
};

const std::vector<DType> kAllDTypes = {
    DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int64,
    DType::Int32,   DType::Int16,   DType::Int8,    DType::UInt8,    DType::Bool};

std::string le64(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return s;
}

// A file from a header text and data bytes (no padding added).
std::string file_of(const std::string& header, const std::string& data) {
  return le64(header.size()) + header + data;
}

std::string data_of_size(size_t n) { return std::string(n, '\0'); }

// Expects deserialize(bytes) and load_file of the same bytes to throw ValueError naming
// the problem (and, for the file, the path).
void expect_refused(const ScratchDir& dir, const std::string& bytes, const std::string& problem) {
  SCOPED_TRACE(problem);
  try {
    deserialize(bytes, "mem");
    ADD_FAILURE() << "deserialize accepted it";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find(problem), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'mem'"), std::string::npos) << e.what();
  }
  const std::string path = dir.file("bad.safetensors");
  write_bytes(path, bytes);
  try {
    load_file(path);
    ADD_FAILURE() << "load_file accepted it";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find(problem), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST_F(SafetensorsTest, LayoutIsThePublishedFormat) {
  TensorList t = {{"b", loom::zeros({3})},
                  {"a", loom::ones({2})},
                  {"c", Tensor::from_vector<int64_t>({1}, {1})},
                  {"d", Tensor::from_vector<bool>({true}, {1})}};
  const std::string bytes = serialize(t, {{"k", "v"}, {"a", "z"}}, {.checksums = false});
  // The reference writer's bytes for the same input (dtype rank first, then name; metadata
  // first; header padded with spaces to a multiple of 8).
  const std::string header =
      R"({"__metadata__":{"a":"z","k":"v"},"c":{"dtype":"I64","shape":[1],"data_offsets":[0,8]},)"
      R"("a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]},)"
      R"("b":{"dtype":"F32","shape":[3],"data_offsets":[16,28]},)"
      R"("d":{"dtype":"BOOL","shape":[1],"data_offsets":[28,29]}})";
  std::string padded = header + std::string((8 - header.size() % 8) % 8, ' ');
  std::string data = le64(1);
  const float one = 1.0f;
  for (int i = 0; i < 2; ++i) data.append(reinterpret_cast<const char*>(&one), 4);
  data += std::string(12, '\0') + '\x01';
  EXPECT_EQ(bytes, le64(padded.size()) + padded + data);
  EXPECT_EQ(padded.size() % 8, 0u);
}

// Note [Checksums] byte for byte: the expected CRCs come from Python's zlib.crc32 over
// b"I64[]" + the int64 7, b"F32[2]" + the floats 1.5, -2, and b"k\0v\0".
TEST_F(SafetensorsTest, ChecksumLayout) {
  const std::string bytes = serialize(
      {{"w", Tensor::from_vector<float>({1.5f, -2.0f}, {2})}, {"s", Tensor::scalar<int64_t>(7)}},
      {{"k", "v"}});
  const std::string header =
      R"({"__metadata__":{"k":"v","loom.crc32":"{\"s\":\"9ee7a43c\",\"w\":\"3718b1ed\",)"
      R"(\"__metadata__\":\"b406716e\"}"},)"
      R"("s":{"dtype":"I64","shape":[],"data_offsets":[0,8]},)"
      R"("w":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})";
  const std::string padded = header + std::string((8 - header.size() % 8) % 8, ' ');
  std::string data = le64(7);
  for (float v : {1.5f, -2.0f}) data.append(reinterpret_cast<const char*>(&v), 4);
  EXPECT_EQ(bytes, le64(padded.size()) + padded + data);
  const File f = deserialize(bytes);
  EXPECT_TRUE(f.verified);
  EXPECT_EQ(f.metadata, (Metadata{{"k", "v"}}));  // the checksums are not handed back
  EXPECT_FALSE(deserialize(serialize({{"w", loom::ones({2})}}, {}, {.checksums = false})).verified);
}

// A file with checksums, changed after writing: each change is refused naming the file and
// the tensor (or the metadata); the same file without checksums (another writer's) loads.
TEST_F(SafetensorsTest, ChecksumsCatchCorruption) {
  const TensorList tensors = {{"model.w", loom::arange(12, DType::Float32).reshape({3, 4})},
                              {"step", Tensor::scalar<int64_t>(5)},
                              {"empty", loom::zeros({0, 2})}};
  const std::string good = serialize(tensors, {{"epoch", "3"}});
  const std::string path = dir.file("good.safetensors");
  save_file(path, tensors, {{"epoch", "3"}});
  EXPECT_EQ(read_bytes(path), good);
  EXPECT_TRUE(load_file(path).verified);
  // One flipped bit in the last data byte (model.w's last float; step's int64 comes first).
  std::string flipped = good;
  flipped.back() ^= 0x01;
  expect_refused(dir, flipped, "tensor 'model.w': checksum mismatch (stored ");
  // The dtype changed to another of the same size: every offset still fits.
  std::string retyped = good;
  const size_t f32 = retyped.find("\"F32\"", retyped.find("\"model.w\":{"));
  ASSERT_NE(f32, std::string::npos);
  retyped[f32 + 1] = 'I';
  expect_refused(dir, retyped, "tensor 'model.w': checksum mismatch");
  // The shape reordered ([3,4] -> [4,3]): the same number of bytes.
  std::string reshaped = good;
  const size_t shape = reshaped.find("[3,4]");
  ASSERT_NE(shape, std::string::npos);
  reshaped.replace(shape, 5, "[4,3]");
  expect_refused(dir, reshaped, "tensor 'model.w': checksum mismatch");
  // A metadata value changed.
  std::string edited = good;
  const size_t epoch = edited.find("\"epoch\":\"3\"");
  ASSERT_NE(epoch, std::string::npos);
  edited[epoch + 9] = '9';
  expect_refused(dir, edited, "__metadata__: checksum mismatch");
  // Without checksums the same bytes load (nothing to verify them against).
  std::string plain = serialize(tensors, {{"epoch", "3"}}, {.checksums = false});
  plain.back() ^= 0x01;
  EXPECT_FALSE(deserialize(plain).verified);
}

TEST_F(SafetensorsTest, MalformedChecksumsAreRefused) {
  const std::string data8(8, '\0');
  const std::string entry = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  auto with_sums = [&](const std::string& sums_json) {
    return file_of(R"({"__metadata__":{"loom.crc32":)" + sums_json + "}," + entry + "}", data8);
  };
  expect_refused(dir, with_sums(R"("not json")"), "__metadata__ 'loom.crc32' is not valid JSON");
  expect_refused(dir, with_sums(R"("[1]")"), "'loom.crc32' is not a JSON object");
  expect_refused(dir, with_sums(R"("{\"a\":7}")"),
                 "the checksum of 'a' is not 8 lowercase hex digits: 7");
  expect_refused(dir, with_sums(R"("{\"a\":\"xyz\"}")"), "not 8 lowercase hex digits");
  expect_refused(dir, with_sums(R"("{\"a\":\"00000000\"}")"), "has no checksum of the metadata");
  // The empty metadata's CRC-32 is 0.
  expect_refused(dir, with_sums(R"("{\"__metadata__\":\"00000000\"}")"),
                 "tensor 'a' has no checksum in __metadata__ 'loom.crc32'");
  expect_refused(dir,
                 with_sums(R"("{\"__metadata__\":\"00000000\",\"a\":\"00000000\",)"
                           R"(\"b\":\"00000000\"}")"),
                 "has a checksum of tensor 'b', which the file does not hold");
  expect_refused(dir, with_sums(R"("{\"__metadata__\":\"00000000\",\"a\":\"00000000\"}")"),
                 "tensor 'a': checksum mismatch (stored 00000000, computed ");
  // The writer keeps the key for itself.
  EXPECT_THROW(serialize({{"a", loom::ones({1})}}, {{"loom.crc32", "{}"}}), ValueError);
}

TEST_F(SafetensorsTest, RepeatedNamesAreRefused) {
  const std::string data8(8, '\0');
  const std::string a = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::string a0 = R"("a":{"dtype":"F32","shape":[0],"data_offsets":[8,8]})";
  // Without the check JSON keeps the last entry, and the first one's bytes go unread.
  expect_refused(dir, file_of("{" + a + "," + a0 + "}", data8), "tensor 'a' appears twice");
  expect_refused(
      dir,
      file_of(R"({"a":{"dtype":"F32","dtype":"I32","shape":[2],"data_offsets":[0,8]}})", data8),
      "tensor 'a': key \"dtype\" appears twice");
  expect_refused(dir, file_of(R"({"__metadata__":{"k":"1","k":"2"}})", ""),
                 "__metadata__: key \"k\" appears twice");
  expect_refused(dir, file_of(R"({"__metadata__":{},"__metadata__":{}})", ""),
                 "__metadata__ appears twice");
}

TEST_F(SafetensorsTest, RoundTripEveryDtype) {
  TensorList tensors;
  for (DType d : kAllDTypes) {
    Tensor x = loom::arange(-3, 9, 1, DType::Float64).reshape({3, 4}).to(d);
    tensors.emplace_back(std::string("t_") + std::string(dtype_code(d)), x);
  }
  tensors.emplace_back("scalar", Tensor::scalar<double>(-2.5));
  tensors.emplace_back("empty", loom::zeros({0, 5}));
  tensors.emplace_back("strided", loom::arange(6, DType::Float32).reshape({2, 3}).t());
  const Metadata meta = {{"epoch", "3"}, {"format", "pt"}, {"json", R"({"lr": 0.1})"}};
  const std::string path = dir.file("all.safetensors");
  save_file(path, tensors, meta);
  for (const File& f : {load_file(path), deserialize(read_bytes(path))}) {
    EXPECT_EQ(f.metadata, meta);
    ASSERT_EQ(f.tensors.size(), tensors.size());
    for (const auto& [name, x] : tensors) {
      const Tensor& y = f.at(name);
      EXPECT_EQ(y.dtype(), x.dtype()) << name;
      EXPECT_EQ(y.sizes().vec(), x.sizes().vec()) << name;
      EXPECT_TRUE(y.is_contiguous());
      EXPECT_EQ(values(y), values(x)) << name;
    }
    EXPECT_FALSE(f.contains("nope"));
    EXPECT_THROW(f.at("nope"), IndexError);
  }
  // Data offsets tile the data region in file order.
  const File f = load_file(path);
  EXPECT_EQ(f.tensors.front().second.dtype(), DType::Int64);  // largest rank first
  EXPECT_EQ(f.tensors.back().second.dtype(), DType::Bool);
}

TEST_F(SafetensorsTest, WriterRefusesBadInput) {
  EXPECT_THROW(serialize({{"", loom::zeros({1})}}), ValueError);
  EXPECT_THROW(serialize({{"a", loom::zeros({1})}, {"a", loom::ones({1})}}), ValueError);
  EXPECT_THROW(serialize({{"__metadata__", loom::zeros({1})}}), ValueError);
  EXPECT_THROW(serialize({{"a", Tensor()}}), ValueError);
  try {
    save_file(dir.file("no/such/folder/x.safetensors"), {{"a", loom::zeros({1})}});
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("x.safetensors"), std::string::npos) << e.what();
  }
}

TEST_F(SafetensorsTest, ReaderRefusesEveryCorruption) {
  const std::string ok_entry = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::string data8(8, '\0');
  // Sanity: the base case loads.
  EXPECT_EQ(deserialize(file_of("{" + ok_entry + "}", data8)).tensors.size(), 1u);

  expect_refused(dir, "", "too short for the 8-byte header length");
  expect_refused(dir, "\x05\x00\x00", "too short");
  expect_refused(dir, le64(100'000'001) + "{}", "exceeds the limit");
  expect_refused(dir, le64(50) + "{}", "truncated: the header length is 50");
  expect_refused(dir, file_of("[1]", ""), "does not start with '{'");
  expect_refused(dir, file_of(" {}", ""), "does not start with '{'");
  expect_refused(dir, file_of("{\"a\":", ""), "not valid JSON");
  expect_refused(dir, file_of("{} junk", ""), "not valid JSON");
  expect_refused(dir, file_of(std::string(100, '{'), ""), "nests too deeply");
  expect_refused(dir, file_of(R"({"a":3})", ""), "tensor 'a' is not a JSON object");
  expect_refused(dir, file_of(R"({"a":{"dtype":"F32","shape":[2]}})", data8),
                 "has no \"data_offsets\"");
  expect_refused(dir,
                 file_of(R"({"a":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", "xx"),
                 "unknown dtype \"F8_E4M3\"");
  expect_refused(dir, file_of(R"({"a":{"dtype":7,"shape":[2],"data_offsets":[0,8]}})", data8),
                 "dtype is not a string");
  expect_refused(dir, file_of(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", data8),
                 "non-negative integer");
  expect_refused(dir, file_of(R"({"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", data8),
                 "non-negative integer");
  expect_refused(dir, file_of(R"({"a":{"dtype":"F32","shape":{},"data_offsets":[0,8]}})", data8),
                 "shape is not an array");
  expect_refused(dir, file_of(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", data8),
                 "needs 12 bytes but data_offsets [0, 8] hold 8");
  expect_refused(dir,
                 file_of(R"({"a":{"dtype":"F64","shape":[4294967296,4294967296,16],)"
                         R"("data_offsets":[0,8]}})",
                         data8),
                 "too many elements");
  expect_refused(dir, file_of(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[8,0]}})", data8),
                 "end before begin");
  expect_refused(dir, file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", data8),
                 "data_offsets must be [begin, end]");
  expect_refused(dir, file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,-8]}})", data8),
                 "non-negative integer");
  expect_refused(dir,
                 file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                         R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                         std::string(12, '\0')),
                 "overlap");
  expect_refused(
      dir,
      file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", std::string(12, '\0')),
      "gap in the data");
  expect_refused(dir,
                 file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                         R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                         std::string(12, '\0')),
                 "gap in the data");
  expect_refused(dir, file_of("{" + ok_entry + "}", "abc"), "truncated: the tensors need 8");
  expect_refused(dir, file_of("{" + ok_entry + "}", data8 + "x"), "1 bytes unaccounted for");
  expect_refused(dir, file_of(R"({"__metadata__":{"k":1}})", ""), "value of 'k' is not a string");
  expect_refused(dir, file_of(R"({"__metadata__":[]})", ""), "__metadata__ is not an object");
  // A real file cut anywhere is refused, never a crash.
  const std::string good = serialize({{"w", loom::ones({4, 4})}, {"b", loom::zeros({4})}});
  for (size_t cut = 0; cut < good.size(); cut += 7) {
    EXPECT_THROW(deserialize(good.substr(0, cut)), ValueError) << "cut at " << cut;
  }
  EXPECT_THROW(load_file(dir.file("missing.safetensors")), ValueError);
}

TEST_F(SafetensorsTest, HugeDimsOfZeroElements) {
  // numel 0 whatever the other dims: no bytes, no allocation beyond the header.
  const File f = deserialize(
      file_of(R"({"a":{"dtype":"F64","shape":[0,1073741824,4],"data_offsets":[0,0]}})", ""));
  EXPECT_EQ(f.at("a").numel(), 0);
  EXPECT_EQ(f.at("a").size(1), int64_t{1} << 30);
  // ... but strides that overflow int64 are refused (found by UBSan).
  expect_refused(dir,
                 file_of(R"({"a":{"dtype":"F64","shape":[0,4611686018427387904,4],)"
                         R"("data_offsets":[0,0]}})",
                         ""),
                 "is too large (its strides overflow)");
  // A header that declares more data than the file holds is refused before allocating.
  expect_refused(dir,
                 file_of(R"({"a":{"dtype":"F64","shape":[1073741824],)"
                         R"("data_offsets":[0,8589934592]}})",
                         data_of_size(16)),
                 "truncated: the tensors need 8589934592");
}

TEST_F(SafetensorsTest, BoolBytesAreNormalised) {
  const std::string bytes = file_of(R"({"m":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})",
                                    std::string("\0\x02\x01", 3));
  EXPECT_EQ(values(deserialize(bytes).at("m")), (std::vector<double>{0, 1, 1}));
}

TEST_F(SafetensorsTest, SaveReplacesAtomically) {
  const std::string path = dir.file("ckpt.safetensors");
  save_file(path, {{"x", loom::ones({2})}}, {{"v", "1"}});
  save_file(path, {{"x", loom::zeros({3})}}, {{"v", "2"}});
  const File f = load_file(path);
  EXPECT_EQ(f.metadata.at("v"), "2");
  EXPECT_EQ(f.at("x").numel(), 3);
  EXPECT_TRUE(f.verified);
  // No temporary file is left behind by a completed save.
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) entries += e.exists();
  EXPECT_EQ(entries, 1);
}

// A child saves a large checkpoint over an existing one and is SIGKILLed mid-write: the
// target must still hold the old, complete file.
TEST_F(SafetensorsTest, KillWhileSavingKeepsThePreviousFile) {
  const std::string path = dir.file("ckpt.safetensors");
  save_file(path, {{"w", loom::full({16}, 7.0)}}, {{"version", "old"}});
  const Tensor big = loom::ones({48 << 20}, DType::Float32);  // 192 MiB
  int interrupted = 0;
  for (int attempt = 0; attempt < 6 && interrupted < 2; ++attempt) {
    int pipefd[2];
    ASSERT_EQ(::pipe(pipefd), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::close(pipefd[0]);
      const char go = 'g';
      (void)!::write(pipefd[1], &go, 1);
      try {
        save_file(path, {{"w", big}}, {{"version", "new"}});
      } catch (...) {
        ::_exit(2);
      }
      ::_exit(0);
    }
    ::close(pipefd[1]);
    char go = 0;
    ASSERT_EQ(::read(pipefd[0], &go, 1), 1);
    ::close(pipefd[0]);
    // Kill once the save has begun writing its temporary file (a fixed sleep alone missed it
    // on a loaded machine, where the child may not run for tens of milliseconds), a little
    // later on each attempt.
    auto writing = [&] {
      for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
        if (e.path().filename().string().rfind(".ckpt.safetensors.tmp-", 0) == 0) return true;
      }
      return false;
    };
    for (int waited_ms = 0; waited_ms < 5000 && !writing(); ++waited_ms) ::usleep(1000);
    ::usleep(attempt * 10000);
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    bool leftover = false;
    for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
      const std::string name = e.path().filename().string();
      if (name.rfind(".ckpt.safetensors.tmp-", 0) == 0) {
        leftover = true;
        std::filesystem::remove(e.path());
      }
    }
    const File f = load_file(path);  // never torn
    if (WIFSIGNALED(status) && leftover) {
      ++interrupted;
      EXPECT_EQ(f.metadata.at("version"), "old");
      EXPECT_EQ(values(f.at("w")), std::vector<double>(16, 7.0));
    } else if (f.metadata.at("version") == "new") {
      // The save finished before the kill: restore the old file for the next attempt.
      EXPECT_EQ(f.at("w").numel(), big.numel());
      save_file(path, {{"w", loom::full({16}, 7.0)}}, {{"version", "old"}});
    }
  }
  EXPECT_GE(interrupted, 1) << "no attempt was killed in the middle of a save";
}

// Leftovers of interrupted saves: only Loom's own pattern, and only when the process that
// wrote them is gone.
TEST_F(SafetensorsTest, RemoveStaleTemporaries) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);  // reaped: its pid names no process now
  const std::string dead = temporary_name("ckpt.safetensors", child, 0);
  const std::string dead_other = temporary_name("config.json", child, 7);
  const std::string live = temporary_name("ckpt.safetensors", ::getpid(), 1);
  EXPECT_EQ(dead, ".ckpt.safetensors.tmp-" + std::to_string(child) + "-0");
  const std::vector<std::string> kept = {"ckpt.safetensors",
                                         live,
                                         ".ckpt.safetensors.tmp-x1-0",
                                         "ckpt.safetensors.tmp-" + std::to_string(child) + "-0",
                                         ".ckpt.safetensors.tmp-" + std::to_string(child) + "-0-1",
                                         ".ckpt.safetensors.tmp-" + std::to_string(child) + "-",
                                         ".ckpt.safetensors.tmp--0",
                                         ".tmp-" + std::to_string(child) + "-0"};
  for (const std::string& name : kept) write_bytes(dir.file(name), "x");
  write_bytes(dir.file(dead), "x");
  write_bytes(dir.file(dead_other), "x");
  std::filesystem::create_directory(dir.file(temporary_name("sub", child, 0)));
  // Only the checkpoint's own temporaries first, then all of them.
  EXPECT_EQ(remove_stale_temporaries(dir.path().string(), "ckpt.safetensors"),
            std::vector<std::string>{dir.file(dead)});
  EXPECT_TRUE(std::filesystem::exists(dir.file(dead_other)));
  EXPECT_EQ(remove_stale_temporaries(dir.path().string()),
            std::vector<std::string>{dir.file(dead_other)});
  for (const std::string& name : kept) EXPECT_TRUE(std::filesystem::exists(dir.file(name))) << name;
  EXPECT_TRUE(std::filesystem::is_directory(dir.file(temporary_name("sub", child, 0))));
  EXPECT_TRUE(remove_stale_temporaries(dir.file("no-such-folder")).empty());
}

TEST_F(SafetensorsTest, InteropWithPythonSafetensors) {
  if (!testing::python_has("numpy safetensors"))
    GTEST_SKIP() << "python3 lacks numpy or safetensors (pip install safetensors numpy)";
  TensorList tensors;
  for (DType d : kAllDTypes) {
    Tensor x = loom::arange(-3, 9, 1, DType::Float64).reshape({3, 4}).to(d);
    tensors.emplace_back(std::string("t_") + std::string(dtype_code(d)), x);
  }
  save_file(dir.file("loom.safetensors"), tensors, {{"epoch", "3"}});
  ASSERT_EQ(testing::run_python(dir, R"(
import json, struct, sys
import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file, save_file, save
d = sys.argv[0].rsplit('/', 1)[0]
ref = np.arange(-3, 9, dtype=np.float64).reshape(3, 4)
raw = open(d + '/loom.safetensors', 'rb').read()
n = struct.unpack('<Q', raw[:8])[0]
header = json.loads(raw[8:8 + n])
meta = dict(header['__metadata__'])
sums = json.loads(meta.pop('loom.crc32'))
assert meta == {'epoch': '3'}, header
# Note [Checksums], computed independently.
import zlib
assert sums.pop('__metadata__') == '%08x' % zlib.crc32(b'epoch\0' + b'3\0'), sums
for name, crc in sums.items():
    e = header[name]
    b, end = e['data_offsets']
    text = (e['dtype'] + '[' + ','.join(map(str, e['shape'])) + ']').encode()
    assert crc == '%08x' % zlib.crc32(raw[8 + n + b:8 + n + end], zlib.crc32(text)), name
with safe_open(d + '/loom.safetensors', framework='np') as f:
    assert f.metadata()['epoch'] == '3'
    for name in f.keys():
        if name == 't_BF16':
            continue  # numpy has no bfloat16: checked from the raw bytes below
        a = f.get_tensor(name)
        want = ref.astype(a.dtype) if a.dtype != np.bool_ else ref != 0
        assert a.shape == (3, 4) and (a == want).all(), (name, a)
b, e = header['t_BF16']['data_offsets']
bf = np.frombuffer(raw[8 + n + b:8 + n + e], dtype='<u2').astype(np.uint32) << 16
assert (bf.view(np.float32).reshape(3, 4) == ref).all()
# Python writes, Loom reads; and the same tensors give the same bytes from both writers.
out = {'f16': np.arange(6, dtype=np.float16).reshape(2, 3), 'f32': np.float32([1.5, -2]),
       'f64': np.float64([[1e300]]), 'i64': np.int64([-1, 2**40]), 'i32': np.int32([7]),
       'i16': np.int16([-300]), 'i8': np.int8([-5]), 'u8': np.uint8([250]),
       'b': np.array([True, False]), 'scalar': np.array(4.0, dtype=np.float32), 'empty': np.zeros((0, 3), np.float32)}
save_file(out, d + '/py.safetensors', metadata={'a': 'x', 'who': 'python'})
open(d + '/py_small.bin', 'wb').write(save({'b': np.zeros(3, np.float32), 'a': np.int64([1, 2])}, metadata={'k': 'v'}))
)"),
            0);
  const File py = load_file(dir.file("py.safetensors"));
  EXPECT_EQ(py.metadata, (Metadata{{"a", "x"}, {"who", "python"}}));
  EXPECT_EQ(values(py.at("f16")), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(py.at("f16").dtype(), DType::Float16);
  EXPECT_EQ(values(py.at("f32")), (std::vector<double>{1.5, -2}));
  EXPECT_EQ(values(py.at("f64")), (std::vector<double>{1e300}));
  EXPECT_EQ(py.at("i64").data_ptr<int64_t>()[1], int64_t{1} << 40);
  EXPECT_EQ(values(py.at("i32")), (std::vector<double>{7}));
  EXPECT_EQ(values(py.at("i16")), (std::vector<double>{-300}));
  EXPECT_EQ(values(py.at("i8")), (std::vector<double>{-5}));
  EXPECT_EQ(values(py.at("u8")), (std::vector<double>{250}));
  EXPECT_EQ(values(py.at("b")), (std::vector<double>{1, 0}));
  EXPECT_EQ(py.at("b").dtype(), DType::Bool);
  EXPECT_EQ(py.at("scalar").dim(), 0);
  EXPECT_EQ(py.at("empty").sizes().vec(), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(serialize({{"b", loom::zeros({3})}, {"a", Tensor::from_vector<int64_t>({1, 2}, {2})}},
                      {{"k", "v"}}, {.checksums = false}),
            read_bytes(dir.file("py_small.bin")));
}

}  // namespace
}  // namespace loom::data::safetensors
