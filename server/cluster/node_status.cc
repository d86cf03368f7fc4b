#include "server/cluster/node_status.h"

#include "common/wall_clock.h"

namespace strata {

NodeStatus::NodeStatus(const NodeConfig& config, Deps deps)
    : node_id_(config.node_id),
      listen_(config.listen),
      metrics_listen_(config.metrics_listen),
      data_dir_(config.data_dir),
      started_unix_ms_(UnixNowMs()),
      d_(deps) {}

v1::StatusReply NodeStatus::Get() const {
  const Metrics& m = *d_.metrics;
  v1::StatusReply r;
  r.set_node_id(node_id_);
  r.set_build_version(STRATA_VERSION);
  r.set_listen(listen_);
  r.set_metrics_listen(metrics_listen_);
  r.set_data_dir(data_dir_);
  r.set_started_unix_ms(started_unix_ms_);
  auto versions = d_.catalog->ListVersions(false);
  r.set_datasets(versions.ok() ? static_cast<uint32_t>(versions->size()) : 0);
  r.set_active_streams(d_.streams->count());
  r.set_active_ingests(d_.ingests->count());
  r.set_bytes_served(static_cast<uint64_t>(m.bytes_served.Value()));
  r.set_samples_served(static_cast<uint64_t>(m.samples_served.Value()));
  r.set_batches_served(static_cast<uint64_t>(m.batches_served.Value()));
  r.set_samples_ingested(static_cast<uint64_t>(m.samples_ingested.Value()));
  r.set_checksum_failures(static_cast<uint64_t>(m.checksum_failures.Value()));
  r.set_disk_bytes(d_.dir->ShardBytes());
  r.set_map_epoch(d_.view->Current().epoch());
  if (d_.disk != nullptr) {
    const DiskFigures f = d_.disk->Last();
    r.set_disk_free_bytes(f.free_bytes);
    r.set_disk_total_bytes(f.total_bytes);
    r.set_disk_state(d_.disk->BelowLow() ? "refusing writes" : d_.disk->BelowHigh() ? "full" : "ok");
  }
  if (d_.peer_disks != nullptr) {
    for (const std::string& id : d_.peer_disks->Full()) r.add_full_nodes(id);
  }
  r.set_shards_under_replicated(static_cast<uint64_t>(m.shards_under_replicated.Value()));
  r.set_shards_missing(static_cast<uint64_t>(m.shards_missing.Value()));
  v1::RepairProgress* p = r.mutable_repair();
  *p = d_.repairer->Progress();
  p->set_replication_backlog_bytes(static_cast<uint64_t>(m.replication_backlog_bytes.Value()));
  p->set_bytes_scrubbed(static_cast<uint64_t>(m.scrubbed_bytes.Value()));
  p->set_corruptions_found(static_cast<uint64_t>(m.corruptions_found.Value()));
  p->set_files_quarantined(static_cast<uint64_t>(m.corruptions_found.Value()));
  return r;
}

}  // namespace strata
