// ShardReader: maps a shard file and checks every byte it hands out. All input
// is untrusted: each length and offset is bounds-checked before it is used,
// and a record's bytes are checksummed before its header is parsed.
#include <errno.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <iterator>
#include <optional>
#include <utility>
#include <vector>

#include "common/checksum.h"
#include "common/file_env.h"
#include "common/file_util.h"
#include "common/little_endian.h"
#include "common/unique_fd.h"
#include "server/storage/decompressed_cache.h"
#include "server/storage/shard_format.h"

namespace strata {
namespace {

// PrefetchRecord loads small records whole (their checksum reads every byte)
// and the start of larger ones, whose sequential reads the CPU's own
// prefetcher follows.
constexpr uint64_t kCacheLineBytes = 64;
constexpr uint64_t kPrefetchRecordBytes = 4096;

// The page-aligned part of the mapping that covers [offset, offset + len) of a
// file of `size` bytes mapped at `base`, or an empty range.
std::pair<char*, size_t> PageSpan(const char* base, uint64_t size, uint64_t offset, uint64_t len) {
  static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  if (offset >= size || len == 0) return {nullptr, 0};
  const uint64_t end = std::min(size, offset + std::min(len, size - offset));
  const uint64_t first = offset / page * page;
  return {const_cast<char*>(base) + first, static_cast<size_t>(end - first)};
}

// The size of a page-cache folio that a mapping can map with one entry.
constexpr uint64_t kFolioBytes = 2ull << 20;

// Refill gives up once kRefillTries of its blocks came back mapped page by
// page, unless one came back in a 2 MiB entry before.
constexpr int kRefillTries = 8;
std::atomic<bool> refills_work{true};
std::atomic<bool> refills_worked{false};
std::atomic<int> refills_failed{0};

// PAGEMAP_SCAN (Linux 6.7, include/uapi/linux/fs.h; defined here for older
// headers): which pages of a range this process maps, and which of them
// through a huge (2 MiB) entry.
struct PageRegion {
  uint64_t start, end, categories;
};
struct PagemapScanArg {
  uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages, category_inverted, category_mask,
      category_anyof_mask, return_mask;
};
constexpr unsigned long kPagemapScan = _IOWR('f', 16, PagemapScanArg);
constexpr uint64_t kPageIsPresent = 1u << 3;
constexpr uint64_t kPageIsHuge = 1u << 6;

// How many of the pages of [at, at + bytes) the page cache holds, and of how
// many (mincore); nullopt where the kernel cannot say.
std::optional<std::pair<size_t, size_t>> ResidentPages(const char* at, size_t bytes) {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t pages = (bytes + page - 1) / page;
  unsigned char small[64];
  std::vector<unsigned char> large(pages > sizeof small ? pages : 0);
  unsigned char* in = large.empty() ? small : large.data();
  if (mincore(const_cast<char*>(at), bytes, in) != 0) return std::nullopt;
  return std::pair<size_t, size_t>(std::count_if(in, in + pages, [](unsigned char c) { return (c & 1) != 0; }), pages);
}

enum class Mapping { kUnknown, kNone, kSmall, kHuge };

// How this process maps [at, at + bytes): kHuge if any of it through a huge
// entry, kSmall if only through 4 KiB ones, kNone if not at all; kUnknown
// where the kernel cannot say.
Mapping HowMapped(const char* at, size_t bytes) {
  static const int pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);  // kept for the process
  if (pagemap < 0) return Mapping::kUnknown;
  const uint64_t end = reinterpret_cast<uint64_t>(at) + bytes;
  bool present = false;
  for (uint64_t from = reinterpret_cast<uint64_t>(at); from < end;) {
    PageRegion regions[16];
    PagemapScanArg arg{};
    arg.size = sizeof arg;
    arg.start = from;
    arg.end = end;
    arg.vec = reinterpret_cast<uint64_t>(regions);
    arg.vec_len = std::size(regions);
    arg.category_anyof_mask = kPageIsPresent;  // the pages mapped, in runs of like categories
    arg.return_mask = kPageIsPresent | kPageIsHuge;
    const int n = ioctl(pagemap, kPagemapScan, &arg);
    if (n < 0) return Mapping::kUnknown;
    for (int i = 0; i < n; ++i) {
      if ((regions[i].categories & kPageIsHuge) != 0) return Mapping::kHuge;
      present = true;
    }
    if (arg.walk_end <= from) break;
    from = arg.walk_end;
  }
  return present ? Mapping::kSmall : Mapping::kNone;
}

// Readers with a mapping (and so a descriptor), for OpenCount.
std::atomic<size_t> open_readers{0};

}  // namespace

