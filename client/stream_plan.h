// Private to libstrata. A stream's epoch plan computed on the client, and the
// work it gives each node (docs/design.md, "The client plans").
//
// StreamPlan holds what the plan needs, fetched once per stream from any node
// that answers: the version's info and shards (AdminService.DescribeDataset)
// and, for a stratified or weighted sampler, its stratum index
// (DataService.ReadStratumIndex), verified whole and against the version's
// stratum counts before it is used. Everything a node sends is checked: the
// shards must tile the version's ids, the index must be sound.
//
// WorkPlanner turns steps of the plan into each node's StreamRequest.work:
// every sample of the rank's batch goes to one of the nodes that placement
// (common/file_placement.h, common/placement.h) says may serve it (the live
// holders of its shard, those in the trainer's zone first): the one with the
// least work outstanding for this stream (assigned, not yet received), ties
// going to the holder the sample id hashes to; but the node a step's first
// sample goes to keeps every later sample of the step it may serve while its
// outstanding work is within one step's samples of the least. So the load
// spreads over every copy, step by step, a step comes in as few parts as
// placement allows (one, where every node holds every shard), and a node that
// is slow to deliver (busy with other jobs, a slow disk or link) is given
// less in the windows that follow. Slots already filled are left out, so a
// plan made again after a failover asks only for what is missing.
//
// Thread-safety: a StreamPlan is immutable; a WorkPlanner belongs to one stream.
#pragma once

#include <grpcpp/channel.h>

#include <chrono>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/id_ranges.h"
#include "common/mutex.h"
#include "common/placement.h"
#include "common/status.h"
#include "plan/epoch_plan.h"
#include "strata/v1/cluster.pb.h"
#include "strata/v1/data.pb.h"
#include "strata/v1/types.pb.h"

namespace strata::client_internal {

// Stratum indexes a client has fetched and verified, by "name@version", so
// that its streams (one an epoch) fetch a version's index once. Keeps the
// kCapacity most recently used. Thread-safe.
class StratumIndexCache {
 public:
  static constexpr size_t kCapacity = 4;
  // The index of `version`, or nullptr.
  std::shared_ptr<const StratumMembers> Find(const std::string& version);
  void Put(const std::string& version, std::shared_ptr<const StratumMembers> members);

 private:
  Mutex mu_;
  std::list<std::pair<std::string, std::shared_ptr<const StratumMembers>>> entries_ GUARDED_BY(mu_);  // newest first
};

class StreamPlan {
 public:
  // The plan of `request` (dataset "name" for the latest version, or
  // "name@N"; sampler, seed, epoch, batch size, world, remainder), read from
  // the node at `channel` within `timeout` per call. The node's errors as
  // they are (NotFound, InvalidArgument, ...); Internal if what it sent is
  // inconsistent, Corruption if the stratum index is damaged. With `indexes`,
  // a stratum index is taken from it when it holds the version's, and put
  // there once fetched.
  static Result<std::shared_ptr<const StreamPlan>> Load(const std::shared_ptr<grpc::Channel>& channel,
                                                        const v1::StreamRequest& request,
                                                        std::chrono::milliseconds timeout,
                                                        StratumIndexCache* indexes = nullptr);
  // From parts already checked: `shards` sorted by first_id, tiling the ids.
  static std::shared_ptr<const StreamPlan> Make(v1::DatasetInfo info, std::vector<v1::ShardInfo> shards,
                                                EpochPlan plan);

  const v1::DatasetInfo& info() const { return info_; }
  const EpochPlan& plan() const { return *plan_; }
  const std::vector<v1::ShardInfo>& shards() const { return shards_; }
  // Index into shards() of the shard holding `id`. REQUIRES: id < info().samples().
  size_t ShardOf(uint64_t id) const;

 private:
  void IndexShards();  // sets ids_ from shards_

  v1::DatasetInfo info_;
  std::vector<v1::ShardInfo> shards_;  // by first_id, tiling [0, samples)
  IdRanges ids_;                       // which of shards_ holds an id
  std::optional<EpochPlan> plan_;
};

// Whether `part` puts each of its samples at the slot the plan gives it:
// `ids` are the rank's ids of the part's step.
bool MatchesPlan(const v1::Batch& part, const std::vector<uint64_t>& ids);

class WorkPlanner {
 public:
  // Places over `map`'s nodes (with their zones and racks); `zone` is the
  // trainer's (empty: none).
  WorkPlanner(std::shared_ptr<const StreamPlan> plan, const v1::ClusterMap& map, const std::string& zone);

  // Nodes whose samples go to the others from now on. Forgets the work
  // outstanding (the calls it was given to are cancelled).
  void SetExcluded(const std::vector<std::string>& excluded);
  // `node` delivered `samples` of the work given to it.
  void Received(const std::string& node, uint64_t samples);
  // Samples given to `node` and not yet received (for tests and logs).
  uint64_t outstanding(const std::string& node) const;

  // The work of steps [from, to) per node, given the rank's ids of each of
  // those steps (`ids`, as EpochPlan::RankBatch gives them): one WorkStep for
  // every step of the range (empty where the node owes nothing of it), for
  // each node that owes anything; nodes that owe nothing are absent.
  // `filled(step)` gives the slots of `step` already filled (a flag a slot),
  // or null where none is: those slots are left out. Unavailable if every
  // member is excluded. REQUIRES: ids holds every step of [from, to).
  using Filled = std::function<const std::vector<bool>*(uint64_t step)>;
  Status Plan(uint64_t from, uint64_t to, const std::map<uint64_t, std::vector<uint64_t>>& ids, const Filled& filled,
              std::map<std::string, std::vector<v1::WorkStep>>* out);

 private:
  // A shard's possible servers, and their indexes into node_ids_.
  struct Servers {
    ShardServers servers;
    std::vector<uint32_t> index;
  };
  const Servers& ServersOf(size_t shard);

  const std::shared_ptr<const StreamPlan> plan_;
  const PlacementSet members_;
  std::vector<std::string> node_ids_;  // the map's, in its order
  std::vector<std::string> near_;
  std::vector<std::string> excluded_;
  std::vector<uint64_t> outstanding_;  // per node_ids_ entry
  // Per shard, computed on first use after each SetExcluded.
  std::vector<std::optional<Servers>> servers_;
};

}  // namespace strata::client_internal
