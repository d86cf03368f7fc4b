// The catalog's answers to `strata ls` and `strata describe`.
//
// Thread-safety: as the catalog (safe for concurrent use).
#pragma once

#include "common/status.h"
#include "server/storage/catalog.h"
#include "strata/v1/admin.pb.h"

namespace strata {

// Every version (sealed ones only unless the request includes unsealed).
Result<v1::ListDatasetsReply> ListDatasets(const Catalog& catalog, const v1::ListDatasetsRequest& request);
// A version ("name@version", or the latest sealed of "name") and its shards.
// InvalidArgument for a malformed name, NotFound for an unknown one.
Result<v1::DescribeDatasetReply> DescribeDataset(const Catalog& catalog, const v1::DescribeDatasetRequest& request);

}  // namespace strata
