#include "server/daemon/node.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "common/dataset_ref.h"
#include "common/placement.h"
#include "server/cluster/ingest_replication.h"
#include "server/cluster/replicator.h"
#include "server/cluster/repairer.h"
#include "server/cluster/scrubber.h"
#include "server/rpc/request_validation.h"

namespace strata {

namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A sealed version records its stratum index file (written just before the seal);
// versions from before the index existed have none.
bool HasStratumIndex(const v1::VersionRecord& v) { return v.has_strata_index(); }

v1::ClusterMap LoneMap(const std::string& node_id) {
  v1::ClusterMap map;
  map.set_membership("static");
  v1::NodeInfo* self = map.add_nodes();
  self->set_id(node_id);
  self->set_state(v1::NODE_UP);
  return map;
}

}  // namespace

Result<std::unique_ptr<Node>> Node::Open(const NodeConfig& config) {
  DataDir dir(config.data_dir);
  STRATA_RETURN_IF_ERROR(dir.Init());
  auto kv = KvStore::OpenRocksDb(dir.MetaDir(), KvOptions{});
  if (!kv.ok()) return kv.status();
  std::unique_ptr<Node> node(new Node(config, std::move(kv).value()));
  STRATA_RETURN_IF_ERROR(node->Recover());
  return node;
}

Node::Node(NodeConfig config, std::unique_ptr<KvStore> kv)
    : config_(std::move(config)),
      dir_(config_.data_dir),
      metrics_(config_.node_id),
      kv_(std::move(kv)),
      catalog_(std::make_unique<Catalog>(kv_.get())),
      cache_(catalog_.get(), &dir_),
      pool_(config_.io_threads),
      blocks_(BlockCacheOptions{config_.cache_bytes, config_.cache_block_bytes, config_.memory_budget}, &pool_, &metrics_),
      files_(&dir_),
      repair_limiter_(config_.cluster.repair_bytes_per_sec),
      map_(LoneMap(config_.node_id)),
      started_unix_ms_(NowMs()) {
  metrics_.AddScrapeGauges("rocksdb", [kv = kv_.get()] {
    std::map<std::string, double> out;
    for (const auto& [k, v] : kv->Stats()) out[k] = static_cast<double>(v);
    return out;
  });
  metrics_.WatchDisk(config_.data_dir);
}

Node::~Node() { Close().IgnoreError(); }

Status Node::Recover() {
  auto temps = dir_.RemoveTempFiles();
  if (!temps.ok()) return temps.status();
  if (temps.value() > 0) spdlog::warn("recovery: removed {} temporary files left by a crash", temps.value());
  auto versions = catalog_->ListVersions(/*include_unsealed=*/true);
  if (!versions.ok()) return versions.status();
  for (const auto& v : versions.value()) {
    if (v.info().state() != v1::VERSION_INGESTING) continue;
    // Never acknowledged: the client saw no seal, so the version goes.
    spdlog::warn("recovery: {}@{} was ingesting when the node stopped; removing it", v.info().name(),
                 v.info().version());
    STRATA_RETURN_IF_ERROR(dir_.RemoveVersion(v.info().name(), v.info().version()));
    STRATA_RETURN_IF_ERROR(catalog_->AbortVersion(v.info().name(), v.info().version()));
  }
  return files_.Load();
}

Status Node::StartCluster(const v1::NodeInfo& self) {
  auto membership = Membership::Create(config_, self, &peers_);
  if (!membership.ok()) return membership.status();
  membership_ = std::move(membership).value();
  membership_->Subscribe([this](const v1::ClusterMap& map) { OnMapChange(map); });
  STRATA_RETURN_IF_ERROR(membership_->Start());
  OnMapChange(membership_->Current());
  replicator_ = std::make_unique<Replicator>(config_.node_id, &dir_, &peers_, &metrics_);
  repairer_ = std::make_unique<Repairer>(this);
  scrubber_ = std::make_unique<Scrubber>(this, config_.cluster.scrub_bytes_per_sec);
  repairer_->Start();
  scrubber_->Start();
  // Tell the others about versions this node aborted while it was down.
  const auto versions = catalog_->ListVersions(true).value_or({});
  for (const auto& v : versions) {
    if (v.info().state() == v1::VERSION_ABORTED && v.info().coordinator() == config_.node_id) {
      BroadcastVersion(v.info().name(), v.info().version());
    }
  }
  return Status::OK();
}

