// Writes strata.idx files: ordinals staged in a temporary file during the
// ingest, then one counting-sort pass and the per-block sums.
#include "server/ingest/stratum_index_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <numeric>

#include "common/checksum.h"
#include "common/file_env.h"
#include "common/file_util.h"
#include "common/little_endian.h"
#include "plan/stratum_index.h"

namespace strata {
namespace {

// Ordinals are staged and read back in chunks of this many.
constexpr size_t kOrdinalChunk = size_t{1} << 18;
// Bound on the per-stratum id buffers of the counting-sort pass.
constexpr size_t kSortBufferBytes = size_t{32} << 20;
// The ids are read back for their block sums in chunks of this many blocks.
constexpr uint64_t kSumChunkBlocks = 256;

}  // namespace

Result<std::unique_ptr<StratumIndexWriter>> StratumIndexWriter::Create(std::string path) {
  const std::string dir = DirOf(path);
  for (int attempt = 0;; ++attempt) {
    std::string ord = dir + ".tmp.strata.ord." + RandomSuffix();
    int fd = open(ord.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) return std::unique_ptr<StratumIndexWriter>(new StratumIndexWriter(std::move(path), ord, fd));
    if (errno != EEXIST || attempt == 8) return ErrnoStatus("create " + ord, errno);
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
      Status s = ErrnoStatus("create " + tmp_index_path_, errno);
      tmp_index_path_.clear();
      return fail(s);
    }
  }
  Status written = WriteIndex(tmp_index_path_, fd, canonical_of, summary.counts, &summary);
  if (written.ok()) written = FsyncFd(fd, tmp_index_path_);
  if (close(fd) != 0 && written.ok()) written = ErrnoStatus("close " + tmp_index_path_, errno);
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
  head.append(kStratumIndexHeaderMagic);
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
    STRATA_RETURN_IF_ERROR(PReadExactFd(ord_fd_, reinterpret_cast<char*>(chunk.data()), n * sizeof(uint32_t),
                                        id * sizeof(uint32_t), ord_path_));
    for (size_t i = 0; i < n; ++i, ++id) {
      const uint32_t s = canonical_of[chunk[i]];
      buffer[s * cap + fill[s]] = id;
      if (++fill[s] == cap) STRATA_RETURN_IF_ERROR(flush(s));
    }
  }
  for (uint64_t s = 0; s < strata; ++s) STRATA_RETURN_IF_ERROR(flush(s));

  // Each block's sum is of the ids as written: read them back in order.
  const uint64_t blocks = (samples_ + kStratumIndexBlockIds - 1) / kStratumIndexBlockIds;
  std::string sums;
  sums.reserve(blocks * 8);
  std::string ids(kSumChunkBlocks * kStratumIndexBlockIds * 8, '\0');
  for (uint64_t first = 0; first < samples_;) {
    const uint64_t n = std::min<uint64_t>(kSumChunkBlocks * kStratumIndexBlockIds, samples_ - first);
    STRATA_RETURN_IF_ERROR(PReadExactFd(fd, ids.data(), n * 8, ids_at + first * 8, tmp));
    for (uint64_t at = 0; at < n; at += kStratumIndexBlockIds) {
      PutU64(&sums, Checksum64(ids.data() + at * 8, std::min(kStratumIndexBlockIds, n - at) * 8));
    }
    first += n;
  }
  const uint64_t sums_at = ids_at + samples_ * 8;
  STRATA_RETURN_IF_ERROR(PWriteAllFd(fd, sums, sums_at, tmp));
  Checksum64Stream sum;
  sum.Update(head.data(), head.size());
  sum.Update(sums.data(), sums.size());
  std::string trailer;
  summary->checksum = sum.Digest();
  PutU64(&trailer, summary->checksum);
  trailer.append(kStratumIndexTrailerMagic);
  const uint64_t body = sums_at + sums.size();
  STRATA_RETURN_IF_ERROR(PWriteAllFd(fd, trailer, body, tmp));
  summary->file_bytes = body + trailer.size();
  return Status::OK();
}

}  // namespace strata
