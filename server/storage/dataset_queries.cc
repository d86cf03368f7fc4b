#include "server/storage/dataset_queries.h"

#include "common/dataset_ref.h"

namespace strata {

Result<v1::ListDatasetsReply> ListDatasets(const Catalog& catalog, const v1::ListDatasetsRequest& request) {
  auto versions = catalog.ListVersions(request.include_unsealed());
  if (!versions.ok()) return versions.status();
  v1::ListDatasetsReply reply;
  for (const auto& v : versions.value()) *reply.add_datasets() = v.info();
  return reply;
}

Result<v1::DescribeDatasetReply> DescribeDataset(const Catalog& catalog, const v1::DescribeDatasetRequest& request) {
  auto ref = ParseDatasetRef(request.dataset());
  if (!ref.ok()) return ref.status();
  auto record = ref->version ? catalog.GetVersion(ref->name, *ref->version) : catalog.LatestSealed(ref->name);
  if (!record.ok()) return record.status();
  auto shards = catalog.ListShards(ref->name, record->info().version());
  if (!shards.ok()) return shards.status();
  v1::DescribeDatasetReply reply;
  *reply.mutable_dataset() = record->info();
  for (const auto& s : shards.value()) *reply.add_shards() = s.info();
  return reply;
}

}  // namespace strata
