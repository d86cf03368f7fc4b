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

namespace {

// The sealed versions of `name` this node knows, ascending.
Result<std::vector<uint64_t>> SealedVersions(Catalog& catalog, const std::string& name) {
  auto versions = catalog.ListVersions(/*include_unsealed=*/false);
  if (!versions.ok()) return versions.status();
  std::vector<uint64_t> sealed;
  for (const auto& v : versions.value()) {
    if (v.info().name() == name) sealed.push_back(v.info().version());
  }
  std::sort(sealed.begin(), sealed.end());
  return sealed;
}

}  // namespace

Status VersionDeleter::CheckRetention(const std::string& name, uint64_t version, uint32_t keep) {
  if (keep == 0) return Status::OK();
  auto sealed = SealedVersions(*catalog_, name);
  if (!sealed.ok()) return sealed.status();
  const auto above = static_cast<size_t>(sealed->end() - std::upper_bound(sealed->begin(), sealed->end(), version));
  if (above < keep) return Status::OK();
  return Status::FailedPrecondition("keep_versions " + std::to_string(keep) + " keeps the newest sealed versions of '" +
                                    name + "', and " + std::to_string(above) + " are above version " +
                                    std::to_string(version) + " (the newest is " + std::to_string(sealed->back()) +
                                    "): it would not be kept. Ingest it without keep_versions, or as a version "
                                    "above " +
                                    std::to_string(sealed->back()));
}

Result<std::vector<uint64_t>> VersionDeleter::ApplyRetention(const std::string& name, uint32_t keep,
                                                             uint64_t sealed_version) {
  std::vector<uint64_t> doomed;
  if (keep == 0) return doomed;
  auto sealed = SealedVersions(*catalog_, name);
  if (!sealed.ok()) return sealed.status();
  if (sealed->size() <= keep) return doomed;
  // Older than the version whose seal applies it, never newer: one sealed
  // meanwhile by another ingest is not this retention's to delete.
  for (auto it = sealed->begin(); it != sealed->end() - keep; ++it) {
    if (*it < sealed_version) doomed.push_back(*it);
  }
  for (uint64_t v : doomed) {
    auto deleted = Delete(name, v);
    if (!deleted.ok())
      return deleted.status().WithContext("retention of '" + name + "' (keep " + std::to_string(keep) + " versions)");
  }
  spdlog::info("retention of '{}': kept the newest {} versions, deleted {}", name, keep, doomed.size());
  return doomed;
}

}  // namespace strata