void Node::OnMapChange(const v1::ClusterMap& map) {
  {
    std::lock_guard<std::mutex> lock(map_mu_);
    if (map.epoch() < map_.epoch() && map.membership() == map_.membership()) return;  // stale
    map_ = map;
  }
  int up = 0;
  std::map<std::string, bool> peers_up;
  for (const auto& n : map.nodes()) {
    up += n.state() == v1::NODE_UP;
    if (n.id() != config_.node_id) peers_up[n.id()] = n.state() == v1::NODE_UP;
  }
  metrics_.SetPeersUp(peers_up);
  metrics_.map_epoch.Set(static_cast<double>(map.epoch()));
  metrics_.nodes_up.Set(up);
  if (repairer_) repairer_->Kick();
}

v1::ClusterMap Node::cluster_map() const {
  std::lock_guard<std::mutex> lock(map_mu_);
  return map_;
}

Result<std::unique_ptr<IngestSession>> Node::StartIngest(const v1::IngestOptions& options) {
  auto ref = ParseDatasetRef(options.dataset());
  if (!ref.ok()) return ref.status();
  const v1::ClusterMap map = cluster_map();
  const std::vector<std::string> members = MapMembers(map);
  // One node numbers a dataset's versions: its home, the first member up.
  for (const std::string& id : RankMembers(DatasetHomeKey(ref->name), members)) {
    const v1::NodeInfo* n = FindNode(map, id);
    if (n == nullptr || n->state() != v1::NODE_UP) continue;
    if (id != config_.node_id) {
      return Status::FailedPrecondition("ingests of dataset '" + ref->name + "' are coordinated by " + id + " at " +
                                        n->address() + "; send the ingest there");
    }
    break;
  }
  uint32_t up = 0;
  for (const auto& n : map.nodes()) up += n.state() == v1::NODE_UP;
  v1::IngestOptions o = options;
  if (o.replication() == 0) o.set_replication(DefaultReplication(members.size()));
  if (o.replication() > members.size()) {
    return Status::InvalidArgument("replication " + std::to_string(o.replication()) + " needs at least that many nodes; "
                                   "the cluster has " + std::to_string(members.size()));
  }
  if (o.write_policy() == v1::WRITE_QUORUM && (o.write_quorum() < 1 || o.write_quorum() > o.replication())) {
    return Status::InvalidArgument("write quorum must be between 1 and the replication factor (" +
                                   std::to_string(o.replication()) + ")");
  }
  const uint32_t need = o.write_policy() == v1::WRITE_SYNC     ? o.replication()
                        : o.write_policy() == v1::WRITE_QUORUM ? o.write_quorum()
                                                               : 1;
  if (need > up) {
    return Status::Unavailable("the write policy needs " + std::to_string(need) + " durable copies but only " +
                               std::to_string(up) + " nodes are up");
  }
  IngestLimits limits;
  limits.default_shard_target_bytes = config_.shard_target_bytes;
  auto observer = std::make_unique<IngestReplication>(this, map, o.replication(), o.write_policy(), o.write_quorum());
  return IngestSession::Open(o, catalog_.get(), &dir_, &metrics_, limits, std::move(observer), config_.node_id);
}

Result<std::unique_ptr<BatchStream>> Node::OpenStream(const v1::StreamRequest& request) {
  StreamLimits limits;
  limits.max_part_bytes = config_.max_part_bytes;
  limits.read_ahead_steps = config_.read_ahead_steps;
  StreamServer server{config_.node_id, this, config_.cache_bytes > 0 ? &blocks_ : nullptr};
  return BatchStream::Open(request, &cache_, catalog_.get(), &metrics_, limits, std::move(server));
}

Status Node::ReadLocalRecord(const v1::FileRef& shard, uint64_t index, std::string* raw) {
  if (!files_.Has(shard)) return Status::NotFound(FileName(shard) + " is not held by " + config_.node_id);
  DatasetRef ref{shard.dataset(), shard.version()};
  auto version = cache_.Open(ref);
  if (!version.ok()) return version.status();
  if (shard.seq() >= version.value()->num_shards()) return Status::NotFound("no shard " + FileName(shard));
  const auto& info = version.value()->shard(shard.seq()).info();
  if (index >= info.samples()) return Status::OutOfRange("record " + std::to_string(index) + " past the end of " +
                                                          FileName(shard));
  Status s = version.value()->ReadRaw(info.first_id() + index, raw);
  if (s.IsCorruption()) {
    metrics_.checksum_failures.Increment();
    Quarantine(shard);
    version.value()->Invalidate(shard.seq());
  }
  return s;
}

