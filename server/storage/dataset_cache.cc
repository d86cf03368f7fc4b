#include "server/storage/dataset_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <thread>
#include <tuple>

#include "common/file_util.h"
#include "common/mutex.h"
#include "common/placement.h"
#include "common/serving_errors.h"
#include "common/unique_fd.h"

namespace strata {

void ReaderBudget::Register(std::weak_ptr<const OpenVersion> version) {
  if (limit_ == 0 || version.expired()) return;
  MutexLock lock(&mu_);
  std::erase_if(versions_, [](const std::weak_ptr<const OpenVersion>& v) { return v.expired(); });
  versions_.push_back(std::move(version));
}

bool ReaderBudget::Added() { return kept_.fetch_add(1, std::memory_order_relaxed) + 1 > limit_ && limit_ != 0; }

void ReaderBudget::OnRelease(std::function<void(std::vector<const ShardReader*>)> fn) {
  MutexLock lock(&trim_mu_);
  on_release_ = std::move(fn);
}

void ReaderBudget::Trim(bool all) {
  if (limit_ == 0) return;
  if (all) {
    trim_mu_.Lock();
  } else if (!trim_mu_.TryLock()) {
    return;
  }
  std::vector<std::shared_ptr<const OpenVersion>> live;
  {
    MutexLock lock(&mu_);
    std::erase_if(versions_, [&live](const std::weak_ptr<const OpenVersion>& v) {
      auto version = v.lock();
      if (version == nullptr) return true;
      live.push_back(std::move(version));
      return false;
    });
  }
  struct Candidate {
    OpenVersion::Kept kept;
    const OpenVersion* version;
  };
  std::vector<Candidate> candidates;
  std::vector<OpenVersion::Kept> found;
  for (const auto& version : live) {
    found.clear();
    version->AppendKept(&found);
    for (const OpenVersion::Kept& k : found) candidates.push_back({k, version.get()});
  }
  std::sort(candidates.begin(), candidates.end(),
            [](const Candidate& a, const Candidate& b) { return a.kept.used < b.kept.used; });
  const size_t target = all ? 0 : limit_ - limit_ / 4;
  std::vector<std::shared_ptr<const ShardReader>> gone;
  for (const Candidate& c : candidates) {
    if (kept() <= target) break;
    if (auto reader = c.version->Release(c.kept.shard, c.kept.used)) gone.push_back(std::move(reader));
  }
  if (on_release_ && !gone.empty()) {
    std::vector<const ShardReader*> readers;
    readers.reserve(gone.size());
    for (const auto& reader : gone) readers.push_back(reader.get());
    on_release_(std::move(readers));
  }
  trim_mu_.Unlock();
  // `gone` closes here the readers nothing else holds.
}

OpenVersion::OpenVersion(v1::VersionRecord record, std::vector<v1::ShardRecord> shards, const DataDir* dir,
                         std::shared_ptr<ReaderBudget> budget)
    : record_(std::move(record)),
      shards_(std::move(shards)),
      dir_(dir),
      slots_(shards_.size()),
      budget_(std::move(budget)) {
  std::vector<uint64_t> firsts;
  firsts.reserve(shards_.size());
  seqs_.reserve(shards_.size());
  for (const auto& s : shards_) {
    firsts.push_back(s.info().first_id());
    seqs_.push_back(s.info().seq());
  }
  ids_ = IdRanges(std::move(firsts));
  const v1::DatasetInfo& info = record_.info();
  shape_.name = info.name();
  shape_.version = info.version();
  shape_.num_samples = info.samples();
  shape_.strata.assign(info.stratum_counts().begin(), info.stratum_counts().end());
}

OpenVersion::~OpenVersion() {
  if (!budget_) return;
  for (Slot& slot : slots_) {
    MutexLock lock(&slot.mu);
    if (slot.reader) budget_->Removed();
  }
}

Result<std::shared_ptr<const ShardReader>> OpenVersion::ReaderOnce(size_t shard, bool* opened) const {
  Slot& slot = slots_[shard];
  if (budget_) slot.used.store(budget_->Tick(), std::memory_order_relaxed);
  MutexLock lock(&slot.mu);
  if (!slot.reader) {
    auto reader = ShardReader::Open(dir_->Absolute(shards_[shard].path()));
    if (!reader.ok()) return reader.status();
    slot.reader = std::shared_ptr<const ShardReader>(std::move(reader).value());
    *opened = true;
  }
  return slot.reader;
}

Result<std::shared_ptr<const ShardReader>> OpenVersion::Reader(size_t shard) const {
  bool opened = false;
  auto reader = ReaderOnce(shard, &opened);
  if (budget_ && !reader.ok() && reader.status().code() == Code::kResourceExhausted) {
    // Out of descriptors (or mappings): let go of every reader kept (those
    // steps in flight hold stay open), and try once more.
    budget_->Trim(/*all=*/true);
    reader = ReaderOnce(shard, &opened);
    if (!reader.ok() && reader.status().code() == Code::kResourceExhausted) {
      return Status::ResourceExhausted(reader.status().message() + " (" + std::to_string(ShardReader::OpenCount()) +
                                       " shard files open, for the steps in flight; raise stratad's open-file "
                                       "limit: LimitNOFILE, ulimit -n)");
    }
  }
  if (!opened || !budget_) return reader;
  if (!registered_.exchange(true)) budget_->Register(weak_from_this());
  if (budget_->Added()) budget_->Trim(/*all=*/false);
  return reader;
}

void OpenVersion::AppendKept(std::vector<Kept>* out) const {
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& slot = slots_[i];
    MutexLock lock(&slot.mu);
    if (slot.reader) out->push_back({slot.used.load(std::memory_order_relaxed), i});
  }
}

