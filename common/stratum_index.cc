// The stratum member index: the in-memory implementation, the verified
// read-only mapping, and the writer that builds the file at ingest.
#include "common/stratum_index.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "common/checksum.h"
#include "common/file_util.h"
#include "common/int128.h"
#include "common/little_endian.h"

namespace strata {
namespace {

constexpr std::string_view kHeaderMagic = "STRIDX01";
constexpr std::string_view kTrailerMagic = "STRIDXTR";
// Ordinals are staged and read back in chunks of this many.
constexpr size_t kOrdinalChunk = size_t{1} << 18;
// Bound on the per-stratum id buffers of the counting-sort pass.
constexpr size_t kSortBufferBytes = size_t{32} << 20;

// Reads exactly `size` bytes at `offset`.
Status PReadAll(int fd, char* out, size_t size, uint64_t offset, const std::string& path) {
  auto got = PReadFd(fd, out, size, offset, path);
  if (!got.ok()) return got.status();
  if (got.value() != size) return Status::IOError("read " + path + ": unexpected end of file");
  return Status::OK();
}

// The verifying pass of Open reads the file in chunks of this size (a multiple of 8).
constexpr size_t kVerifyChunk = size_t{1} << 20;

}  // namespace

// ---- InMemoryStratumMembers

InMemoryStratumMembers::InMemoryStratumMembers(std::vector<std::vector<uint64_t>> members)
    : members_(std::move(members)) {
  for (auto& m : members_) std::sort(m.begin(), m.end());
}

std::unique_ptr<InMemoryStratumMembers> InMemoryStratumMembers::FromAssignment(std::span<const uint32_t> stratum_of,
                                                                               uint32_t num_strata) {
  std::vector<std::vector<uint64_t>> members(num_strata);
  for (uint64_t i = 0; i < stratum_of.size(); ++i) members[stratum_of[i]].push_back(i);
  return std::make_unique<InMemoryStratumMembers>(std::move(members));
}

// ---- StratumIndexFile

Result<std::unique_ptr<StratumIndexFile>> StratumIndexFile::Open(const std::string& path,
                                                                 const StratumIndexExpect* expect) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::NotFound("stratum index " + path + " does not exist");
    return Status::FromErrno("open " + path, errno);
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    Status s = Status::FromErrno("stat " + path, errno);
    close(fd);
    return s;
  }
  auto bad = [&](const std::string& why) { return Status::Corruption("stratum index " + path + ": " + why); };
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return Status::IOError(path + " is not a regular file");
  }
  if (size < kStratumIndexHeaderSize + 8 + kStratumIndexTrailerSize) {
    close(fd);
    return bad("file of " + std::to_string(size) + " bytes is too short");
  }
  void* map = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    const int map_err = errno;
    close(fd);
    return Status::FromErrno("mmap " + path, map_err);
  }
#ifdef MADV_HUGEPAGE
  madvise(map, size, MADV_HUGEPAGE);  // samplers read members at random places (see ShardReader::Open)
#endif
  auto file = std::unique_ptr<StratumIndexFile>(new StratumIndexFile());
  file->base_ = static_cast<const char*>(map);
  file->size_ = size;
  Status verified = file->Verify(fd, path, expect);
  close(fd);
  if (!verified.ok()) return verified;
  return file;
}

