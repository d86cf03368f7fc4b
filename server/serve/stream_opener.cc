#include "server/serve/stream_opener.h"

namespace strata {

StreamOpener::StreamOpener(DatasetCache* cache, const Catalog* catalog, Metrics* metrics, StreamLimits limits,
                           StreamServer server)
    : cache_(cache), catalog_(catalog), metrics_(metrics), limits_(limits), server_(std::move(server)) {}

Result<std::unique_ptr<BatchStream>> StreamOpener::Open(const v1::StreamRequest& request) const {
  return BatchStream::Open(request, cache_, catalog_, metrics_, limits_, server_);
}

}  // namespace strata
