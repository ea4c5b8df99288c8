// logreg_cpp: logistic regression on the Wisconsin breast-cancer data (scikit-learn's CSV), in
// C++17 on loom/stable.hpp, the header-only wrapper over Loom's stable C ABI: the program links
// libloom.so only and stays binary-compatible across Loom minor versions.
//
//     logreg_cpp <breast_cancer.csv> [epochs] [learning_rate]
//
// The same job as ../logreg_c: a fixed 80/20 split, features standardized with the training
// split's statistics, full-batch gradient descent on binary_cross_entropy_with_logits with
// autograd, the loss every 50 epochs and the final train/test accuracy.
//
// Exit status: 0 when the test accuracy reaches the floor, 1 on a Loom error (loom::stable::Error
// carries the C ABI's code and message), 2 on a bad command line or data file, 3 when the model
// is worse than the floor. RAII handles release every tensor on every path.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <loom/stable.hpp>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ls = loom::stable;

namespace {

/// The test accuracy below which the run counts as failed (the model reaches ~0.95).
constexpr double kAccuracyFloor = 0.90;
/// Loss is printed every this many epochs.
constexpr long kPrintEvery = 50;

/// A bad command line or data file (exit status 2).
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The samples: x [n, d] row-major, y [n] labels (0 malignant, 1 benign).
struct Dataset {
  int64_t n = 0, d = 0;
  std::vector<float> x, y;
};

/// Reads scikit-learn's breast_cancer.csv: a line "569,30,malignant,benign", then one line per
/// sample with 30 features and the label.
Dataset read_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError("cannot open '" + path + "'");
  Dataset data;
  std::string line;
  char comma = 0;
  std::istringstream header(std::getline(in, line) ? line : "");
  if (!(header >> data.n >> comma >> data.d) || comma != ',' || data.n <= 0 || data.d <= 0 ||
      data.n > 1000000 || data.d > 1000) {
    throw InputError("'" + path + "' does not start with a 'samples,features,...' line");
  }
  data.x.reserve(static_cast<size_t>(data.n * data.d));
  for (int64_t i = 0; i < data.n; ++i) {
    if (!std::getline(in, line)) {
      throw InputError("'" + path + "' ends after " + std::to_string(i) + " of " +
                       std::to_string(data.n) + " samples");
    }
    const char* p = line.c_str();
    for (int64_t j = 0; j <= data.d; ++j) {
      char* end = nullptr;
      const double v = std::strtod(p, &end);
      if (end == p || (j < data.d && *end != ',')) {
        throw InputError("'" + path + "' line " + std::to_string(i + 2) + ": expected " +
                         std::to_string(data.d + 1) + " comma-separated numbers");
      }
      if (j < data.d) {
        data.x.push_back(static_cast<float>(v));
      } else if (v != 0.0 && v != 1.0) {
        throw InputError("'" + path + "' line " + std::to_string(i + 2) + ": the label is " +
                         std::to_string(v) + ", expected 0 or 1");
      } else {
        data.y.push_back(static_cast<float>(v));
      }
      p = end + 1;
    }
  }
  return data;
}

/// A fixed permutation of 0..n-1 (Fisher-Yates on xorshift64, as logreg_c), so the split is
/// the same on every machine.
std::vector<int64_t> shuffled(int64_t n) {
  std::vector<int64_t> idx(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), 0);
  uint64_t s = 0x2545F4914F6CDD1Dull;
  for (int64_t i = n - 1; i > 0; --i) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    std::swap(idx[static_cast<size_t>(i)], idx[s % static_cast<uint64_t>(i + 1)]);
  }
  return idx;
}

/// x [count, d] and y [count, 1] of the samples idx[first, first + count).
std::pair<ls::Tensor, ls::Tensor> split(const Dataset& data, const std::vector<int64_t>& idx,
                                        size_t first, size_t count) {
  std::vector<float> xs, ys;
  xs.reserve(count * static_cast<size_t>(data.d));
  for (size_t i = first; i < first + count; ++i) {
    const auto row = data.x.begin() + idx[i] * data.d;
    xs.insert(xs.end(), row, row + data.d);
    ys.push_back(data.y[static_cast<size_t>(idx[i])]);
  }
  const auto n = static_cast<int64_t>(count);
  return {ls::Tensor::from_data(xs, {n, data.d}), ls::Tensor::from_data(ys, {n, 1})};
}

