#pragma once
/// @file
/// Measuring a whole child process: wall time and peak resident memory.

#include <string>
#include <vector>

#include "harness.h"

namespace loom::bench {

/// Runs command (program path, then arguments) once through bench-spawn, with output to
/// /dev/null and OMP_WAIT_POLICY=passive, and returns {wall seconds, peak RSS in MiB}.
/// @throws std::runtime_error if it cannot run or exits with a non-zero status.
Sample run_child(const std::vector<std::string>& command);

}  // namespace loom::bench
