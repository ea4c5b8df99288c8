#pragma once
/// @file
/// safetensors checkpoints (the published format): an 8-byte little-endian header length
/// N, N bytes of JSON header — {"name": {"dtype": "F32", "shape": [2, 3],
/// "data_offsets": [begin, end]}, ..., "__metadata__": {"key": "value"}} padded with spaces
/// to a multiple of 8 as the reference writer does — then the tensors' raw little-endian
/// bytes, offsets counted from the first byte after the header, laid out back to back.
/// See Note [Atomic save], Note [Checked load] and Note [Checksums].

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

/// Note [Checksums]
/// Loom's writer stores, in "__metadata__" under kChecksumKey, a JSON object (as a string:
/// safetensors' metadata values are strings, so every other reader still loads the file)
/// mapping each tensor's name to the CRC-32 (zlib's crc32, 8 lowercase hex digits) of its
/// dtype code and shape written as in "F32[2,3]" ("[]" for a scalar) followed by its data
/// bytes, and "__metadata__" to the CRC-32 of the other metadata entries, each key and each
/// value followed by a NUL byte, in key order. Covering dtype and shape catches a flipped
/// byte there too ("F32" -> "I32" keeps every size). The reader verifies them whenever the
/// key is present — every tensor and the metadata must have a checksum and match it — and
/// hands the remaining metadata back without the key; a file without it (another writer's)
/// loads as before. The key is reserved: the writer refuses metadata that holds it.

/// The "__metadata__" key of Loom's checksums (Note [Checksums]).
inline constexpr std::string_view kChecksumKey = "loom.crc32";

/// How serialize and save_file write.
struct WriteOptions {
  /// Store checksums (Note [Checksums]). Off, the bytes are exactly the reference writer's.
  bool checksums = true;
};

/// What a file holds.
struct File {
  TensorList tensors;     ///< in the order of their data in the file
  Metadata metadata;      ///< "__metadata__" (empty if absent), without kChecksumKey
  bool verified = false;  ///< true if the file held checksums (all of them matched)
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
/// ValueError for an empty or duplicate name, a name "__metadata__", an undefined tensor, or
/// metadata holding kChecksumKey.
std::string serialize(const TensorList& tensors, const Metadata& metadata = {},
                      const WriteOptions& options = {});

/// Note [Atomic save]
/// save_file writes to a temporary file in the target's folder (same filesystem, so the
/// rename is atomic), fsyncs it, renames it over path and fsyncs the folder: at any instant
/// — including a crash or SIGKILL mid-write — path holds either the previous file or the
/// complete new one. The temporary file is ".<name>.tmp-<pid>-<n>" (pid: the writing
/// process); a crash can leave one behind. It is never read, and remove_stale_temporaries
/// deletes those whose process is gone.

/// Writes serialize(tensors, metadata, options) to path atomically (Note [Atomic save]).
/// Throws ValueError naming the path and the system error if any step fails (the target is
/// then untouched and the temporary file removed).
void save_file(const std::string& path, const TensorList& tensors, const Metadata& metadata = {},
               const WriteOptions& options = {});

/// The name of the temporary file that saving `target` (a file name, no folder) in process
/// pid uses for its n-th save (Note [Atomic save]): ".<target>.tmp-<pid>-<n>".
std::string temporary_name(std::string_view target, int64_t pid, uint64_t n);

/// Deletes, in folder dir, the temporary files of interrupted saves (Note [Atomic save]):
/// names of the form ".<target>.tmp-<pid>-<n>" (digits only after "tmp-") whose process pid is
/// no longer running; a live process's save in progress and every other file are left alone.
/// With target non-empty only that file's temporaries are considered. Returns the paths
/// removed; a folder that does not exist has none. Throws ValueError naming the file if one
/// cannot be removed.
std::vector<std::string> remove_stale_temporaries(const std::string& dir,
                                                  std::string_view target = {});

/// Note [Checked load]
/// Before any tensor byte is used the reader checks: the file holds at least 8 bytes; the
/// header length is at most 100,000,000 and fits in the file; the header is a JSON object
/// starting with '{' in which no name appears twice (nor a key twice within an entry or the
/// metadata); every entry has a known dtype, a shape of non-negative integers, and
/// two data_offsets with begin <= end whose difference is numel x element size (computed
/// without overflow); sorted by begin the entries tile [0, data size) without gaps or
/// overlaps; "__metadata__" maps strings to strings; checksums, when present, match (Note
/// [Checksums]). Any violation throws ValueError naming the file, the tensor and the problem;
/// no input makes it crash, and no tensor is allocated before the whole header has been
/// checked against the file's size (a fuzz target checks this).

/// Reads a safetensors file (Note [Checked load]); tensors are CPU and contiguous.
File load_file(const std::string& path);

/// Parses the bytes of a safetensors file; `name` is what errors call it.
File deserialize(std::string_view bytes, std::string_view name = "<memory>");

}  // namespace loom::data::safetensors
