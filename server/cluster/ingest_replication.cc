#include "server/cluster/ingest_replication.h"

#include <spdlog/spdlog.h>

#include "common/mutex.h"
#include "common/placement.h"
#include "server/cluster/membership.h"

namespace strata {

namespace {

// Longest a seal waits for its copies before the ingest fails.
constexpr std::chrono::minutes kSealTimeout{10};

}  // namespace

IngestReplication::IngestReplication(LocalFiles* files, Replicator* replicator, const VersionSync* versions,
                                     v1::ClusterMap map, uint32_t replication, v1::WritePolicy policy, uint32_t quorum, std::set<std::string> full)
    : files_(files),
      replicator_(replicator),
      versions_(versions),
      map_(std::move(map)),
      replication_(replication),
      policy_(policy),
      quorum_(quorum),
      full_(std::move(full)) {}

void IngestReplication::FileWritten(const v1::FileRef& file, uint64_t bytes) {
  files_->Add(file);
  written_.push_back(file);
  if (map_.nodes_size() <= 1) return;  // a single node keeps its one copy
  const bool index = file.kind() == v1::FileRef::STRATA_INDEX;
  const std::string key =
      index ? StrataIndexFileKey(file.dataset(), file.version()) : ShardFileKey(file.dataset(), file.version(), file.seq());
  // Candidates in placement order; nodes that are down or full are skipped
  // (their share goes to the next node, and rebalance moves it home later,
  // once the home has room: its repair loop pulls nothing while it is full).
  // Ranked over the usable nodes alone, so the copies that land stay in
  // distinct zones when a node is skipped.
  std::vector<v1::NodeInfo> candidates;
  const auto usable = [this](const v1::NodeInfo& n) { return n.state() == v1::NODE_UP && !full_.count(n.id()); };
  for (const std::string& id : RankMembers(key, PlacementMembers(map_, usable))) {
    const v1::NodeInfo* n = FindNode(map_, id);
    if (n != nullptr) candidates.push_back(*n);
  }
  const uint32_t want = index ? static_cast<uint32_t>(candidates.size()) : replication_;
  auto copies = replicator_->Replicate(file, bytes, std::move(candidates), want);
  if (!index) shards_.push_back(std::move(copies));
}

void IngestReplication::BeforeSeal(std::function<void(Status)> done) {
  const uint32_t need = policy_ == v1::WRITE_SYNC ? replication_ : policy_ == v1::WRITE_QUORUM ? quorum_ : 0;
  if (need == 0 || shards_.empty()) {
    done(Status::OK());
    return;
  }
  // Every shard is waited for at once; the last answer (or the first error,
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
    pending->left = shards_.size();
  }
  const auto deadline = std::chrono::steady_clock::now() + kSealTimeout;
  // A copy of the list: `done` may let the session (and this observer) go
  // before the loop ends.
  const std::vector<std::shared_ptr<Replicator::Copies>> shards = shards_;
  for (const auto& copies : shards) {
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
    auto deleted = deleter_->ApplyRetention(sealed.info().name(), sealed.info().keep_versions());
    if (!deleted.ok()) spdlog::warn("after sealing {}@{}: {}", sealed.info().name(), sealed.info().version(),
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
