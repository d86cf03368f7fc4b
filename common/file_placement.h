// Which nodes hold a version's files: the placement of a shard, a parity
// file or an erasure-coded stripe for a dataset version, from the version's
// DatasetInfo and the placement members (common/placement.h). Servers place
// and find copies with it; a client that plans its stream picks the node that
// serves each sample with it (docs/design.md, "Erasure coding", "Placement").
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/placement.h"
#include "strata/v1/cluster.pb.h"
#include "strata/v1/types.pb.h"

namespace strata {

v1::FileRef ShardRef(const std::string& dataset, uint64_t version, uint32_t seq);

// Every node of a cluster map with its zone and rack: what files are placed
// over (nodes that are down included: placement follows membership).
std::vector<PlacementMember> PlacementMembers(const v1::ClusterMap& map);
// The same, of the listed nodes for which `keep` is true.
std::vector<PlacementMember> PlacementMembers(const v1::ClusterMap& map,
                                              const std::function<bool(const v1::NodeInfo&)>& keep);

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

}  // namespace strata
