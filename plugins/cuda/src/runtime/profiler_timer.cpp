// CUDA time of profiler op events (Note [Device time] in loom/profiler/profiler.h). Each op
// event on a CUDA tensor gets two CUDA events recorded on the thread's current stream, around
// the kernels the op launches; when the profile is made, the elapsed time between them is what
// the device spent (kernels queued behind earlier work start later, so this is the op's span
// on the stream, as torch.profiler's CUDA time from events is). Events are pooled: creating one
// costs about a microsecond, reusing it nothing.
#include "runtime/profiler_timer.h"

#include <cuda_runtime.h>

#include <mutex>
#include <utility>
#include <vector>

#include "runtime/context.h"

namespace loom::cuda {
namespace {

class CudaTimer final : public profiler::DeviceTimer {
 public:
  uint64_t start() override {
    if (device_count() == 0) return 0;
    cudaEvent_t begin = take(), end = take();
    if (begin == nullptr || end == nullptr) return 0;
    if (cudaEventRecord(begin, current_stream()) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    std::lock_guard<std::mutex> lock(mu_);
    pairs_.push_back({begin, end});
    return pairs_.size();  // 1-based: 0 means "not timed"
  }

  void stop(uint64_t token) override {
    cudaEvent_t end = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (token == 0 || token > pairs_.size()) return;
      end = pairs_[token - 1].second;
    }
    if (cudaEventRecord(end, current_stream()) != cudaSuccess) cudaGetLastError();
  }

  int64_t elapsed_ns(uint64_t token) override {
    std::pair<cudaEvent_t, cudaEvent_t> p;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (token == 0 || token > pairs_.size()) return -1;
      p = pairs_[token - 1];
    }
    float ms = 0;
    if (cudaEventSynchronize(p.second) != cudaSuccess ||
        cudaEventElapsedTime(&ms, p.first, p.second) != cudaSuccess) {
      cudaGetLastError();
      return -1;
    }
    return static_cast<int64_t>(static_cast<double>(ms) * 1e6);
  }

  void clear() override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [a, b] : pairs_) {
      free_.push_back(a);
      free_.push_back(b);
    }
    pairs_.clear();
  }

 private:
  cudaEvent_t take() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!free_.empty()) {
        cudaEvent_t e = free_.back();
        free_.pop_back();
        return e;
      }
    }
    cudaEvent_t e = nullptr;
    if (cudaEventCreate(&e) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    return e;
  }

  std::mutex mu_;
  std::vector<std::pair<cudaEvent_t, cudaEvent_t>> pairs_;
  std::vector<cudaEvent_t> free_;
};

}  // namespace

profiler::DeviceTimer& profiler_timer() {
  static auto* t = new CudaTimer;  // its events go with the process (the driver frees them)
  return *t;
}

}  // namespace loom::cuda