std::shared_ptr<const ShardReader> OpenVersion::Release(size_t shard, uint64_t used) const {
  Slot& slot = slots_[shard];
  MutexLock lock(&slot.mu);
  if (!slot.reader || slot.used.load(std::memory_order_relaxed) != used) return nullptr;
  budget_->Removed();
  slot.reader->Retire();
  return std::move(slot.reader);
}

void OpenVersion::OpenReaders(std::vector<size_t> shards) const {
  std::sort(shards.begin(), shards.end());
  shards.erase(std::unique(shards.begin(), shards.end()), shards.end());
  std::erase_if(shards, [this](size_t shard) {
    if (shard >= slots_.size()) return true;
    Slot& slot = slots_[shard];
    MutexLock lock(&slot.mu);
    return slot.reader != nullptr;
  });
  if (shards.size() < 2) return;  // one opens on its first Reader as well
  const size_t n = std::min(kOpeningThreads, shards.size());
  std::vector<std::thread> threads;
  threads.reserve(n);
  try {
    for (size_t t = 0; t < n; ++t) {
      threads.emplace_back([this, &shards, t, n] {
        for (size_t i = t; i < shards.size(); i += n) (void)Reader(shards[i]);
      });
    }
  } catch (const std::system_error&) {
    // No thread to be had: the shards no started thread takes are opened by
    // their first Reader.
  }
  for (std::thread& thread : threads) thread.join();
}

OpenVersion::Location OpenVersion::Locate(uint64_t id) const {
  const size_t shard = ids_.Find(id);
  return {shard, seqs_[shard], id - ids_.first(shard)};
}

std::optional<size_t> OpenVersion::IndexOf(uint32_t seq) const {
  // Shards are listed by id, and ids follow seqs (a writer's seqs and ids both
  // ascend, and writer w's come after writer w-1's).
  const auto it = std::lower_bound(shards_.begin(), shards_.end(), seq,
                                   [](const v1::ShardRecord& s, uint32_t want) { return s.info().seq() < want; });
  if (it == shards_.end() || it->info().seq() != seq) return std::nullopt;
  return static_cast<size_t>(it - shards_.begin());
}

Result<std::pair<std::shared_ptr<const ShardReader>, uint64_t>> OpenVersion::RecordOf(uint64_t id) const {
  if (id >= shape_.num_samples || ids_.size() == 0) {
    return Status::OutOfRange("sample " + std::to_string(id) + " is past the end of " + shape_.name + "@" +
                              std::to_string(shape_.version));
  }
  const Location at = Locate(id);
  auto reader = Reader(at.shard);
  if (!reader.ok()) return reader.status();
  return std::make_pair(std::move(reader).value(), at.record);
}

Status OpenVersion::ReadRaw(uint64_t id, std::string* raw) const {
  auto found = RecordOf(id);
  if (!found.ok()) return found.status();
  const auto& [reader, record] = found.value();
  RecordView view;
  // Verified before it leaves; a compressed shard's record leaves decompressed.
  if (reader->compressed()) return reader->ReadCopy(record, raw, &view);
  STRATA_RETURN_IF_ERROR(reader->Read(record, &view));
  raw->assign(reader->RawRecord(record));
  return Status::OK();
}

void OpenVersion::Invalidate(size_t shard) const {
  Slot& slot = slots_[shard];
  MutexLock lock(&slot.mu);
  if (slot.reader && budget_) budget_->Removed();
  slot.reader.reset();  // streams holding it finish with the old mapping
}

uint32_t OpenVersion::Replication(size_t members) const {
  const uint32_t r = record_.info().replication();
  return r != 0 ? r : DefaultReplication(members);
}

