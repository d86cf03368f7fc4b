// Limits on what a request may carry, and how errors quote what they refuse.
//
// Every string and repeated field that arrives over the network is checked
// against one of these limits before any work is done with it, and the error
// names the limit. An error never echoes a whole bad value: it quotes at most
// kQuotedPrefixBytes of it and says how long it was, so a 100 MB name costs a
// 100-byte log line, not a 200 MB one.
//
// Thread-safety: constants and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace strata {

struct InputLimits {
  static constexpr size_t kMaxDatasetNameBytes = 128;  // also "name@N" minus the version
  static constexpr size_t kMaxDatasetRefBytes = 160;   // "name@18446744073709551615"
  static constexpr size_t kMaxJobIdBytes = 256;
  static constexpr size_t kMaxNodeIdBytes = 128;
  static constexpr size_t kMaxDomainNameBytes = 64;         // a zone or a rack
  static constexpr size_t kMaxAddressBytes = 300;           // HOST:PORT, a DNS name of up to 253 bytes
  static constexpr size_t kMaxMembers = 4096;               // StreamRequest.members, .excluded
  static constexpr size_t kMaxStratumKeyBytes = 1024;       // weights and min_per_batch keys
  static constexpr size_t kMaxWeights = 65536;              // SamplerSpec.weights, .min_per_batch entries
  static constexpr size_t kMaxStratifyBy = 16;              // IngestOptions.stratify_by
  static constexpr size_t kMaxFieldNameBytes = 256;         // stratify_by entries, time_bucket_field
  static constexpr size_t kMaxShardsPerVersion = 1u << 20;  // VersionMeta.shard_records
  static constexpr size_t kMaxRecordsPerRead = 65536;       // ReadRecordsRequest.indexes
  // A ReadRecords reply's records stop once they reach this many bytes (the
  // last may pass it): the request's indexes may repeat a record of up to
  // kMaxSampleBytes, and the reply is built in memory. The caller asks again
  // for the rest.
  static constexpr size_t kMaxReadReplyBytes = size_t{16} << 20;
  static constexpr size_t kMaxShardPathBytes = 512;
  static constexpr size_t kStratumIndexChunkBytes = 4u << 20;  // StratumIndexChunk.data
  static constexpr size_t kMaxWorkSteps = 4096;                // StreamRequest.work: steps in one request
  static constexpr size_t kMaxWorkIds = 1u << 22;              // StreamRequest.work: samples in one request
  static constexpr size_t kQuotedPrefixBytes = 40;
  // A sample's bytes: far above any sensible sample, below the server's
  // message limit. Sources stop reading a file or tar member past it.
  static constexpr size_t kMaxSampleBytes = size_t{64} << 20;
};

// 'abc' for a short value; 'abcdefgh…' (104857600 bytes) for a long one.
// Bytes outside printable ASCII are written as \xNN.
std::string QuotePrefix(std::string_view value);

// InvalidArgument "<what> is N bytes, over the limit of L: '<prefix>…'" unless
// value.size() <= limit.
Status CheckLength(std::string_view what, std::string_view value, size_t limit);

// A node id, zone or rack: at most `limit` bytes of letters, digits, '-',
// '_' and '.' (they appear in the --peers syntax, in metrics and in the CLI's
// tables). Empty passes: where a name is required, say so first.
Status CheckClusterName(std::string_view what, std::string_view name, size_t limit);

// InvalidArgument "<what> is N MiB; samples may be at most 64 MiB" unless
// bytes <= kMaxSampleBytes: a sample, a file or a tar member being read as one.
Status CheckSampleBytes(std::string_view what, uint64_t bytes);

// InvalidArgument "<what> has N entries, over the limit of L" unless count <= limit.
Status CheckCount(std::string_view what, size_t count, size_t limit);

}  // namespace strata