Result<std::unique_ptr<ShardReader>> ShardReader::Open(const std::string& path) {
  UniqueFd fd(Env().Open(path, O_RDONLY | O_CLOEXEC, 0));
  if (!fd.valid()) {
    if (errno == ENOENT) return Status::NotFound("shard " + path + " does not exist");
    return ErrnoStatus("open " + path, errno);
  }
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return ErrnoStatus("stat " + path, errno);
  if (!S_ISREG(st.st_mode)) return Status::IOError(path + " is not a regular file");
  auto reader = std::unique_ptr<ShardReader>(new ShardReader());
  reader->path_ = path;
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < kShardHeaderSize + kShardTrailerSize) {
    return Status::Corruption("shard " + path + ": file too small (" + std::to_string(size) + " bytes)");
  }
  void* map = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd.get(), 0);
  if (map == MAP_FAILED) return ErrnoStatus("mmap " + path, errno);
  reader->fd_ = std::move(fd);
  reader->base_ = static_cast<const char*>(map);
  open_readers.fetch_add(1, std::memory_order_relaxed);
  reader->size_ = size;
  STRATA_RETURN_IF_ERROR(reader->CheckLayout());
  if (!reader->compressed()) {
    reader->verified_ = std::make_unique<VerifiedRecords>(reader->base_, size, reader->records_);
  }
  return reader;
}

