// Dataset names and references ("name" or "name@version").
//
// A dataset name is 1-128 characters of [A-Za-z0-9._-], does not start with
// '.' or '-', and contains no "..": names become directory names on every
// node, so anything that could escape the data directory is refused.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace strata {

struct DatasetRef {
  std::string name;
  std::optional<uint64_t> version;  // nullopt: latest (stream) or next (ingest)

  // "name" or "name@3"
  std::string ToString() const;
};

// OK, or InvalidArgument explaining what is wrong with the name.
Status ValidateDatasetName(std::string_view name);

// Whether `text` is 1 to max_bytes characters of [A-Za-z0-9._-], the
// characters names are made of (dataset names, field names, ingest ids).
bool IsSimpleName(std::string_view text, size_t max_bytes);

// The highest version number (2^53: exact as a JSON number anywhere). A
// dataset's next number must stay at or below it, so a name@N near 2^64
// never wraps the numbering of every later version.
inline constexpr uint64_t kMaxDatasetVersion = uint64_t{1} << 53;

// Parses "name" or "name@N" (1 <= N <= kMaxDatasetVersion). InvalidArgument on
// a bad name or version.
Result<DatasetRef> ParseDatasetRef(std::string_view text);

// The number after `highest` for a dataset: FailedPrecondition naming it when
// that would pass kMaxDatasetVersion.
Result<uint64_t> NextDatasetVersion(std::string_view name, uint64_t highest);

}  // namespace strata