/// The logits b + x @ w, [count, 1].
ls::Tensor forward(const ls::Tensor& x, const ls::Tensor& w, const ls::Tensor& b) {
  static const ls::Op addmm = ls::Op::find("aten::addmm");  // found once
  return addmm.call_tensor(b, x, w);
}

/// The share of samples whose predicted class (logit > 0) is their label.
double accuracy(const ls::Tensor& x, const ls::Tensor& y, const ls::Tensor& w,
                const ls::Tensor& b) {
  ls::NoGradGuard no_grad;
  const std::vector<float> z = forward(x, w, b).to_vector<float>();
  const std::vector<float> labels = y.to_vector<float>();
  size_t right = 0;
  for (size_t i = 0; i < z.size(); ++i) right += (z[i] > 0.0f) == (labels[i] > 0.5f);
  return static_cast<double>(right) / static_cast<double>(z.size());
}

int run(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    throw InputError("usage: logreg_cpp <breast_cancer.csv> [epochs=500] [learning_rate=0.5]");
  }
  const long epochs = argc > 2 ? std::strtol(argv[2], nullptr, 10) : 500;
  const double lr = argc > 3 ? std::strtod(argv[3], nullptr) : 0.5;
  if (epochs <= 0 || !(lr > 0.0)) throw InputError("epochs and learning_rate must be positive");
  const Dataset data = read_csv(argv[1]);

  ls::init();
  std::printf("loom %s: %lld samples, %lld features\n", ls::version().c_str(),
              static_cast<long long>(data.n), static_cast<long long>(data.d));

  // 80/20 split of a fixed permutation; both splits standardized with the training statistics.
  const std::vector<int64_t> idx = shuffled(data.n);
  const auto n_test = static_cast<size_t>(data.n / 5);
  const size_t n_train = static_cast<size_t>(data.n) - n_test;
  auto [x_train, y_train] = split(data, idx, 0, n_train);
  auto [x_test, y_test] = split(data, idx, n_train, n_test);
  const ls::Tensor mean = x_train.mean({0}, /*keepdim=*/true);
  const ls::Tensor std = ls::Op::find("aten::std.dim")
                             .call_tensor(x_train, std::vector<int64_t>{0}, /*unbiased=*/true,
                                          /*keepdim=*/true);
  x_train = (x_train - mean) / std;
  x_test = (x_test - mean) / std;

  // Parameters: zeros, recording gradients.
  ls::Tensor w = ls::Tensor::zeros({data.d, 1}), b = ls::Tensor::zeros({1});
  w.set_requires_grad(true);
  b.set_requires_grad(true);
  const ls::Op bce = ls::Op::find("aten::binary_cross_entropy_with_logits");

  std::printf("training: %zu train / %zu test samples, %ld epochs, learning rate %g\n", n_train,
              n_test, epochs, lr);
  for (long epoch = 0; epoch < epochs; ++epoch) {
    const ls::Tensor loss = bce.call_tensor(forward(x_train, w, b), y_train);  // mean reduction
    const double loss_value = loss.item<double>();
    loss.backward();
    {
      ls::NoGradGuard no_grad;
      for (ls::Tensor* p : {&w, &b}) {
        p->sub_(p->grad(), lr);
        p->set_grad(ls::Tensor());  // zero_grad(set_to_none=True)
      }
    }
    if (epoch % kPrintEvery == 0 || epoch == epochs - 1) {
      std::printf("epoch %4ld  loss %.4f\n", epoch, loss_value);
    }
  }

  const double train_acc = accuracy(x_train, y_train, w, b);
  const double test_acc = accuracy(x_test, y_test, w, b);
  std::printf("train accuracy %.4f\ntest accuracy %.4f\n", train_acc, test_acc);
  if (test_acc < kAccuracyFloor) {
    std::fprintf(stderr, "logreg_cpp: test accuracy %.4f is below the floor %.2f\n", test_acc,
                 kAccuracyFloor);
    return 3;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const InputError& e) {
    std::fprintf(stderr, "logreg_cpp: %s\n", e.what());
    return 2;
  } catch (const ls::Error& e) {
    std::fprintf(stderr, "logreg_cpp: Loom error (code %d): %s\n", static_cast<int>(e.code()),
                 e.what());
    return 1;
  }
}
