// Writes one run of every kind of summary into the folder argv[1], for
// tensorboard_reader_test.sh: tensorboard_reader_check.py (mode "writer") expects exactly
// these values, computed the same way.
#include <cmath>
#include <cstdio>
#include <exception>
#include <vector>

#include "loom/utils/summary_writer.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s LOG_DIR\n", argv[0]);
    return 2;
  }
  try {
    loom::utils::SummaryWriter w(argv[1]);
    for (int64_t step = 0; step < 20; ++step) {
      const double t = 1700000000.0 + static_cast<double>(step);
      w.add_scalar("train/loss", 1.0 / static_cast<double>(step + 1), step, t);
      w.add_scalar("train/lr", 0.001 * std::pow(0.5, static_cast<double>(step) / 10.0), step, t);
      w.add_scalars("cmp", {{"a", static_cast<double>(step)}, {"b", -static_cast<double>(step)}},
                    step, t);
    }
    std::vector<float> values(100);
    for (int i = 0; i < 100; ++i) values[i] = static_cast<float>(i) / 10.0f;
    w.add_histogram("weights", loom::Tensor::from_vector<float>(values, {10, 10}), 3, 10);
    std::vector<float> img(3 * 4 * 5);
    for (int i = 0; i < 60; ++i) img[i] = static_cast<float>(i) / 59.0f;
    w.add_image("img", loom::Tensor::from_vector<float>(img, {3, 4, 5}), 4);
    w.add_text("notes", "loom **markdown**", 5);
    w.add_hparams({{"lr", 0.001}, {"optimizer", "adam"}, {"layers", 3}, {"shuffle", true}},
                  {{"hparam/accuracy", 0.9}});
    w.close();
    // A resumed run: from step 15 on it logs again, and TensorBoard drops the first file's
    // events from step 15 on (every tag, train/lr too).
    loom::utils::SummaryWriterOptions resumed;
    resumed.purge_step = 15;
    loom::utils::SummaryWriter again(argv[1], resumed);
    for (int64_t step = 15; step < 20; ++step) {
      again.add_scalar("train/loss", 2.0 / static_cast<double>(step + 1), step,
                       1700000100.0 + static_cast<double>(step));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tensorboard_writer: %s\n", e.what());
    return 1;
  }
  return 0;
}
