// What this node holds: the shard and index files present in its data
// directory. The file system is the truth (a file is renamed into place only
// when complete and verified); this is its in-memory index, rebuilt from a scan
// at start-up and kept current by whoever adds or removes a file.
//
// Thread-safety: safe for concurrent use.
#pragma once

#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "common/file_placement.h"  // ShardRef
#include "common/mutex.h"
#include "common/status.h"
#include "server/storage/data_dir.h"
#include "strata/v1/cluster.pb.h"

namespace strata {

class LocalFiles {
 public:
  explicit LocalFiles(const DataDir* dir) : dir_(dir) {}

  // Scans the data directory.
  Status Load();

  bool Has(const v1::FileRef& file) const;
  void Add(const v1::FileRef& file);
  void Remove(const v1::FileRef& file);
  // Files of one version (dataset "" : every file).
  std::vector<v1::FileRef> List(const std::string& dataset, uint64_t version) const;
  size_t size() const;

  // A total order on file references (for sets and maps).
  using Key = std::tuple<std::string, uint64_t, int, uint32_t>;
  static Key KeyOf(const v1::FileRef& f) { return {f.dataset(), f.version(), static_cast<int>(f.kind()), f.seq()}; }

 private:
  const DataDir* dir_;
  mutable Mutex mu_;
  std::set<Key> files_ GUARDED_BY(mu_);
};

v1::FileRef IndexRef(const std::string& dataset, uint64_t version);
// "cats@2/000007.shard" for logs.
std::string FileName(const v1::FileRef& file);

}  // namespace strata
