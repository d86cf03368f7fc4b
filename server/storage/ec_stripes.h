// Erasure-coded versions (ec:K+M): which stripe a file belongs to, where its
// chunks live, and the parity of a stripe (docs/design.md, "Erasure coding").
//
// The data shards of an erasure-coded version are ordinary shard files,
// grouped in order into stripes of K: stripe g holds shards gK .. gK+K-1 (the
// last stripe may have fewer; the missing ones count as empty). Each stripe
// has M parity files (FileRef PARITY, seq g*M + p), Reed-Solomon over its
// data shards zero-padded to the longest. Chunk i of a stripe (data shards
// first, then parity) has one holder: the i-th member of the ranked list of
// EcStripeKey (zones-aware, common/placement.h), so a stripe's K+M chunks sit
// on K+M distinct nodes, in distinct zones where there are enough. A healthy
// read of a sample reads its data shard on that one node.
//
// Thread-safety: pure functions (WriteStripeParity writes files).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/placement.h"
#include "common/status.h"
#include "server/storage/data_dir.h"
#include "strata/v1/cluster.pb.h"
#include "strata/v1/types.pb.h"

namespace strata {

inline bool IsErasureCoded(const v1::DatasetInfo& info) { return info.ec_data() != 0 && info.ec_parity() != 0; }

// The stripe of a SHARD or PARITY file, and its chunk position in the stripe
// (0..K-1 data, K..K+M-1 parity). REQUIRES: k, m >= 1.
uint32_t StripeOf(const v1::FileRef& file, uint32_t k, uint32_t m);
uint32_t ChunkOf(const v1::FileRef& file, uint32_t k, uint32_t m);
// The file at `chunk` of `stripe`.
v1::FileRef StripeFile(const std::string& dataset, uint64_t version, uint32_t stripe, uint32_t chunk, uint32_t k,
                       uint32_t m);
// Stripes of a version of `shards` data shards.
uint32_t StripeCount(uint64_t shards, uint32_t k);

// The members in placement order for a file of an erasure-coded version: its
// stripe's ranked list, turned to start at the file's chunk (its holder first,
// then the members that take over from it, in order).
std::vector<std::string> EcRanked(const PlacementSet& members, const v1::FileRef& file, uint32_t k, uint32_t m);

// A SHARD or PARITY file's ranked members and holders for `info` (replicated:
// the shard's own ranked list and its first `replication` members, or the
// default for the member count; erasure-coded: EcRanked and its first).
std::vector<std::string> FileRanked(const v1::DatasetInfo& info, const v1::FileRef& file, const PlacementSet& members);
std::vector<std::string> FileHolders(const v1::DatasetInfo& info, const v1::FileRef& file, const PlacementSet& members);

// Computes and writes the M parity files of `stripe` from its data shards,
// which must all be in `dir` (`shards` is the version's data shard count so
// far: the stripe's shards past it count as empty). IOError if one cannot be
// read.
Status WriteStripeParity(const DataDir& dir, const std::string& dataset, uint64_t version, uint32_t stripe, uint32_t k,
                         uint32_t m, uint64_t shards);

}  // namespace strata
