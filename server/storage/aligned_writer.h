// Writes a file front to back in whole, aligned 2 MiB chunks.
//
// Why: on kernels whose page cache holds large folios (ext4 and xfs since
// 6.x), a buffered write that starts on a 2 MiB boundary and covers 2 MiB puts
// those bytes in one 2 MiB folio, and a shared mapping of the file then maps
// such a folio with a single page-table entry: one TLB entry where 4 KiB pages
// need 512. Shard servers read records at random places in mapped shards, so
// their TLB misses fall by the same factor (README.md, "Performance"). Writes that
// start or end off a boundary leave smaller folios behind, which is what
// writing each record, or each 1 MiB, as it comes did.
//
// The writer stages appended bytes and writes each 2 MiB chunk once it is
// whole. Whole chunks of a large append are written straight from the
// caller's memory; at most one chunk's worth of each append is copied.
//
// Thread-safety: not thread-safe; one caller at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace strata {

class AlignedFileWriter {
 public:
  static constexpr size_t kChunkBytes = size_t{2} << 20;

  // `fd` is an empty file open for writing at offset 0; the caller keeps
  // owning it. `path` names it in errors.
  AlignedFileWriter(int fd, std::string path);

  // Appends `bytes` to the file. IOError (naming the path) if a write fails;
  // the file is then incomplete and the writer must not be used again.
  Status Append(std::string_view bytes);
  // Writes the staged tail: the file is then complete up to size().
  Status Flush();

  // Bytes appended so far (written or staged).
  uint64_t size() const { return written_ + staged_.size(); }

 private:
  const int fd_;
  const std::string path_;
  uint64_t written_ = 0;  // always a multiple of kChunkBytes until Flush
  std::string staged_;    // the bytes after written_, fewer than kChunkBytes
};

}  // namespace strata
