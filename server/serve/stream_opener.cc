#include "server/serve/stream_opener.h"

#include "common/dataset_ref.h"
#include "common/input_limits.h"

namespace strata {

StreamOpener::StreamOpener(DatasetCache* cache, const Catalog* catalog, Metrics* metrics, StreamLimits limits,
                           StreamServer server)
    : cache_(cache), catalog_(catalog), metrics_(metrics), limits_(limits), server_(std::move(server)) {}

Result<std::unique_ptr<BatchStream>> StreamOpener::Open(const v1::StreamRequest& request) const {
  return BatchStream::Open(request, cache_, catalog_, metrics_, limits_, server_);
}

Result<v1::StratumIndexChunk> StreamOpener::ReadStratumIndex(const v1::StratumIndexRequest& request) const {
  auto ref = ParseDatasetRef(request.dataset());
  if (!ref.ok()) return ref.status();
  auto version = cache_->Open(ref.value());
  if (!version.ok()) return version.status();
  v1::StratumIndexChunk chunk;
  uint64_t file_bytes = 0, checksum = 0;
  auto data =
      version.value()->ReadStratumIndex(request.offset(), InputLimits::kStratumIndexChunkBytes, &file_bytes, &checksum);
  if (!data.ok()) return data.status();
  *chunk.mutable_data() = std::move(data).value();
  chunk.set_file_bytes(file_bytes);
  chunk.set_file_checksum(checksum);
  return chunk;
}

}  // namespace strata
