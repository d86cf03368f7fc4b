// StreamOpener: opens batch streams against this node's storage with the
// node's limits, its block cache and its RecordFetcher for records held
// elsewhere.
//
// Thread-safety: safe for concurrent use; each stream belongs to its caller.
#pragma once

#include <memory>

#include "server/base/metrics.h"
#include "server/serve/batch_stream.h"
#include "server/storage/catalog.h"
#include "server/storage/dataset_cache.h"

namespace strata {

class StreamOpener {
 public:
  // The pointers (and those in `server`) must outlive the opener and its streams.
  StreamOpener(DatasetCache* cache, const Catalog* catalog, Metrics* metrics, StreamLimits limits, StreamServer server);

  // As BatchStream::Open.
  Result<std::unique_ptr<BatchStream>> Open(const v1::StreamRequest& request) const;
  // A range of the stratum index of `dataset` ("name@N", sealed): as
  // OpenVersion::ReadStratumIndex, after the version is found (NotFound if not).
  Result<v1::StratumIndexChunk> ReadStratumIndex(const v1::StratumIndexRequest& request) const;

 private:
  DatasetCache* const cache_;
  const Catalog* const catalog_;
  Metrics* const metrics_;
  const StreamLimits limits_;
  const StreamServer server_;
};

}  // namespace strata
