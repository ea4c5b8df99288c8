#pragma once
/// @file
/// Grad mode: whether ops record the autograd graph on this thread, and the RAII guards
/// that switch it (no_grad, enable_grad, inference mode), as torch.no_grad() and friends.
///
/// Note [Grad mode is a dispatch key]: grad mode off means the Autograd key is in this
/// thread's excluded set, so calls skip the derivative kernels entirely; "below autograd"
/// (a derivative kernel calling its backend) is the same state. Nothing else is consulted,
/// so a guard costs two thread-local writes.

#include "loom/dispatcher/dispatch_key.h"

namespace loom::autograd {

/// This thread's grad mode.
struct GradMode {
  /// True when ops record gradients (the default).
  static bool is_enabled() { return !local_dispatch_key_set().excluded.has(DispatchKey::Autograd); }
  /// Switches recording on or off for this thread (prefer the guards).
  static void set_enabled(bool enabled) {
    LocalDispatchKeySet& tls = local_dispatch_key_set();
    tls.excluded = enabled ? tls.excluded.remove(DispatchKey::Autograd)
                           : tls.excluded.add(DispatchKey::Autograd);
  }
};

/// Sets grad mode for the guard's lifetime and restores the previous mode.
class AutoGradMode {
 public:
  /// Sets grad mode to enabled.
  explicit AutoGradMode(bool enabled) : previous_(GradMode::is_enabled()) {
    GradMode::set_enabled(enabled);
  }
  /// Restores the previous mode.
  ~AutoGradMode() { GradMode::set_enabled(previous_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool previous_;
};

/// torch.no_grad(): ops inside record nothing; results do not require grad.
class NoGradGuard : public AutoGradMode {
 public:
  /// Disables recording.
  NoGradGuard() : AutoGradMode(false) {}
};

/// torch.enable_grad(): recording on again inside a no_grad region.
class EnableGradGuard : public AutoGradMode {
 public:
  /// Enables recording.
  EnableGradGuard() : AutoGradMode(true) {}
};

/// torch.inference_mode(): no recording, and tensors made inside are inference tensors that
/// can never be saved for backward (using one in a recorded op outside is an error).
class InferenceMode {
 public:
  /// Enters (enabled = true) or leaves (false) inference mode.
  explicit InferenceMode(bool enabled = true);
  /// Restores the previous state.
  ~InferenceMode();
  InferenceMode(const InferenceMode&) = delete;
  InferenceMode& operator=(const InferenceMode&) = delete;
  /// True inside an InferenceMode guard on this thread.
  static bool is_enabled();

 private:
  bool previous_;
  AutoGradMode grad_;
};

}  // namespace loom::autograd