Status ShardReader::CheckLayout() {
  auto corrupt = [this](const std::string& what) { return Status::Corruption("shard " + path_ + ": " + what); };
  // Read, not touched through the mapping: the first page lies in the file's
  // first 2 MiB folio, which a touch would map whole, outside any cache's count.
  char h[kShardHeaderSize];
  auto got = PReadFd(fd_.get(), h, sizeof h, 0, path_);
  if (!got.ok()) return got.status();
  if (got.value() != sizeof h) return corrupt("file too small");
  if (std::string_view(h, 8) != kShardHeaderMagic) return corrupt("bad header magic");
  format_version_ = LoadU32(h + 8);
  if (format_version_ < kOldestShardFormatVersion || format_version_ > kNewestShardFormatVersion) {
    return corrupt("unsupported format version " + std::to_string(format_version_));
  }
  if (LoadU32(h + 12) != 0) return corrupt("unknown header flags");

  // The trailer is read too: it says where the footer starts, and so how to
  // advise the mapping (AdviseMapping) before anything is touched through it.
  char t[kShardTrailerSize];
  got = PReadFd(fd_.get(), t, sizeof t, size_ - kShardTrailerSize, path_);
  if (!got.ok()) return got.status();
  if (got.value() != sizeof t) return corrupt("file too small");
  if (std::string_view(t + 32, 8) != kShardTrailerMagic) return corrupt("bad trailer magic");
  const uint64_t footer_offset = LoadU64(t);
  const uint32_t footer_len = LoadU32(t + 8);
  if (LoadU32(t + 12) != format_version_) return corrupt("trailer format version mismatch");
  // The footer sits between the records and the trailer, with no gap.
  const uint64_t trailer_offset = size_ - kShardTrailerSize;
  if (footer_offset < kShardHeaderSize || footer_offset > trailer_offset ||
      trailer_offset - footer_offset != footer_len || footer_len > INT_MAX) {
    return corrupt("footer bounds out of range");
  }
  AdviseMapping(footer_offset);
  const char* footer = base_ + footer_offset;
  records_end_ = footer_offset;
  body_end_ = footer_offset + footer_len;
  file_checksum_ = LoadU64(t + 24);
  if (format_version_ < 3 && Checksum64(footer, footer_len) != LoadU64(t + 16)) {
    return corrupt("footer checksum mismatch");
  }

  if (format_version_ >= 4) return CheckBlockLayout(footer, footer_len, LoadU64(t + 16));
  if (format_version_ >= 2) {
    // u64 count | u64 offsets[count] | ShardFooter.
    if (footer_len < 8) return corrupt("footer too short");
    const uint64_t count = LoadU64(footer);
    if (count > (footer_len - 8) / 8) return corrupt("record count out of range");
    const uint64_t table_bytes = 8 + 8 * count;
    if (format_version_ >= 3) {  // the count and the message; reads check the table
      Checksum64Stream sum;
      sum.Update(footer, 8);
      sum.Update(footer + table_bytes, footer_len - table_bytes);
      if (sum.Digest() != LoadU64(t + 16)) return corrupt("footer checksum mismatch");
    }
    if (!footer_.ParseFromArray(footer + table_bytes, static_cast<int>(footer_len - table_bytes)) ||
        footer_.record_offsets_size() != 0) {
      return corrupt("footer does not parse");
    }
    records_ = count;
    offset_table_ = footer + 8;
    // The ends of the table here; each record's own offsets when it is read.
    if (count == 0 ? records_end_ != kShardHeaderSize
                   : RecordOffset(0) != kShardHeaderSize || RecordOffset(count - 1) >= records_end_) {
      return corrupt("record offsets out of range");
    }
    return Status::OK();
  }

  if (!footer_.ParseFromArray(footer, static_cast<int>(footer_len))) return corrupt("footer does not parse");
  records_ = static_cast<uint64_t>(footer_.record_offsets_size());
  // Records tile [header end, footer_offset) exactly, so every byte there is
  // covered by some record's checksum.
  uint64_t expect = kShardHeaderSize;
  for (int i = 0; i < footer_.record_offsets_size(); ++i) {
    const uint64_t offset = footer_.record_offsets(i);
    if (i == 0 ? offset != kShardHeaderSize : offset <= expect) return corrupt("record offsets out of order");
    expect = offset;
  }
  if (footer_.record_offsets_size() == 0 ? records_end_ != kShardHeaderSize : expect >= records_end_) {
    return corrupt("record offsets out of range");
  }
  return Status::OK();
}

uint64_t ShardReader::RecordOffset(uint64_t index) const {
  if (offset_table_ != nullptr) return LoadU64(offset_table_ + 8 * index);
  return footer_.record_offsets(static_cast<int>(index));
}

ShardReader::~ShardReader() {
  if (serial_ != 0) DecompressedCache::Process().Forget(serial_);
  if (base_ != nullptr) {
    munmap(const_cast<char*>(base_), size_);
    open_readers.fetch_sub(1, std::memory_order_relaxed);
  }
}

size_t ShardReader::OpenCount() { return open_readers.load(std::memory_order_relaxed); }