Status Node::Fetch(const v1::FileRef& shard, std::span<const uint64_t> indexes, std::vector<std::string>* raw) {
  const v1::ClusterMap map = cluster_map();
  const std::string key = ShardFileKey(shard.dataset(), shard.version(), shard.seq());
  v1::ReadRecordsRequest request;
  *request.mutable_file() = shard;
  for (uint64_t i : indexes) request.add_indexes(i);
  std::string errors;
  for (const std::string& id : RankMembers(key, MapMembers(map))) {
    const v1::NodeInfo* n = FindNode(map, id);
    if (id == config_.node_id || n == nullptr || n->state() != v1::NODE_UP) continue;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::ReadRecordsReply reply;
    grpc::Status s = peers_.Peer(n->address())->ReadRecords(&context, request, &reply);
    if (s.ok() && reply.records_size() == static_cast<int>(indexes.size())) {
      for (auto& r : *reply.mutable_records()) raw->push_back(std::move(r));
      return Status::OK();
    }
    errors += " " + id + ": " + s.error_message() + ";";
  }
  return Status::Unavailable("no node could provide records of " + FileName(shard) + ":" + errors);
}

void Node::Quarantine(const v1::FileRef& file) {
  if (!files_.Has(file)) return;
  metrics_.corruptions_found.Increment();
  if (cluster_map().nodes_size() <= 1) {
    // No other node could replace it: keep the file, whose intact records
    // still serve; every read of a damaged record fails its checksum.
    spdlog::error("{} is damaged and there is no other copy in the cluster; kept in place", FileName(file));
    return;
  }
  Status s = dir_.Quarantine(file);
  files_.Remove(file);
  spdlog::error("quarantined {}: {}", FileName(file), s.ok() ? "a good copy will be fetched" : s.ToString());
  if (repairer_) repairer_->Kick();
}

Status Node::ReleaseFile(const v1::FileRef& file) {
  files_.Remove(file);
  auto version = cache_.Open(DatasetRef{file.dataset(), file.version()});
  if (version.ok() && file.kind() == v1::FileRef::SHARD && file.seq() < version.value()->num_shards()) {
    version.value()->Invalidate(file.seq());
  }
  return dir_.RemoveFile(file);
}

Status Node::ImportVersion(const v1::VersionMeta& meta) {
  v1::VersionRecord record;
  std::vector<v1::ShardRecord> shards;
  STRATA_RETURN_IF_ERROR(ValidateVersionMeta(meta, dir_, &record, &shards));
  auto changed = catalog_->ImportVersion(record, shards);
  if (!changed.ok()) return changed.status();
  if (changed.value() && record.info().state() == v1::VERSION_ABORTED) {
    for (const auto& f : files_.List(record.info().name(), record.info().version())) files_.Remove(f);
    STRATA_RETURN_IF_ERROR(dir_.RemoveVersion(record.info().name(), record.info().version()));
  }
  if (changed.value() && repairer_) repairer_->Kick();
  return Status::OK();
}

