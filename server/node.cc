#include "server/node.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "common/dataset_ref.h"

namespace strata {

namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
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
      started_unix_ms_(NowMs()) {
  metrics_.AddScrapeGauges("rocksdb", [kv = kv_.get()] {
    std::map<std::string, double> out;
    for (const auto& [k, v] : kv->Stats()) out[k] = static_cast<double>(v);
    return out;
  });
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
  return Status::OK();
}

Result<std::unique_ptr<IngestSession>> Node::StartIngest(const v1::IngestOptions& options) {
  IngestLimits limits;
  limits.default_shard_target_bytes = config_.shard_target_bytes;
  return IngestSession::Open(options, catalog_.get(), &dir_, &metrics_, limits);
}

Result<std::unique_ptr<BatchStream>> Node::OpenStream(const v1::StreamRequest& request) {
  StreamLimits limits;
  limits.max_part_bytes = config_.max_part_bytes;
  return BatchStream::Open(request, &cache_, catalog_.get(), &metrics_, limits);
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
  return r;
}

Status Node::Close() {
  if (closed_.exchange(true)) return Status::OK();
  pool_.join();
  return kv_->Close();
}

}  // namespace strata
