// Datasets as a client sees them: the samples it ingests, the options of an
// ingest, and what a server reports about a dataset version.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "strata/status.h"

namespace strata {

// One named field of a sample, as in a WebDataset sample ("jpg", "cls", "json").
struct Field {
  std::string name;  // UTF-8
  std::string data;  // any bytes
};

// A sample as a client sends it at ingest. The server assigns its dense id.
struct Sample {
  // Where the sample came from (relative path, tar key): shown in errors and
  // duplicate reports. Not required to be unique. UTF-8.
  std::string key;
  std::string label;  // UTF-8
  // Extra columns (manifest fields, "source", timestamps); UTF-8. Stratum keys
  // are derived from the label and these at ingest.
  std::map<std::string, std::string> attributes;
  std::vector<Field> fields;
};

// When an ingest is acknowledged.
enum class WritePolicy : int {
  kSync = 0,    // after every replica of every shard is durable
  kAsync = 1,   // after one durable copy; the others follow in the background
  kQuorum = 2,  // after write_quorum durable copies
};

// How a version's records are stored on disk. Whatever it is, a stream
// delivers the bytes that were ingested (the server decompresses them).
enum class Compression : int {
  kNone = 0,
  kZstd = 1,  // blocks of about 64 KiB of records, each a zstd frame
};

struct IngestOptions {
  // "name" creates the next version; "name@N" names version N, which must not be sealed.
  std::string dataset;
  // Target shard file size; 0 (default) takes the server's default.
  uint64_t shard_target_bytes = 0;
  // Keys that form a sample's stratum: "label", "source", any attribute name.
  // Empty (default) means {"label"}.
  std::vector<std::string> stratify_by;
  // Time bucket over a timestamp attribute (unix seconds or ISO-8601), added
  // to the stratum key. Empty (default): none.
  std::string time_bucket_field;
  uint64_t time_bucket_seconds = 0;
  // Copies of every shard; 0 (default) takes min(3, nodes in the cluster).
  uint32_t replication = 0;
  WritePolicy write_policy = WritePolicy::kSync;
  // kQuorum: copies to wait for (1 <= W <= replication).
  uint32_t write_quorum = 0;
  Compression compression = Compression::kNone;
  // The codec's level (zstd: 1..19); 0 (default) takes the codec's default (zstd: 3).
  int compression_level = 0;
  // Records per compressed block, in bytes (4 KiB..16 MiB): a shuffled read
  // of one sample decompresses its whole block, and larger blocks compress
  // better. 0 (default): 64 KiB.
  uint32_t compression_block_bytes = 0;
  // Erasure coding ec:K+M instead of replication (both 0: replicated): K data
  // shards and M parity files a stripe, each on its own node; a healthy read
  // reads one node, and any M nodes of a stripe may be lost. 1 <= K, 1 <= M,
  // K + M <= 32 and at most the cluster's nodes; `replication` must be 0.
  uint32_t ec_data = 0;
  uint32_t ec_parity = 0;
  // Retention: once this version seals, the dataset's sealed versions older
  // than the newest keep_versions are deleted as by Client::DeleteVersion.
  // 0 (default): keep every version.
  uint32_t keep_versions = 0;
  // Several writers, one version: every writer sets the same ingest_id (1 to
  // 128 of [A-Za-z0-9._-]) and writers (1 to 1024), and its own writer (0 <=
  // writer < writers); `dataset` names the dataset only. Each writer may go
  // to any node; the version is sealed once, when the last writer commits,
  // with writer w's samples taking the ids after writer w-1's. Replicated
  // versions only. Empty ingest_id (default): one writer.
  std::string ingest_id;
  uint32_t writers = 0;
  uint32_t writer = 0;
};

// Lifecycle of a dataset version.
enum class VersionState : int {
  kUnspecified = 0,
  kIngesting = 1,  // open for samples
  kSealed = 2,     // immutable, servable
  kAborted = 3,    // ingest failed; files removed; its number is never reused
  kDeleted = 4,    // deleted (Client::DeleteVersion, retention); its number is never reused
};

struct StratumCount {
  std::string key;
  uint64_t count = 0;
};

// One version of a dataset, as its server describes it.
struct DatasetInfo {
  std::string name;
  uint64_t version = 0;
  VersionState state = VersionState::kUnspecified;
  uint64_t samples = 0;
  uint64_t bytes = 0;       // payload bytes
  uint64_t file_bytes = 0;  // shard bytes on disk (one replica)
  uint32_t shards = 0;
  std::vector<StratumCount> label_counts;
  std::vector<StratumCount> stratum_counts;
  std::vector<std::string> stratify_by;
  int64_t created_unix_ms = 0;
  int64_t sealed_unix_ms = 0;  // 0 until sealed
  uint64_t duplicate_samples = 0;
  std::string time_bucket_field;
  uint64_t time_bucket_seconds = 0;
  uint32_t replication = 0;
  WritePolicy write_policy = WritePolicy::kSync;
  uint32_t write_quorum = 0;
  std::string coordinator;  // the node that ingested it
  Compression compression = Compression::kNone;
  int compression_level = 0;             // as stored (zstd: 1..19)
  uint32_t compression_block_bytes = 0;  // as stored
  uint32_t ec_data = 0;                  // erasure coded ec:K+M: K (0: replicated)
  uint32_t ec_parity = 0;                // and M
  uint32_t keep_versions = 0;            // the retention it was ingested with (0: none)
};

// Client::DeleteVersion: what was deleted and which nodes have removed it.
struct DeleteResult {
  DatasetInfo dataset;                     // state kDeleted
  std::vector<std::string> nodes_told;     // other nodes that removed their copies before the reply
  std::vector<std::string> nodes_pending;  // down or unreachable: they remove theirs when they return
};

// One shard file of a version.
struct ShardInfo {
  uint32_t seq = 0;       // position within the version
  uint64_t first_id = 0;  // dense id of its first sample
  uint64_t samples = 0;
  uint64_t bytes = 0;
  uint64_t checksum = 0;  // XXH3-64 of the file body, as in its trailer
  // first_id minus the id the file's records carry: nonzero only for a shard
  // of a version written by several writers (their records count from 0).
  uint64_t id_offset = 0;
};

// Client::Describe: a version and its shards.
struct DatasetDescription {
  DatasetInfo dataset;
  std::vector<ShardInfo> shards;
};

// Sets `options`' ec_data and ec_parity from "ec:K+M" (what `strata ingest
// --redundancy` takes, e.g. "ec:4+2"). InvalidArgument naming the text unless
// it has that form with 1 <= K, 1 <= M and K + M <= 32; `options` is then
// unchanged.
Status SetRedundancy(std::string_view text, IngestOptions* options);

// Exact duplicate samples found at ingest: a few of their keys and how many.
struct DuplicateGroup {
  uint64_t hash_hi = 0;
  uint64_t hash_lo = 0;
  std::vector<std::string> keys;  // up to a few examples
  uint64_t count = 0;
};

// IngestWriter::Commit: the sealed version and examples of duplicates.
struct IngestSummary {
  DatasetInfo dataset;
  std::vector<DuplicateGroup> duplicate_examples;
  // Several writers: how many had committed when this one did. The version
  // is sealed (dataset.state) once writers_committed == writers.
  uint32_t writers_committed = 0;
  uint32_t writers = 0;
};

}  // namespace strata
