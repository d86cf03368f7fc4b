// BatchStream's private parts that both of its files use (batch_stream.cc:
// opening, placement, claims and the plan ahead; batch_stream_build.cc:
// reading a claimed step into parts). Not for other users.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "server/serve/batch_stream.h"
#include "server/storage/shard_format.h"

namespace strata {

// What one Build (or PlanAhead) works in, kept from step to step so that its
// vectors keep their capacity.
struct BatchStream::Scratch {
  explicit Scratch(size_t num_shards) : readers(num_shards) {}

  // The reader of `shard` for this step: OpenVersion::Reader takes a lock, so
  // each step looks each of its shards up once. Forget starts a step (each
  // step looks its readers up again: a shard may have been replaced).
  const Result<std::shared_ptr<const ShardReader>>& Reader(const OpenVersion& version, size_t shard) {
    auto& slot = readers[shard];
    if (!slot) {
      slot.emplace(version.Reader(shard));
      shards.push_back(shard);
    }
    return *slot;
  }
  void Forget() {
    for (size_t shard : shards) readers[shard].reset();
    shards.clear();
  }

  std::vector<std::optional<Result<std::shared_ptr<const ShardReader>>>> readers;  // per shard
  std::vector<size_t> shards;                                                      // the shards `readers` holds
  // The step's samples this node reads from its own shards.
  struct LocalRead {
    uint32_t slot;
    uint64_t id;
    size_t shard;
    uint64_t record;
  };
  std::vector<LocalRead> reads;
  RecordView view;
};

// With a block cache, a step's payload's owner: its pinned blocks (unpinned
// once gRPC has sent the bytes) and the mappings its records point into.
struct BatchStream::StepOwner {
  std::shared_ptr<const void> pins;
  std::vector<std::shared_ptr<const void>> readers;
};

}  // namespace strata
