#include "common/file_placement.h"

#include <algorithm>

namespace strata {

std::vector<PlacementMember> PlacementMembers(const v1::ClusterMap& map) {
  return PlacementMembers(map, [](const v1::NodeInfo&) { return true; });
}

std::vector<PlacementMember> PlacementMembers(const v1::ClusterMap& map,
                                              const std::function<bool(const v1::NodeInfo&)>& keep) {
  std::vector<PlacementMember> out;
  for (const auto& n : map.nodes()) {
    if (keep(n)) out.push_back({n.id(), n.zone(), n.rack()});
  }
  return out;
}

v1::FileRef ShardRef(const std::string& dataset, uint64_t version, uint32_t seq) {
  v1::FileRef f;
  f.set_dataset(dataset);
  f.set_version(version);
  f.set_kind(v1::FileRef::SHARD);
  f.set_seq(seq);
  return f;
}

uint32_t StripeOf(const v1::FileRef& file, uint32_t k, uint32_t m) {
  return file.kind() == v1::FileRef::PARITY ? file.seq() / m : file.seq() / k;
}

uint32_t ChunkOf(const v1::FileRef& file, uint32_t k, uint32_t m) {
  return file.kind() == v1::FileRef::PARITY ? k + file.seq() % m : file.seq() % k;
}

v1::FileRef StripeFile(const std::string& dataset, uint64_t version, uint32_t stripe, uint32_t chunk, uint32_t k,
                       uint32_t m) {
  v1::FileRef f = ShardRef(dataset, version, stripe * k + chunk);
  if (chunk >= k) {
    f.set_kind(v1::FileRef::PARITY);
    f.set_seq(stripe * m + (chunk - k));
  }
  return f;
}

uint32_t StripeCount(uint64_t shards, uint32_t k) { return static_cast<uint32_t>((shards + k - 1) / k); }

std::vector<std::string> EcRanked(const PlacementSet& members, const v1::FileRef& file, uint32_t k, uint32_t m) {
  std::vector<std::string> ranked = members.RankIds(EcStripeKey(file.dataset(), file.version(), StripeOf(file, k, m)));
  if (ranked.empty()) return ranked;
  const size_t chunk = ChunkOf(file, k, m) % ranked.size();
  std::rotate(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(chunk), ranked.end());
  return ranked;
}

std::vector<std::string> FileRanked(const v1::DatasetInfo& info, const v1::FileRef& file, const PlacementSet& members) {
  if (IsErasureCoded(info)) return EcRanked(members, file, info.ec_data(), info.ec_parity());
  return members.RankIds(ShardFileKey(file.dataset(), file.version(), file.seq()));
}

std::vector<std::string> FileHolders(const v1::DatasetInfo& info, const v1::FileRef& file,
                                     const PlacementSet& members) {
  if (IsErasureCoded(info)) {
    std::vector<std::string> ranked = EcRanked(members, file, info.ec_data(), info.ec_parity());
    // Fewer members than chunks (a cluster shrunk below K+M): chunks share
    // nodes; the turned list still gives each its own first choice.
    ranked.resize(std::min<size_t>(ranked.size(), 1));
    return ranked;
  }
  const uint32_t r = info.replication() != 0 ? info.replication() : DefaultReplication(members.size());
  return members.HolderIds(ShardFileKey(file.dataset(), file.version(), file.seq()), r);
}

}  // namespace strata
