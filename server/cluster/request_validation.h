// Request validation for every RPC, at the edge, before any work.
//
// Each function checks the lengths of a request's strings and the sizes of
// its repeated fields against common/input_limits.h, and the names in it with
// the one dataset-name validator (common/dataset_ref.h), and returns
// InvalidArgument naming the field and its limit, quoting at most a short
// prefix of a bad value. They do not look anything up: what exists is the
// core's business. They are pure, so a fuzzer drives them directly.
//
// Thread-safety: pure functions.
#pragma once

#include <vector>

#include "common/status.h"
#include "server/storage/data_dir.h"
#include "strata/v1/admin.pb.h"
#include "strata/v1/cluster.pb.h"
#include "strata/v1/data.pb.h"
#include "strata/v1/storage.pb.h"

namespace strata {

// Data service.
Status ValidateStreamRequest(const v1::StreamRequest& request);
// A ServeWork message: the first opens the stream (a valid StreamRequest with
// work), every later one is more work (at most kMaxWorkSteps steps and
// kMaxWorkIds samples; BatchStream::AddWork checks it against the plan).
Status ValidateWorkRequest(const v1::WorkRequest& request, bool first);
// "name@N": the index of a version, never "the latest".
Status ValidateStratumIndexRequest(const v1::StratumIndexRequest& request);
Status ValidateIngestOptions(const v1::IngestOptions& options);
// A writer's join, from another node: its options, and the node it names.
Status ValidateJoinIngest(const v1::JoinIngestRequest& request);
// An abort or a withdrawal from another node: a valid ingest id, or else
// (an operator's abort) "name@N". Its reason is cut to 1,000 bytes where kept.
Status ValidateAbortIngest(const v1::AbortIngestRequest& request);
// Whether `id` is a usable ingest id (several writers): 1 to 128 of [A-Za-z0-9._-].
bool ValidIngestId(const std::string& id);

// Admin service.
Status ValidateDescribeRequest(const v1::DescribeDatasetRequest& request);
// "name@N": a delete always names its version (never "the latest").
Status ValidateDeleteRequest(const v1::DeleteVersionRequest& request);

// Peer service.
Status ValidatePing(const v1::PingRequest& request);
Status ValidateReadRecords(const v1::ReadRecordsRequest& request);
Status ValidateListVersions(const v1::ListVersionsRequest& request);
Status ValidateListLocalFiles(const v1::ListLocalFilesRequest& request);

// A version's metadata from another node (PutVersion, anti-entropy): parses
// the records into *record and *shards and checks them: a valid name, a
// version >= 1, state sealed or aborted, a bounded coordinator node id, at most
// kMaxShardsPerVersion shards with distinct seqs, each at the path `dir`
// gives it (a peer never chooses a path).
Status ValidateVersionMeta(const v1::VersionMeta& meta, const DataDir& dir, v1::VersionRecord* record,
                           std::vector<v1::ShardRecord>* shards);

}  // namespace strata
