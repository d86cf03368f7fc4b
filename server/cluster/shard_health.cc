#include "server/cluster/shard_health.h"

#include "common/placement.h"
#include "server/cluster/file_placement.h"
#include "server/cluster/membership.h"
#include "server/storage/ec_stripes.h"

namespace strata {

ShardHealth CountShardHealth(const Catalog& catalog, const LocalFiles& files, const std::string& self,
                             const v1::ClusterMap& map) {
  ShardHealth out;
  const PlacementSet members(PlacementMembers(map));
  const auto versions = catalog.ListVersions(/*include_unsealed=*/false).value_or({});
  for (const auto& v : versions) {
    const auto& info = v.info();
    const auto shards = catalog.ListShards(info.name(), info.version()).value_or({});
    // Whether `file`'s holders serve it; counts a holder that is short.
    const auto live = [&](const v1::FileRef& file, bool* short_of_copies) {
      size_t readable = 0;
      for (const std::string& holder : FileHolders(info, file, members)) {
        const v1::NodeInfo* n = FindNode(map, holder);
        bool serves = n != nullptr && n->state() == v1::NODE_UP;
        if (serves && holder == self) serves = files.Has(file);
        readable += serves;
        *short_of_copies |= !serves;
      }
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
