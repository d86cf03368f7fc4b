#include "common/placement.h"

#include <algorithm>

#include "common/checksum.h"

namespace strata {

namespace {

bool Contains(std::span<const std::string> set, const std::string& x) {
  return std::find(set.begin(), set.end(), x) != set.end();
}

uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDULL;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ULL;
  return x ^ (x >> 33);
}

}  // namespace

std::string ShardFileKey(std::string_view dataset, uint64_t version, uint32_t seq) {
  return std::string(dataset) + "@" + std::to_string(version) + "/" + std::to_string(seq);
}

std::string StrataIndexFileKey(std::string_view dataset, uint64_t version) {
  return std::string(dataset) + "@" + std::to_string(version) + "/strata.idx";
}

std::string DatasetHomeKey(std::string_view dataset) { return "dataset:" + std::string(dataset); }

uint64_t RendezvousWeight(std::string_view file_key, std::string_view node) {
  // Hash the node id, then use it as the seed for the file key: one pass over each.
  return Hash64(file_key, Hash64(node, 0x5EED5EED5EED5EEDULL));
}

std::vector<std::string> RankMembers(std::string_view file_key, std::span<const std::string> members) {
  std::vector<std::pair<uint64_t, std::string>> weighted;
  weighted.reserve(members.size());
  for (const auto& m : members) weighted.emplace_back(RendezvousWeight(file_key, m), m);
  std::sort(weighted.begin(), weighted.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::vector<std::string> out;
  out.reserve(weighted.size());
  for (auto& [w, m] : weighted) out.push_back(std::move(m));
  return out;
}

std::vector<std::string> Holders(std::string_view file_key, std::span<const std::string> members,
                                 uint32_t replication) {
  std::vector<std::string> ranked = RankMembers(file_key, members);
  if (ranked.size() > replication) ranked.resize(replication);
  return ranked;
}

uint32_t DefaultReplication(size_t members) { return static_cast<uint32_t>(std::min<size_t>(3, std::max<size_t>(1, members))); }

std::optional<std::string> ServingNode(std::span<const std::string> holders, std::span<const std::string> ranked,
                                       std::span<const std::string> excluded, uint64_t sample_id) {
  size_t live = 0;
  for (const auto& h : holders) live += !Contains(excluded, h);
  if (live > 0) {
    size_t pick = static_cast<size_t>(Mix(sample_id) % live);
    for (const auto& h : holders) {
      if (Contains(excluded, h)) continue;
      if (pick-- == 0) return h;
    }
  }
  for (const auto& m : ranked) {
    if (!Contains(excluded, m)) return m;
  }
  return std::nullopt;
}

}  // namespace strata
