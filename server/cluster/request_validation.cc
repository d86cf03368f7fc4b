#include "server/cluster/request_validation.h"

#include <set>

#include "common/dataset_ref.h"
#include "common/input_limits.h"
#include "server/ingest/ingest_session.h"
#include "server/storage/path_guard.h"

namespace strata {

namespace {

using L = InputLimits;

template <typename Strings>
Status CheckStrings(std::string_view what, const Strings& values, size_t max_count, size_t max_bytes) {
  STRATA_RETURN_IF_ERROR(CheckCount(what, static_cast<size_t>(values.size()), max_count));
  for (const auto& v : values) {
    STRATA_RETURN_IF_ERROR(CheckLength(std::string("an entry of ") + std::string(what), v, max_bytes));
  }
  return Status::OK();
}

template <typename Map>
Status CheckKeys(std::string_view what, const Map& map, size_t max_count, size_t max_bytes) {
  STRATA_RETURN_IF_ERROR(CheckCount(what, static_cast<size_t>(map.size()), max_count));
  for (const auto& entry : map) {
    STRATA_RETURN_IF_ERROR(CheckLength(std::string("a key of ") + std::string(what), entry.first, max_bytes));
  }
  return Status::OK();
}

Status CheckDatasetRef(std::string_view what, const std::string& ref) {
  STRATA_RETURN_IF_ERROR(CheckLength(what, ref, L::kMaxDatasetRefBytes));
  return ParseDatasetRef(ref).status();
}

// A dataset ref that names its version: "name@N". `purpose` ends the
// message: "name the version <purpose> as NAME@N".
Status CheckVersionedRef(const std::string& ref, std::string_view purpose) {
  STRATA_RETURN_IF_ERROR(CheckDatasetRef("the dataset", ref));
  if (ParseDatasetRef(ref)->version) return Status::OK();
  return Status::InvalidArgument("name the version " + std::string(purpose) + " as NAME@N (" + QuotePrefix(ref) +
                                 " names none)");
}

Status CheckOptionalName(const std::string& name) {
  if (name.empty()) return Status::OK();
  return ValidateDatasetName(name);
}

}  // namespace

Status ValidateStreamRequest(const v1::StreamRequest& r) {
  STRATA_RETURN_IF_ERROR(CheckDatasetRef("the dataset", r.dataset()));
  STRATA_RETURN_IF_ERROR(CheckLength("the job id", r.job_id(), L::kMaxJobIdBytes));
  STRATA_RETURN_IF_ERROR(CheckStrings("members", r.members(), L::kMaxMembers, L::kMaxNodeIdBytes));
  STRATA_RETURN_IF_ERROR(CheckStrings("excluded", r.excluded(), L::kMaxMembers, L::kMaxNodeIdBytes));
  STRATA_RETURN_IF_ERROR(CheckCount("member_zones", static_cast<size_t>(r.member_zones_size()), L::kMaxMembers));
  for (const auto& z : r.member_zones()) STRATA_RETURN_IF_ERROR(CheckClusterName("a zone", z, L::kMaxDomainNameBytes));
  STRATA_RETURN_IF_ERROR(CheckCount("member_racks", static_cast<size_t>(r.member_racks_size()), L::kMaxMembers));
  for (const auto& k : r.member_racks()) STRATA_RETURN_IF_ERROR(CheckClusterName("a rack", k, L::kMaxDomainNameBytes));
  STRATA_RETURN_IF_ERROR(CheckClusterName("the zone", r.zone(), L::kMaxDomainNameBytes));
  STRATA_RETURN_IF_ERROR(CheckKeys("sampler weights", r.sampler().weights(), L::kMaxWeights, L::kMaxStratumKeyBytes));
  STRATA_RETURN_IF_ERROR(
      CheckKeys("sampler min_per_batch", r.sampler().min_per_batch(), L::kMaxWeights, L::kMaxStratumKeyBytes));
  if (r.work_size() == 0) return Status::OK();
  STRATA_RETURN_IF_ERROR(CheckCount("work", static_cast<size_t>(r.work_size()), L::kMaxWorkSteps));
  if (r.max_steps() != 0 || !r.job_id().empty() || r.resume()) {
    return Status::InvalidArgument("a request with work names its steps: max_steps, job_id and resume are refused");
  }
  size_t ids = 0;  // the steps and slots are checked against the plan (BatchStream::Open)
  for (const v1::WorkStep& w : r.work()) ids += static_cast<size_t>(w.ids_size());
  return CheckCount("work ids", ids, L::kMaxWorkIds);
}

Status ValidateWorkRequest(const v1::WorkRequest& r, bool first) {
  if (first) {
    if (!r.has_open()) return Status::InvalidArgument("ServeWork's first message must open the stream");
    if (r.open().work_size() == 0) {
      return Status::InvalidArgument("ServeWork's first message must give work (StreamRequest.work)");
    }
    return ValidateStreamRequest(r.open());
  }
  if (!r.has_more()) return Status::InvalidArgument("only ServeWork's first message opens the stream");
  STRATA_RETURN_IF_ERROR(CheckCount("work", static_cast<size_t>(r.more().work_size()), L::kMaxWorkSteps));
  size_t ids = 0;
  for (const v1::WorkStep& w : r.more().work()) ids += static_cast<size_t>(w.ids_size());
  return CheckCount("work ids", ids, L::kMaxWorkIds);
}

Status ValidateStratumIndexRequest(const v1::StratumIndexRequest& r) {
  return CheckVersionedRef(r.dataset(), "of the stratum index");
}

bool ValidIngestId(const std::string& id) { return IsSimpleName(id, 128); }

Status ValidateAbortIngest(const v1::AbortIngestRequest& r) {
  if (!r.dataset().empty()) {
    if (!r.ingest_id().empty()) return Status::InvalidArgument("an abort names an ingest id or a version, not both");
    return CheckVersionedRef(r.dataset(), "to abort");
  }
  if (!ValidIngestId(r.ingest_id())) return Status::InvalidArgument("invalid ingest id " + QuotePrefix(r.ingest_id()));
  return Status::OK();
}

Status ValidateIngestOptions(const v1::IngestOptions& o) {
  STRATA_RETURN_IF_ERROR(CheckDatasetRef("the dataset", o.dataset()));
  STRATA_RETURN_IF_ERROR(CheckStrings("stratify_by", o.stratify_by(), L::kMaxStratifyBy, L::kMaxFieldNameBytes));
  STRATA_RETURN_IF_ERROR(CheckLength("the time bucket field", o.time_bucket_field(), L::kMaxFieldNameBytes));
  if (!o.ingest_id().empty() || o.writers() != 0 || o.writer() != 0) {
    if (!ValidIngestId(o.ingest_id())) {
      return Status::InvalidArgument("an ingest id is 1 to 128 letters, digits, '.', '_' or '-'");
    }
    if (o.writers() < 1 || o.writers() > kMaxIngestWriters || o.writer() >= o.writers()) {
      return Status::InvalidArgument("writer " + std::to_string(o.writer()) + " of " + std::to_string(o.writers()) +
                                     ": writers must be 1 to " + std::to_string(kMaxIngestWriters) +
                                     " and the writer below them");
    }
    if (ParseDatasetRef(o.dataset())->version) {
      return Status::InvalidArgument("an ingest with several writers names the dataset only, not @N");
    }
  }
  return Status::OK();
}

Status ValidateJoinIngest(const v1::JoinIngestRequest& request) {
  STRATA_RETURN_IF_ERROR(ValidateIngestOptions(request.options()));
  return CheckClusterName("the writer's node", request.writer_node(), L::kMaxNodeIdBytes);
}

Status ValidateDescribeRequest(const v1::DescribeDatasetRequest& r) {
  return CheckDatasetRef("the dataset", r.dataset());
}

Status ValidateDeleteRequest(const v1::DeleteVersionRequest& r) { return CheckVersionedRef(r.dataset(), "to delete"); }

Status ValidatePing(const v1::PingRequest& r) {
  return CheckLength("the sender's node id", r.from(), L::kMaxNodeIdBytes);
}

Status ValidateReadRecords(const v1::ReadRecordsRequest& r) {
  STRATA_RETURN_IF_ERROR(ValidateFileRef(r.file()));
  if (r.file().kind() != v1::FileRef::SHARD) return Status::InvalidArgument("records are read from shards only");
  return CheckCount("indexes", static_cast<size_t>(r.indexes_size()), L::kMaxRecordsPerRead);
}

Status ValidateListVersions(const v1::ListVersionsRequest& r) { return CheckOptionalName(r.dataset()); }

Status ValidateListLocalFiles(const v1::ListLocalFilesRequest& r) { return CheckOptionalName(r.dataset()); }

Status ValidateVersionMeta(const v1::VersionMeta& meta, const DataDir& dir, v1::VersionRecord* record,
                           std::vector<v1::ShardRecord>* shards) {
  STRATA_RETURN_IF_ERROR(
      CheckCount("shard_records", static_cast<size_t>(meta.shard_records_size()), L::kMaxShardsPerVersion));
  if (!record->ParseFromString(meta.version_record())) return Status::InvalidArgument("unparsable version record");
  const v1::DatasetInfo& info = record->info();
  STRATA_RETURN_IF_ERROR(ValidateDatasetName(info.name()));
  if (info.version() == 0) return Status::InvalidArgument("dataset versions are numbered from 1");
  if (info.state() != v1::VERSION_SEALED && info.state() != v1::VERSION_ABORTED &&
      info.state() != v1::VERSION_DELETED) {
    return Status::InvalidArgument("only sealed, aborted or deleted versions are shared between nodes");
  }
  STRATA_RETURN_IF_ERROR(CheckLength("the coordinator's node id", info.coordinator(), L::kMaxNodeIdBytes));
  STRATA_RETURN_IF_ERROR(CheckLength("the deleting node's id", record->deleted_by(), L::kMaxNodeIdBytes));
  if (info.state() == v1::VERSION_DELETED && record->deleted_by().empty()) {
    return Status::InvalidArgument("a deleted version must name the node that deleted it");
  }
  STRATA_RETURN_IF_ERROR(CheckStrings("stratify_by", info.stratify_by(), L::kMaxStratifyBy, L::kMaxFieldNameBytes));
  shards->assign(static_cast<size_t>(meta.shard_records_size()), v1::ShardRecord());
  std::set<uint32_t> seqs;
  for (int i = 0; i < meta.shard_records_size(); ++i) {
    v1::ShardRecord& shard = (*shards)[static_cast<size_t>(i)];
    if (!shard.ParseFromString(meta.shard_records(i))) return Status::InvalidArgument("unparsable shard record");
    const uint32_t seq = shard.info().seq();
    if (seq > kMaxShardSeq || !seqs.insert(seq).second) {
      return Status::InvalidArgument("shard seq " + std::to_string(seq) + " is repeated or over the limit");
    }
    if (shard.path() != dir.ShardRelativePath(info.name(), info.version(), seq)) {
      return Status::InvalidArgument("shard " + std::to_string(seq) + " has path " + QuotePrefix(shard.path()) +
                                     ", not the one its dataset, version and seq give");
    }
  }
  return Status::OK();
}

}  // namespace strata
