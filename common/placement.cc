#include "common/placement.h"

#include <algorithm>
#include <map>
#include <utility>

#include "common/checksum.h"

namespace strata {

namespace {

constexpr uint64_t kNodeSeed = 0x5EED5EED5EED5EEDULL;

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

std::vector<PlacementMember> WithoutDomains(std::span<const std::string> members) {
  std::vector<PlacementMember> out;
  out.reserve(members.size());
  for (const auto& m : members) out.push_back({m, "", ""});
  return out;
}

std::vector<uint64_t> Weights(const PlacementSet& set, std::string_view file_key) {
  std::vector<uint64_t> w(set.size());
  for (size_t i = 0; i < w.size(); ++i) w[i] = set.Weight(file_key, i);
  return w;
}

std::vector<std::string> Ids(const PlacementSet& set, const std::vector<uint32_t>& indexes) {
  std::vector<std::string> out;
  out.reserve(indexes.size());
  for (uint32_t i : indexes) out.push_back(set.member(i).id);
  return out;
}

}  // namespace

std::string ShardFileKey(std::string_view dataset, uint64_t version, uint32_t seq) {
  return std::string(dataset) + "@" + std::to_string(version) + "/" + std::to_string(seq);
}

std::string StrataIndexFileKey(std::string_view dataset, uint64_t version) {
  return std::string(dataset) + "@" + std::to_string(version) + "/strata.idx";
}

std::string EcStripeKey(std::string_view dataset, uint64_t version, uint32_t stripe) {
  return std::string(dataset) + "@" + std::to_string(version) + "/stripe/" + std::to_string(stripe);
}

std::string DatasetHomeKey(std::string_view dataset) { return "dataset:" + std::string(dataset); }

uint64_t RendezvousWeight(std::string_view file_key, std::string_view node) {
  // Hash the node id, then use it as the seed for the file key: one pass over each.
  return Hash64(file_key, Hash64(node, kNodeSeed));
}

PlacementSet::PlacementSet(std::vector<PlacementMember> members) : members_(std::move(members)) {
  const size_t n = members_.size();
  seeds_.resize(n);
  domains_.resize(n);
  std::map<std::string, uint32_t> zones;
  std::map<std::pair<std::string, std::string>, uint32_t> racks;
  std::vector<uint32_t> by_id(n);
  for (uint32_t i = 0; i < n; ++i) {
    const PlacementMember& m = members_[i];
    seeds_[i] = Hash64(m.id, kNodeSeed);
    domains_[i].zone = zones.emplace(m.zone, static_cast<uint32_t>(zones.size())).first->second;
    domains_[i].rack = racks.emplace(std::make_pair(m.zone, m.rack), static_cast<uint32_t>(racks.size())).first->second;
    by_id[i] = i;
  }
  std::sort(by_id.begin(), by_id.end(), [&](uint32_t a, uint32_t b) { return members_[a].id < members_[b].id; });
  for (uint32_t r = 0; r < n; ++r) domains_[by_id[r]].id_rank = r;
  zone_count_ = zones.size();
  rack_count_ = racks.size();
}

uint64_t PlacementSet::Weight(std::string_view file_key, size_t i) const { return Hash64(file_key, seeds_[i]); }

void PlacementSet::RankSome(std::span<const uint64_t> weights, std::vector<uint32_t>* candidates) const {
  struct Entry {
    uint32_t member;
    uint32_t score_pos;   // position in plain weight order
    uint32_t rack_round;  // better nodes of its rack before it
    uint32_t zone_round;  // position in its zone's order
  };
  std::vector<uint32_t>& c = *candidates;
  std::sort(c.begin(), c.end(), [&](uint32_t a, uint32_t b) {
    return weights[a] != weights[b] ? weights[a] > weights[b] : domains_[a].id_rank < domains_[b].id_rank;
  });
  std::vector<Entry> e(c.size());
  // Per rack, its candidates seen so far (zeroed again below: one per thread, sized on demand).
  thread_local std::vector<uint32_t> seen_in_rack;
  if (seen_in_rack.size() < rack_count_) seen_in_rack.resize(rack_count_, 0);
  for (uint32_t p = 0; p < c.size(); ++p) {
    e[p] = {c[p], p, seen_in_rack[domains_[c[p]].rack]++, 0};
  }
  for (uint32_t m : c) seen_in_rack[domains_[m].rack] = 0;
  // A zone's order: its racks round by round, each round in weight order.
  std::sort(e.begin(), e.end(), [&](const Entry& a, const Entry& b) {
    const uint32_t za = domains_[a.member].zone, zb = domains_[b.member].zone;
    if (za != zb) return za < zb;
    return a.rack_round != b.rack_round ? a.rack_round < b.rack_round : a.score_pos < b.score_pos;
  });
  for (size_t i = 0; i < e.size(); ++i) {
    const bool same_zone = i > 0 && domains_[e[i].member].zone == domains_[e[i - 1].member].zone;
    e[i].zone_round = same_zone ? e[i - 1].zone_round + 1 : 0;
  }
  // The whole order: the zones round by round, each round in weight order.
  std::sort(e.begin(), e.end(), [](const Entry& a, const Entry& b) {
    return a.zone_round != b.zone_round ? a.zone_round < b.zone_round : a.score_pos < b.score_pos;
  });
  for (size_t i = 0; i < e.size(); ++i) c[i] = e[i].member;
}

void PlacementSet::Rank(std::span<const uint64_t> weights, std::vector<uint32_t>* out) const {
  out->resize(members_.size());
  for (uint32_t i = 0; i < out->size(); ++i) (*out)[i] = i;
  RankSome(weights, out);
}

void PlacementSet::Holders(std::span<const uint64_t> weights, uint32_t replication, std::vector<uint32_t>* out) const {
  out->clear();
  if (replication == 0) return;
  if (replication >= members_.size()) return Rank(weights, out);
  // Only a rack's best `replication` nodes can be among the first
  // `replication` of the ranked list: each further one has that many of its
  // rack, hence of its zone, hence of the whole order, before it.
  const size_t r = replication;
  const auto better = [&](uint32_t a, uint32_t b) {
    return weights[a] != weights[b] ? weights[a] > weights[b] : domains_[a].id_rank < domains_[b].id_rank;
  };
  std::vector<uint32_t> best(rack_count_ * r);
  std::vector<uint32_t> count(rack_count_, 0);
  for (uint32_t i = 0; i < members_.size(); ++i) {
    const size_t rack = domains_[i].rack;
    uint32_t* slot = &best[rack * r];
    uint32_t& n = count[rack];
    if (n == r && !better(i, slot[n - 1])) continue;
    size_t pos = n < r ? n++ : r - 1;  // insertion sort, best first
    while (pos > 0 && better(i, slot[pos - 1])) {
      slot[pos] = slot[pos - 1];
      --pos;
    }
    slot[pos] = i;
  }
  for (size_t rack = 0; rack < rack_count_; ++rack) {
    out->insert(out->end(), best.begin() + static_cast<ptrdiff_t>(rack * r),
                best.begin() + static_cast<ptrdiff_t>(rack * r + count[rack]));
  }
  RankSome(weights, out);
  out->resize(r);
}

std::vector<std::string> PlacementSet::RankIds(std::string_view file_key) const {
  std::vector<uint32_t> ranked;
  Rank(Weights(*this, file_key), &ranked);
  return Ids(*this, ranked);
}

std::vector<std::string> PlacementSet::HolderIds(std::string_view file_key, uint32_t replication) const {
  std::vector<uint32_t> holders;
  Holders(Weights(*this, file_key), replication, &holders);
  return Ids(*this, holders);
}

std::vector<std::string> RankMembers(std::string_view file_key, std::span<const PlacementMember> members) {
  return PlacementSet({members.begin(), members.end()}).RankIds(file_key);
}

std::vector<std::string> Holders(std::string_view file_key, std::span<const PlacementMember> members,
                                 uint32_t replication) {
  return PlacementSet({members.begin(), members.end()}).HolderIds(file_key, replication);
}

std::vector<std::string> RankMembers(std::string_view file_key, std::span<const std::string> members) {
  return RankMembers(file_key, WithoutDomains(members));
}

std::vector<std::string> Holders(std::string_view file_key, std::span<const std::string> members,
                                 uint32_t replication) {
  return Holders(file_key, WithoutDomains(members), replication);
}

uint32_t DefaultReplication(size_t members) {
  return static_cast<uint32_t>(std::min<size_t>(3, std::max<size_t>(1, members)));
}

namespace {

// The holders a sample of the shard is served from: the live ones (not in
// `excluded`), and of those only the ones in `near` when any are.
std::vector<const std::string*> ServingCandidates(std::span<const std::string> holders,
                                                  std::span<const std::string> excluded,
                                                  std::span<const std::string> near) {
  std::vector<const std::string*> live, live_near;
  for (const auto& h : holders) {
    if (Contains(excluded, h)) continue;
    live.push_back(&h);
    if (Contains(near, h)) live_near.push_back(&h);
  }
  return live_near.empty() ? live : live_near;
}

// With no live holder: the first ranked member not excluded.
const std::string* ServingFallback(std::span<const std::string> ranked, std::span<const std::string> excluded) {
  for (const auto& m : ranked) {
    if (!Contains(excluded, m)) return &m;
  }
  return nullptr;
}

}  // namespace

std::optional<std::string> ServingNode(std::span<const std::string> holders, std::span<const std::string> ranked,
                                       std::span<const std::string> excluded, uint64_t sample_id,
                                       std::span<const std::string> near) {
  const auto candidates = ServingCandidates(holders, excluded, near);
  if (!candidates.empty()) return *candidates[Mix(sample_id) % candidates.size()];
  const std::string* fallback = ServingFallback(ranked, excluded);
  if (fallback == nullptr) return std::nullopt;
  return *fallback;
}

ShardServing::ShardServing(std::span<const std::string> holders, std::span<const std::string> ranked,
                           std::span<const std::string> excluded, std::span<const std::string> near,
                           const std::string& self) {
  const auto candidates = ServingCandidates(holders, excluded, near);
  candidates_ = static_cast<uint32_t>(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (*candidates[i] == self) self_ = static_cast<int64_t>(i);
  }
  const std::string* fallback = candidates.empty() ? ServingFallback(ranked, excluded) : nullptr;
  fallback_self_ = fallback != nullptr && *fallback == self;
}

bool ShardServing::Serves(uint64_t sample_id) const {
  if (candidates_ == 0) return fallback_self_;
  return self_ >= 0 && Mix(sample_id) % candidates_ == static_cast<uint64_t>(self_);
}

ShardServers::ShardServers(std::span<const std::string> holders, std::span<const std::string> ranked,
                           std::span<const std::string> excluded, std::span<const std::string> near) {
  for (const std::string* c : ServingCandidates(holders, excluded, near)) nodes_.push_back(*c);
  if (nodes_.empty()) {
    const std::string* fallback = ServingFallback(ranked, excluded);
    if (fallback != nullptr) nodes_.push_back(*fallback);
    fallback_ = true;
  }
}

size_t ShardServers::Pick(uint64_t sample_id) const {
  return fallback_ ? 0 : static_cast<size_t>(Mix(sample_id) % nodes_.size());
}

}  // namespace strata
