#pragma once
// Private: the DataLoader sets the worker info of its threads.

#include <optional>

#include "loom/data/dataset.h"

namespace loom::data::detail {
/// Sets (or, with nullopt, clears) the calling thread's WorkerInfo.
void set_worker_info(std::optional<WorkerInfo> info);
}  // namespace loom::data::detail
