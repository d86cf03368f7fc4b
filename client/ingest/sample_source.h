// Sources that `strata ingest` reads samples from.
//
//  - A directory: a folder tree. Each regular file below it is one sample
//    whose label is the name of its first-level sub-folder (files directly in
//    the root have an empty label). The field name is the file's extension
//    ("jpg"; "bin" when there is none), the key its path relative to the root
//    without the extension. Files are visited in sorted path order.
//  - A ".csv" file: a manifest with a header row. Column "path" is required
//    (relative paths resolve against the manifest's folder); "label" is
//    optional; every other column becomes an attribute.
//  - A ".jsonl" file: one JSON object per line with the same keys as the CSV;
//    non-string values are stored as their JSON text.
//  - A ".tar" file (or ".tar.gz", ".tgz"): WebDataset shards. Members are
//    grouped into samples by key (the member path up to the first '.' of its
//    base name); each member is a field named by the rest of the name ("jpg",
//    "seg.png"). The text of a "cls" field, trimmed, is the label; the
//    top-level scalar members of a "json" field become attributes. Members of
//    one key must be adjacent. As in WebDataset, members whose base name has
//    no extension or starts with '.' are skipped, as are directories.
//
// Every sample also gets the attribute "source" (the base name of the SOURCE
// argument) unless the manifest or json already gives one.
//
// Errors name the file and, for manifests, the line: an unreadable file is
// PermissionDenied or IOError, a malformed manifest or truncated tar is
// InvalidArgument, a missing path is NotFound.
//
// Thread-safety: a SampleSource is used by one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "strata/dataset.h"

namespace strata {

class SampleSource {
 public:
  // Picks the kind from the path: a directory, or a file ending in .csv,
  // .jsonl, .tar, .tar.gz or .tgz. InvalidArgument for anything else;
  // NotFound if missing.
  static Result<std::unique_ptr<SampleSource>> Open(const std::string& path);

  virtual ~SampleSource() = default;

  // Fills `sample` with the next sample. OutOfRange at the end.
  virtual Status Next(Sample* sample) = 0;

  // Bytes this source will read in all, when known up front (0 when not), and
  // read so far: for progress bars.
  virtual uint64_t total_bytes() const = 0;
  virtual uint64_t bytes_read() const = 0;

  // "folder /data/cats", "manifest train.csv", "tar shard-000.tar".
  virtual std::string description() const = 0;
};

}  // namespace strata