Status Node::ExportVersions(const v1::ListVersionsRequest& request, v1::ListVersionsReply* reply) {
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

void Node::BroadcastVersion(const std::string& name, uint64_t version) {
  v1::ListVersionsRequest one;
  one.set_include_shards(true);
  one.set_dataset(name);
  one.set_version(version);
  v1::ListVersionsReply mine;
  if (!ExportVersions(one, &mine).ok() || mine.versions_size() != 1) return;
  v1::PutVersionRequest request;
  *request.mutable_meta() = mine.versions(0);
  const v1::ClusterMap map = cluster_map();
  for (const auto& n : map.nodes()) {
    if (n.id() == config_.node_id || n.state() != v1::NODE_UP) continue;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1::PutVersionReply reply;
    grpc::Status s = peers_.Peer(n.address())->PutVersion(&context, request, &reply);
    if (!s.ok()) spdlog::warn("telling {} about {}@{}: {}", n.id(), name, version, s.error_message());
  }
}

uint32_t Node::ReplicationOf(const std::string& name, uint64_t version, const v1::ClusterMap& map) const {
  auto record = catalog_->GetVersion(name, version);
  const uint32_t r = record.ok() ? record->info().replication() : 0;
  return r != 0 ? r : DefaultReplication(static_cast<size_t>(map.nodes_size()));
}

std::vector<v1::FileRef> Node::DesiredFiles(const v1::ClusterMap& map) const {
  std::vector<v1::FileRef> out;
  const std::vector<std::string> members = MapMembers(map);
  const auto versions = catalog_->ListVersions(false).value_or({});
  for (const auto& v : versions) {
    const auto& info = v.info();
    if (HasStratumIndex(v)) out.push_back(IndexRef(info.name(), info.version()));
    const uint32_t r = info.replication() != 0 ? info.replication() : DefaultReplication(members.size());
    const auto shards = catalog_->ListShards(info.name(), info.version()).value_or({});
    for (const auto& s : shards) {
      const auto holders = Holders(ShardFileKey(info.name(), info.version(), s.info().seq()), members, r);
      if (std::find(holders.begin(), holders.end(), config_.node_id) != holders.end()) {
        out.push_back(ShardRef(info.name(), info.version(), s.info().seq()));
      }
    }
  }
  return out;
}

std::vector<v1::FileRef> Node::ExtraFiles(const v1::ClusterMap& map) const {
  std::vector<v1::FileRef> out;
  const std::vector<std::string> members = MapMembers(map);
  for (const v1::FileRef& f : files_.List("", 0)) {
    if (f.kind() != v1::FileRef::SHARD) continue;
    auto record = catalog_->GetVersion(f.dataset(), f.version());
    if (!record.ok() || record->info().state() != v1::VERSION_SEALED) continue;  // not ours to judge yet
    const uint32_t r = ReplicationOf(f.dataset(), f.version(), map);
    const auto holders = Holders(ShardFileKey(f.dataset(), f.version(), f.seq()), members, r);
    if (std::find(holders.begin(), holders.end(), config_.node_id) == holders.end()) out.push_back(f);
  }
  return out;
}

Result<v1::ListDatasetsReply> Node::ListDatasets(const v1::ListDatasetsRequest& request) const {
  auto versions = catalog_->ListVersions(request.include_unsealed());
  if (!versions.ok()) return versions.status();
  v1::ListDatasetsReply reply;
  for (const auto& v : versions.value()) *reply.add_datasets() = v.info();
  return reply;
}

Result<v1::DescribeDatasetReply> Node::DescribeDataset(const v1::DescribeDatasetRequest& request) const {
  auto ref = ParseDatasetRef(request.dataset());
  if (!ref.ok()) return ref.status();
  auto record = ref->version ? catalog_->GetVersion(ref->name, *ref->version) : catalog_->LatestSealed(ref->name);
  if (!record.ok()) return record.status();
  auto shards = catalog_->ListShards(ref->name, record->info().version());
  if (!shards.ok()) return shards.status();
  v1::DescribeDatasetReply reply;
  *reply.mutable_dataset() = record->info();
  for (const auto& s : shards.value()) *reply.add_shards() = s.info();
  return reply;
}

v1::StatusReply Node::GetStatus() const {
  v1::StatusReply r;
  r.set_node_id(config_.node_id);
  r.set_build_version(STRATA_VERSION);
  r.set_listen(config_.listen);
  r.set_metrics_listen(config_.metrics_listen);
  r.set_data_dir(config_.data_dir);
  r.set_started_unix_ms(started_unix_ms_);
  auto versions = catalog_->ListVersions(false);
  r.set_datasets(versions.ok() ? static_cast<uint32_t>(versions->size()) : 0);
  r.set_active_streams(active_streams_.load());
  r.set_active_ingests(active_ingests_.load());
  r.set_bytes_served(static_cast<uint64_t>(metrics_.bytes_served.Value()));
  r.set_samples_served(static_cast<uint64_t>(metrics_.samples_served.Value()));
  r.set_batches_served(static_cast<uint64_t>(metrics_.batches_served.Value()));
  r.set_samples_ingested(static_cast<uint64_t>(metrics_.samples_ingested.Value()));
  r.set_checksum_failures(static_cast<uint64_t>(metrics_.checksum_failures.Value()));
  r.set_disk_bytes(dir_.ShardBytes());
  r.set_map_epoch(cluster_map().epoch());
  v1::RepairProgress* p = r.mutable_repair();
  if (repairer_) *p = repairer_->Progress();
  p->set_replication_backlog_bytes(static_cast<uint64_t>(metrics_.replication_backlog_bytes.Value()));
  p->set_bytes_scrubbed(static_cast<uint64_t>(metrics_.scrubbed_bytes.Value()));
  p->set_corruptions_found(static_cast<uint64_t>(metrics_.corruptions_found.Value()));
  p->set_files_quarantined(static_cast<uint64_t>(metrics_.corruptions_found.Value()));
  return r;
}

Status Node::Close() {
  if (closed_.exchange(true)) return Status::OK();
  if (scrubber_) scrubber_->Stop();
  if (repairer_) repairer_->Stop();
  if (replicator_) replicator_->Stop();
  if (membership_) membership_->Stop();
  pool_.join();
  return kv_->Close();
}

}  // namespace strata
