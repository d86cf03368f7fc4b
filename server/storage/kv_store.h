// A small key-value interface over the node's metadata, with two
// implementations: RocksDB (what stratad runs) and in memory (for tests of the
// code above it). One parameterised test runs against both.
//
// Keys live in spaces, which are RocksDB column families. Every Write is atomic
// and, for RocksDB, durable before it returns (WAL synced), because writes
// acknowledge data to clients.
//
// Thread-safety: a KvStore is safe for concurrent use without external locking.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace strata {

enum class KvSpace : uint8_t {
  kDatasets = 0,  // dataset versions
  kShards = 1,    // shards of each version
  kStrata = 2,    // per-stratum and per-label counts
  kCursors = 3,   // training-job cursors
  kNodes = 4,     // node state (cluster membership, repair progress)
};
inline constexpr int kNumKvSpaces = 5;
std::string_view KvSpaceName(KvSpace space);

// A group of puts and deletes applied atomically.
class KvWriteBatch {
 public:
  struct Op {
    KvSpace space;
    std::string key;
    std::optional<std::string> value;  // nullopt: delete
  };
  void Put(KvSpace space, std::string key, std::string value) {
    ops_.push_back({space, std::move(key), std::move(value)});
  }
  void Delete(KvSpace space, std::string key) { ops_.push_back({space, std::move(key), std::nullopt}); }
  const std::vector<Op>& ops() const { return ops_; }
  bool empty() const { return ops_.empty(); }

 private:
  std::vector<Op> ops_;
};

struct KvOptions {
  // Sync the WAL on every write. Default true: writes acknowledge data.
  bool sync_writes = true;
  // Create the database if it does not exist. Default true.
  bool create_if_missing = true;
};

class KvStore {
 public:
  // Opens (creating if allowed) a RocksDB database in `dir` with one column
  // family per KvSpace. Fails with IOError if another process holds it.
  static Result<std::unique_ptr<KvStore>> OpenRocksDb(const std::string& dir, const KvOptions& options);
  // An empty store in memory.
  static std::unique_ptr<KvStore> CreateInMemory();

  virtual ~KvStore() = default;

  // NotFound if the key is absent.
  virtual Status Get(KvSpace space, std::string_view key, std::string* value) const = 0;
  // Applies every op of the batch, or none.
  virtual Status Write(const KvWriteBatch& batch) = 0;
  // Calls fn for every key that starts with prefix, in ascending byte order,
  // until fn returns false. fn must not call back into the store.
  virtual Status Scan(KvSpace space, std::string_view prefix,
                      const std::function<bool(std::string_view key, std::string_view value)>& fn) const = 0;
  // Flushes and closes. Later calls fail with FailedPrecondition. Idempotent.
  virtual Status Close() = 0;
  // Implementation figures for metrics (RocksDB: live data size, memtable bytes...).
  virtual std::map<std::string, uint64_t> Stats() const = 0;

  Status Put(KvSpace space, std::string key, std::string value) {
    KvWriteBatch b;
    b.Put(space, std::move(key), std::move(value));
    return Write(b);
  }
  Status Delete(KvSpace space, std::string key) {
    KvWriteBatch b;
    b.Delete(space, std::move(key));
    return Write(b);
  }
};

}  // namespace strata
