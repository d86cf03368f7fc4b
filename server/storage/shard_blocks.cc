// Shard format 4: records in compressed blocks (server/storage/shard_format.h).
// The writer's block assembly and the reader's block reads; everything a
// block says about itself is untrusted until its checksum has matched, and
// its decompressed bytes are checked against the lengths it declared.
#include <zstd.h>

#include <atomic>
#include <climits>
#include <cstring>

#include "common/checksum.h"
#include "common/file_util.h"
#include "common/little_endian.h"
#include "server/storage/decompressed_cache.h"
#include "server/storage/shard_format.h"

namespace strata {
namespace {

// A block's records are handed out as views of one decompressed buffer; a
// block holds at most one record over kCompressedBlockBytes, whose payload
// the writer bounds at 4 GiB.
constexpr uint64_t kMaxRawBlockBytes = (uint64_t{4} << 30) + (uint64_t{64} << 20);
constexpr uint64_t kEntryOffsetBits = 32;
constexpr uint64_t kEntryOffsetMask = (uint64_t{1} << kEntryOffsetBits) - 1;

ZSTD_DCtx* ThreadDCtx() {
  struct Free {
    void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
  };
  thread_local std::unique_ptr<ZSTD_DCtx, Free> dctx(ZSTD_createDCtx());
  return dctx.get();
}

}  // namespace

Status ValidateCompression(v1::Compression compression, int level) {
  switch (compression) {
    case v1::COMPRESSION_NONE:
      if (level != 0) return Status::InvalidArgument("a compression level needs a codec");
      return Status::OK();
    case v1::COMPRESSION_ZSTD:
      if (level < 0 || level > 19) {
        return Status::InvalidArgument("zstd level " + std::to_string(level) + " is outside 1..19");
      }
      return Status::OK();
    default:
      return Status::InvalidArgument("unknown compression codec " + std::to_string(static_cast<int>(compression)));
  }
}

void ShardWriter::ZstdCCtxFree::operator()(void* c) const { ZSTD_freeCCtx(static_cast<ZSTD_CCtx*>(c)); }

Status ShardWriter::AppendToBlock(std::string_view framed) {
  // An entry holds a 32-bit offset: a record that would start past it opens a block.
  if (block_.size() > kEntryOffsetMask) STRATA_RETURN_IF_ERROR(CloseBlock());
  record_offsets_.push_back(static_cast<uint64_t>(block_offsets_.size()) << kEntryOffsetBits | block_.size());
  block_.append(framed);
  if (block_.size() >= options_.block_bytes) return CloseBlock();
  return Status::OK();
}

Status ShardWriter::CloseBlock() {
  if (block_.empty()) return Status::OK();
  if (block_offsets_.size() > kEntryOffsetMask) {
    return Fail(Status::InvalidArgument("shard " + path_ + " has too many blocks"));
  }
  if (!cctx_) cctx_.reset(ZSTD_createCCtx());
  auto* cctx = static_cast<ZSTD_CCtx*>(cctx_.get());
  if (cctx == nullptr) return Fail(Status::Internal("zstd could not create a compression context"));
  const int level = options_.level == 0 ? kDefaultZstdLevel : options_.level;
  stored_.resize(kBlockHeaderSize + ZSTD_compressBound(block_.size()));
  const size_t n = ZSTD_compressCCtx(cctx, stored_.data() + kBlockHeaderSize, stored_.size() - kBlockHeaderSize,
                                     block_.data(), block_.size(), level);
  if (ZSTD_isError(n)) {
    return Fail(Status::Internal("zstd failed on a block of " + path_ + ": " + ZSTD_getErrorName(n)));
  }
  stored_.resize(kBlockHeaderSize + n);
  std::string lengths;
  PutU64(&lengths, block_.size());
  PutU64(&lengths, n);
  std::memcpy(stored_.data(), lengths.data(), kBlockHeaderSize);
  PutU64(&stored_, Checksum64(stored_));
  block_offsets_.push_back(out_.size());
  block_.clear();
  return Write(stored_);
}

void ShardWriter::AppendTables(std::string* footer) const {
  const bool compressed = options_.compression != v1::COMPRESSION_NONE;
  footer->reserve(16 + 8 * (record_offsets_.size() + block_offsets_.size()) + 64);
  PutU64(footer, record_offsets_.size());
  footer->append(reinterpret_cast<const char*>(record_offsets_.data()), 8 * record_offsets_.size());
  if (!compressed) return;
  PutU64(footer, block_offsets_.size());
  footer->append(reinterpret_cast<const char*>(block_offsets_.data()), 8 * block_offsets_.size());
}

Status ShardReader::CheckBlockLayout(const char* footer, uint64_t footer_len, uint64_t footer_checksum) {
  auto corrupt = [this](const std::string& what) { return Status::Corruption("shard " + path_ + ": " + what); };
  // u64 count | u64 entries[count] | u64 block_count | u64 blocks[block_count] | ShardFooter.
  if (footer_len < 16) return corrupt("footer too short");
  const uint64_t count = LoadU64(footer);
  if (count > (footer_len - 16) / 8) return corrupt("record count out of range");
  const char* blocks_at = footer + 8 + 8 * count;
  const uint64_t block_count = LoadU64(blocks_at);
  if (block_count > (footer_len - 16 - 8 * count) / 8) return corrupt("block count out of range");
  const uint64_t tables_end = 16 + 8 * count + 8 * block_count;
  Checksum64Stream sum;
  sum.Update(footer, 8);
  sum.Update(blocks_at, 8);
  sum.Update(footer + tables_end, footer_len - tables_end);
  if (sum.Digest() != footer_checksum) return corrupt("footer checksum mismatch");
  if (!footer_.ParseFromArray(footer + tables_end, static_cast<int>(footer_len - tables_end)) ||
      footer_.record_offsets_size() != 0 || footer_.compression() != v1::COMPRESSION_ZSTD) {
    return corrupt("footer does not parse");
  }
  records_ = count;
  blocks_ = block_count;
  static std::atomic<uint64_t> next_serial{1};
  serial_ = next_serial.fetch_add(1, std::memory_order_relaxed);
  offset_table_ = footer + 8;
  block_table_ = blocks_at + 8;
  if ((count == 0) != (block_count == 0)) return corrupt("records without blocks");
  if (block_count == 0 ? records_end_ != kShardHeaderSize
                       : BlockOffset(0) != kShardHeaderSize || BlockOffset(block_count - 1) >= records_end_) {
    return corrupt("block offsets out of range");
  }
  return Status::OK();
}

uint64_t ShardReader::BlockOffset(uint64_t b) const { return LoadU64(block_table_ + 8 * b); }

Result<std::shared_ptr<const std::string>> ShardReader::Block(uint64_t b) const {
  DecompressedCache& cache = DecompressedCache::Process();
  if (auto hit = cache.Find(serial_, b)) return hit;
  auto corrupt = [&](const std::string& what) {
    return Status::Corruption("shard " + path_ + " block " + std::to_string(b) + ": " + what);
  };
  if (b >= blocks_) return corrupt("past the block table");
  const uint64_t begin = BlockOffset(b);
  const uint64_t end = b + 1 < blocks_ ? BlockOffset(b + 1) : records_end_;
  if (begin < kShardHeaderSize || end > records_end_ || begin >= end || end - begin < kBlockHeaderSize + 8) {
    return corrupt("offsets out of range");
  }
  std::string stored(end - begin, '\0');
  STRATA_RETURN_IF_ERROR(PReadExactFd(fd_.get(), stored.data(), stored.size(), begin, path_));
  const uint64_t raw_len = LoadU64(stored.data());
  const uint64_t stored_len = LoadU64(stored.data() + 8);
  if (stored_len != stored.size() - kBlockHeaderSize - 8) return corrupt("length does not match its offsets");
  // The checksum first: nothing a damaged block says is acted on.
  if (Checksum64(stored.data(), kBlockHeaderSize + stored_len) !=
      LoadU64(stored.data() + kBlockHeaderSize + stored_len)) {
    return corrupt("checksum mismatch");
  }
  const char* frame = stored.data() + kBlockHeaderSize;
  if (raw_len == 0 || raw_len > kMaxRawBlockBytes || ZSTD_getFrameContentSize(frame, stored_len) != raw_len) {
    return corrupt("declared size out of range");
  }
  auto raw = std::make_shared<std::string>();
  raw->resize(raw_len);
  ZSTD_DCtx* dctx = ThreadDCtx();
  if (dctx == nullptr) return Status::Internal("zstd could not create a decompression context");
  const size_t n = ZSTD_decompressDCtx(dctx, raw->data(), raw->size(), frame, stored_len);
  if (ZSTD_isError(n) || n != raw_len) {
    return corrupt(std::string("does not decompress: ") + (ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short"));
  }
  std::shared_ptr<const std::string> block = std::move(raw);
  cache.Insert(serial_, b, block);
  return block;
}

Status ShardReader::BlockRecord(uint64_t index, std::shared_ptr<const std::string>* block,
                                std::string_view* raw) const {
  if (index >= num_records()) {
    return Status::OutOfRange("record " + std::to_string(index) + " past the end of " + path_ + " (" +
                              std::to_string(num_records()) + " records)");
  }
  const uint64_t entry = RecordOffset(index);
  const uint64_t b = entry >> kEntryOffsetBits;
  auto got = Block(b);
  if (!got.ok()) return got.status();
  const std::string& bytes = *got.value();
  const uint64_t begin = entry & kEntryOffsetMask;
  uint64_t end = bytes.size();
  if (index + 1 < num_records() && (RecordOffset(index + 1) >> kEntryOffsetBits) == b) {
    end = RecordOffset(index + 1) & kEntryOffsetMask;
  }
  if (begin >= end || end > bytes.size()) {
    return Status::Corruption("shard " + path_ + " record " + std::to_string(index) + ": offsets out of range");
  }
  *raw = std::string_view(bytes).substr(begin, end - begin);
  *block = std::move(got).value();
  return Status::OK();
}

Status ShardReader::ReadBlockRecord(uint64_t index, std::shared_ptr<const std::string>* block, RecordView* out) const {
  out->Clear();
  if (!compressed()) return Status::FailedPrecondition("shard " + path_ + " is not compressed");
  std::string_view raw;
  STRATA_RETURN_IF_ERROR(BlockRecord(index, block, &raw));
  return ParseRaw(index, raw, out);
}

}  // namespace strata
