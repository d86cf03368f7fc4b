// The catalog: what a node knows about datasets, versions, shards, strata and
// job cursors, stored in a KvStore as protobuf values.
//
// Key layout (all in big-endian so that keys sort numerically):
//   kDatasets: <name> 0x00 <u64 version>               -> v1::VersionRecord
//   kShards:   <name> 0x00 <u64 version> <u32 seq>     -> v1::ShardRecord
//   kCursors:  <job id> 0x00 <u32 rank>                -> v1::CursorRecord
// Label and stratum counts travel inside DatasetInfo (they are small: one entry per stratum).
//
// Thread-safety: safe for concurrent use. Version creation is serialised
// internally so two ingests never get the same version number.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "server/storage/kv_store.h"
#include "strata/v1/storage.pb.h"

namespace strata {

class Catalog {
 public:
  // `kv` must outlive the catalog.
  explicit Catalog(KvStore* kv) : kv_(kv) {}

  // Creates version `version` of `name`, or the next one (latest + 1, from 1)
  // when `version` is nullopt, in state VERSION_INGESTING with `info`'s other
  // fields as given. Fails with FailedPrecondition if that version exists in
  // any state (sealed, ingesting, aborted or deleted: numbers are never
  // reused), or when the next number would pass kMaxDatasetVersion.
  Result<v1::VersionRecord> CreateVersion(const std::string& name, std::optional<uint64_t> version,
                                          const v1::VersionRecord& initial);

  // Records a finished shard of an ingesting version (FailedPrecondition
  // otherwise), keyed by shard.info().seq.
  Status PutShard(const std::string& name, uint64_t version, const v1::ShardRecord& shard);

  // Replaces the version's record with `sealed` (state must be VERSION_SEALED),
  // durably. FailedPrecondition unless the stored state is VERSION_INGESTING.
  Status SealVersion(const v1::VersionRecord& sealed);

  // Marks an ingesting version aborted and deletes its shard records.
  // FailedPrecondition if it is sealed; OK if it is already aborted.
  Status AbortVersion(const std::string& name, uint64_t version);

  // Merges a version recorded by another node (its coordinator, or for a
  // deleted one the node that deleted it) into this catalog, atomically with
  // its shard records. A deleted version is final: an incoming deleted record
  // replaces anything that is not ingesting here (its shard records go), and
  // anything incoming is ignored when this catalog has it deleted. Sealed
  // comes next: an incoming sealed record replaces an aborted or unknown one,
  // and an aborted one is ignored when this catalog has it sealed. An
  // incoming aborted record marks a local non-sealed version aborted (its shard
  // records go), never one that is ingesting here (a running ingest is this
  // node's own). Ingesting records are ignored (only a coordinator writes
  // those). Returns true if the catalog changed.
  Result<bool> ImportVersion(const v1::VersionRecord& record, const std::vector<v1::ShardRecord>& shards);

  // Deletes a version and its shard records entirely, in any state. NotFound
  // if there is no such version.
  Status DeleteVersion(const std::string& name, uint64_t version);

  // Turns a sealed or aborted version into a tombstone: state
  // VERSION_DELETED, deleted_by = `by`, its shard records removed, its other
  // fields kept (so listings with unsealed versions still say what it was).
  // Returns the tombstone. NotFound naming the version if there is none;
  // FailedPrecondition if it is being ingested; an already deleted version is
  // returned as it is. The number is never reused (CreateVersion refuses it).
  Result<v1::VersionRecord> MarkDeleted(const std::string& name, uint64_t version, const std::string& by);

  // NotFound with a message naming the dataset and version.
  Result<v1::VersionRecord> GetVersion(const std::string& name, uint64_t version) const;
  // The highest sealed version of `name`; NotFound if there is none.
  Result<v1::VersionRecord> LatestSealed(const std::string& name) const;
  // Every version of every dataset, ordered by name then version; sealed only
  // unless include_unsealed.
  Result<std::vector<v1::VersionRecord>> ListVersions(bool include_unsealed) const;
  // The shards of a version in seq order.
  Result<std::vector<v1::ShardRecord>> ListShards(const std::string& name, uint64_t version) const;

  Status PutCursor(const std::string& job_id, uint32_t rank, const v1::CursorRecord& cursor);
  Result<v1::CursorRecord> GetCursor(const std::string& job_id, uint32_t rank) const;

 private:
  KvStore* kv_;
  // Serialises CreateVersion and every check-then-write of a version's state
  // (PutShard, SealVersion, AbortVersion, DeleteVersion, MarkDeleted).
  Mutex create_mu_;
};

}  // namespace strata
