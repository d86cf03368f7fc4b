// Private to client/ingest: the factories behind SampleSource::Open and the
// helpers the sources share.
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "client/ingest/sample_source.h"
#include "common/status.h"

namespace strata::ingest_internal {

// REQUIRES: `path` is a directory.
Result<std::unique_ptr<SampleSource>> OpenFolderSource(const std::string& path);

enum class ManifestFormat { kCsv, kJsonl };
// Reads the whole manifest once up front: a malformed row or a missing
// referenced file fails here, and total_bytes() is exact.
Result<std::unique_ptr<SampleSource>> OpenManifestSource(const std::string& path, ManifestFormat format);

// A .tar, .tar.gz or .tgz WebDataset shard, streamed one sample at a time.
Result<std::unique_ptr<SampleSource>> OpenTarSource(const std::string& path);

// Replaces *out with the contents of the file at `path`. IOError "<path> is a
// directory" for a directory; otherwise ErrnoStatus(path, errno).
Status ReadWholeFile(const std::string& path, std::string* out);

// The field name of a file: its extension without the dot, lowercased ("jpg"
// for "a/b.JPG"); "bin" when it has none.
std::string FieldNameFor(const std::filesystem::path& path);

// The base name of a SOURCE argument: "cats" for "/data/cats/", "train.csv".
std::string SourceName(const std::string& path);

// Sets attribute "source" to `source_name` unless the sample already has one.
void AddSourceAttribute(const std::string& source_name, Sample* sample);

// Attribute text of a JSON value: a string as-is, anything else as JSON text.
std::string JsonAttributeText(const nlohmann::json& value);

}  // namespace strata::ingest_internal
