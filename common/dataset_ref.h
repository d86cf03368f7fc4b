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

// Parses "name" or "name@N" (N >= 1). InvalidArgument on a bad name or version.
Result<DatasetRef> ParseDatasetRef(std::string_view text);

}  // namespace strata
