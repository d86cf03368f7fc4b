#include "server/storage/catalog.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>

#include "common/dataset_ref.h"
#include "common/mutex.h"
#include "common/wall_clock.h"

namespace strata {
namespace {

void AppendBigEndian(std::string* out, uint64_t v, int bytes) {
  for (int shift = 8 * (bytes - 1); shift >= 0; shift -= 8) out->push_back(static_cast<char>((v >> shift) & 0xff));
}

// <name> 0x00: the separator sorts below every name byte, so "cat" comes before
// "cats" and a scan of "cat" never sees "cats".
std::string NamePrefix(std::string_view name) {
  std::string k(name);
  k.push_back('\0');
  return k;
}
std::string VersionKey(std::string_view name, uint64_t version) {
  std::string k = NamePrefix(name);
  AppendBigEndian(&k, version, 8);
  return k;
}
std::string ShardKey(std::string_view name, uint64_t version, uint32_t seq) {
  std::string k = VersionKey(name, version);
  AppendBigEndian(&k, seq, 4);
  return k;
}
std::string CursorKey(std::string_view job_id, uint32_t rank) {
  std::string k = NamePrefix(job_id);
  AppendBigEndian(&k, rank, 4);
  return k;
}

// Keys are binary; non-printable bytes are shown as \xNN.
std::string Printable(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(c);
    } else {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
      out += buf;
    }
  }
  return out;
}

template <typename Message>
Status Parse(KvSpace space, std::string_view key, std::string_view value, Message* out) {
  if (value.size() <= INT32_MAX && out->ParseFromArray(value.data(), static_cast<int>(value.size()))) {
    return Status::OK();
  }
  return Status::Corruption("cannot parse the " + out->GetTypeName() + " stored under key '" + Printable(key) +
                            "' in metadata space '" + std::string(KvSpaceName(space)) + "'");
}

// Parses every value under `prefix`, in key order.
template <typename Message>
Status ScanAll(const KvStore& kv, KvSpace space, std::string_view prefix, std::vector<Message>* out) {
  Status parsed;
  STRATA_RETURN_IF_ERROR(kv.Scan(space, prefix, [&](std::string_view key, std::string_view value) {
    parsed = Parse(space, key, value, &out->emplace_back());
    return parsed.ok();
  }));
  return parsed;
}

Status DeleteShards(const KvStore& kv, const std::string& name, uint64_t version, KvWriteBatch* batch) {
  return kv.Scan(KvSpace::kShards, VersionKey(name, version), [&](std::string_view key, std::string_view) {
    batch->Delete(KvSpace::kShards, std::string(key));
    return true;
  });
}

// Names are key prefixes ended by 0x00, so they cannot contain one.
Status CheckName(std::string_view what, const std::string& name) {
  if (!name.empty() && name.find('\0') == std::string::npos) return Status::OK();
  return Status::InvalidArgument(std::string(what) + " must be non-empty and contain no NUL byte");
}

std::string Describe(const std::string& name, uint64_t version) {
  return "dataset '" + name + "' version " + std::to_string(version);
}

std::string_view StateWord(v1::VersionState state) {
  switch (state) {
    case v1::VERSION_INGESTING: return "still being ingested";
    case v1::VERSION_SEALED: return "sealed";
    case v1::VERSION_ABORTED: return "aborted";
    case v1::VERSION_DELETED: return "deleted";
    default: return "in an unknown state";
  }
}

}  // namespace

Result<v1::VersionRecord> Catalog::CreateVersion(const std::string& name, std::optional<uint64_t> version,
                                                 const v1::VersionRecord& initial) {
  STRATA_RETURN_IF_ERROR(CheckName("a dataset name", name));
  if (version && (*version == 0 || *version > kMaxDatasetVersion)) {
    return Status::InvalidArgument("dataset versions are numbered from 1 to " + std::to_string(kMaxDatasetVersion));
  }
  MutexLock lock(&create_mu_);
  // Every state counts toward "latest": an implicit create never reuses the
  // number of an aborted version, whose files a reader may still remember.
  std::vector<v1::VersionRecord> versions;
  STRATA_RETURN_IF_ERROR(ScanAll(*kv_, KvSpace::kDatasets, NamePrefix(name), &versions));
  const uint64_t highest = versions.empty() ? 0 : versions.back().info().version();
  if (!version) STRATA_RETURN_IF_ERROR(NextDatasetVersion(name, highest).status());
  const uint64_t next = highest + 1;
  const uint64_t number = version.value_or(next);

  KvWriteBatch batch;
  auto existing = std::find_if(versions.begin(), versions.end(),
                               [&](const v1::VersionRecord& r) { return r.info().version() == number; });
  if (existing != versions.end()) {
    const v1::VersionState state = existing->info().state();
    if (state == v1::VERSION_SEALED) {
      return Status::FailedPrecondition(
          Describe(name, number) +
          " is already sealed; versions are immutable — ingest without @N to create a new version");
    }
    if (state == v1::VERSION_DELETED) {
      return Status::FailedPrecondition(Describe(name, number) +
                                        " was deleted; a deleted version's number is never reused — ingest "
                                        "without @N to create a new version");
    }
    if (state == v1::VERSION_INGESTING) {
      return Status::FailedPrecondition(Describe(name, number) +
                                        " is already being ingested; abort that ingest, or ingest without @N "
                                        "to create a new version");
    }
    // Aborted: the other nodes hold the aborted record, drop any copy under
    // that number as it lands, and never take it back (design.md, version
    // numbers): a second ingest under it could never keep its copies.
    return Status::FailedPrecondition(Describe(name, number) +
                                      " was aborted; an aborted version's number is never reused — ingest "
                                      "without @N to create a new version");
  }

  v1::VersionRecord record = initial;
  v1::DatasetInfo* info = record.mutable_info();
  info->set_name(name);
  info->set_version(number);
  info->set_state(v1::VERSION_INGESTING);
  info->set_created_unix_ms(UnixNowMs());
  batch.Put(KvSpace::kDatasets, VersionKey(name, number), record.SerializeAsString());
  STRATA_RETURN_IF_ERROR(kv_->Write(batch).WithContext("creating " + Describe(name, number)));
  return record;
}