Result<std::string> OpenVersion::ReadStratumIndex(uint64_t offset, size_t max_bytes, uint64_t* file_bytes,
                                                  uint64_t* checksum) const {
  const std::string name = shape_.name + "@" + std::to_string(shape_.version);
  if (!record_.has_strata_index()) return Status::FailedPrecondition("dataset " + name + " has no stratum index");
  *file_bytes = record_.strata_index().bytes();
  *checksum = record_.strata_index().checksum();
  const std::string path = dir_->VersionDir(shape_.name, shape_.version) + "/" + kStratumIndexFileName;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    return Status::Unavailable("this node has no copy of the stratum index of " + name + ": " + std::strerror(errno));
  }
  if (offset >= *file_bytes) return std::string();
  std::string out(static_cast<size_t>(std::min<uint64_t>(max_bytes, *file_bytes - offset)), '\0');
  auto got = PReadFd(fd.get(), out.data(), out.size(), offset, path);
  if (!got.ok()) return got.status();
  out.resize(got.value());
  return out;
}

Result<DatasetShape> OpenVersion::PlanShape(const v1::SamplerSpec& sampler) const {
  if (sampler.kind() == v1::SamplerSpec::SHUFFLE) return shape_;
  const std::string name = shape_.name + "@" + std::to_string(shape_.version);
  MutexLock lock(&members_mu_);
  // An index found damaged is opened again: the file may have been repaired since.
  if (members_ && !members_->Damage().ok()) members_.reset();
  if (!members_) {
    if (!record_.has_strata_index()) {
      return Status::FailedPrecondition("dataset " + name +
                                        " has no stratum index (it was ingested by an older server); re-ingest it "
                                        "to stream it with a stratified or weighted sampler");
    }
    StratumIndexExpect expect;
    expect.file_bytes = record_.strata_index().bytes();
    expect.checksum = record_.strata_index().checksum();
    for (const auto& c : shape_.strata) expect.counts.push_back(c.count());
    // Streams verify each block of the index as they first read it: the first
    // batch then costs what it reads, not the whole index.
    auto file = StratumIndexFile::Open(dir_->VersionDir(shape_.name, shape_.version) + "/" + kStratumIndexFileName,
                                       &expect, IndexCheck::kOnUse);
    if (file.status().IsNotFound()) {
      // The catalog has the index, this node has no copy (quarantined, and
      // not yet fetched again): another node can serve the stream.
      return Status::Unavailable("this node has no copy of the stratum index of " + name + " yet; " +
                                 file.status().message());
    }
    if (!file.ok()) return file.status();
    members_ = std::shared_ptr<const StratumMembers>(std::move(file).value());
  }
  DatasetShape out = shape_;
  out.members = members_;
  return out;
}

Result<std::shared_ptr<const OpenVersion>> DatasetCache::Open(const DatasetRef& ref) {
  Result<v1::VersionRecord> record =
      ref.version ? catalog_->GetVersion(ref.name, *ref.version) : catalog_->LatestSealed(ref.name);
  if (!record.ok()) return record.status();
  const v1::DatasetInfo& info = record->info();
  if (info.state() == v1::VERSION_DELETED) {
    return VersionDeleted(info.name(), info.version());
  }
  if (info.state() != v1::VERSION_SEALED) {
    return NotSealed(ref.ToString(),
                     "state " + v1::VersionState_Name(info.state()) + "; only sealed versions can be streamed");
  }
  const auto key = std::make_pair(info.name(), info.version());
  {
    MutexLock lock(&mu_);
    auto it = open_.find(key);
    if (it != open_.end()) return it->second;
  }
  auto shards = catalog_->ListShards(info.name(), info.version());
  if (!shards.ok()) return shards.status();
  auto version =
      std::make_shared<const OpenVersion>(std::move(record).value(), std::move(shards).value(), dir_, budget_);
  std::shared_ptr<const OpenVersion> open;
  {
    MutexLock lock(&mu_);
    open = open_.try_emplace(key, std::move(version)).first->second;
  }
  // A delete between the read above and the insert: its Forget came before
  // the entry existed. Its tombstone is in the catalog by now, so look again.
  auto now = catalog_->GetVersion(key.first, key.second);
  if (now.ok() && now->info().state() == v1::VERSION_DELETED) {
    Forget(key.first, key.second);
    return VersionDeleted(key.first, key.second);
  }
  return open;
}

void DatasetCache::Forget(const std::string& name, uint64_t version) {
  std::shared_ptr<const OpenVersion> gone;
  {
    MutexLock lock(&mu_);
    auto it = open_.find(std::make_pair(name, version));
    if (it == open_.end()) return;
    gone = std::move(it->second);
    open_.erase(it);
  }
  gone->MarkDeleted();
}

}  // namespace strata