Status StratumIndexFile::Verify(int fd, const std::string& path, const StratumIndexExpect* expect) {
  auto bad = [&](const std::string& why) { return Status::Corruption("stratum index " + path + ": " + why); };
  const char* p = base_;
  if (std::string_view(p, 8) != kHeaderMagic) return bad("bad header magic");
  if (LoadU32(p + 8) != kStratumIndexFormatVersion) return bad("unknown format version " + std::to_string(LoadU32(p + 8)));
  const uint64_t strata = LoadU64(p + 16);
  const uint64_t samples = LoadU64(p + 24);
  if (std::string_view(p + size_ - 8, 8) != kTrailerMagic) return bad("bad trailer magic");
  // Sizes are checked in 128 bits: a corrupt header must not wrap them around.
  const u128 want = static_cast<u128>(kStratumIndexHeaderSize) + (static_cast<u128>(strata) + 1) * 8 +
                    static_cast<u128>(samples) * 8 + kStratumIndexTrailerSize;
  if (strata > UINT32_MAX || want != size_) {
    return bad("header says " + std::to_string(strata) + " strata and " + std::to_string(samples) +
               " samples, which does not match the file size " + std::to_string(size_));
  }
  const uint64_t body = size_ - kStratumIndexTrailerSize;
  const uint64_t stored = LoadU64(p + body);
  num_strata_ = static_cast<uint32_t>(strata);
  num_samples_ = samples;
  offsets_ = p + kStratumIndexHeaderSize;
  ids_ = offsets_ + (strata + 1) * 8;
  // The offsets first (the walk over the ids below relies on them); their
  // error, like that of the ids, is reported after a checksum mismatch.
  Status structure;
  if (Offset(0) != 0 || Offset(num_strata_) != samples) structure = bad("offsets do not span the ids");
  for (uint32_t s = 0; s < num_strata_ && structure.ok(); ++s) {
    const uint64_t begin = Offset(s), end = Offset(s + 1);
    if (end < begin || end > samples) structure = bad("offsets of stratum " + std::to_string(s) + " are out of order");
  }
  // One pass over the body, read rather than touched through the mapping
  // (first touches of 4 KiB pages are what costs most on a large index):
  // the checksum, and each stratum's ids ascending and below num_samples.
  const uint64_t ids_at = static_cast<uint64_t>(ids_ - p);
  Checksum64Stream sum;
  std::string chunk(kVerifyChunk, '\0');
  uint32_t s = 0;
  uint64_t stratum_end = num_strata_ > 0 ? Offset(1) : 0;
  uint64_t prev = 0;
  bool first = true;  // the next id is its stratum's first
  uint64_t j = 0;     // index of the next id
  for (uint64_t at = 0; at < body; at += kVerifyChunk) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kVerifyChunk, body - at));
    STRATA_RETURN_IF_ERROR(PReadAll(fd, chunk.data(), n, at, path));
    sum.Update(chunk.data(), n);
    if (!structure.ok()) continue;
    // Chunks and the ids both start at multiples of 8, so no id straddles two chunks.
    if (at + n <= ids_at) continue;
    const char* ids = chunk.data() + (std::max(at, ids_at) - at);
    const uint64_t chunk_end = j + (at + n - std::max(at, ids_at)) / 8;  // index past this chunk's last id
    while (j < chunk_end && structure.ok()) {
      while (j == stratum_end) {  // past this stratum's last id (or an empty stratum)
        ++s;
        stratum_end = Offset(s + 1);
        first = true;
      }
      // The ids of stratum s in this chunk, without a branch per id.
      const uint64_t run_end = std::min(chunk_end, stratum_end);
      bool wrong = false;
      if (first) {
        prev = LoadU64(ids);
        wrong = prev >= samples;
        ids += 8;
        ++j;
        first = false;
      }
      for (; j < run_end; ++j, ids += 8) {
        const uint64_t id = LoadU64(ids);
        wrong |= (id >= samples) | (id <= prev);
        prev = id;
      }
      if (wrong) {
        structure =
            bad("ids of stratum " + std::to_string(s) + " are not ascending ids below " + std::to_string(samples));
      }
    }
  }
  if (sum.Digest() != stored) return bad("checksum mismatch");
  if (expect != nullptr) {
    if (expect->file_bytes != size_ || expect->checksum != stored) {
      return bad("size or checksum differs from the catalog's record");
    }
    if (expect->counts.size() != strata) {
      return bad(std::to_string(strata) + " strata, the catalog has " + std::to_string(expect->counts.size()));
    }
    for (uint32_t k = 0; k < num_strata_ && structure.ok(); ++k) {
      if (count(k) != expect->counts[k]) {
        return bad("stratum " + std::to_string(k) + " holds " + std::to_string(count(k)) + " samples, the catalog " +
                   std::to_string(expect->counts[k]));
      }
    }
  }
  return structure;
}

StratumIndexFile::~StratumIndexFile() {
  if (base_ != nullptr) munmap(const_cast<char*>(base_), size_);
}

uint64_t StratumIndexFile::Offset(uint32_t s) const { return LoadU64(offsets_ + uint64_t{s} * 8); }

