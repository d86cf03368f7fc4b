// KvStore over RocksDB: one column family per KvSpace. This file is the one
// place strata calls RocksDB, so FromRocks below is the one translation of its
// errors.
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>

#include "common/mutex.h"
#include "server/storage/kv_store.h"

namespace strata {
namespace {

// RocksDB reports a held LOCK file as an IOError: "While lock file: <dir>/LOCK:
// Resource temporarily unavailable" from another process, "lock hold by current
// process" from another instance in this one.
bool IsLockHeld(const rocksdb::Status& s) {
  const std::string m = s.ToString();
  return s.IsIOError() && (m.find("While lock file") != std::string::npos ||
                           m.find("lock hold by current process") != std::string::npos);
}

Status FromRocks(const rocksdb::Status& s, std::string_view op) {
  if (s.ok()) return Status::OK();
  std::string detail = s.ToString();  // "IO error: While lock file: ..."
  while (!detail.empty() && (detail.back() == ' ' || detail.back() == ':')) detail.pop_back();
  std::string m(op);
  if (IsLockHeld(s)) m += ": the data directory is in use by another stratad";
  m += " (" + detail + ")";
  if (s.IsNotFound()) return Status::NotFound(std::move(m));
  if (s.IsCorruption()) return Status::Corruption(std::move(m));
  if (s.IsIOError()) return Status::IOError(std::move(m));
  if (s.IsBusy() || s.IsTryAgain()) return Status::Unavailable(std::move(m));
  if (s.IsInvalidArgument()) return Status::InvalidArgument(std::move(m));
  return Status::Internal(std::move(m));
}

bool ValidSpace(KvSpace space) { return static_cast<size_t>(space) < kNumKvSpaces; }

std::string SpaceOp(std::string_view op, KvSpace space) {
  std::string m(op);
  m += " in space '";
  m += KvSpaceName(space);
  m += "'";
  return m;
}

// Per-store properties summed over column families; names as in RocksDB's docs.
constexpr std::array<const char*, 5> kStatProperties = {
    "rocksdb.estimate-num-keys",    "rocksdb.estimate-live-data-size",           "rocksdb.cur-size-all-mem-tables",
    "rocksdb.total-sst-files-size", "rocksdb.estimate-pending-compaction-bytes",
};

class RocksDbKvStore final : public KvStore {
 public:
  RocksDbKvStore(std::unique_ptr<rocksdb::DB> db, std::vector<rocksdb::ColumnFamilyHandle*> handles, bool sync_writes)
      : db_(std::move(db)), handles_(std::move(handles)) {
    write_options_.sync = sync_writes;
  }
  RocksDbKvStore(const RocksDbKvStore&) = delete;
  RocksDbKvStore& operator=(const RocksDbKvStore&) = delete;

  ~RocksDbKvStore() override {
    Status s = Close();
    if (!s.ok()) spdlog::warn("closing the metadata store: {}", s.ToString());
  }

  Status Get(KvSpace space, std::string_view key, std::string* value) const override {
    ReaderMutexLock lock(&mu_);
    STRATA_RETURN_IF_ERROR(CheckOpen(space));
    rocksdb::Slice k(key.data(), key.size());
    return FromRocks(db_->Get(rocksdb::ReadOptions(), Handle(space), k, value), SpaceOp("get", space));
  }

  Status Write(const KvWriteBatch& batch) override {
    ReaderMutexLock lock(&mu_);
    if (db_ == nullptr) return Closed();
    rocksdb::WriteBatch wb;
    for (const KvWriteBatch::Op& op : batch.ops()) {
      STRATA_RETURN_IF_ERROR(CheckOpen(op.space));
      rocksdb::Status s = op.value ? wb.Put(Handle(op.space), op.key, *op.value) : wb.Delete(Handle(op.space), op.key);
      STRATA_RETURN_IF_ERROR(FromRocks(s, SpaceOp("batch", op.space)));
    }
    if (batch.empty()) return Status::OK();
    return FromRocks(db_->Write(write_options_, &wb), "write");
  }

