#include "server/cluster/version_sync.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <vector>

#include "common/grpc_status.h"
#include "common/mutex.h"
#include "server/cluster/request_validation.h"

namespace strata {

namespace {

constexpr std::chrono::seconds kBroadcastTimeout{5};

bool Dead(v1::VersionState state) { return state == v1::VERSION_ABORTED || state == v1::VERSION_DELETED; }

// Sends `request` to every node of `nodes` at once and returns their
// answers, in order, once all have come (kBroadcastTimeout each).
std::vector<grpc::Status> TellAll(PeerClients& peers, const v1::PutVersionRequest& request,
                                  const std::vector<const v1::NodeInfo*>& nodes) {
  auto answers = peers.CallEach<v1::PutVersionReply>(
      nodes, kBroadcastTimeout,
      [&request](v1::PeerService::Stub& stub, grpc::ClientContext* context, v1::PutVersionReply* reply,
                 std::function<void(grpc::Status)> done) {
        stub.async()->PutVersion(context, &request, reply, std::move(done));
      });
  std::vector<grpc::Status> statuses;
  statuses.reserve(answers.size());
  for (auto& a : answers) statuses.push_back(std::move(a.first));
  return statuses;
}

}  // namespace

VersionSync::VersionSync(Catalog* catalog, DataDir* dir, LocalFiles* files, PeerClients* peers, const ClusterView* view,
                         DatasetCache* cache)
    : catalog_(catalog), dir_(dir), files_(files), peers_(peers), view_(view), cache_(cache) {}

Status VersionSync::RemoveLocalCopy(const std::string& name, uint64_t version) const {
  if (cache_ != nullptr) cache_->Forget(name, version);
  for (const auto& f : files_->List(name, version)) files_->Remove(f);
  return dir_->RemoveVersion(name, version);
}

bool VersionSync::DropIfDead(const v1::FileRef& file) const {
  auto record = catalog_->GetVersion(file.dataset(), file.version());
  if (!record.ok() || !Dead(record->info().state())) return false;
  Status removed = RemoveLocalCopy(file.dataset(), file.version());
  if (!removed.ok())
    spdlog::warn("removing a late copy of {} {}@{}: {}",
                 record->info().state() == v1::VERSION_DELETED ? "deleted" : "aborted", file.dataset(), file.version(),
                 removed.ToString());
  return true;
}

Result<size_t> VersionSync::RemoveDeadCopies() const {
  auto versions = catalog_->ListVersions(/*include_unsealed=*/true);
  if (!versions.ok()) return versions.status();
  size_t removed = 0;
  for (const auto& v : versions.value()) {
    if (!Dead(v.info().state()) || files_->List(v.info().name(), v.info().version()).empty()) continue;
    STRATA_RETURN_IF_ERROR(RemoveLocalCopy(v.info().name(), v.info().version()));
    ++removed;
  }
  return removed;
}

Result<bool> VersionSync::Import(const v1::VersionMeta& meta) {
  v1::VersionRecord record;
  std::vector<v1::ShardRecord> shards;
  STRATA_RETURN_IF_ERROR(ValidateVersionMeta(meta, *dir_, &record, &shards));
  auto changed = catalog_->ImportVersion(record, shards);
  if (!changed.ok()) return changed.status();
  if (changed.value() && Dead(record.info().state())) {
    STRATA_RETURN_IF_ERROR(RemoveLocalCopy(record.info().name(), record.info().version()));
    if (record.info().state() == v1::VERSION_DELETED) {
      spdlog::info("{}@{} was deleted by {}: removed this node's copy", record.info().name(), record.info().version(),
                   record.deleted_by());
    }
  }
  return changed.value();
}

Status VersionSync::Export(const v1::ListVersionsRequest& request, v1::ListVersionsReply* reply) const {
  auto versions = catalog_->ListVersions(/*include_unsealed=*/true);
  if (!versions.ok()) return versions.status();
  for (const auto& v : versions.value()) {
    const auto& info = v.info();
    if (info.state() != v1::VERSION_SEALED && !Dead(info.state())) continue;
    if (!request.dataset().empty() &&
        (info.name() != request.dataset() || (request.version() != 0 && info.version() != request.version()))) {
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

Result<size_t> VersionSync::Pull(const v1::NodeInfo& peer, const std::string& dataset,
                                 std::chrono::milliseconds timeout) {
  auto stub = peers_->Peer(peer);
  // Each call tracked: one to a peer that stops answering ends when the view
  // has it down.
  const auto call = [&](const v1::ListVersionsRequest& request, v1::ListVersionsReply* reply) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + timeout);
    const PeerClients::Tracked tracked = peers_->Track(peer.id(), &context);
    return stub->ListVersions(&context, request, reply);
  };
  v1::ListVersionsRequest request;
  request.set_dataset(dataset);
  v1::ListVersionsReply reply;
  if (grpc::Status listed = call(request, &reply); !listed.ok()) return FromGrpcStatus(listed);
  size_t changed = 0;
  for (const auto& meta : reply.versions()) {
    v1::VersionRecord incoming;
    if (!incoming.ParseFromString(meta.version_record())) continue;
    const auto& info = incoming.info();
    if (!dataset.empty() && info.name() != dataset) continue;
    auto local = catalog_->GetVersion(info.name(), info.version());
    // Deleted is final, then sealed (Catalog::ImportVersion): only a
    // tombstone changes a sealed version here.
    if (local.ok()) {
      const v1::VersionState mine = local->info().state();
      if (mine == info.state() || mine == v1::VERSION_DELETED) continue;
      if (mine == v1::VERSION_SEALED && info.state() != v1::VERSION_DELETED) continue;
    }
    // Fetch it whole, with its shard records.
    v1::ListVersionsRequest one;
    one.set_include_shards(true);
    one.set_dataset(info.name());
    one.set_version(info.version());
    v1::ListVersionsReply full;
    if (!call(one, &full).ok() || full.versions_size() != 1) continue;
    auto imported = Import(full.versions(0));
    if (imported.ok()) {
      changed += imported.value();
      spdlog::info("anti-entropy: learned {}@{} ({}) from {}", info.name(), info.version(),
                   v1::VersionState_Name(info.state()), peer.id());
    } else {
      spdlog::warn("anti-entropy: importing {}@{} from {}: {}", info.name(), info.version(), peer.id(),
                   imported.status().ToString());
    }
  }
  return changed;
}

void VersionSync::CatchUp(const std::string& dataset) {
  constexpr std::chrono::seconds kTimeout{2};
  const v1::ClusterMap map = view_->Current();
  for (const auto& n : map.nodes()) {
    if (n.id() == view_->self_id() || n.state() != v1::NODE_UP) continue;
    auto pulled = Pull(n, dataset, kTimeout);
    if (!pulled.ok()) spdlog::warn("catching up on {} from {}: {}", dataset, n.id(), pulled.status().ToString());
  }
}

VersionSync::BroadcastResult VersionSync::Broadcast(const std::string& name, uint64_t version) const {
  BroadcastResult result;
  v1::ListVersionsRequest one;
  one.set_include_shards(true);
  one.set_dataset(name);
  one.set_version(version);
  v1::ListVersionsReply mine;
  if (!Export(one, &mine).ok() || mine.versions_size() != 1) return result;
  v1::PutVersionRequest request;
  *request.mutable_meta() = mine.versions(0);
  const v1::ClusterMap map = view_->Current();
  std::vector<const v1::NodeInfo*> up;
  for (const auto& n : map.nodes()) {
    if (n.id() == view_->self_id()) continue;
    if (n.state() == v1::NODE_UP) {
      up.push_back(&n);
    } else {
      result.pending.push_back(n.id());
    }
  }
  std::vector<grpc::Status> told = TellAll(*peers_, request, up);
  // Those that failed and that the view still has up are told once more: it
  // may be this node that stalled (stopped while its calls were out, they
  // expired; and a node asked meanwhile could not confirm the claim with it,
  // VersionConfirm). A peer that stopped answering is down in the view by
  // the end of the first call's deadline and is not asked again.
  std::vector<size_t> again;
  for (size_t i = 0; i < up.size(); ++i) {
    if (!told[i].ok() && view_->IsUp(up[i]->id())) again.push_back(i);
  }
  if (!again.empty()) {
    std::vector<const v1::NodeInfo*> nodes;
    for (size_t i : again) nodes.push_back(up[i]);
    std::vector<grpc::Status> second = TellAll(*peers_, request, nodes);
    for (size_t j = 0; j < again.size(); ++j) told[again[j]] = std::move(second[j]);
  }
  for (size_t i = 0; i < up.size(); ++i) {
    if (!told[i].ok()) spdlog::warn("telling {} about {}@{}: {}", up[i]->id(), name, version, told[i].error_message());
    (told[i].ok() ? result.told : result.pending).push_back(up[i]->id());
  }
  return result;
}

void VersionSync::BroadcastOwnAborted() const {
  const auto versions = catalog_->ListVersions(true).value_or({});
  for (const auto& v : versions) {
    const bool aborted_here = v.info().state() == v1::VERSION_ABORTED && v.info().coordinator() == view_->self_id();
    const bool deleted_here = v.info().state() == v1::VERSION_DELETED && v.deleted_by() == view_->self_id();
    if (aborted_here || deleted_here) {
      Broadcast(v.info().name(), v.info().version());
    }
  }
}

}  // namespace strata
