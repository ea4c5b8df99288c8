#pragma once
/// @file
/// Anomaly mode (torch.autograd.detect_anomaly): each node remembers where its forward op
/// was called, and a backward that produces NaN or Inf names that op and place.

namespace loom::autograd {

/// Process-wide anomaly mode switch.
struct AnomalyMode {
  /// True while anomaly detection is on.
  static bool is_enabled();
  /// Turns it on or off.
  static void set_enabled(bool enabled);
};

/// Same as AnomalyMode::set_enabled (torch.autograd.set_detect_anomaly).
inline void set_detect_anomaly(bool enabled) { AnomalyMode::set_enabled(enabled); }

/// Anomaly mode on for the guard's lifetime (torch.autograd.detect_anomaly()).
class DetectAnomalyGuard {
 public:
  /// Turns anomaly mode on.
  DetectAnomalyGuard();
  /// Restores the previous state.
  ~DetectAnomalyGuard();
  DetectAnomalyGuard(const DetectAnomalyGuard&) = delete;
  DetectAnomalyGuard& operator=(const DetectAnomalyGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace loom::autograd
