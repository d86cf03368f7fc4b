// Field by field, in the order of the .proto files.
#include "client/proto_convert.h"

#include <utility>

namespace strata::client_internal {

namespace {

template <typename To, typename From>
To CastEnum(From value) {
  return static_cast<To>(static_cast<int>(value));
}

void ToProto(const std::vector<StratumCount>& from, google::protobuf::RepeatedPtrField<v1::StratumCount>* to) {
  to->Reserve(static_cast<int>(from.size()));
  for (const StratumCount& c : from) {
    v1::StratumCount* out = to->Add();
    out->set_key(c.key);
    out->set_count(c.count);
  }
}

std::vector<StratumCount> FromProto(const google::protobuf::RepeatedPtrField<v1::StratumCount>& from) {
  std::vector<StratumCount> out;
  out.reserve(static_cast<size_t>(from.size()));
  for (const v1::StratumCount& c : from) out.push_back({c.key(), c.count()});
  return out;
}

std::vector<std::string> FromProto(const google::protobuf::RepeatedPtrField<std::string>& from) {
  return {from.begin(), from.end()};
}

void ToProto(const std::vector<std::string>& from, google::protobuf::RepeatedPtrField<std::string>* to) {
  to->Assign(from.begin(), from.end());
}

}  // namespace

v1::SamplerSpec ToProto(const SamplerSpec& spec) {
  v1::SamplerSpec out;
  out.set_kind(CastEnum<v1::SamplerSpec::Kind>(spec.kind));
  for (const auto& [key, weight] : spec.weights) (*out.mutable_weights())[key] = weight;
  out.set_weight_power(spec.weight_power);
  out.set_epoch_samples(spec.epoch_samples);
  for (const auto& [key, n] : spec.min_per_batch) (*out.mutable_min_per_batch())[key] = n;
  out.set_block_window(spec.block_window);
  return out;
}

SamplerSpec FromProto(const v1::SamplerSpec& spec) {
  SamplerSpec out;
  out.kind = CastEnum<SamplerSpec::Kind>(spec.kind());
  out.weights.insert(spec.weights().begin(), spec.weights().end());
  out.weight_power = spec.weight_power();
  out.epoch_samples = spec.epoch_samples();
  out.min_per_batch.insert(spec.min_per_batch().begin(), spec.min_per_batch().end());
  out.block_window = spec.block_window();
  return out;
}

v1::Remainder ToProto(Remainder remainder) { return CastEnum<v1::Remainder>(remainder); }

void ToProto(const Sample& sample, v1::Sample* out) {
  out->set_key(sample.key);
  out->set_label(sample.label);
  out->mutable_attributes()->clear();
  for (const auto& [key, value] : sample.attributes) (*out->mutable_attributes())[key] = value;
  auto* fields = out->mutable_fields();
  while (fields->size() > static_cast<int>(sample.fields.size())) fields->RemoveLast();
  for (size_t i = 0; i < sample.fields.size(); ++i) {
    v1::Field* f = static_cast<int>(i) < fields->size() ? fields->Mutable(static_cast<int>(i)) : fields->Add();
    f->set_name(sample.fields[i].name);
    f->set_data(sample.fields[i].data);
  }
}

Sample FromProto(const v1::Sample& sample) {
  Sample out;
  out.key = sample.key();
  out.label = sample.label();
  out.attributes.insert(sample.attributes().begin(), sample.attributes().end());
  out.fields.reserve(static_cast<size_t>(sample.fields_size()));
  for (const v1::Field& f : sample.fields()) out.fields.push_back({f.name(), f.data()});
  return out;
}

v1::IngestOptions ToProto(const IngestOptions& options) {
  v1::IngestOptions out;
  out.set_dataset(options.dataset);
  out.set_shard_target_bytes(options.shard_target_bytes);
  ToProto(options.stratify_by, out.mutable_stratify_by());
  out.set_time_bucket_field(options.time_bucket_field);
  out.set_time_bucket_seconds(options.time_bucket_seconds);
  out.set_replication(options.replication);
  out.set_write_policy(CastEnum<v1::WritePolicy>(options.write_policy));
  out.set_write_quorum(options.write_quorum);
  out.set_compression(CastEnum<v1::Compression>(options.compression));
  out.set_compression_level(options.compression_level);
  out.set_compression_block_bytes(options.compression_block_bytes);
  out.set_ec_data(options.ec_data);
  out.set_ec_parity(options.ec_parity);
  out.set_keep_versions(options.keep_versions);
  out.set_ingest_id(options.ingest_id);
  out.set_writers(options.writers);
  out.set_writer(options.writer);
  return out;
}

IngestOptions FromProto(const v1::IngestOptions& options) {
  IngestOptions out;
  out.dataset = options.dataset();
  out.shard_target_bytes = options.shard_target_bytes();
  out.stratify_by = FromProto(options.stratify_by());
  out.time_bucket_field = options.time_bucket_field();
  out.time_bucket_seconds = options.time_bucket_seconds();
  out.replication = options.replication();
  out.write_policy = CastEnum<WritePolicy>(options.write_policy());
  out.write_quorum = options.write_quorum();
  out.compression = CastEnum<Compression>(options.compression());
  out.compression_level = options.compression_level();
  out.compression_block_bytes = options.compression_block_bytes();
  out.ec_data = options.ec_data();
  out.ec_parity = options.ec_parity();
  out.keep_versions = options.keep_versions();
  out.ingest_id = options.ingest_id();
  out.writers = options.writers();
  out.writer = options.writer();
  return out;
}

v1::DatasetInfo ToProto(const DatasetInfo& info) {
  v1::DatasetInfo out;
  out.set_name(info.name);
  out.set_version(info.version);
  out.set_state(CastEnum<v1::VersionState>(info.state));
  out.set_samples(info.samples);
  out.set_bytes(info.bytes);
  out.set_file_bytes(info.file_bytes);
  out.set_shards(info.shards);
  ToProto(info.label_counts, out.mutable_label_counts());
  ToProto(info.stratum_counts, out.mutable_stratum_counts());
  ToProto(info.stratify_by, out.mutable_stratify_by());
  out.set_created_unix_ms(info.created_unix_ms);
  out.set_sealed_unix_ms(info.sealed_unix_ms);
  out.set_duplicate_samples(info.duplicate_samples);
  out.set_time_bucket_field(info.time_bucket_field);
  out.set_time_bucket_seconds(info.time_bucket_seconds);
  out.set_replication(info.replication);
  out.set_write_policy(CastEnum<v1::WritePolicy>(info.write_policy));
  out.set_write_quorum(info.write_quorum);
  out.set_coordinator(info.coordinator);
  out.set_compression(CastEnum<v1::Compression>(info.compression));
  out.set_compression_level(info.compression_level);
  out.set_compression_block_bytes(info.compression_block_bytes);
  out.set_ec_data(info.ec_data);
  out.set_ec_parity(info.ec_parity);
  out.set_keep_versions(info.keep_versions);
  return out;
}

DatasetInfo FromProto(const v1::DatasetInfo& info) {
  DatasetInfo out;
  out.name = info.name();
  out.version = info.version();
  out.state = CastEnum<VersionState>(info.state());
  out.samples = info.samples();
  out.bytes = info.bytes();
  out.file_bytes = info.file_bytes();
  out.shards = info.shards();
  out.label_counts = FromProto(info.label_counts());
  out.stratum_counts = FromProto(info.stratum_counts());
  out.stratify_by = FromProto(info.stratify_by());
  out.created_unix_ms = info.created_unix_ms();
  out.sealed_unix_ms = info.sealed_unix_ms();
  out.duplicate_samples = info.duplicate_samples();
  out.time_bucket_field = info.time_bucket_field();
  out.time_bucket_seconds = info.time_bucket_seconds();
  out.replication = info.replication();
  out.write_policy = CastEnum<WritePolicy>(info.write_policy());
  out.write_quorum = info.write_quorum();
  out.coordinator = info.coordinator();
  out.compression = CastEnum<Compression>(info.compression());
  out.compression_level = info.compression_level();
  out.compression_block_bytes = info.compression_block_bytes();
  out.ec_data = info.ec_data();
  out.ec_parity = info.ec_parity();
  out.keep_versions = info.keep_versions();
  return out;
}

v1::DescribeDatasetReply ToProto(const DatasetDescription& description) {
  v1::DescribeDatasetReply out;
  *out.mutable_dataset() = ToProto(description.dataset);
  for (const ShardInfo& s : description.shards) {
    v1::ShardInfo* shard = out.add_shards();
    shard->set_seq(s.seq);
    shard->set_first_id(s.first_id);
    shard->set_samples(s.samples);
    shard->set_bytes(s.bytes);
    shard->set_checksum(s.checksum);
    shard->set_id_offset(s.id_offset);
  }
  return out;
}

DatasetDescription FromProto(const v1::DescribeDatasetReply& reply) {
  DatasetDescription out;
  out.dataset = FromProto(reply.dataset());
  out.shards.reserve(static_cast<size_t>(reply.shards_size()));
  for (const v1::ShardInfo& s : reply.shards()) {
    out.shards.push_back({s.seq(), s.first_id(), s.samples(), s.bytes(), s.checksum(), s.id_offset()});
  }
  return out;
}

v1::IngestReply ToProto(const IngestSummary& summary) {
  v1::IngestReply out;
  *out.mutable_dataset() = ToProto(summary.dataset);
  for (const DuplicateGroup& g : summary.duplicate_examples) {
    v1::DuplicateGroup* group = out.add_duplicate_examples();
    group->set_hash_hi(g.hash_hi);
    group->set_hash_lo(g.hash_lo);
    ToProto(g.keys, group->mutable_keys());
    group->set_count(g.count);
  }
  out.set_writers_committed(summary.writers_committed);
  out.set_writers(summary.writers);
  return out;
}

IngestSummary FromProto(const v1::IngestReply& reply) {
  IngestSummary out;
  out.dataset = FromProto(reply.dataset());
  out.duplicate_examples.reserve(static_cast<size_t>(reply.duplicate_examples_size()));
  for (const v1::DuplicateGroup& g : reply.duplicate_examples()) {
    out.duplicate_examples.push_back({g.hash_hi(), g.hash_lo(), FromProto(g.keys()), g.count()});
  }
  out.writers_committed = reply.writers_committed();
  out.writers = reply.writers();
  return out;
}

v1::StatusReply ToProto(const NodeStatus& status) {
  v1::StatusReply out;
  out.set_node_id(status.node_id);
  out.set_build_version(status.build_version);
  out.set_listen(status.listen);
  out.set_metrics_listen(status.metrics_listen);
  out.set_data_dir(status.data_dir);
  out.set_started_unix_ms(status.started_unix_ms);
  out.set_datasets(status.datasets);
  out.set_active_streams(status.active_streams);
  out.set_active_ingests(status.active_ingests);
  out.set_bytes_served(status.bytes_served);
  out.set_samples_served(status.samples_served);
  out.set_batches_served(status.batches_served);
  out.set_samples_ingested(status.samples_ingested);
  out.set_checksum_failures(status.checksum_failures);
  out.set_disk_bytes(status.disk_bytes);
  v1::RepairProgress* r = out.mutable_repair();
  r->set_files_missing(status.repair.files_missing);
  r->set_files_copied(status.repair.files_copied);
  r->set_bytes_copied(status.repair.bytes_copied);
  r->set_files_quarantined(status.repair.files_quarantined);
  r->set_files_released(status.repair.files_released);
  r->set_replication_backlog_bytes(status.repair.replication_backlog_bytes);
  r->set_bytes_scrubbed(status.repair.bytes_scrubbed);
  r->set_corruptions_found(status.repair.corruptions_found);
  out.set_map_epoch(status.map_epoch);
  out.set_disk_free_bytes(status.disk_free_bytes);
  out.set_disk_total_bytes(status.disk_total_bytes);
  out.set_disk_state(status.disk_state);
  out.set_shards_under_replicated(status.shards_under_replicated);
  out.set_shards_missing(status.shards_missing);
  for (const auto& id : status.full_nodes) out.add_full_nodes(id);
  return out;
}

NodeStatus FromProto(const v1::StatusReply& reply) {
  NodeStatus out;
  out.node_id = reply.node_id();
  out.build_version = reply.build_version();
  out.listen = reply.listen();
  out.metrics_listen = reply.metrics_listen();
  out.data_dir = reply.data_dir();
  out.started_unix_ms = reply.started_unix_ms();
  out.datasets = reply.datasets();
  out.active_streams = reply.active_streams();
  out.active_ingests = reply.active_ingests();
  out.bytes_served = reply.bytes_served();
  out.samples_served = reply.samples_served();
  out.batches_served = reply.batches_served();
  out.samples_ingested = reply.samples_ingested();
  out.checksum_failures = reply.checksum_failures();
  out.disk_bytes = reply.disk_bytes();
  const v1::RepairProgress& r = reply.repair();
  out.repair = {r.files_missing(),     r.files_copied(),     r.bytes_copied(),
                r.files_quarantined(), r.files_released(),   r.replication_backlog_bytes(),
                r.bytes_scrubbed(),    r.corruptions_found()};
  out.map_epoch = reply.map_epoch();
  out.disk_free_bytes = reply.disk_free_bytes();
  out.disk_total_bytes = reply.disk_total_bytes();
  out.disk_state = reply.disk_state();
  out.shards_under_replicated = reply.shards_under_replicated();
  out.shards_missing = reply.shards_missing();
  out.full_nodes.assign(reply.full_nodes().begin(), reply.full_nodes().end());
  return out;
}

v1::ClusterMap ToProto(const ClusterMap& map) {
  v1::ClusterMap out;
  out.set_epoch(map.epoch);
  for (const NodeInfo& n : map.nodes) {
    v1::NodeInfo* node = out.add_nodes();
    node->set_id(n.id);
    node->set_address(n.address);
    node->set_metrics_address(n.metrics_address);
    node->set_state(CastEnum<v1::NodeState>(n.state));
    node->set_down_since_unix_ms(n.down_since_unix_ms);
    node->set_peer_address(n.peer_address);
    node->set_zone(n.zone);
    node->set_rack(n.rack);
    node->set_disk_free_bytes(n.disk_free_bytes);
    node->set_disk_total_bytes(n.disk_total_bytes);
    node->set_disk_full(n.disk_full);
  }
  out.set_membership(map.membership);
  out.set_cluster(map.cluster);
  out.set_ingest_accept_signal(map.ingest_accept_signal);
  out.set_serves_work(map.serves_work);
  return out;
}

ClusterMap FromProto(const v1::ClusterMap& map) {
  ClusterMap out;
  out.epoch = map.epoch();
  out.nodes.reserve(static_cast<size_t>(map.nodes_size()));
  for (const v1::NodeInfo& n : map.nodes()) {
    out.nodes.push_back({n.id(), n.address(), n.metrics_address(), CastEnum<NodeState>(n.state()),
                         n.down_since_unix_ms(), n.peer_address(), n.zone(), n.rack(), n.disk_free_bytes(),
                         n.disk_total_bytes(), n.disk_full()});
  }
  out.membership = map.membership();
  out.cluster = map.cluster();
  out.ingest_accept_signal = map.ingest_accept_signal();
  out.serves_work = map.serves_work();
  return out;
}

v1::FileRef ToProto(const FileRef& file) {
  v1::FileRef out;
  out.set_dataset(file.dataset);
  out.set_version(file.version);
  out.set_kind(CastEnum<v1::FileRef::Kind>(file.kind));
  out.set_seq(file.seq);
  return out;
}

FileRef FromProto(const v1::FileRef& file) {
  return {file.dataset(), file.version(), CastEnum<FileRef::Kind>(file.kind()), file.seq()};
}

}  // namespace strata::client_internal
