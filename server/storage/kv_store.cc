#include "server/storage/kv_store.h"

namespace strata {

// These names are the column families on disk: never rename one.
std::string_view KvSpaceName(KvSpace space) {
  switch (space) {
    case KvSpace::kDatasets: return "datasets";
    case KvSpace::kShards: return "shards";
    case KvSpace::kStrata: return "strata";
    case KvSpace::kCursors: return "cursors";
    case KvSpace::kNodes: return "nodes";
  }
  return "unknown";
}

}  // namespace strata