Status ShardReader::CopyRawRecord(uint64_t index, std::string* raw, bool if_cached) const {
  if (index >= num_records()) {
    raw->clear();
    return Status::OutOfRange("record " + std::to_string(index) + " past the end of " + path_);
  }
  if (compressed()) {  // decompressed from its block, whether cached or not
    std::shared_ptr<const std::string> block;
    std::string_view bytes;
    Status s = BlockRecord(index, &block, &bytes);
    if (!s.ok()) {
      raw->clear();
      return s;
    }
    raw->assign(bytes);
    return Status::OK();
  }
  const auto [begin, end] = RecordRange(index);
  raw->resize(end - begin);  // an empty range reads nothing and fails to parse
  if (if_cached && !raw->empty()) {
    iovec iov{raw->data(), raw->size()};
    const ssize_t got = preadv2(fd_.get(), &iov, 1, static_cast<off_t>(begin), RWF_NOWAIT);
    if (got == static_cast<ssize_t>(raw->size())) return Status::OK();
    // EAGAIN, or a short read: some of its pages are not in the page cache.
    // Linux starts reading them on such a call already; the hint makes sure.
    // (Where the kernel cannot read without waiting at all, every record
    // takes this path and is read below, as without if_cached.)
    if (got >= 0 || errno == EAGAIN) {
      posix_fadvise(fd_.get(), static_cast<off_t>(begin), static_cast<off_t>(raw->size()), POSIX_FADV_WILLNEED);
      raw->clear();
      return Status::Unavailable("record " + std::to_string(index) + " of " + path_ + " is not in the page cache");
    }
  }
  auto got = PReadFd(fd_.get(), raw->data(), raw->size(), begin, path_);
  if (!got.ok()) return got.status();
  if (got.value() != raw->size()) return Status::Corruption("shard " + path_ + ": file shorter than its footer says");
  return Status::OK();
}

Status ShardReader::ParseRaw(uint64_t index, std::string_view raw, RecordView* out) const {
  return Parse(index, raw, out, /*checksum_verified=*/false);
}

Status ShardReader::Parse(uint64_t index, std::string_view raw, RecordView* out, bool checksum_verified) const {
  Status s = ParseRecord(raw, first_id() + index, out, checksum_verified);
  if (!s.ok()) return Status::Corruption("shard " + path_ + " record " + std::to_string(index) + ": " + s.message());
  return s;
}

Status ShardReader::ReadCopy(uint64_t index, std::string* buffer, RecordView* out) const {
  out->Clear();
  STRATA_RETURN_IF_ERROR(CopyRawRecord(index, buffer));
  return ParseRaw(index, *buffer, out);
}

std::string_view ShardReader::RawRecord(uint64_t index) const {
  if (index >= num_records() || compressed()) return {};
  const uint64_t begin = RecordOffset(index);
  const uint64_t end = index + 1 < num_records() ? RecordOffset(index + 1) : records_end_;
  // Format 1 checked the order at open; later formats check the pair they use.
  if (begin < kShardHeaderSize || begin >= end || end > records_end_) return {};
  return {base_ + begin, end - begin};
}

void ShardReader::AdviseMapping(uint64_t footer_offset) const {
  static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t split = footer_offset / page * page;
  char* base = const_cast<char*>(base_);
#ifdef MADV_HUGEPAGE
  // Records are read at random places: where the page cache holds the file in
  // 2 MiB folios (AlignedFileWriter writes it so), map each with one entry,
  // and have page faults that read the file read it into such folios too.
  if (split > 0) madvise(base, split, MADV_HUGEPAGE);  // a hint: without THP it fails, and nothing changes
#endif
  // The footer (offset table and metadata) is read a few bytes at a time:
  // opening the shard reads its ends, each record read one entry. A fault
  // there reads the page it needs, not 2 MiB around it (nor the device's
  // read-ahead window): after the page cache has dropped a version, opening
  // its 17 shards read 64 MiB of footers through such faults, one after
  // another, and the first batch of 10M samples waited for them.
  if (split < size_) madvise(base + split, size_ - split, MADV_RANDOM);
}

