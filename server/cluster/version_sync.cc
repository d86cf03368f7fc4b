#include "server/cluster/version_sync.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <vector>

#include "server/cluster/request_validation.h"

namespace strata {

VersionSync::VersionSync(Catalog* catalog, DataDir* dir, LocalFiles* files, PeerClients* peers,
                         const ClusterView* view)
    : catalog_(catalog), dir_(dir), files_(files), peers_(peers), view_(view) {}

Result<bool> VersionSync::Import(const v1::VersionMeta& meta) {
  v1::VersionRecord record;
  std::vector<v1::ShardRecord> shards;
  STRATA_RETURN_IF_ERROR(ValidateVersionMeta(meta, *dir_, &record, &shards));
  auto changed = catalog_->ImportVersion(record, shards);
  if (!changed.ok()) return changed.status();
  if (changed.value() && record.info().state() == v1::VERSION_ABORTED) {
    for (const auto& f : files_->List(record.info().name(), record.info().version())) files_->Remove(f);
    STRATA_RETURN_IF_ERROR(dir_->RemoveVersion(record.info().name(), record.info().version()));
  }
  return changed.value();
}

Status VersionSync::Export(const v1::ListVersionsRequest& request, v1::ListVersionsReply* reply) const {
  auto versions = catalog_->ListVersions(/*include_unsealed=*/true);
  if (!versions.ok()) return versions.status();
  for (const auto& v : versions.value()) {
    const auto& info = v.info();
    if (info.state() != v1::VERSION_SEALED && info.state() != v1::VERSION_ABORTED) continue;
    if (!request.dataset().empty() && (info.name() != request.dataset() ||
                                       (request.version() != 0 && info.version() != request.version()))) {
      continue;
    }
    v1::VersionMeta* meta = reply->add_versions();
    meta->set_version_record(v.SerializeAsString());
    if (request.include_shards()) {
      auto shards = catalog_->ListShards(info.name(), info.version());
      if (!shards.ok()) return shards.status();
      for (const auto& s : shards.value()) meta->add_shard_records(s.SerializeAsString());
    }
  }
  return Status::OK();
}

void VersionSync::Broadcast(const std::string& name, uint64_t version) const {
  v1::ListVersionsRequest one;
  one.set_include_shards(true);
  one.set_dataset(name);
  one.set_version(version);
  v1::ListVersionsReply mine;
  if (!Export(one, &mine).ok() || mine.versions_size() != 1) return;
  v1::PutVersionRequest request;
  *request.mutable_meta() = mine.versions(0);
  const v1::ClusterMap map = view_->Current();
  for (const auto& n : map.nodes()) {
    if (n.id() == view_->self_id() || n.state() != v1::NODE_UP) continue;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1::PutVersionReply reply;
    grpc::Status s = peers_->Peer(n)->PutVersion(&context, request, &reply);
    if (!s.ok()) spdlog::warn("telling {} about {}@{}: {}", n.id(), name, version, s.error_message());
  }
}

void VersionSync::BroadcastOwnAborted() const {
  const auto versions = catalog_->ListVersions(true).value_or({});
  for (const auto& v : versions) {
    if (v.info().state() == v1::VERSION_ABORTED && v.info().coordinator() == view_->self_id()) {
      Broadcast(v.info().name(), v.info().version());
    }
  }
}

}  // namespace strata
