// Whole files between nodes (replication, repair, rebalance).
//
// Files are immutable, so a transfer is copy-and-verify: the receiver writes a
// temporary file next to the final one, verifies the complete file by its own
// format's checksums (a shard: footer, trailer, and every byte against the file
// checksum), fsyncs, and renames it into place. A file is never visible half
// written, and a copy that already exists is left alone (transfers are
// idempotent, so a repeated or racing copy costs bytes, never data).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "common/unique_fd.h"
#include "server/cluster/rate_limiter.h"
#include "server/storage/aligned_writer.h"
#include "server/storage/data_dir.h"
#include "strata/v1/cluster.grpc.pb.h"

namespace strata {

inline constexpr size_t kFileChunkBytes = size_t{1} << 20;
// Incoming copies are written here (relative to the data directory) until
// they are verified; dataset names cannot start with '.', so it names none.
inline constexpr const char* kIncomingDir = "shards/.incoming";

// Checks a complete file of `kind` at `path`. Corruption if it is damaged.
// `before_piece` (may be empty) is called with the size of each piece before
// it is read, the whole file for a stratum index (small, verified at once);
// returning false stops the check with Cancelled.
Status VerifyLocalFile(v1::FileRef::Kind kind, const std::string& path,
                       const std::function<bool(size_t)>& before_piece = nullptr);

// One incoming file. Not thread-safe.
class FileReceiver {
 public:
  // Checks `file` (it comes from a peer) and opens a temporary file in the
  // staging folder. InvalidArgument if the reference is malformed or its path
  // would leave the data directory; nothing is created then.
  static Result<std::unique_ptr<FileReceiver>> Begin(const DataDir& dir, const v1::FileRef& file);
  ~FileReceiver();  // removes the temporary file unless committed

  Status Append(std::string_view data);
  // Verifies (a shard must also name the dataset, version and seq it is sent
  // as), fsyncs, creates the version's folder and links the copy into place.
  // Returns true if the file was already there (the new copy is dropped).
  // Corruption if verification fails.
  Result<bool> Commit();

 private:
  FileReceiver(std::string final_path, std::string tmp_path, int fd, const v1::FileRef& file);
  Status CheckIdentity() const;

  const std::string final_path_;
  const std::string tmp_path_;
  UniqueFd fd_;  // the temporary file, until Commit closes it
  const v1::FileRef::Kind kind_;
  const v1::FileRef file_;
  bool committed_ = false;
  AlignedFileWriter out_;  // so the copy is held in 2 MiB folios, like the original
};

// Calls `send` with each chunk of the local file at `path` (the first chunk
// carries `file` and the size). Stops with Cancelled if `send` returns false.
// `limiter` (optional) paces the reads.
Status ReadFileChunks(const std::string& path, const v1::FileRef& file, RateLimiter* limiter,
                      const std::function<bool(v1::FileChunk&)>& send);

// Pushes a local file to a peer, over a call made with `context` (whose
// deadline the caller sets; another thread may end the push with TryCancel).
// Returns true if the peer already had it.
Result<bool> PushFile(v1::PeerService::Stub* peer, const DataDir& dir, const v1::FileRef& file, RateLimiter* limiter,
                      grpc::ClientContext* context);

// Pulls a file from a peer into the local data directory, over a call made
// with `context` (as PushFile). NotFound if the peer does not hold it.
// Returns the bytes copied (0 if the file was already here).
Result<uint64_t> PullFile(v1::PeerService::Stub* peer, const DataDir& dir, const v1::FileRef& file,
                          RateLimiter* limiter, grpc::ClientContext* context);

}  // namespace strata
