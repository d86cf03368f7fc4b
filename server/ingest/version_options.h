// What an ingest's options make of a version, before any sample: the
// options checked (shard size, compression, erasure code, stratum keys) and
// the record the version is created with. Shared by whole ingests and by the
// parts of an ingest with several writers, whose home creates the version.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/dataset_ref.h"
#include "common/status.h"
#include "server/ingest/stratum_key.h"
#include "server/storage/shard_format.h"
#include "strata/v1/data.pb.h"
#include "strata/v1/storage.pb.h"

namespace strata {

struct IngestLimits {
  uint64_t default_shard_target_bytes = 64ull << 20;
  uint64_t max_field_bytes = 1ull << 30;
  size_t max_label_bytes = 1024;
  size_t max_key_bytes = 4096;
  size_t max_attributes = 256;
  size_t max_fields = 64;
};

// The options, checked, and what follows from them.
struct CheckedIngestOptions {
  DatasetRef ref;
  uint64_t shard_target = 0;  // the options' or the limits' default
  ShardWriteOptions write_options;
  StratumKeyer keyer;
};

// InvalidArgument for options no version can have.
Result<CheckedIngestOptions> CheckIngestOptions(const v1::IngestOptions& options, const IngestLimits& limits);

// The VersionRecord an ingest creates its version with (VERSION_INGESTING):
// the options the version keeps.
v1::VersionRecord NewVersionRecord(const v1::IngestOptions& options, const CheckedIngestOptions& checked,
                                   const std::string& coordinator);

}  // namespace strata