uint64_t StratumIndexFile::count(uint32_t stratum) const { return Offset(stratum + 1) - Offset(stratum); }

uint64_t StratumIndexFile::Member(uint32_t stratum, uint64_t j) const {
  return LoadU64(ids_ + (Offset(stratum) + j) * 8);
}

// ---- StratumIndexWriter

Result<std::unique_ptr<StratumIndexWriter>> StratumIndexWriter::Create(std::string path) {
  const std::string dir = DirOf(path);
  for (int attempt = 0;; ++attempt) {
    std::string ord = dir + ".tmp.strata.ord." + RandomSuffix();
    int fd = open(ord.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) return std::unique_ptr<StratumIndexWriter>(new StratumIndexWriter(std::move(path), ord, fd));
    if (errno != EEXIST || attempt == 8) return Status::FromErrno("create " + ord, errno);
  }
}

StratumIndexWriter::StratumIndexWriter(std::string path, std::string ord_path, int ord_fd)
    : path_(std::move(path)), ord_path_(std::move(ord_path)), ord_fd_(ord_fd) {
  pending_.reserve(kOrdinalChunk);
}

StratumIndexWriter::~StratumIndexWriter() { RemoveTemps(); }

void StratumIndexWriter::RemoveTemps() {
  if (ord_fd_ >= 0) close(ord_fd_);
  ord_fd_ = -1;
  if (!ord_path_.empty()) unlink(ord_path_.c_str());
  ord_path_.clear();
  if (!tmp_index_path_.empty()) unlink(tmp_index_path_.c_str());
  tmp_index_path_.clear();
}

Status StratumIndexWriter::Add(std::string_view stratum_key) {
  if (finished_ || ord_fd_ < 0) return Status::FailedPrecondition("stratum index writer for " + path_ + " is closed");
  auto it = ordinal_of_.find(std::string(stratum_key));
  if (it == ordinal_of_.end()) {
    if (keys_.size() == UINT32_MAX) return Status::ResourceExhausted("too many strata");
    it = ordinal_of_.emplace(std::string(stratum_key), static_cast<uint32_t>(keys_.size())).first;
    keys_.emplace_back(stratum_key);
    counts_.push_back(0);
  }
  pending_.push_back(it->second);
  ++counts_[it->second];
  ++samples_;
  return pending_.size() >= kOrdinalChunk ? FlushOrdinals() : Status::OK();
}

Status StratumIndexWriter::FlushOrdinals() {
  const std::string_view bytes(reinterpret_cast<const char*>(pending_.data()), pending_.size() * sizeof(uint32_t));
  pending_.clear();
  return WriteAllFd(ord_fd_, bytes, ord_path_);
}

Result<StratumIndexSummary> StratumIndexWriter::Finish() {
  if (finished_ || ord_fd_ < 0) return Status::FailedPrecondition("stratum index writer for " + path_ + " is closed");
  auto fail = [&](Status s) {
    RemoveTemps();
    return s;
  };
  if (Status s = FlushOrdinals(); !s.ok()) return fail(s);

  // Canonical order: keys sorted bytewise, as std::map orders DatasetInfo's counts.
  std::vector<uint32_t> by_key(keys_.size());
  std::iota(by_key.begin(), by_key.end(), 0u);
  std::sort(by_key.begin(), by_key.end(), [&](uint32_t a, uint32_t b) { return keys_[a] < keys_[b]; });
  std::vector<uint32_t> canonical_of(keys_.size());
  StratumIndexSummary summary;
  for (uint32_t c = 0; c < by_key.size(); ++c) {
    canonical_of[by_key[c]] = c;
    summary.keys.push_back(keys_[by_key[c]]);
    summary.counts.push_back(counts_[by_key[c]]);
  }

  const std::string dir = DirOf(path_);
  const size_t slash = path_.rfind('/');
  const std::string base = slash == std::string::npos ? path_ : path_.substr(slash + 1);
  int fd = -1;
  for (int attempt = 0;; ++attempt) {
    tmp_index_path_ = dir + ".tmp." + base + "." + RandomSuffix();
    fd = open(tmp_index_path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) break;
    if (errno != EEXIST || attempt == 8) {
      Status s = Status::FromErrno("create " + tmp_index_path_, errno);
      tmp_index_path_.clear();
      return fail(s);
    }
  }
  Status written = WriteIndex(tmp_index_path_, fd, canonical_of, summary.counts, &summary);
  if (written.ok() && fsync(fd) != 0) written = Status::FromErrno("fsync " + tmp_index_path_, errno);
  if (close(fd) != 0 && written.ok()) written = Status::FromErrno("close " + tmp_index_path_, errno);
  if (written.ok()) written = RenameNoReplace(tmp_index_path_, path_);
  if (!written.ok()) return fail(written);
  tmp_index_path_.clear();
  if (Status synced = SyncDir(dir); !synced.ok()) {
    unlink(path_.c_str());  // keep "Finish failed => nothing at path"
    return fail(synced);
  }
  finished_ = true;
  RemoveTemps();
  summary.path = path_;
  summary.num_samples = samples_;
  return summary;
}

