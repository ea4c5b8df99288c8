#pragma once
// The CUDA plugin's timer for profiler op events (Note [Device time] in
// loom/profiler/profiler.h): CUDA events recorded on the current stream at an op event's
// start and end, read back when the profile is made.

#include "loom/profiler/profiler.h"

namespace loom::cuda {

/// The process's CUDA profiler timer (registered by the plugin when it loads).
profiler::DeviceTimer& profiler_timer();

}  // namespace loom::cuda
