// File readers (plugins/data/src/idx.cpp, csv.cpp, npy.cpp): files written by the tests
// (and by numpy when python3 has it), every malformed case, and the Fashion-MNIST files of
// Debian's dataset-fashion-mnist package.

#include "loom/data/datasets.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>

#include "data_test_util.h"
#include "loom/data/dataloader.h"

namespace loom::data {
namespace {

using testing::ScratchDir;
using testing::values;
using testing::write_bytes;

class DatasetsTest : public ::testing::Test {
 protected:
  void SetUp() override { loom::init(); }
  ScratchDir dir;
};

// Expects f() to throw ValueError whose message holds every piece.
template <typename F>
void expect_error(F&& f, const std::vector<std::string>& pieces) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected one mentioning " << pieces[0];
  } catch (const ValueError& e) {
    for (const std::string& p : pieces)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "'" << p << "' not in: " << e.what();
  }
}

std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

std::string idx_bytes(uint8_t type, const std::vector<uint32_t>& dims, const std::string& data) {
  std::string s = {0, 0, static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims) s += be32(d);
  return s + data;
}

void write_gzip(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

TEST_F(DatasetsTest, IdxPlainAndGzip) {
  const std::string data = {1, 2, 3, 4, 5, 6};
  write_bytes(dir.file("a.idx"), idx_bytes(0x08, {2, 3}, data));
  write_gzip(dir.file("a.idx.gz"), idx_bytes(0x08, {2, 3}, data));
  for (const char* name : {"a.idx", "a.idx.gz"}) {
    Tensor t = read_idx(dir.file(name));
    EXPECT_EQ(t.dtype(), DType::UInt8);
    EXPECT_EQ(t.sizes().vec(), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(values(t), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  }
  // Big-endian int32 and float32.
  write_bytes(dir.file("i.idx"), idx_bytes(0x0C, {2}, be32(1) + be32(0xFFFFFFFE)));
  EXPECT_EQ(values(read_idx(dir.file("i.idx"))), (std::vector<double>{1, -2}));
  write_bytes(dir.file("f.idx"), idx_bytes(0x0D, {1}, be32(0x3FC00000)));
  EXPECT_EQ(values(read_idx(dir.file("f.idx"))), (std::vector<double>{1.5}));
}

TEST_F(DatasetsTest, IdxErrorsNameThePath) {
  expect_error([&] { read_idx(dir.file("missing.gz")); }, {"missing.gz", "no such file"});
  write_bytes(dir.file("magic"), std::string("\x01\x00\x08\x01", 4) + be32(1) + "x");
  expect_error([&] { read_idx(dir.file("magic")); }, {"magic", "bad magic"});
  write_bytes(dir.file("type"), idx_bytes(0x07, {1}, "x"));
  expect_error([&] { read_idx(dir.file("type")); }, {"type", "unknown IDX data type"});
  write_bytes(dir.file("short"), idx_bytes(0x08, {2, 3}, "abc"));
  expect_error([&] { read_idx(dir.file("short")); }, {"short", "truncated", "[2, 3]"});
  write_bytes(dir.file("long"), idx_bytes(0x08, {2}, "abc"));
  expect_error([&] { read_idx(dir.file("long")); }, {"long", "trailing bytes"});
  write_bytes(dir.file("hdr"), std::string("\0\0\x08\x03", 4) + be32(1));
  expect_error([&] { read_idx(dir.file("hdr")); }, {"hdr", "truncated in its header"});
  // A gzip stream cut in the middle.
  write_gzip(dir.file("cut.gz"), idx_bytes(0x08, {1000}, std::string(1000, 'x')));
  std::string gz = testing::read_bytes(dir.file("cut.gz"));
  write_bytes(dir.file("cut.gz"), gz.substr(0, gz.size() / 2));
  expect_error([&] { read_idx(dir.file("cut.gz")); }, {"cut.gz", "truncated"});
}

TEST_F(DatasetsTest, MnistDatasetFromWrittenFiles) {
  std::string images;
  for (int i = 0; i < 3 * 4 * 5; ++i) images.push_back(static_cast<char>(i));
  write_gzip(dir.file("t10k-images-idx3-ubyte.gz"), idx_bytes(0x08, {3, 4, 5}, images));
  write_bytes(dir.file("t10k-labels-idx1-ubyte"), idx_bytes(0x08, {3}, {7, 0, 9}));
  MnistDataset ds(dir.path().string(), /*train=*/false);
  EXPECT_EQ(ds.size(), 3);
  Sample s = ds.get(2);
  EXPECT_EQ(s[0].sizes().vec(), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(values(s[0])[0], 40);
  EXPECT_EQ(s[1].dtype(), DType::Int64);
  EXPECT_EQ(s[1].item<int64_t>(), 9);
  MnistDataset t(dir.path().string(), false, std::make_shared<ToTensor>());
  EXPECT_EQ(t.get(1)[0].sizes().vec(), (std::vector<int64_t>{1, 4, 5}));
  EXPECT_NEAR(values(t.get(1)[0])[1], 21 / 255.0, 1e-7);
  expect_error([&] { MnistDataset(dir.path().string(), true); },
               {"train-images-idx3-ubyte.gz", "cannot find"});
  write_bytes(dir.file("t10k-labels-idx1-ubyte"), idx_bytes(0x08, {2}, {7, 0}));
  expect_error([&] { MnistDataset(dir.path().string(), false); }, {"3 images", "2 labels"});
}

TEST_F(DatasetsTest, FashionMnist) {
  const std::string root = "/usr/share/datasets/fashion-mnist";
  if (!std::filesystem::exists(root + "/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "Debian's dataset-fashion-mnist is not installed";
  MnistDataset train(root, true), test(root, false);
  EXPECT_EQ(train.size(), 60000);
  EXPECT_EQ(test.size(), 10000);
  for (const MnistDataset* ds : {&train, &test}) {
    EXPECT_EQ(ds->images().sizes().vec(), (std::vector<int64_t>{ds->size(), 28, 28}));
    const int64_t* l = ds->labels().data_ptr<int64_t>();
    std::vector<int64_t> counts(10);
    for (int64_t i = 0; i < ds->size(); ++i) {
      ASSERT_TRUE(l[i] >= 0 && l[i] <= 9) << i;
      ++counts[l[i]];
    }
    for (int64_t c : counts) EXPECT_GT(c, 0);  // every class occurs
  }
  // Through ToTensor + Normalize + a loader with workers.
  auto tf = std::make_shared<Compose>(std::vector<std::shared_ptr<const Transform>>{
      std::make_shared<ToTensor>(),
      std::make_shared<Normalize>(std::vector<double>{0.5}, std::vector<double>{0.5})});
  auto ds = std::make_shared<MnistDataset>(root, false, tf);
  DataLoaderOptions o;
  o.batch_size = 64;
  o.num_workers = 2;
  o.shuffle = true;
  DataLoader loader(ds, o);
  EXPECT_EQ(loader.size(), (10000 + 63) / 64);
  int64_t n = 0;
  for (Batch& b : loader) {
    EXPECT_EQ(b[0].size(1), 1);
    EXPECT_EQ(b[0].size(2), 28);
    const double lo = b[0].min().item<double>(), hi = b[0].max().item<double>();
    EXPECT_GE(lo, -1.0);
    EXPECT_LE(hi, 1.0);
    n += b[1].size(0);
    if (n >= 640) break;
  }
  EXPECT_EQ(n, 640);
}

TEST_F(DatasetsTest, CsvWithHeaderAndLabel) {
  write_bytes(dir.file("d.csv"), "a, b,label\n1,2.5,0\n\n-3,4e1,2\r\n+5, 6 ,1\n");
  CsvOptions o;
  o.label_name = "label";
  CsvDataset ds(dir.file("d.csv"), o);
  EXPECT_EQ(ds.size(), 3);
  EXPECT_EQ(ds.feature_names(), (std::vector<std::string>{"a", "b"}));
  Sample s = ds.get(1);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].dtype(), DType::Float32);
  EXPECT_EQ(values(s[0]), (std::vector<double>{-3, 40}));
  EXPECT_EQ(s[1].dtype(), DType::Int64);
  EXPECT_EQ(s[1].item<int64_t>(), 2);
  EXPECT_EQ(values(ds.get(2)[0]), (std::vector<double>{5, 6}));
  // By index, without header, no label.
  write_bytes(dir.file("n.csv"), "1;2;3\n4;5;6\n");
  CsvOptions n;
  n.header = false;
  n.delimiter = ';';
  n.label_index = 0;
  EXPECT_EQ(values(CsvDataset(dir.file("n.csv"), n).get(1)[0]), (std::vector<double>{5, 6}));
  n.label_index.reset();
  EXPECT_EQ(CsvDataset(dir.file("n.csv"), n).get(0).size(), 1u);
}

TEST_F(DatasetsTest, CsvErrors) {
  expect_error([&] { CsvDataset(dir.file("none.csv")); }, {"none.csv", "cannot open"});
  write_bytes(dir.file("ragged.csv"), "a,b\n1,2\n3\n");
  expect_error([&] { CsvDataset(dir.file("ragged.csv")); }, {"ragged.csv", "line 3", "2 fields"});
  write_bytes(dir.file("nan.csv"), "a,b\n1,x\n");
  expect_error([&] { CsvDataset(dir.file("nan.csv")); }, {"line 2", "column 2", "(b)", "'x'"});
  write_bytes(dir.file("lab.csv"), "a,y\n1,0.5\n");
  CsvOptions o;
  o.label_name = "y";
  expect_error([&] { CsvDataset(dir.file("lab.csv"), o); }, {"line 2", "not an integer"});
  o.label_name = "z";
  expect_error([&] { CsvDataset(dir.file("lab.csv"), o); }, {"no column 'z'"});
}

TEST_F(DatasetsTest, NpyRoundTripEveryDtype) {
  for (DType t : {DType::Float32, DType::Float64, DType::Int64, DType::Int32, DType::UInt8,
                  DType::Bool, DType::Int16, DType::Int8, DType::Float16}) {
    Tensor x = loom::arange(6, DType::Float64).reshape({2, 3}).to(t);
    const std::string p = dir.file(std::string(dtype_name(t)) + ".npy");
    save_npy(p, x);
    std::string bytes = testing::read_bytes(p);
    EXPECT_EQ((bytes.find('\n') + 1) % 64, 0u) << "header is 64-byte aligned";
    Tensor y = load_npy(p);
    EXPECT_EQ(y.dtype(), t);
    EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(values(y), values(x)) << dtype_name(t);
  }
  // 0-dim and 1-dim shapes, and a transposed (non-contiguous) input.
  save_npy(dir.file("s.npy"), Tensor::scalar<double>(2.5));
  EXPECT_EQ(load_npy(dir.file("s.npy")).dim(), 0);
  Tensor m = loom::arange(6, DType::Float32).reshape({2, 3}).t();
  save_npy(dir.file("t.npy"), m);
  EXPECT_EQ(values(load_npy(dir.file("t.npy"))), values(m));
  EXPECT_THROW(save_npy(dir.file("bf.npy"), loom::zeros({2}, DType::BFloat16)), TypeError);
}

std::string npy(const std::string& header_dict, int major, const std::string& data) {
  std::string h = header_dict;
  const size_t prefix = major == 1 ? 10 : 12;
  h.append((64 - (prefix + h.size() + 1) % 64) % 64, ' ');
  h += '\n';
  std::string s = std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0';
  if (major == 1) {
    s += static_cast<char>(h.size() & 0xff);
    s += static_cast<char>(h.size() >> 8);
  } else {
    for (int i = 0; i < 4; ++i) s += static_cast<char>((h.size() >> (8 * i)) & 0xff);
  }
  return s + h + data;
}

TEST_F(DatasetsTest, NpyVersionsAndFortranOrder) {
  std::string data;
  for (int32_t v : {1, 2, 3, 4, 5, 6}) data.append(reinterpret_cast<const char*>(&v), 4);
  for (int major : {1, 2, 3}) {
    write_bytes(dir.file("v.npy"),
                npy("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }", major, data));
    EXPECT_EQ(values(load_npy(dir.file("v.npy"))), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  }
  // Fortran order: column-major on disk, same logical values in C order.
  write_bytes(dir.file("f.npy"),
              npy("{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }", 1, data));
  Tensor f = load_npy(dir.file("f.npy"));
  EXPECT_EQ(f.sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values(f), (std::vector<double>{1, 3, 5, 2, 4, 6}));
}

TEST_F(DatasetsTest, NpyErrors) {
  expect_error([&] { load_npy(dir.file("none.npy")); }, {"none.npy", "cannot open"});
  write_bytes(dir.file("m.npy"), "NUMPY not really");
  expect_error([&] { load_npy(dir.file("m.npy")); }, {"m.npy", "bad magic"});
  write_bytes(dir.file("v.npy"),
              npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 1, "abcd")
                  .replace(6, 1, "\x04"));
  expect_error([&] { load_npy(dir.file("v.npy")); }, {"v.npy", "version 4.0"});
  write_bytes(dir.file("be.npy"),
              npy("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", 1, "abcd"));
  expect_error([&] { load_npy(dir.file("be.npy")); }, {"be.npy", "'>f4'", "big-endian"});
  write_bytes(dir.file("c.npy"),
              npy("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", 1, "abcdefgh"));
  expect_error([&] { load_npy(dir.file("c.npy")); }, {"c.npy", "'<c8'"});
  write_bytes(dir.file("t.npy"),
              npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 1, "abcd"));
  expect_error([&] { load_npy(dir.file("t.npy")); }, {"t.npy", "truncated", "12"});
  write_bytes(dir.file("h.npy"), npy("{'descr': '<f4', 'shape': (1,), }", 1, "abcd"));
  expect_error([&] { load_npy(dir.file("h.npy")); }, {"h.npy", "fortran_order"});
  write_bytes(dir.file("s.npy"),
              npy("{'descr': '<f4', 'fortran_order': False, 'shape': (a,), }", 1, "abcd"));
  expect_error([&] { load_npy(dir.file("s.npy")); }, {"s.npy", "malformed shape"});
  std::string cut = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 1, "");
  write_bytes(dir.file("hc.npy"), cut.substr(0, 30));
  expect_error([&] { load_npy(dir.file("hc.npy")); }, {"hc.npy", "truncated in its header"});
}

TEST_F(DatasetsTest, NpyInteropWithNumpy) {
  if (!testing::python_has("numpy")) GTEST_SKIP() << "python3 has no numpy";
  const std::string d = dir.path().string();
  save_npy(dir.file("loom.npy"), loom::arange(12, DType::Float64).reshape({3, 4}).to(DType::Int32));
  ASSERT_EQ(testing::run_python(dir, R"(
import numpy as np, sys
d = sys.argv[0].rsplit('/', 1)[0]
a = np.load(d + '/loom.npy')
assert a.dtype == np.int32 and a.shape == (3, 4) and (a == np.arange(12).reshape(3, 4)).all(), a
np.save(d + '/f4.npy', np.arange(6, dtype='<f4').reshape(2, 3))
np.save(d + '/f8f.npy', np.asfortranarray(np.arange(24, dtype='<f8').reshape(2, 3, 4)))
np.save(d + '/i8.npy', np.array([-1, 2**40], dtype='<i8'))
np.save(d + '/u1.npy', np.array([[0, 255]], dtype='|u1'))
np.save(d + '/b1.npy', np.array([True, False, True]))
np.save(d + '/s.npy', np.float64(3.25))
np.lib.format.write_array(open(d + '/v2.npy', 'wb'), np.arange(3, dtype='<i4'), version=(2, 0))
np.lib.format.write_array(open(d + '/v3.npy', 'wb'), np.arange(3, dtype='<i4'), version=(3, 0))
)"),
            0);
  EXPECT_EQ(values(load_npy(dir.file("f4.npy"))), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  Tensor f = load_npy(dir.file("f8f.npy"));
  EXPECT_EQ(f.sizes().vec(), (std::vector<int64_t>{2, 3, 4}));
  std::vector<double> want(24);
  for (int i = 0; i < 24; ++i) want[i] = i;
  EXPECT_EQ(values(f), want);
  Tensor i8 = load_npy(dir.file("i8.npy"));
  EXPECT_EQ(i8.data_ptr<int64_t>()[1], int64_t{1} << 40);
  EXPECT_EQ(values(load_npy(dir.file("u1.npy"))), (std::vector<double>{0, 255}));
  EXPECT_EQ(load_npy(dir.file("b1.npy")).dtype(), DType::Bool);
  EXPECT_EQ(values(load_npy(dir.file("b1.npy"))), (std::vector<double>{1, 0, 1}));
  EXPECT_EQ(load_npy(dir.file("s.npy")).item<double>(), 3.25);
  EXPECT_EQ(values(load_npy(dir.file("v2.npy"))), (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(values(load_npy(dir.file("v3.npy"))), (std::vector<double>{0, 1, 2}));
  EXPECT_THROW(NpyDataset({dir.file("f4.npy"), dir.file("v3.npy")}), ValueError);  // 2 vs 3 rows
  NpyDataset ds({dir.file("v2.npy"), dir.file("v3.npy")});
  EXPECT_EQ(ds.size(), 3);
  EXPECT_EQ(ds.get(2)[1].item<int64_t>(), 2);
}

}  // namespace
}  // namespace loom::data