  Status Scan(KvSpace space, std::string_view prefix,
              const std::function<bool(std::string_view, std::string_view)>& fn) const override {
    ReaderMutexLock lock(&mu_);
    STRATA_RETURN_IF_ERROR(CheckOpen(space));
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), Handle(space)));
    for (it->Seek(rocksdb::Slice(prefix.data(), prefix.size())); it->Valid(); it->Next()) {
      std::string_view key(it->key().data(), it->key().size());
      if (!key.starts_with(prefix)) break;
      if (!fn(key, std::string_view(it->value().data(), it->value().size()))) break;
    }
    return FromRocks(it->status(), SpaceOp("scan", space));
  }

  Status Close() override {
    WriterMutexLock lock(&mu_);
    if (db_ == nullptr) return Status::OK();
    // With sync_writes the WAL is already synced; without, this is what makes
    // the last writes durable. The memtable flush saves a WAL replay at reopen.
    Status result = FromRocks(db_->FlushWAL(/*sync=*/true), "sync the write-ahead log at close");
    if (result.ok()) result = FromRocks(db_->Flush(rocksdb::FlushOptions(), handles_), "flush at close");
    for (rocksdb::ColumnFamilyHandle* h : handles_) {
      Status s = FromRocks(db_->DestroyColumnFamilyHandle(h), "release a column family at close");
      if (result.ok()) result = s;
    }
    handles_.clear();
    Status s = FromRocks(db_->Close(), "close");
    if (result.ok()) result = s;
    db_.reset();
    return result;
  }

  std::map<std::string, uint64_t> Stats() const override {
    ReaderMutexLock lock(&mu_);
    std::map<std::string, uint64_t> stats;
    if (db_ == nullptr) return stats;
    for (const char* property : kStatProperties) {
      uint64_t value = 0;
      if (db_->GetAggregatedIntProperty(property, &value)) stats[property] = value;
    }
    return stats;
  }

 private:
  static Status Closed() { return Status::FailedPrecondition("the metadata store is closed"); }

  // REQUIRES: mu_ is held (shared or exclusive).
  Status CheckOpen(KvSpace space) const REQUIRES_SHARED(mu_) {
    if (db_ == nullptr) return Closed();
    if (!ValidSpace(space)) return Status::InvalidArgument("no such key space");
    return Status::OK();
  }
  // REQUIRES: mu_ is held and CheckOpen(space) is OK. handles_[0] is "default".
  rocksdb::ColumnFamilyHandle* Handle(KvSpace space) const REQUIRES_SHARED(mu_) {
    return handles_[1 + static_cast<size_t>(space)];
  }

  // Shared by every operation, exclusive for Close: no call sees a half-closed DB.
  mutable SharedMutex mu_;
  std::unique_ptr<rocksdb::DB> db_ GUARDED_BY(mu_);  // null once closed
  // Owned: released with DestroyColumnFamilyHandle at Close. Default first, then
  // each KvSpace in enum order, then families this build does not know.
  std::vector<rocksdb::ColumnFamilyHandle*> handles_ GUARDED_BY(mu_);
  rocksdb::WriteOptions write_options_;
};

}  // namespace

Result<std::unique_ptr<KvStore>> KvStore::OpenRocksDb(const std::string& dir, const KvOptions& options) {
  rocksdb::Options db_options;
  db_options.create_if_missing = options.create_if_missing;
  db_options.create_missing_column_families = true;
  // RocksDB's own LOG files: a few of modest size, not one that grows forever.
  db_options.keep_log_file_num = 4;
  db_options.max_log_file_size = 16 << 20;

  std::vector<std::string> names = {rocksdb::kDefaultColumnFamilyName};
  for (int i = 0; i < kNumKvSpaces; ++i) names.emplace_back(KvSpaceName(static_cast<KvSpace>(i)));
  // A database written by a newer stratad may hold families this build does not
  // know; RocksDB refuses to open unless every family is named. A missing
  // database has none to list, which is not an error here.
  std::vector<std::string> existing;
  if (rocksdb::DB::ListColumnFamilies(db_options, dir, &existing).ok()) {
    for (const std::string& name : existing) {
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  }
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  for (const std::string& name : names) families.emplace_back(name, rocksdb::ColumnFamilyOptions(db_options));

  rocksdb::DB* raw = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::Status s = rocksdb::DB::Open(db_options, dir, families, &handles, &raw);
  std::unique_ptr<rocksdb::DB> db(raw);
  STRATA_RETURN_IF_ERROR(FromRocks(s, "open the metadata store in " + dir));
  return std::unique_ptr<KvStore>(
      std::make_unique<RocksDbKvStore>(std::move(db), std::move(handles), options.sync_writes));
}

}  // namespace strata
