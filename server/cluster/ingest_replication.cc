#include "server/cluster/ingest_replication.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

#include "common/mutex.h"
#include "common/placement.h"
#include "server/cluster/membership.h"
#include "server/storage/ec_stripes.h"

namespace strata {

namespace {

// Longest a seal waits for its copies before the ingest fails.
constexpr std::chrono::minutes kSealTimeout{10};

}  // namespace

IngestReplication::IngestReplication(LocalFiles* files, Replicator* replicator, const VersionSync* versions,
                                     const ClusterView* view, uint32_t replication, v1::WritePolicy policy,
                                     uint32_t quorum, std::set<std::string> full)
    : files_(files),
      replicator_(replicator),
      versions_(versions),
      view_(view),
      map_(view->Current()),
      replication_(replication),
      policy_(policy),
      quorum_(quorum),
      full_(std::move(full)),
      left_out_(PassedOverForCopies(map_, full_)) {}

void IngestReplication::SetErasureCode(const DataDir* dir, uint32_t k, uint32_t m) {
  ec_dir_ = dir;
  ec_k_ = k;
  ec_m_ = m;
}

std::shared_ptr<Replicator::Copies> IngestReplication::Place(const v1::FileRef& file, uint64_t bytes) {
  const bool index = file.kind() == v1::FileRef::STRATA_INDEX;
  // Candidates in placement order; nodes that are down or full are skipped
  // (their share goes to the next node, and rebalance moves it home later,
  // once the home has room: its repair loop pulls nothing while it is full).
  // Ranked over the usable nodes alone, so the copies that land stay in
  // distinct zones when a node is skipped.
  const auto usable = [this](const v1::NodeInfo& n) { return n.state() == v1::NODE_UP && !full_.count(n.id()); };
  std::vector<std::string> ranked;
  if (ec_k_ != 0 && !index) {
    ranked = EcRanked(PlacementSet(PlacementMembers(map_, usable)), file, ec_k_, ec_m_);
  } else {
    const std::string key = index ? StrataIndexFileKey(file.dataset(), file.version())
                                  : ShardFileKey(file.dataset(), file.version(), file.seq());
    ranked = RankMembers(key, PlacementMembers(map_, usable));
  }
  // Nodes the view has down now go last: the next candidates take their
  // copies at once, as they would after a push to them had failed its retries
  // (the ranking stays the start's, so a file lands where that hand-off would
  // put it). Last, not left out: a view can lag a node that is up, and an
  // ingest that has no other candidate left still tries it.
  const auto up_now = [this](const std::string& id) { return id == view_->self_id() || view_->IsUp(id); };
  std::stable_partition(ranked.begin(), ranked.end(), up_now);
  std::vector<v1::NodeInfo> candidates;
  for (const std::string& id : ranked) {
    const v1::NodeInfo* n = FindNode(map_, id);
    if (n != nullptr) candidates.push_back(*n);
  }
  const uint32_t want = index ? static_cast<uint32_t>(candidates.size()) : ec_k_ != 0 ? 1 : replication_;
  return replicator_->Replicate(file, bytes, std::move(candidates), want, left_out_);
}

Status IngestReplication::FinishStripe(uint32_t stripe) {
  const v1::FileRef first =
      StripeFile(written_.front().dataset(), written_.front().version(), stripe, ec_k_, ec_k_, ec_m_);
  STRATA_RETURN_IF_ERROR(
      WriteStripeParity(*ec_dir_, first.dataset(), first.version(), stripe, ec_k_, ec_m_, data_shards_));
  for (uint32_t p = 0; p < ec_m_; ++p) {
    const v1::FileRef file = StripeFile(first.dataset(), first.version(), stripe, ec_k_ + p, ec_k_, ec_m_);
    files_->Add(file);
    written_.push_back(file);
    std::error_code ec;
    const uint64_t bytes = std::filesystem::file_size(ec_dir_->Absolute(ec_dir_->FileRelativePath(file)), ec);
    if (ec) return Status::IOError("parity file " + FileName(file) + ": " + ec.message());
    if (map_.nodes_size() > 1) parity_.push_back(Place(file, bytes));
  }
  return Status::OK();
}

void IngestReplication::FileWritten(const v1::FileRef& file, uint64_t bytes) {
  files_->Add(file);
  written_.push_back(file);
  const bool shard = file.kind() == v1::FileRef::SHARD;
  if (map_.nodes_size() > 1) {  // a single node keeps its one copy
    auto copies = Place(file, bytes);
    if (shard) shards_.push_back(std::move(copies));
  }
  if (ec_k_ == 0 || !shard) return;
  ++data_shards_;
  if (data_shards_ % ec_k_ == 0 && parity_error_.ok()) {
    parity_error_ = FinishStripe(static_cast<uint32_t>(data_shards_ / ec_k_ - 1));
  }
}

void IngestReplication::BeforeSeal(std::function<void(Status)> done) {
  if (ec_k_ != 0 && data_shards_ % ec_k_ != 0 && parity_error_.ok()) {
    parity_error_ = FinishStripe(static_cast<uint32_t>(data_shards_ / ec_k_));  // the last, partial stripe
  }
  if (!parity_error_.ok()) {
    done(parity_error_.WithContext("erasure coding"));
    return;
  }
  uint32_t need = policy_ == v1::WRITE_SYNC ? replication_ : policy_ == v1::WRITE_QUORUM ? quorum_ : 0;
  std::vector<std::shared_ptr<Replicator::Copies>> waited = shards_;
  if (ec_k_ != 0) {
    // One copy of each file; sync waits for the parity too.
    need = policy_ == v1::WRITE_ASYNC ? 0 : 1;
    if (policy_ == v1::WRITE_SYNC) waited.insert(waited.end(), parity_.begin(), parity_.end());
  }
  if (need == 0 || waited.empty()) {
    done(Status::OK());
    return;
  }
  // Every file is waited for at once; the last answer (or the first error,
  // once all have answered) calls `done`.
  struct Pending {
    Mutex mu;
    size_t left GUARDED_BY(mu) = 0;
    Status first_error GUARDED_BY(mu);
    std::function<void(Status)> done;
  };
  auto pending = std::make_shared<Pending>();
  pending->done = std::move(done);
  {
    MutexLock lock(&pending->mu);
    pending->left = waited.size();
  }
  const auto deadline = std::chrono::steady_clock::now() + kSealTimeout;
  // `waited` is a copy: `done` may let the session (and this observer) go
  // before the loop ends.
  for (const auto& copies : waited) {
    copies->WhenConfirmed(need, deadline, [pending](Status s) {
      Status result;
      {
        MutexLock lock(&pending->mu);
        if (!s.ok() && pending->first_error.ok()) pending->first_error = std::move(s);
        if (--pending->left != 0) return;
        result = pending->first_error;
      }
      pending->done(std::move(result));
    });
  }
}

void IngestReplication::AfterSeal(const v1::VersionRecord& sealed) {
  if (map_.nodes_size() > 1) versions_->Broadcast(sealed.info().name(), sealed.info().version());
  if (deleter_ != nullptr && sealed.info().keep_versions() > 0) {
    auto deleted =
        deleter_->ApplyRetention(sealed.info().name(), sealed.info().keep_versions(), sealed.info().version());
    if (!deleted.ok())
      spdlog::warn("after sealing {}@{}: {}", sealed.info().name(), sealed.info().version(),
                   deleted.status().ToString());
  }
}

void IngestReplication::AfterAbort() {
  // Copies already sent to other nodes go when their anti-entropy learns the
  // aborted record (VersionSync::Import): no broadcast here, where a gRPC
  // thread may be running the abort.
  for (const auto& f : written_) files_->Remove(f);
}

}  // namespace strata