Status Catalog::PutShard(const std::string& name, uint64_t version, const v1::ShardRecord& shard) {
  MutexLock lock(&create_mu_);  // no abort or seal between the check and the write
  Result<v1::VersionRecord> stored = GetVersion(name, version);
  if (!stored.ok()) return stored.status();
  if (stored->info().state() != v1::VERSION_INGESTING) {
    return Status::FailedPrecondition(Describe(name, version) + " is " +
                                      std::string(StateWord(stored->info().state())) +
                                      "; shards are added only while it is being ingested");
  }
  return kv_->Put(KvSpace::kShards, ShardKey(name, version, shard.info().seq()), shard.SerializeAsString());
}

Status Catalog::SealVersion(const v1::VersionRecord& sealed) {
  const std::string& name = sealed.info().name();
  const uint64_t version = sealed.info().version();
  if (sealed.info().state() != v1::VERSION_SEALED) {
    return Status::InvalidArgument("sealing " + Describe(name, version) + " needs a record in state VERSION_SEALED");
  }
  MutexLock lock(&create_mu_);
  Result<v1::VersionRecord> stored = GetVersion(name, version);
  if (!stored.ok()) return stored.status();
  if (stored->info().state() != v1::VERSION_INGESTING) {
    return Status::FailedPrecondition("cannot seal " + Describe(name, version) + ": it is " +
                                      std::string(StateWord(stored->info().state())));
  }
  return kv_->Put(KvSpace::kDatasets, VersionKey(name, version), sealed.SerializeAsString());
}

Result<bool> Catalog::ImportVersion(const v1::VersionRecord& record, const std::vector<v1::ShardRecord>& shards) {
  const std::string& name = record.info().name();
  const uint64_t version = record.info().version();
  STRATA_RETURN_IF_ERROR(ValidateDatasetName(name));
  const v1::VersionState incoming = record.info().state();
  if (incoming != v1::VERSION_SEALED && incoming != v1::VERSION_ABORTED && incoming != v1::VERSION_DELETED) {
    return false;
  }
  MutexLock lock(&create_mu_);
  Result<v1::VersionRecord> stored = GetVersion(name, version);
  if (!stored.ok() && !stored.status().IsNotFound()) return stored.status();
  const v1::VersionState local = stored.ok() ? stored->info().state() : v1::VERSION_STATE_UNSPECIFIED;
  // Deleted is final, then sealed; an ingest running here is this node's own:
  // a record from elsewhere never ends it.
  if (local == v1::VERSION_DELETED || local == v1::VERSION_INGESTING || local == incoming) return false;
  if (local == v1::VERSION_SEALED && incoming != v1::VERSION_DELETED) return false;
  KvWriteBatch batch;
  STRATA_RETURN_IF_ERROR(DeleteShards(*kv_, name, version, &batch));
  batch.Put(KvSpace::kDatasets, VersionKey(name, version), record.SerializeAsString());
  if (incoming == v1::VERSION_SEALED) {
    for (const auto& shard : shards) {
      batch.Put(KvSpace::kShards, ShardKey(name, version, shard.info().seq()), shard.SerializeAsString());
    }
  }
  STRATA_RETURN_IF_ERROR(kv_->Write(batch));
  return true;
}

Status Catalog::AbortVersion(const std::string& name, uint64_t version) {
  MutexLock lock(&create_mu_);
  Result<v1::VersionRecord> stored = GetVersion(name, version);
  if (!stored.ok()) return stored.status();
  const v1::VersionState state = stored->info().state();
  if (state == v1::VERSION_ABORTED || state == v1::VERSION_DELETED) return Status::OK();
  if (state == v1::VERSION_SEALED) {
    return Status::FailedPrecondition("cannot abort " + Describe(name, version) + ": it is sealed; delete it instead");
  }
  stored->mutable_info()->set_state(v1::VERSION_ABORTED);
  KvWriteBatch batch;
  batch.Put(KvSpace::kDatasets, VersionKey(name, version), stored->SerializeAsString());
  STRATA_RETURN_IF_ERROR(DeleteShards(*kv_, name, version, &batch));
  return kv_->Write(batch);
}

