// BlockCache::StepBlocks (server/storage/block_cache.h): a step's blocks,
// each once, collected in an open-addressed table that is emptied by
// counting on.
#include <algorithm>

#include "server/storage/block_cache.h"

namespace strata {

size_t BlockCache::StepBlocks::SlotOf(const ShardReader* reader, uint64_t block) const {
  const size_t mask = slots_.size() - 1;
  uint64_t h = (reinterpret_cast<uintptr_t>(reader) >> 4) * 0x9E3779B97F4A7C15ull ^ block * 0xC2B2AE3D27D4EB4Full;
  size_t i = static_cast<size_t>(h ^ (h >> 29)) & mask;
  while (slots_[i].take == takes_ && (slots_[i].reader != reader || slots_[i].block != block)) i = (i + 1) & mask;
  return i;
}

void BlockCache::StepBlocks::Grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(std::max<size_t>(64, old.size() * 2), Slot{});
  for (const Slot& o : old) {
    if (o.take == takes_) slots_[SlotOf(o.reader, o.block)] = o;
  }
}

void BlockCache::StepBlocks::Add(const std::shared_ptr<const ShardReader>& reader, uint64_t begin, uint64_t end) {
  if (end <= begin) return;
  for (uint64_t b = begin / block_bytes_; b <= (end - 1) / block_bytes_; ++b) {
    const uint64_t first = std::max(begin, b * block_bytes_);
    const uint64_t bytes = std::min(end, (b + 1) * block_bytes_) - first;
    if ((blocks_.size() + 1) * 2 > slots_.size()) Grow();
    Slot& slot = slots_[SlotOf(reader.get(), b)];
    if (slot.take == takes_) {
      BlockRef& known = blocks_[slot.index];
      known.use_bytes += bytes;
      known.use_offset = std::min(known.use_offset, first);
      continue;
    }
    slot = Slot{reader.get(), b, static_cast<uint32_t>(blocks_.size()), takes_};
    blocks_.push_back(BlockRef{reader, b, bytes, first});
  }
}

std::vector<BlockCache::BlockRef> BlockCache::StepBlocks::Take() {
  if (slots_.size() > 4096 && blocks_.size() * 16 < slots_.size()) {
    slots_.clear();            // grown for a step of many more blocks: the next Add starts small
  } else if (++takes_ == 0) {  // after 2^32 takes: free the slots the old way, once
    slots_.assign(slots_.size(), Slot{});
    takes_ = 1;
  }
  std::vector<BlockRef> out = std::move(blocks_);
  blocks_.clear();
  return out;
}

}  // namespace strata
