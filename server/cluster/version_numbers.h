// VersionNumbers: the number of a new dataset version, chosen so that no two
// nodes ever give the same number to two ingests of one dataset, even when the
// dataset's home dies mid-ingest and another node takes the re-run while the
// old home restarts (docs/design.md, "Version numbers").
//
//   etcd membership: a counter per dataset in etcd, advanced by a
//     compare-and-swap on its key; every node agrees, numbers are contiguous.
//   static membership: no shared store, so a rule that cannot repeat: the
//     node at rank r (0: the home) of the dataset's placement order over the
//     S nodes of the configured list takes only numbers n with
//     (n - 1) mod S == r, each above every version of the dataset it knows.
//     The home numbers 1, 1+S, 1+2S...; a node standing in for it a disjoint
//     series. The configured list, not the map: a node down past the grace
//     period leaves the map, and S must not change with it.
//
// Thread-safety: safe for concurrent use. A node numbers one version at a
// time in etcd: its own concurrent ingests would otherwise race each other's
// compare-and-swaps, and one of six callers on three nodes lost all of its
// 32 attempts in about one run in ten of the concurrency test.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "server/cluster/etcd_client.h"
#include "server/storage/catalog.h"

namespace strata {

// The static rule: the smallest n > floor with (n - 1) mod slots == rank.
// REQUIRES: slots >= 1, rank < slots.
uint64_t StaticVersionNumber(uint64_t floor, uint32_t rank, uint32_t slots);

class VersionNumbers {
 public:
  // `etcd` (nullptr with static membership) holds the counters under
  // `etcd_prefix` + "versions/" + name. `static_members`: the ids of the
  // configured node list (static membership; this node alone if empty).
  // `catalog` must outlive this.
  VersionNumbers(const Catalog* catalog, std::unique_ptr<EtcdClient> etcd, std::string etcd_prefix,
                 std::vector<std::string> static_members);

  // A number for a new version of `name`, coordinated by `self`, above every
  // version of it this node knows. Unavailable if etcd cannot be reached (the
  // ingest is refused: no number is better than a repeated one);
  // FailedPrecondition if `self` is not in the static list.
  Result<uint64_t> Next(const std::string& name, const std::string& self) const;

 private:
  Result<uint64_t> HighestKnown(const std::string& name) const;
  // Next with etcd membership: the dataset's counter, advanced by a swap.
  Result<uint64_t> NextInEtcd(const std::string& name) const;

  const Catalog* const catalog_;
  const std::unique_ptr<EtcdClient> etcd_;
  const std::string etcd_prefix_;
  const std::vector<std::string> static_members_;
  // Held across a numbering in etcd, from reading the known versions to the
  // swap that takes the number.
  mutable Mutex etcd_mu_;
};

}  // namespace strata
