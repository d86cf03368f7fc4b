#include "server/storage/parity_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>

#include "common/checksum.h"
#include "common/little_endian.h"
#include "common/unique_fd.h"

namespace strata {

namespace {

constexpr std::string_view kMagic = "STRAPAR1";
constexpr size_t kParityReadPiece = size_t{1} << 20;

Status WriteAll(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    const ssize_t n = write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("write " + path, errno);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::OK();
}

}  // namespace

uint64_t ParityDatasetHash(std::string_view dataset, uint64_t version) { return Hash64(dataset, version); }

std::string EncodeParityTrailer(const ParityTrailer& t) {
  std::string out(kMagic);
  PutU64(&out, t.dataset_hash);
  PutU64(&out, t.version);
  PutU32(&out, t.seq);
  PutU32(&out, (t.k & 0xffff) | (t.m << 16));
  PutU64(&out, t.body_bytes);
  PutU64(&out, t.body_checksum);
  PutU64(&out, Checksum64(out.data(), out.size()));
  return out;
}

Result<ParityTrailer> DecodeParityTrailer(std::string_view bytes, uint64_t file_bytes) {
  if (bytes.size() != kParityTrailerBytes || bytes.substr(0, kMagic.size()) != kMagic) {
    return Status::Corruption("parity file: no trailer");
  }
  const char* p = bytes.data();
  if (LoadU64(p + 48) != Checksum64(p, 48)) return Status::Corruption("parity file: trailer checksum mismatch");
  ParityTrailer t;
  t.dataset_hash = LoadU64(p + 8);
  t.version = LoadU64(p + 16);
  t.seq = LoadU32(p + 24);
  const uint32_t km = LoadU32(p + 28);
  t.k = km & 0xffff;
  t.m = km >> 16;
  t.body_bytes = LoadU64(p + 32);
  t.body_checksum = LoadU64(p + 40);
  if (t.k == 0 || t.m == 0 || t.body_bytes + kParityTrailerBytes != file_bytes) {
    return Status::Corruption("parity file: trailer does not match the file");
  }
  return t;
}

Status WriteParityFile(const std::string& path, std::string_view body, ParityTrailer trailer) {
  trailer.body_bytes = body.size();
  trailer.body_checksum = Checksum64(body.data(), body.size());
  const std::string tmp = path + ".tmp";
  UniqueFd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) return ErrnoStatus("create " + tmp, errno);
  Status s = WriteAll(fd.get(), body, tmp);
  if (s.ok()) s = WriteAll(fd.get(), EncodeParityTrailer(trailer), tmp);
  if (s.ok() && fsync(fd.get()) != 0) s = ErrnoStatus("fsync " + tmp, errno);
  fd.reset();
  if (s.ok() && rename(tmp.c_str(), path.c_str()) != 0) s = ErrnoStatus("rename " + tmp, errno);
  if (!s.ok()) unlink(tmp.c_str());
  return s;
}

Result<ParityTrailer> VerifyParityFile(const std::string& path, const std::function<bool(size_t)>& before_piece,
                                       std::string* body) {
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus("open " + path, errno);
  const off_t size = lseek(fd.get(), 0, SEEK_END);
  if (size < static_cast<off_t>(kParityTrailerBytes)) return Status::Corruption(path + ": too short for a parity file");
  std::string trailer_bytes(kParityTrailerBytes, '\0');
  if (pread(fd.get(), trailer_bytes.data(), kParityTrailerBytes, size - static_cast<off_t>(kParityTrailerBytes)) !=
      static_cast<ssize_t>(kParityTrailerBytes)) {
    return ErrnoStatus("read " + path, errno);
  }
  auto trailer = DecodeParityTrailer(trailer_bytes, static_cast<uint64_t>(size));
  if (!trailer.ok()) return trailer.status().WithContext(path);
  Checksum64Stream sum;
  std::string piece;
  if (body) body->clear();
  for (uint64_t at = 0; at < trailer->body_bytes;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kParityReadPiece, trailer->body_bytes - at));
    if (before_piece && !before_piece(n)) return Status::Cancelled("verification of " + path + " stopped");
    piece.resize(n);
    if (pread(fd.get(), piece.data(), n, static_cast<off_t>(at)) != static_cast<ssize_t>(n)) {
      return ErrnoStatus("read " + path, errno);
    }
    sum.Update(piece);
    if (body) body->append(piece);
    at += n;
  }
  if (sum.Digest() != trailer->body_checksum) return Status::Corruption(path + ": parity body checksum mismatch");
  return trailer;
}

}  // namespace strata