Status Catalog::DeleteVersion(const std::string& name, uint64_t version) {
  MutexLock lock(&create_mu_);
  Result<v1::VersionRecord> stored = GetVersion(name, version);
  if (!stored.ok()) return stored.status();
  KvWriteBatch batch;
  batch.Delete(KvSpace::kDatasets, VersionKey(name, version));
  STRATA_RETURN_IF_ERROR(DeleteShards(*kv_, name, version, &batch));
  return kv_->Write(batch);
}

Result<v1::VersionRecord> Catalog::MarkDeleted(const std::string& name, uint64_t version, const std::string& by) {
  MutexLock lock(&create_mu_);
  Result<v1::VersionRecord> stored = GetVersion(name, version);
  if (!stored.ok()) return stored.status();
  const v1::VersionState state = stored->info().state();
  if (state == v1::VERSION_DELETED) return stored;
  if (state == v1::VERSION_INGESTING) {
    return Status::FailedPrecondition(
        "cannot delete " + Describe(name, version) +
        ": it is still being ingested (strata rm --abort aborts an ingest with several writers)");
  }
  v1::VersionRecord tombstone = std::move(stored).value();
  tombstone.mutable_info()->set_state(v1::VERSION_DELETED);
  tombstone.set_deleted_by(by);
  tombstone.set_deleted_unix_ms(UnixNowMs());
  KvWriteBatch batch;
  batch.Put(KvSpace::kDatasets, VersionKey(name, version), tombstone.SerializeAsString());
  STRATA_RETURN_IF_ERROR(DeleteShards(*kv_, name, version, &batch));
  STRATA_RETURN_IF_ERROR(kv_->Write(batch).WithContext("deleting " + Describe(name, version)));
  return tombstone;
}

Result<v1::VersionRecord> Catalog::GetVersion(const std::string& name, uint64_t version) const {
  const std::string key = VersionKey(name, version);
  std::string value;
  Status s = kv_->Get(KvSpace::kDatasets, key, &value);
  if (s.IsNotFound()) return Status::NotFound("dataset '" + name + "' has no version " + std::to_string(version));
  STRATA_RETURN_IF_ERROR(s.WithContext("reading " + Describe(name, version)));
  v1::VersionRecord record;
  STRATA_RETURN_IF_ERROR(Parse(KvSpace::kDatasets, key, value, &record));
  return record;
}

Result<v1::VersionRecord> Catalog::LatestSealed(const std::string& name) const {
  std::vector<v1::VersionRecord> versions;
  STRATA_RETURN_IF_ERROR(ScanAll(*kv_, KvSpace::kDatasets, NamePrefix(name), &versions));
  auto it = std::find_if(versions.rbegin(), versions.rend(),
                         [](const v1::VersionRecord& r) { return r.info().state() == v1::VERSION_SEALED; });
  if (it == versions.rend()) return Status::NotFound("dataset '" + name + "' has no sealed version");
  return *it;
}

Result<std::vector<v1::VersionRecord>> Catalog::ListVersions(bool include_unsealed) const {
  std::vector<v1::VersionRecord> versions;
  STRATA_RETURN_IF_ERROR(ScanAll(*kv_, KvSpace::kDatasets, "", &versions));
  if (!include_unsealed) {
    std::erase_if(versions, [](const v1::VersionRecord& r) { return r.info().state() != v1::VERSION_SEALED; });
  }
  return versions;
}

Result<std::vector<v1::ShardRecord>> Catalog::ListShards(const std::string& name, uint64_t version) const {
  std::vector<v1::ShardRecord> shards;
  STRATA_RETURN_IF_ERROR(ScanAll(*kv_, KvSpace::kShards, VersionKey(name, version), &shards));
  return shards;
}

Status Catalog::PutCursor(const std::string& job_id, uint32_t rank, const v1::CursorRecord& cursor) {
  STRATA_RETURN_IF_ERROR(CheckName("a job id", job_id));
  return kv_->Put(KvSpace::kCursors, CursorKey(job_id, rank), cursor.SerializeAsString());
}

Result<v1::CursorRecord> Catalog::GetCursor(const std::string& job_id, uint32_t rank) const {
  const std::string key = CursorKey(job_id, rank);
  std::string value;
  Status s = kv_->Get(KvSpace::kCursors, key, &value);
  if (s.IsNotFound()) {
    return Status::NotFound("job '" + job_id + "' has no cursor for rank " + std::to_string(rank));
  }
  STRATA_RETURN_IF_ERROR(s.WithContext("reading the cursor of job '" + job_id + "'"));
  v1::CursorRecord cursor;
  STRATA_RETURN_IF_ERROR(Parse(KvSpace::kCursors, key, value, &cursor));
  return cursor;
}

}  // namespace strata
