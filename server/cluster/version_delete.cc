#include "server/cluster/version_delete.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace strata {

Result<VersionDeleter::Deleted> VersionDeleter::Delete(const std::string& name, uint64_t version) {
  auto tombstone = catalog_->MarkDeleted(name, version, view_->self_id());
  if (!tombstone.ok()) return tombstone.status();
  const std::string what = name + "@" + std::to_string(version);
  Status local = versions_->RemoveLocalCopy(name, version);
  if (!local.ok()) return local.WithContext("deleted " + what + " from the catalog but not its files here");
  VersionSync::BroadcastResult sent = versions_->Broadcast(name, version);
  spdlog::info("deleted {}: {} other nodes removed their copies, {} will when they return", what, sent.told.size(),
               sent.pending.size());
  return Deleted{tombstone->info(), std::move(sent.told), std::move(sent.pending)};
}

Result<std::vector<uint64_t>> VersionDeleter::ApplyRetention(const std::string& name, uint32_t keep) {
  std::vector<uint64_t> doomed;
  if (keep == 0) return doomed;
  auto versions = catalog_->ListVersions(/*include_unsealed=*/false);
  if (!versions.ok()) return versions.status();
  std::vector<uint64_t> sealed;
  for (const auto& v : versions.value()) {
    if (v.info().name() == name) sealed.push_back(v.info().version());
  }
  std::sort(sealed.begin(), sealed.end());
  if (sealed.size() <= keep) return doomed;
  doomed.assign(sealed.begin(), sealed.end() - keep);
  for (uint64_t v : doomed) {
    auto deleted = Delete(name, v);
    if (!deleted.ok())
      return deleted.status().WithContext("retention of '" + name + "' (keep " + std::to_string(keep) + " versions)");
  }
  spdlog::info("retention of '{}': kept the newest {} versions, deleted {}", name, keep, doomed.size());
  return doomed;
}

}  // namespace strata
