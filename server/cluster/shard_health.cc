#include "server/cluster/shard_health.h"

#include <algorithm>

#include "common/placement.h"
#include "server/cluster/file_placement.h"
#include "server/cluster/membership.h"
#include "server/storage/ec_stripes.h"

namespace strata {

ShardHealth CountShardHealth(const Catalog& catalog, const LocalFiles& files, const std::string& self,
                             const v1::ClusterMap& map, const HeldBy& held_by) {
  ShardHealth out;
  const PlacementSet members(PlacementMembers(map));
  const auto versions = catalog.ListVersions(/*include_unsealed=*/false).value_or({});
  for (const auto& v : versions) {
    const auto& info = v.info();
    const auto shards = catalog.ListShards(info.name(), info.version()).value_or({});
    // The copies of `file` that nodes up can serve, up to its holders' count;
    // short of that count, it sets *short_of_copies.
    const auto live = [&](const v1::FileRef& file, bool* short_of_copies) {
      const std::vector<std::string> holders = FileHolders(info, file, members);
      size_t readable = 0;
      for (const std::string& holder : holders) {
        const v1::NodeInfo* n = FindNode(map, holder);
        bool serves = n != nullptr && n->state() == v1::NODE_UP;
        if (serves && holder == self) serves = files.Has(file);
        readable += serves;
      }
      // A holder down: its copy may sit on a member ranked after the
      // holders, where the ingest (or a repair) put it instead.
      if (readable < holders.size()) {
        for (const std::string& id : FileRanked(info, file, members)) {
          if (readable >= holders.size()) break;
          if (std::find(holders.begin(), holders.end(), id) != holders.end()) continue;
          const v1::NodeInfo* n = FindNode(map, id);
          if (n == nullptr || n->state() != v1::NODE_UP) continue;
          readable += id == self ? files.Has(file) : held_by != nullptr && held_by(id, file);
        }
      }
      *short_of_copies |= readable < holders.size();
      return readable;
    };
    if (IsErasureCoded(info)) {
      // A stripe is short when a chunk's holder is; its data shards are
      // missing only with fewer than K chunks left (else a read rebuilds them).
      const uint32_t k = info.ec_data(), m = info.ec_parity();
      for (uint32_t g = 0; g < StripeCount(shards.size(), k); ++g) {
        bool short_of_copies = false;
        size_t chunks = 0, data = 0;
        for (uint32_t c = 0; c < k + m; ++c) {
          const v1::FileRef file = StripeFile(info.name(), info.version(), g, c, k, m);
          if (c < k && file.seq() >= shards.size()) {
            ++chunks;  // past the last shard: an empty chunk, nothing to lose
            continue;
          }
          data += c < k;
          chunks += live(file, &short_of_copies) > 0;
        }
        out.under_replicated += short_of_copies ? data : 0;
        out.missing += chunks < k ? data : 0;
      }
      continue;
    }
    for (const auto& s : shards) {
      bool short_of_copies = false;
      const size_t readable = live(ShardRef(info.name(), info.version(), s.info().seq()), &short_of_copies);
      out.under_replicated += short_of_copies;
      out.missing += readable == 0;
    }
  }
  return out;
}

}  // namespace strata
