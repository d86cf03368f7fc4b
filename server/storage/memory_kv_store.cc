// KvStore in memory, for tests of the code above it: same semantics as the
// RocksDB store, nothing durable.
#include <array>

#include "common/mutex.h"
#include "server/storage/kv_store.h"

namespace strata {
namespace {

class MemoryKvStore final : public KvStore {
 public:
  Status Get(KvSpace space, std::string_view key, std::string* value) const override {
    MutexLock lock(&mu_);
    STRATA_RETURN_IF_ERROR(CheckOpen(space));
    const Space& s = spaces_[Index(space)];
    auto it = s.find(key);
    if (it == s.end()) return Status::NotFound("get in space '" + std::string(KvSpaceName(space)) + "' (NotFound)");
    *value = it->second;
    return Status::OK();
  }

  Status Write(const KvWriteBatch& batch) override {
    MutexLock lock(&mu_);
    if (closed_) return Closed();
    // Validate everything first: after that nothing can fail, so the batch
    // applies whole or not at all.
    for (const KvWriteBatch::Op& op : batch.ops()) STRATA_RETURN_IF_ERROR(CheckOpen(op.space));
    for (const KvWriteBatch::Op& op : batch.ops()) {
      Space& s = spaces_[Index(op.space)];
      if (op.value) {
        s.insert_or_assign(op.key, *op.value);
      } else if (auto it = s.find(op.key); it != s.end()) {
        s.erase(it);
      }
    }
    return Status::OK();
  }

  Status Scan(KvSpace space, std::string_view prefix,
              const std::function<bool(std::string_view, std::string_view)>& fn) const override {
    MutexLock lock(&mu_);
    STRATA_RETURN_IF_ERROR(CheckOpen(space));
    const Space& s = spaces_[Index(space)];
    for (auto it = s.lower_bound(prefix); it != s.end() && it->first.starts_with(prefix); ++it) {
      if (!fn(it->first, it->second)) break;
    }
    return Status::OK();
  }

  Status Close() override {
    MutexLock lock(&mu_);
    closed_ = true;
    for (Space& s : spaces_) s.clear();
    return Status::OK();
  }

  std::map<std::string, uint64_t> Stats() const override {
    MutexLock lock(&mu_);
    if (closed_) return {};
    uint64_t keys = 0;
    uint64_t bytes = 0;
    for (const Space& s : spaces_) {
      keys += s.size();
      for (const auto& [k, v] : s) bytes += k.size() + v.size();
    }
    return {{"memory.num-keys", keys}, {"memory.data-size", bytes}};
  }

 private:
  // std::less<> makes find and lower_bound take string_view without a copy.
  using Space = std::map<std::string, std::string, std::less<>>;

  static size_t Index(KvSpace space) { return static_cast<size_t>(space); }
  static Status Closed() { return Status::FailedPrecondition("the metadata store is closed"); }

  // REQUIRES: mu_ is held.
  Status CheckOpen(KvSpace space) const REQUIRES(mu_) {
    if (closed_) return Closed();
    if (Index(space) >= kNumKvSpaces) return Status::InvalidArgument("no such key space");
    return Status::OK();
  }

  mutable Mutex mu_;
  bool closed_ GUARDED_BY(mu_) = false;
  std::array<Space, kNumKvSpaces> spaces_ GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<KvStore> KvStore::CreateInMemory() { return std::make_unique<MemoryKvStore>(); }

}  // namespace strata
