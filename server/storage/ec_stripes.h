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
// Where a stripe's files live (StripeOf, EcRanked, FileHolders) is in
// common/file_placement.h, which clients use too.
//
// Thread-safety: pure functions (WriteStripeParity writes files).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/file_placement.h"
#include "common/placement.h"
#include "common/status.h"
#include "server/storage/data_dir.h"
#include "strata/v1/cluster.pb.h"
#include "strata/v1/types.pb.h"

namespace strata {

// Computes and writes the M parity files of `stripe` from its data shards,
// which must all be in `dir` (`shards` is the version's data shard count so
// far: the stripe's shards past it count as empty). IOError if one cannot be
// read.
Status WriteStripeParity(const DataDir& dir, const std::string& dataset, uint64_t version, uint32_t stripe, uint32_t k,
                         uint32_t m, uint64_t shards);

}  // namespace strata
