// Placement: which nodes hold a file and which one serves a sample.
//
// Rendezvous (highest-random-weight) hashing: every node gets a weight for a
// file key, and the members sorted by weight are the file's ranked list; the
// first R hold a replica. Anyone with the member list computes it, so there is
// no lookup on the read path, and a join or leave moves only the files whose
// top R changed (about R/N of them).
//
// Thread-safety: pure functions.
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

// The weight of `node` for `file_key`.
uint64_t RendezvousWeight(std::string_view file_key, std::string_view node);

// `members` ordered by descending weight for the file (ties: by node id).
std::vector<std::string> RankMembers(std::string_view file_key, std::span<const std::string> members);

// The first min(replication, |members|) ranked members: the file's holders.
std::vector<std::string> Holders(std::string_view file_key, std::span<const std::string> members,
                                 uint32_t replication);

// The key that places a dataset's home node: the first member up in its
// ranked list coordinates the dataset's ingests (and numbers its versions).
std::string DatasetHomeKey(std::string_view dataset);

// The replication factor a version gets when it asks for 0: min(3, members).
uint32_t DefaultReplication(size_t members);

// The node that serves sample `sample_id` of a shard whose holders are
// `holders` (in rank order): one of the holders not in `excluded`, spread
// over them by the sample id, so each sample always comes from the same
// replica (page-cache locality) and the load spreads evenly. If every holder
// is excluded, the first ranked member not excluded (it will fetch from a
// peer or report the loss); nullopt if every member is excluded.
std::optional<std::string> ServingNode(std::span<const std::string> holders, std::span<const std::string> ranked,
                                       std::span<const std::string> excluded, uint64_t sample_id);

}  // namespace strata
