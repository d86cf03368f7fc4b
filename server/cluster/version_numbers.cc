#include "server/cluster/version_numbers.h"

#include <algorithm>
#include <charconv>

#include "common/dataset_ref.h"
#include "common/placement.h"

namespace strata {

uint64_t StaticVersionNumber(uint64_t floor, uint32_t rank, uint32_t slots) {
  // n = 1 + rank + k * slots for the smallest k with n > floor.
  const uint64_t first = 1 + uint64_t{rank};
  if (floor < first) return first;
  const uint64_t k = (floor - first) / slots + 1;
  return first + k * slots;
}

VersionNumbers::VersionNumbers(const Catalog* catalog, std::unique_ptr<EtcdClient> etcd, std::string etcd_prefix,
                               std::vector<std::string> static_members)
    : catalog_(catalog),
      etcd_(std::move(etcd)),
      etcd_prefix_(std::move(etcd_prefix)),
      static_members_(std::move(static_members)) {}

Result<uint64_t> VersionNumbers::HighestKnown(const std::string& name) const {
  auto versions = catalog_->ListVersions(/*include_unsealed=*/true);
  if (!versions.ok()) return versions.status();
  uint64_t highest = 0;
  for (const auto& v : versions.value()) {
    if (v.info().name() == name) highest = std::max(highest, v.info().version());
  }
  return highest;
}

Result<uint64_t> VersionNumbers::Next(const std::string& name, const std::string& self) const {
  if (etcd_ != nullptr) return NextInEtcd(name);
  auto known = HighestKnown(name);
  if (!known.ok()) return known.status();
  const std::vector<std::string> members = static_members_.empty() ? std::vector<std::string>{self} : static_members_;
  const std::vector<std::string> ranked = RankMembers(DatasetHomeKey(name), members);
  const auto at = std::find(ranked.begin(), ranked.end(), self);
  if (at == ranked.end()) return Status::FailedPrecondition("node " + self + " is not in the configured node list");
  STRATA_RETURN_IF_ERROR(NextDatasetVersion(name, known.value()).status());
  const uint64_t n = StaticVersionNumber(known.value(), static_cast<uint32_t>(at - ranked.begin()),
                                         static_cast<uint32_t>(ranked.size()));
  if (n > kMaxDatasetVersion) return NextDatasetVersion(name, kMaxDatasetVersion);  // the error
  return n;
}

Result<uint64_t> VersionNumbers::NextInEtcd(const std::string& name) const {
  // One numbering at a time per node (see the header): a lost swap then means
  // another node took a number, and the loser tries again at once from the
  // value the swap returned, ahead of that node's next read.
  MutexLock lock(&etcd_mu_);
  auto known = HighestKnown(name);
  if (!known.ok()) return known.status();
  const std::string key = etcd_prefix_ + "versions/" + name;
  auto read = etcd_->Get(key);
  if (!read.ok())
    return Status::Unavailable("numbering a version of '" + name + "' in etcd: " + read.status().ToString());
  std::optional<EtcdKeyValue> current;
  if (!read->kvs.empty()) current = read->kvs.front();
  for (int attempt = 0; attempt < 32; ++attempt) {
    uint64_t counter = 0;
    if (current) {
      const std::string& v = current->value;
      if (std::from_chars(v.data(), v.data() + v.size(), counter).ec != std::errc()) {
        return Status::Internal("etcd key " + key + " does not hold a version number");
      }
    }
    auto following = NextDatasetVersion(name, std::max(counter, known.value()));
    if (!following.ok()) return following.status();
    const uint64_t next = following.value();
    auto cas = etcd_->CompareAndSwap(key, current ? current->mod_revision : 0, std::to_string(next));
    if (!cas.ok())
      return Status::Unavailable("numbering a version of '" + name + "' in etcd: " + cas.status().ToString());
    if (cas->swapped) return next;
    current = cas->current;  // another node took a number meanwhile: go above it
  }
  return Status::Unavailable("numbering a version of '" + name + "': etcd's counter kept changing; retry");
}

}  // namespace strata
