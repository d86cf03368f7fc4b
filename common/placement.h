// Placement: which nodes hold a file and which one serves a sample.
//
// Rendezvous (highest-random-weight) hashing within failure domains. Every
// node gets a weight for a file key. The file's ranked list takes, round by
// round, the best node of each zone not yet drawn from in that round (and
// within a zone, racks the same way), in weight order; the first R hold a
// replica. So a file's R copies sit in R distinct zones whenever there are at
// least R zones, else spread over the zones as evenly as they can (then over
// racks, then nodes). Anyone with the member list computes it, so there is no
// lookup on the read path. Nodes with no zone form one zone "" (and nodes with
// no rack one rack "" of their zone): with no zones given, the ranked list is
// plain rendezvous order.
//
// Movement: without racks, a join changes a file's holders only by putting
// the new node in place of one old holder, and a leave only by replacing the
// leaver (about R/N of the files). With racks, a join that reorders a zone's
// racks can also, rarely, hand a copy from one old node to another.
//
// Thread-safety: pure functions; a PlacementSet is immutable once built.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

// "name@version/seq" for a shard; "name@version/strata.idx" for the index.
std::string ShardFileKey(std::string_view dataset, uint64_t version, uint32_t seq);
std::string StrataIndexFileKey(std::string_view dataset, uint64_t version);
// "name@version/stripe/g": the key that places stripe g of an erasure-coded
// version, whose chunk i (data shards first, then parity) goes to the i-th
// member of its ranked list (server/cluster/ec_stripes.h).
std::string EcStripeKey(std::string_view dataset, uint64_t version, uint32_t stripe);

// The weight of `node` for `file_key`.
uint64_t RendezvousWeight(std::string_view file_key, std::string_view node);

// A placement member: a node id and the failure domains it sits in.
struct PlacementMember {
  std::string id;
  std::string zone;  // "" : the zone of every node that names none
  std::string rack;  // within the zone; "" likewise
};

// Members prepared for placing many files: ids hashed once, zones and racks
// numbered. The core of every function below (and of bench/placement_sim).
class PlacementSet {
 public:
  // REQUIRES: distinct ids.
  explicit PlacementSet(std::vector<PlacementMember> members);

  size_t size() const { return members_.size(); }
  const PlacementMember& member(size_t i) const { return members_[i]; }
  size_t zones() const { return zone_count_; }
  // RendezvousWeight(file_key, member(i).id).
  uint64_t Weight(std::string_view file_key, size_t i) const;

  // Member indexes in ranked order, given each member's weight for the file
  // (`weights[i]` for member i). REQUIRES: weights.size() == size().
  void Rank(std::span<const uint64_t> weights, std::vector<uint32_t>* out) const;
  // The first min(replication, size()) of Rank, without ranking everyone.
  void Holders(std::span<const uint64_t> weights, uint32_t replication, std::vector<uint32_t>* out) const;
  // By file key, as ids: RankMembers and Holders below over this set.
  std::vector<std::string> RankIds(std::string_view file_key) const;
  std::vector<std::string> HolderIds(std::string_view file_key, uint32_t replication) const;

 private:
  struct Domain {
    uint32_t zone = 0;
    uint32_t rack = 0;     // numbered over every (zone, rack) pair
    uint32_t id_rank = 0;  // position in id order: breaks weight ties
  };
  // Ranks `candidates` (member indexes) in place.
  void RankSome(std::span<const uint64_t> weights, std::vector<uint32_t>* candidates) const;

  std::vector<PlacementMember> members_;
  std::vector<uint64_t> seeds_;
  std::vector<Domain> domains_;
  size_t zone_count_ = 0;
  size_t rack_count_ = 0;
};

// `members` in ranked order for the file.
std::vector<std::string> RankMembers(std::string_view file_key, std::span<const PlacementMember> members);
// The first min(replication, |members|) ranked members: the file's holders.
std::vector<std::string> Holders(std::string_view file_key, std::span<const PlacementMember> members,
                                 uint32_t replication);
// The same with every member in zone "": plain rendezvous order (ties: by node
// id). For keys placed by weight alone (a dataset's home node) and for tests.
std::vector<std::string> RankMembers(std::string_view file_key, std::span<const std::string> members);
std::vector<std::string> Holders(std::string_view file_key, std::span<const std::string> members, uint32_t replication);

// The key that places a dataset's home node: the first member up in its
// ranked list coordinates the dataset's ingests (and numbers its versions).
std::string DatasetHomeKey(std::string_view dataset);

// The replication factor a version gets when it asks for 0: min(3, members).
uint32_t DefaultReplication(size_t members);

// The node that serves sample `sample_id` of a shard whose holders are
// `holders` (in rank order): one of the holders not in `excluded`, spread
// over them by the sample id, so each sample always comes from the same
// replica (page-cache locality) and the load spreads evenly. When some live
// holders are in `near` (the reader's zone), the pick is among those only. If
// every holder is excluded, the first ranked member not excluded (it will
// fetch from a peer or report the loss); nullopt if every member is excluded.
std::optional<std::string> ServingNode(std::span<const std::string> holders, std::span<const std::string> ranked,
                                       std::span<const std::string> excluded, uint64_t sample_id,
                                       std::span<const std::string> near = {});

// ServingNode's answer to "is it `self`?" for every sample of one shard, for a
// reader whose excluded and near sets stay fixed (one stream): worked out
// once per shard, so that each sample costs a hash and a modulo instead of
// comparing node ids. Serves(id) == (ServingNode(..., id, ...) == self).
class ShardServing {
 public:
  ShardServing() = default;
  ShardServing(std::span<const std::string> holders, std::span<const std::string> ranked,
               std::span<const std::string> excluded, std::span<const std::string> near, const std::string& self);
  bool Serves(uint64_t sample_id) const;

 private:
  uint32_t candidates_ = 0;     // the live holders the pick is among (the near ones, when any)
  int64_t self_ = -1;           // self's position among them; -1: not among them
  bool fallback_self_ = false;  // no live holder: self is the first ranked member not excluded
};

// ServingNode for every sample of one shard, for a reader that plans (a
// client sending each node its work): the shard's possible servers worked
// out once, each sample then costs a hash and a modulo.
// nodes()[Pick(id)] == ServingNode(holders, ranked, excluded, id, near).
class ShardServers {
 public:
  ShardServers() = default;
  ShardServers(std::span<const std::string> holders, std::span<const std::string> ranked,
               std::span<const std::string> excluded, std::span<const std::string> near);
  // The nodes the shard's samples go to; empty when every member is excluded.
  const std::vector<std::string>& nodes() const { return nodes_; }
  // Index into nodes() of sample `sample_id`'s server. REQUIRES: !nodes().empty().
  size_t Pick(uint64_t sample_id) const;

 private:
  std::vector<std::string> nodes_;  // the live holders (near ones if any), or the one fallback
  bool fallback_ = false;
};

}  // namespace strata
