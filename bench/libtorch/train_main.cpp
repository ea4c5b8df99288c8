// bench-libtorch-train: libtorch's side of the train.* benchmarks. The same job as
// `loom train --epochs 1`: Fashion-MNIST read from Debian's gzip IDX files, pixels to [0, 1]
// then normalized with mean 0.2860 and std 0.3530, the MLP 784-256-10 or the CNN, cross
// entropy, Adam lr 1e-3, batch 64, a shuffled order per epoch, then the test accuracy.
// Writes a JSON report (epoch_seconds, first_step_seconds, peak_rss_mib, test_accuracy).
// Usage: bench-libtorch-train --model mlp|cnn --threads N --data DIR --report FILE
//        [--epochs N] [--stop-after-steps N]
#include <sys/resource.h>
#include <torch/torch.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

std::vector<uint8_t> gunzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("cannot open " + path);
  std::vector<uint8_t> out;
  uint8_t buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.insert(out.end(), buf, buf + n);
  gzclose(f);
  return out;
}

uint32_t be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

torch::Tensor images(const std::string& path) {
  const std::vector<uint8_t> b = gunzip(path);
  const int64_t n = be32(&b[4]), h = be32(&b[8]), w = be32(&b[12]);
  auto t = torch::from_blob(const_cast<uint8_t*>(b.data()) + 16, {n, 1, h, w}, torch::kUInt8).clone();
  return (t.to(torch::kFloat32) / 255.0 - 0.2860) / 0.3530;
}

torch::Tensor labels(const std::string& path) {
  const std::vector<uint8_t> b = gunzip(path);
  const int64_t n = be32(&b[4]);
  return torch::from_blob(const_cast<uint8_t*>(b.data()) + 8, {n}, torch::kUInt8).to(torch::kInt64);
}

double since_process_start() {
  std::ifstream stat("/proc/self/stat"), uptime("/proc/uptime");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  double up = 0;
  uptime >> up;
  std::istringstream rest(text.substr(text.rfind(')') + 2));
  std::string field;
  for (int i = 3; i < 22 && (rest >> field); ++i) {
  }
  long long start = 0;
  rest >> start;
  return up - static_cast<double>(start) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_name = "cnn", data = "/usr/share/datasets/fashion-mnist", report;
  int threads = 1, epochs = 1;
  int64_t stop_after = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--model") model_name = v;
    else if (a == "--threads") threads = std::stoi(v);
    else if (a == "--data") data = v;
    else if (a == "--report") report = v;
    else if (a == "--epochs") epochs = std::stoi(v);
    else if (a == "--stop-after-steps") stop_after = std::stoll(v);
    else {
      std::cerr << "unknown option " << a << "\n";
      return 2;
    }
  }
  torch::set_num_threads(threads);
  torch::manual_seed(0);
  const torch::Tensor x = images(data + "/train-images-idx3-ubyte.gz");
  const torch::Tensor y = labels(data + "/train-labels-idx1-ubyte.gz");
  const torch::Tensor tx = images(data + "/t10k-images-idx3-ubyte.gz");
  const torch::Tensor ty = labels(data + "/t10k-labels-idx1-ubyte.gz");

  torch::nn::Sequential model;
  if (model_name == "mlp") {
    model = torch::nn::Sequential(torch::nn::Flatten(), torch::nn::Linear(784, 256),
                                  torch::nn::ReLU(), torch::nn::Linear(256, 10));
  } else {
    model = torch::nn::Sequential(
        torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 32, 3)), torch::nn::ReLU(),
        torch::nn::MaxPool2d(2), torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 3)),
        torch::nn::ReLU(), torch::nn::MaxPool2d(2), torch::nn::Flatten(),
        torch::nn::Linear(1600, 128), torch::nn::ReLU(), torch::nn::Linear(128, 10));
  }
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(1e-3));
  const int64_t n = x.size(0), batch = 64;
  std::vector<double> epoch_seconds;
  double first_step = -1;
  int64_t steps = 0;
  for (int e = 0; e < epochs; ++e) {
    const auto t0 = std::chrono::steady_clock::now();
    const torch::Tensor order = torch::randperm(n);
    for (int64_t s = 0; s < n; s += batch) {
      const torch::Tensor idx = order.slice(0, s, std::min(n, s + batch));
      const torch::Tensor loss =
          torch::nn::functional::cross_entropy(model->forward(x.index_select(0, idx)),
                                               y.index_select(0, idx));
      opt.zero_grad();
      loss.backward();
      opt.step();
      if (first_step < 0) first_step = since_process_start();
      if (stop_after && ++steps >= stop_after) break;
    }
    epoch_seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (stop_after && steps >= stop_after) break;
  }
  double accuracy = 0;
  {
    torch::NoGradGuard no_grad;
    model->eval();
    accuracy = model->forward(tx).argmax(1).eq(ty).to(torch::kFloat64).mean().item<double>();
  }
  struct rusage u {};
  getrusage(RUSAGE_SELF, &u);
  std::ofstream out(report);
  out << "{\"epoch_seconds\": [";
  for (size_t i = 0; i < epoch_seconds.size(); ++i) out << (i ? ", " : "") << epoch_seconds[i];
  out << "], \"first_step_seconds\": " << first_step
      << ", \"peak_rss_mib\": " << static_cast<double>(u.ru_maxrss) / 1024.0
      << ", \"test_accuracy\": " << accuracy << "}\n";
  return out ? 0 : 1;
}