Status StratumIndexWriter::WriteIndex(const std::string& tmp, int fd, const std::vector<uint32_t>& canonical_of,
                                      const std::vector<uint64_t>& counts, StratumIndexSummary* summary) {
  const uint64_t strata = counts.size();
  std::string head;
  head.append(kHeaderMagic);
  PutU32(&head, kStratumIndexFormatVersion);
  PutU32(&head, 0);
  PutU64(&head, strata);
  PutU64(&head, samples_);
  std::vector<uint64_t> next(strata);  // next free slot of each stratum, in ids
  uint64_t offset = 0;
  for (uint64_t s = 0; s < strata; ++s) {
    PutU64(&head, offset);
    next[s] = offset;
    offset += counts[s];
  }
  PutU64(&head, offset);
  STRATA_RETURN_IF_ERROR(PWriteAllFd(fd, head, 0, tmp));
  const uint64_t ids_at = head.size();

  // Counting sort: ids go through a small buffer per stratum to their slots.
  const size_t cap = std::clamp<size_t>(kSortBufferBytes / 8 / std::max<uint64_t>(strata, 1), 8, 8192);
  std::vector<uint64_t> buffer(strata * cap);
  std::vector<uint32_t> fill(strata, 0);
  auto flush = [&](uint64_t s) -> Status {
    const std::string_view bytes(reinterpret_cast<const char*>(&buffer[s * cap]), fill[s] * sizeof(uint64_t));
    Status st = PWriteAllFd(fd, bytes, ids_at + next[s] * 8, tmp);
    next[s] += fill[s];
    fill[s] = 0;
    return st;
  };
  std::vector<uint32_t> chunk(kOrdinalChunk);
  for (uint64_t id = 0; id < samples_;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kOrdinalChunk, samples_ - id));
    STRATA_RETURN_IF_ERROR(PReadAll(ord_fd_, reinterpret_cast<char*>(chunk.data()), n * sizeof(uint32_t),
                                    id * sizeof(uint32_t), ord_path_));
    for (size_t i = 0; i < n; ++i, ++id) {
      const uint32_t s = canonical_of[chunk[i]];
      buffer[s * cap + fill[s]] = id;
      if (++fill[s] == cap) STRATA_RETURN_IF_ERROR(flush(s));
    }
  }
  for (uint64_t s = 0; s < strata; ++s) STRATA_RETURN_IF_ERROR(flush(s));

  // The checksum covers the body as written: read it back in order.
  Checksum64Stream sum;
  const uint64_t body = ids_at + samples_ * 8;
  std::string block(size_t{1} << 20, '\0');
  for (uint64_t at = 0; at < body;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(block.size(), body - at));
    STRATA_RETURN_IF_ERROR(PReadAll(fd, block.data(), n, at, tmp));
    sum.Update(block.data(), n);
    at += n;
  }
  std::string trailer;
  summary->checksum = sum.Digest();
  PutU64(&trailer, summary->checksum);
  trailer.append(kTrailerMagic);
  STRATA_RETURN_IF_ERROR(PWriteAllFd(fd, trailer, body, tmp));
  summary->file_bytes = body + trailer.size();
  return Status::OK();
}

}  // namespace strata
