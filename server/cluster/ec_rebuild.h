// Rebuilding one chunk (a data shard or a parity file) of an erasure-coded
// stripe from K others: what a degraded read does for a shard whose holder is
// down (server/cluster/peer_records.h) and what repair does for a chunk no
// node holds any more (server/cluster/repairer.h).
//
// The other chunks of the stripe are read whole, from this node when it holds
// them, else from the nodes that are up in their placement order (the peer
// service's GetFile), until K are in hand; the wanted chunk is decoded
// (server/storage/erasure_code.h) and committed like a received copy
// (server/cluster/file_transfer.h: verified by its own format's checksums and
// identity, then linked into place), so a wrong or damaged source can never
// produce a file that is served. Memory: K + 1 chunks of the stripe's longest
// data shard.
//
// The scrubber uses the same reads to check a parity file against its
// stripe: the parity its K data shards give must be the parity file held,
// which a parity file's own checksums cannot tell (a parity file written
// wrong but checksummed right).
//
// Thread-safety: safe for concurrent use for different files; two rebuilds
// of one file race harmlessly (the first committed copy wins).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "common/status.h"
#include "server/cluster/cluster_view.h"
#include "server/cluster/peer_clients.h"
#include "server/cluster/rate_limiter.h"
#include "server/storage/data_dir.h"
#include "server/storage/local_files.h"
#include "strata/v1/cluster.pb.h"
#include "strata/v1/types.pb.h"

namespace strata {

struct RebuildDeps {
  const ClusterView* view = nullptr;
  PeerClients* peers = nullptr;
  const DataDir* dir = nullptr;
  LocalFiles* files = nullptr;
};

// Rebuilds `file` (a SHARD or PARITY of the erasure-coded version `info`,
// whose data shards are `shards`, in seq order, with their catalog lengths
// and checksums) here and adds it to the local files. Returns the bytes read
// to do it. A data shard that does not match its catalog checksum is never a
// source (the next chunk of the stripe is read instead), and a rebuilt data
// shard that fails its checks is decoded again without each parity file it
// used. `limiter` (may be null) paces the reads. Unavailable naming the file
// if fewer than K other intact chunks could be read; InvalidArgument if the
// version is not erasure coded or the file is not one of its chunks;
// Corruption if the result fails its checks.
Result<uint64_t> RebuildChunk(const RebuildDeps& d, const v1::DatasetInfo& info,
                              const std::vector<v1::ShardInfo>& shards, const v1::FileRef& file, RateLimiter* limiter);

// Checks the parity file `file`, held here, of the erasure-coded version
// `info` (whose data shards are `shards`, in seq order, with their catalog
// lengths and checksums): recomputes it from its stripe's K data shards
// (local, else read from the nodes that are up; a shard that does not match
// its catalog checksum is not used) and compares it with the file. Memory:
// as RebuildChunk, plus the file. `pace` (may be empty) is called with each
// piece's size before it is read, local or remote; false stops the check
// with Cancelled. Returns the bytes read. Corruption naming the file if it
// differs; Unavailable if a data shard could not be read intact (nothing is
// known about the file then); NotFound if it is not held here;
// InvalidArgument if it is not a parity file of `info`.
Result<uint64_t> CheckStripeParity(const RebuildDeps& d, const v1::DatasetInfo& info,
                                   const std::vector<v1::ShardInfo>& shards, const v1::FileRef& file,
                                   const std::function<bool(size_t)>& pace);

}  // namespace strata
