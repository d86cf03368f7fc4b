#include "server/storage/ec_stripes.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "common/unique_fd.h"
#include "server/storage/erasure_code.h"
#include "server/storage/local_files.h"
#include "server/storage/parity_file.h"

namespace strata {

Status WriteStripeParity(const DataDir& dir, const std::string& dataset, uint64_t version, uint32_t stripe, uint32_t k,
                         uint32_t m, uint64_t shards) {
  auto code = ErasureCode::Create(k, m);
  if (!code.ok()) return code.status();
  std::vector<UniqueFd> fds;
  std::vector<uint64_t> sizes;
  uint64_t len = 0;
  for (uint32_t i = 0; i < k; ++i) {
    const uint64_t seq = uint64_t{stripe} * k + i;
    if (seq >= shards) {
      sizes.push_back(0);
      fds.emplace_back();
      continue;
    }
    const std::string path = dir.Absolute(dir.ShardRelativePath(dataset, version, static_cast<uint32_t>(seq)));
    UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return ErrnoStatus("open " + path, errno);
    struct stat st {};
    if (fstat(fd.get(), &st) != 0) return ErrnoStatus("stat " + path, errno);
    sizes.push_back(static_cast<uint64_t>(st.st_size));
    len = std::max(len, sizes.back());
    fds.push_back(std::move(fd));
  }
  constexpr size_t kPiece = size_t{1} << 20;
  std::vector<std::string> parity(m, std::string(len, '\0'));
  std::vector<std::vector<uint8_t>> in(k, std::vector<uint8_t>(kPiece));
  std::vector<const uint8_t*> data(k);
  std::vector<uint8_t*> out(m);
  for (uint64_t at = 0; at < len; at += kPiece) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kPiece, len - at));
    for (uint32_t i = 0; i < k; ++i) {
      std::fill(in[i].begin(), in[i].begin() + static_cast<std::ptrdiff_t>(n), 0);
      if (at < sizes[i]) {
        const size_t want = static_cast<size_t>(std::min<uint64_t>(n, sizes[i] - at));
        if (pread(fds[i].get(), in[i].data(), want, static_cast<off_t>(at)) != static_cast<ssize_t>(want)) {
          return ErrnoStatus("read a shard of " + dataset + " stripe " + std::to_string(stripe), errno);
        }
      }
      data[i] = in[i].data();
    }
    for (uint32_t p = 0; p < m; ++p) out[p] = reinterpret_cast<uint8_t*>(parity[p].data()) + at;
    STRATA_RETURN_IF_ERROR(code->Encode(data, n, out));
  }
  for (uint32_t p = 0; p < m; ++p) {
    const v1::FileRef file = StripeFile(dataset, version, stripe, k + p, k, m);
    ParityTrailer t;
    t.dataset_hash = ParityDatasetHash(dataset, version);
    t.version = version;
    t.seq = file.seq();
    t.k = k;
    t.m = m;
    STRATA_RETURN_IF_ERROR(WriteParityFile(dir.Absolute(dir.FileRelativePath(file)), parity[p], t));
  }
  return Status::OK();
}

}  // namespace strata
