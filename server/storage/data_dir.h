// The layout of a node's data directory:
//
//   <data_dir>/meta/                          RocksDB metadata (the catalog)
//   <data_dir>/shards/<name>/v<version>/<seq>.shard   shard files (seq: 6 digits)
//   <data_dir>/shards/<name>/v<version>/strata.idx    the version's stratum member index
//   <data_dir>/shards/<name>/v<version>/<seq>.parity  parity files of erasure-coded versions
//   <data_dir>/quarantine/                    corrupt copies set aside by the scrubber
//
// Shard paths recorded in the catalog are relative to <data_dir>, so a data
// directory can be moved as a whole.
//
// Thread-safety: immutable after construction; the file operations are safe to
// call concurrently for different versions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "strata/v1/cluster.pb.h"

namespace strata {

class DataDir {
 public:
  explicit DataDir(std::string root);

  // Creates the directories. IOError if the root cannot be created or written.
  Status Init() const;

  const std::string& root() const { return root_; }
  std::string MetaDir() const;
  // Relative to root(): "shards/<name>/v<version>/<seq>.shard".
  std::string ShardRelativePath(const std::string& name, uint64_t version, uint32_t seq) const;
  std::string Absolute(const std::string& relative) const;
  std::string VersionDir(const std::string& name, uint64_t version) const;

  // Creates the version's directory, empty: files left by an earlier aborted
  // ingest of the same version number are removed.
  Status PrepareVersionDir(const std::string& name, uint64_t version) const;
  // Creates the version's directory if it is missing, and keeps what is in
  // it: a part of an ingest with several writers shares the version with the
  // others, whose shards and copies may already be there.
  Status EnsureVersionDir(const std::string& name, uint64_t version) const;
  // Removes the version's files (missing files are not an error). A file
  // that lands in the directory while it is being removed (a copy still
  // arriving from a peer, which the node drops on arrival once the version is
  // dead) makes the removal go round again, up to 5 times, rather than fail
  // it.
  Status RemoveVersion(const std::string& name, uint64_t version) const;
  // Removes temporary files left by a crash (".tmp.*" under shards/). Returns how many.
  Result<uint64_t> RemoveTempFiles() const;
  // Bytes of shard files on disk.
  uint64_t ShardBytes() const;

  // Relative path of a version's file (a shard or its stratum index).
  std::string FileRelativePath(const v1::FileRef& file) const;
  // The absolute path of `file` for a reference that came from the network:
  // InvalidArgument unless it is well formed and resolves inside root()
  // (server/storage/path_guard.h). Use it before creating, reading or removing anything.
  Result<std::string> CheckedFilePath(const v1::FileRef& file) const;
  // The version's directory, checked the same way.
  Result<std::string> CheckedVersionDir(const std::string& name, uint64_t version) const;
  // Every shard and index file present (not temporary files).
  Result<std::vector<v1::FileRef>> ScanFiles() const;
  // Moves a corrupt file out of the way into quarantine/ (kept for inspection).
  Status Quarantine(const v1::FileRef& file) const;
  // Removes one file (NotFound is not an error).
  Status RemoveFile(const v1::FileRef& file) const;

 private:
  std::string root_;
};

}  // namespace strata
