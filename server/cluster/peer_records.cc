#include "server/cluster/peer_records.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "common/dataset_ref.h"
#include "common/placement.h"
#include "server/cluster/membership.h"

namespace strata {

PeerRecords::PeerRecords(const ClusterView* view, PeerClients* peers, DatasetCache* cache, DataDir* dir,
                         LocalFiles* files, Repairer* repairer, Metrics* metrics)
    : view_(view),
      peers_(peers),
      cache_(cache),
      dir_(dir),
      files_(files),
      repairer_(repairer),
      metrics_(metrics) {}

Status PeerRecords::ReadLocal(const v1::FileRef& shard, uint64_t index, std::string* raw) {
  if (!files_->Has(shard)) return Status::NotFound(FileName(shard) + " is not held by " + view_->self_id());
  DatasetRef ref{shard.dataset(), shard.version()};
  auto version = cache_->Open(ref);
  if (!version.ok()) return version.status();
  if (shard.seq() >= version.value()->num_shards()) return Status::NotFound("no shard " + FileName(shard));
  const auto& info = version.value()->shard(shard.seq()).info();
  if (index >= info.samples()) return Status::OutOfRange("record " + std::to_string(index) + " past the end of " +
                                                          FileName(shard));
  Status s = version.value()->ReadRaw(info.first_id() + index, raw);
  if (s.IsCorruption()) {
    metrics_->checksum_failures.Increment();
    Quarantine(shard);
    version.value()->Invalidate(shard.seq());
  }
  return s;
}

Status PeerRecords::Fetch(const v1::FileRef& shard, std::span<const uint64_t> indexes, std::vector<std::string>* raw) {
  const v1::ClusterMap map = view_->Current();
  const std::string key = ShardFileKey(shard.dataset(), shard.version(), shard.seq());
  v1::ReadRecordsRequest request;
  *request.mutable_file() = shard;
  for (uint64_t i : indexes) request.add_indexes(i);
  std::string errors;
  for (const std::string& id : RankMembers(key, PlacementMembers(map))) {
    const v1::NodeInfo* n = FindNode(map, id);
    if (id == view_->self_id() || n == nullptr || n->state() != v1::NODE_UP) continue;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::ReadRecordsReply reply;
    grpc::Status s = peers_->Peer(*n)->ReadRecords(&context, request, &reply);
    if (s.ok() && reply.records_size() == static_cast<int>(indexes.size())) {
      for (auto& r : *reply.mutable_records()) raw->push_back(std::move(r));
      return Status::OK();
    }
    errors += " " + id + ": " + s.error_message() + ";";
  }
  return Status::Unavailable("no node could provide records of " + FileName(shard) + ":" + errors);
}

void PeerRecords::Quarantine(const v1::FileRef& file) {
  if (!files_->Has(file)) return;
  metrics_->corruptions_found.Increment();
  if (view_->Current().nodes_size() <= 1) {
    // No other node could replace it: keep the file, whose intact records
    // still serve; every read of a damaged record fails its checksum.
    spdlog::error("{} is damaged and there is no other copy in the cluster; kept in place", FileName(file));
    return;
  }
  Status s = dir_->Quarantine(file);
  files_->Remove(file);
  spdlog::error("quarantined {}: {}", FileName(file), s.ok() ? "a good copy will be fetched" : s.ToString());
  repairer_->Kick();
}

}  // namespace strata