std::pair<uint64_t, uint64_t> ShardReader::RecordRange(uint64_t index) const {
  if (compressed()) {  // the stored block that holds it
    const uint64_t b = RecordOffset(index) >> 32;
    if (b >= blocks_) return {0, 0};
    const uint64_t begin = BlockOffset(b);
    const uint64_t end = b + 1 < blocks_ ? BlockOffset(b + 1) : records_end_;
    if (begin < kShardHeaderSize || begin >= end || end > records_end_) return {0, 0};
    return {begin, end};
  }
  const std::string_view raw = RawRecord(index);
  if (raw.empty()) return {0, 0};
  const uint64_t begin = static_cast<uint64_t>(raw.data() - base_);
  return {begin, begin + raw.size()};
}

void ShardReader::PrefetchOffset(uint64_t index) const {
  if (offset_table_ != nullptr && index < records_) __builtin_prefetch(offset_table_ + 8 * index);
}

void ShardReader::AdviseOffset(uint64_t index) const {
  if (offset_table_ == nullptr || index >= records_) return;
  const uint64_t entry = static_cast<uint64_t>(offset_table_ - base_) + 8 * index;
  const auto [at, bytes] = PageSpan(base_, size_, entry, 16);  // the entry and the next
  if (bytes != 0) madvise(at, bytes, MADV_WILLNEED);
}

void ShardReader::PrefetchRecord(uint64_t index) const {
  if (index >= records_ || compressed()) return;
  const auto [begin, end] = RecordRange(index);
  const uint64_t stop = std::min(end, begin + kPrefetchRecordBytes);
  for (uint64_t at = begin; at < stop; at += kCacheLineBytes) __builtin_prefetch(base_ + at);
}

Status ShardReader::Populate(uint64_t offset, uint64_t len) const {
  const auto [at, bytes] = PageSpan(base_, size_, offset, len);
  if (bytes == 0) return Status::OK();
  bool mapped = false;
#ifdef MADV_POPULATE_READ
  mapped = madvise(at, bytes, MADV_POPULATE_READ) == 0;
  if (!mapped && errno != EINVAL) return ErrnoStatus("read ahead in " + path_, errno);
#endif
  if (!mapped) {
    // Kernels before 5.14: start the read, then touch each page to map it.
    madvise(at, bytes, MADV_WILLNEED);
    static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    volatile char sink = 0;
    for (size_t i = 0; i < bytes; i += page) sink = sink + at[i];
  }
  // Mapped first, locked after: mlock would map them too, but sanitizers
  // make it a no-op that succeeds (so under them nothing is really locked).
  Lock(offset, len);
  return Status::OK();
}

bool ShardReader::Lock(uint64_t offset, uint64_t len) const { return verified_ && verified_->Lock(offset, len); }

bool ShardReader::Locked(uint64_t offset, uint64_t len) const {
  return verified_ && len > 0 && offset < size_ && verified_->Locked(offset, offset + std::min(len, size_ - offset));
}

void ShardReader::Release(uint64_t offset, uint64_t len) const {
  const auto [at, bytes] = PageSpan(base_, size_, offset, len);
  if (verified_) verified_->Unlock(offset, len);  // locked pages cannot be dropped
  // A shared read-only file mapping: the pages are dropped from this process
  // only, and read back from the file when touched again.
  if (bytes != 0) madvise(at, bytes, MADV_DONTNEED);
}

