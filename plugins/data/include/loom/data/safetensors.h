#pragma once
/// @file
/// safetensors checkpoints (the published format): an 8-byte little-endian header length
/// N, N bytes of JSON header — {"name": {"dtype": "F32", "shape": [2, 3],
/// "data_offsets": [begin, end]}, ..., "__metadata__": {"key": "value"}} padded with spaces
/// to a multiple of 8 as the reference writer does — then the tensors' raw little-endian
/// bytes, offsets counted from the first byte after the header, laid out back to back.
/// See Note [Atomic save] and Note [Checked load].

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "loom/core/tensor.h"

namespace loom::data::safetensors {

/// Named tensors in a chosen order.
using TensorList = std::vector<std::pair<std::string, Tensor>>;
/// The "__metadata__" string map.
using Metadata = std::map<std::string, std::string>;

/// What a file holds.
struct File {
  TensorList tensors;  ///< in the order of their data in the file
  Metadata metadata;   ///< "__metadata__" (empty if absent)
  /// The tensor called name; throws IndexError naming the file's tensors if there is none.
  const Tensor& at(std::string_view name) const;
  /// True if a tensor is called name.
  bool contains(std::string_view name) const;
};

/// safetensors' dtype code of t ("F32", "BF16", "I64", "BOOL", ...).
std::string_view dtype_code(DType t);

/// The bytes of a safetensors file holding tensors and metadata. Data is laid out as the
/// reference writer does: by dtype size (largest first), then by name. Tensors may have
/// any strides and live on any device (they are copied to the CPU in C order). Throws
/// ValueError for an empty or duplicate name, a name "__metadata__", or an undefined tensor.
std::string serialize(const TensorList& tensors, const Metadata& metadata = {});

/// Note [Atomic save]
/// save_file writes to a temporary file in the target's folder (same filesystem, so the
/// rename is atomic), fsyncs it, renames it over path and fsyncs the folder: at any instant
/// — including a crash or SIGKILL mid-write — path holds either the previous file or the
/// complete new one. A crash can leave a ".<name>.tmp-*" file behind; it is never read.

/// Writes serialize(tensors, metadata) to path atomically (Note [Atomic save]). Throws
/// ValueError naming the path and the system error if any step fails (the target is then
/// untouched and the temporary file removed).
void save_file(const std::string& path, const TensorList& tensors, const Metadata& metadata = {});

/// Note [Checked load]
/// Before any tensor byte is used the reader checks: the file holds at least 8 bytes; the
/// header length is at most 100,000,000 and fits in the file; the header is a JSON object
/// starting with '{'; every entry has a known dtype, a shape of non-negative integers, and
/// two data_offsets with begin <= end whose difference is numel x element size (computed
/// without overflow); sorted by begin the entries tile [0, data size) without gaps or
/// overlaps; "__metadata__" maps strings to strings. Any violation throws ValueError
/// naming the file and the problem; no input makes it crash (a fuzz target checks this).

/// Reads a safetensors file (Note [Checked load]); tensors are CPU and contiguous.
File load_file(const std::string& path);

/// Parses the bytes of a safetensors file; `name` is what errors call it.
File deserialize(std::string_view bytes, std::string_view name = "<memory>");

}  // namespace loom::data::safetensors