bool ShardReader::Refill(uint64_t offset, uint64_t len) const {
  if (compressed() || !refills_work.load(std::memory_order_relaxed)) return false;
  const auto [at, bytes] = PageSpan(base_, size_, offset, len);
  // Only whole 2 MiB spans of the records, which the mapping advises
  // MADV_HUGEPAGE for (AdviseMapping), can be mapped with 2 MiB entries.
  if (bytes == 0 || reinterpret_cast<uintptr_t>(at) % kFolioBytes != 0 || bytes % kFolioBytes != 0 ||
      static_cast<uint64_t>(at - base_) + bytes > records_end_) {
    return false;
  }
  bool drop = false;
  switch (HowMapped(at, bytes)) {
    case Mapping::kSmall:  // the uses so far mapped it page by page: small folios
      drop = true;
      break;
    case Mapping::kNone: {  // nothing mapped to tell by: a page cache holding part of it holds small folios
      const auto resident = ResidentPages(at, bytes);
      drop = resident && resident->first != 0 && resident->first != resident->second;
      break;
    }
    case Mapping::kHuge:
    case Mapping::kUnknown:  // a kernel before 6.7 cannot say
      break;
  }
  if (!drop) return false;
  // This process's entries first: the page cache keeps a page some mapping
  // holds. A read through the mapping meanwhile faults its page in again,
  // which only leaves that page as it was.
  if (madvise(at, bytes, MADV_DONTNEED) != 0) return false;  // locked pages (EINVAL): leave them
  posix_fadvise(fd_.get(), static_cast<off_t>(at - base_), static_cast<off_t>(bytes), POSIX_FADV_DONTNEED);
  return true;
}

void ShardReader::Refilled(uint64_t offset, uint64_t len) const {
  const auto [at, bytes] = PageSpan(base_, size_, offset, len);
  if (bytes == 0) return;
  if (HowMapped(at, bytes) == Mapping::kHuge) {
    refills_worked.store(true, std::memory_order_relaxed);
  } else if (!refills_worked.load(std::memory_order_relaxed) &&
             refills_failed.fetch_add(1, std::memory_order_relaxed) + 1 == kRefillTries) {
    // No 2 MiB folios here (THP off for files, a filesystem without large
    // folios, a sanitizer's mlock that maps nothing): reading blocks again
    // would only cost reads.
    refills_work.store(false, std::memory_order_relaxed);
    spdlog::info("shard blocks read again whole were not mapped with 2 MiB entries {} times: not reading them again",
                 kRefillTries);
  }
}

bool ShardReader::Cached(uint64_t offset, uint64_t len) const {
  const auto [at, bytes] = PageSpan(base_, size_, offset, len);
  if (bytes == 0) return true;
  const auto resident = ResidentPages(at, bytes);
  return !resident || resident->first == resident->second;
}

Status ShardReader::Read(uint64_t index, RecordView* out) const {
  if (index >= num_records()) {
    out->Clear();
    return Status::OutOfRange("record " + std::to_string(index) + " past the end of " + path_ + " (" +
                              std::to_string(num_records()) + " records)");
  }
  if (compressed()) {
    out->Clear();
    return Status::FailedPrecondition("shard " + path_ + " is compressed: read it with ReadBlockRecord or ReadCopy");
  }
  const std::string_view raw = RawRecord(index);
  if (raw.empty()) return ParseRaw(index, raw, out);
  const uint64_t begin = static_cast<uint64_t>(raw.data() - base_);
  const uint64_t end = begin + raw.size();
  const bool trusted = verified_->Trusted(index, begin, end);
  const uint64_t ticket = trusted ? 0 : verified_->Begin(begin, end);
  Status s = Parse(index, raw, out, trusted);
  if (s.ok() && !trusted) verified_->Verified(ticket, index);
  return s;
}

Status ShardReader::VerifyFile(const std::function<bool(size_t)>& before_piece) const {
  constexpr size_t kPiece = size_t{1} << 20;
  std::string piece(std::min<uint64_t>(kPiece, body_end_), '\0');
  Checksum64Stream sum;
  for (uint64_t at = 0; at < body_end_;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kPiece, body_end_ - at));
    if (before_piece && !before_piece(n)) return Status::Cancelled("verification of " + path_ + " stopped");
    STRATA_RETURN_IF_ERROR(PReadExactFd(fd_.get(), piece.data(), n, at, path_));
    sum.Update(piece.data(), n);
    at += n;
  }
  if (sum.Digest() != file_checksum_) {
    return Status::Corruption("shard " + path_ + ": file checksum mismatch");
  }
  return Status::OK();
}

}  // namespace strata
