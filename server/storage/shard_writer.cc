// ShardWriter: writes records in aligned 2 MiB chunks (server/storage/aligned_writer.h)
// to a temporary file beside the final path, and publishes the file with one
// rename.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstring>

#include "common/checksum.h"
#include "common/file_env.h"
#include "common/file_util.h"
#include "common/little_endian.h"
#include "common/utf8.h"
#include "server/storage/shard_format.h"

namespace strata {
namespace {

// Records with payloads at least this large are checksummed as they are
// written instead of being assembled in one buffer first.
constexpr size_t kDirectWriteBytes = size_t{256} << 10;
// A record's payload is handed out as one contiguous view; ingest never comes
// near this, and it bounds what a corrupt footer can make a reader believe.
constexpr uint64_t kMaxPayloadBytes = uint64_t{4} << 30;

// A header whose strings are not UTF-8 would serialize but never parse again.
bool HeaderStringsAreUtf8(const v1::RecordHeader& h) {
  if (!IsValidUtf8(h.key()) || !IsValidUtf8(h.label()) || !IsValidUtf8(h.stratum())) return false;
  for (const auto& [name, value] : h.attributes()) {
    if (!IsValidUtf8(name) || !IsValidUtf8(value)) return false;
  }
  for (const std::string& name : h.field_names()) {
    if (!IsValidUtf8(name)) return false;
  }
  return true;
}

}  // namespace

Result<std::unique_ptr<ShardWriter>> ShardWriter::Create(std::string path, ShardIdentity identity,
                                                         const ShardWriteOptions& options) {
  const bool compressed = options.compression != v1::COMPRESSION_NONE;
  if (compressed) STRATA_RETURN_IF_ERROR(ValidateCompression(options.compression, options.level));
  if (compressed && options.block_bytes == 0) return Status::InvalidArgument("block size must be positive");
  const std::string dir = DirOf(path);
  const std::string base = path.substr(path.starts_with(dir) ? dir.size() : 0);
  if (base.empty()) return Status::InvalidArgument("shard path '" + path + "' names no file");

  struct stat st;
  if (stat(path.c_str(), &st) == 0) return Status::AlreadyExists(path + " already exists");
  if (errno != ENOENT) return ErrnoStatus("stat " + path, errno);

  for (int attempt = 0;; ++attempt) {
    std::string tmp = dir + ".tmp." + base + "." + RandomSuffix();
    int fd = Env().Open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      auto writer = std::unique_ptr<ShardWriter>(
          new ShardWriter(std::move(path), std::move(tmp), fd, std::move(identity), options));
      std::string header(kShardHeaderMagic);
      PutU32(&header, compressed ? kCompressedShardFormatVersion : kShardFormatVersion);
      PutU32(&header, 0);  // flags
      STRATA_RETURN_IF_ERROR(writer->Write(header));
      return writer;
    }
    if (errno != EEXIST || attempt == 8) return ErrnoStatus("create " + tmp, errno);
  }
}

ShardWriter::ShardWriter(std::string path, std::string tmp_path, int fd, ShardIdentity identity,
                         ShardWriteOptions options)
    : path_(std::move(path)),
      tmp_path_(std::move(tmp_path)),
      fd_(fd),
      identity_(std::move(identity)),
      options_(options),
      file_sum_(std::make_unique<Checksum64Stream>()),
      out_(fd_.get(), tmp_path_) {
  footer_.set_first_id(identity_.first_id);
  footer_.set_dataset(identity_.dataset);
  footer_.set_version(identity_.version);
  footer_.set_seq(identity_.seq);
  footer_.set_compression(options_.compression);
}

ShardWriter::~ShardWriter() { RemoveTemp(); }

void ShardWriter::RemoveTemp() {
  fd_.reset();
  if (!tmp_path_.empty()) unlink(tmp_path_.c_str());
  tmp_path_.clear();
}

Status ShardWriter::Fail(Status why) {
  RemoveTemp();
  return why;
}

Status ShardWriter::Write(std::string_view bytes) {
  file_sum_->Update(bytes);
  Status s = out_.Append(bytes);
  return s.ok() ? s : Fail(std::move(s));
}

Status ShardWriter::Append(const v1::RecordHeader& header, std::span<const std::string_view> fields) {
  if (finished_) return Status::InvalidArgument("Append after Finish on " + path_);
  if (!fd_.valid()) return Status::FailedPrecondition("shard writer for " + path_ + " failed earlier");
  const uint64_t want_id = identity_.first_id + records_;
  if (header.id() != want_id) {
    return Status::InvalidArgument("record id " + std::to_string(header.id()) + " != expected " +
                                   std::to_string(want_id) + " in " + path_);
  }
  if (static_cast<size_t>(header.field_sizes_size()) != fields.size()) {
    return Status::InvalidArgument("record " + std::to_string(want_id) + " declares " +
                                   std::to_string(header.field_sizes_size()) + " fields, got " +
                                   std::to_string(fields.size()));
  }
  uint64_t payload = 0;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (header.field_sizes(static_cast<int>(i)) != fields[i].size()) {
      return Status::InvalidArgument("record " + std::to_string(want_id) + " field " + std::to_string(i) +
                                     " size does not match its header");
    }
    payload += fields[i].size();
  }
  if (payload > kMaxPayloadBytes) {
    return Status::InvalidArgument("record " + std::to_string(want_id) + " payload exceeds 4 GiB");
  }
  if (!HeaderStringsAreUtf8(header)) {
    return Status::InvalidArgument("record " + std::to_string(want_id) + " has a header string that is not UTF-8");
  }
  // protobuf refuses to serialize messages over 2 GiB, below the u32 length prefix.
  const size_t header_len = header.ByteSizeLong();
  if (header_len > INT_MAX) return Status::InvalidArgument("record " + std::to_string(want_id) + " header too large");

  record_.clear();
  PutU32(&record_, static_cast<uint32_t>(header_len));
  if (!header.AppendToString(&record_)) {
    return Status::InvalidArgument("record " + std::to_string(want_id) + " header does not serialize");
  }
  payload_bytes_ += payload;
  ++records_;
  record_bytes_ += record_.size() + payload + 8;

  if (options_.compression != v1::COMPRESSION_NONE) {
    // The record is framed as in format 3 and goes into the open block.
    for (std::string_view f : fields) record_.append(f);
    PutU64(&record_, Checksum64(record_));
    return AppendToBlock(record_);
  }
  record_offsets_.push_back(out_.size());
  if (payload < kDirectWriteBytes) {
    // Small record: stage it whole and checksum it in one pass.
    for (std::string_view f : fields) record_.append(f);
    PutU64(&record_, Checksum64(record_));
    return Write(record_);
  }
  // Large record: checksum as it streams out, so big fields are not assembled.
  Checksum64Stream sum;
  sum.Update(record_);
  STRATA_RETURN_IF_ERROR(Write(record_));
  for (std::string_view f : fields) {
    sum.Update(f);
    STRATA_RETURN_IF_ERROR(Write(f));
  }
  std::string tail;
  PutU64(&tail, sum.Digest());
  return Write(tail);
}

Result<ShardSummary> ShardWriter::Finish() {
  if (finished_) return Status::InvalidArgument("Finish called twice on " + path_);
  if (!fd_.valid()) return Status::FailedPrecondition("shard writer for " + path_ + " failed earlier");

  STRATA_RETURN_IF_ERROR(CloseBlock());
  const bool compressed = options_.compression != v1::COMPRESSION_NONE;
  footer_.set_payload_bytes(payload_bytes_);
  std::string footer;
  AppendTables(&footer);
  const size_t tables_end = footer.size();
  if (!footer_.AppendToString(&footer) || footer.size() > INT_MAX) {
    return Fail(Status::Internal("footer of " + path_ + " does not serialize"));
  }
  const uint64_t footer_offset = out_.size();
  STRATA_RETURN_IF_ERROR(Write(footer));

  ShardSummary summary;
  summary.records = records_;
  summary.payload_bytes = payload_bytes_;
  summary.record_bytes = record_bytes_;
  summary.file_checksum = file_sum_->Digest();
  summary.file_bytes = footer_offset + footer.size() + kShardTrailerSize;

  std::string trailer;
  PutU64(&trailer, footer_offset);
  PutU32(&trailer, static_cast<uint32_t>(footer.size()));
  PutU32(&trailer, compressed ? kCompressedShardFormatVersion : kShardFormatVersion);
  // Not the tables: reads check the entries they use (server/storage/shard_format.h).
  Checksum64Stream footer_sum;
  footer_sum.Update(footer.data(), 8);
  if (compressed) footer_sum.Update(footer.data() + 8 + 8 * record_offsets_.size(), 8);  // the block count
  footer_sum.Update(footer.data() + tables_end, footer.size() - tables_end);
  PutU64(&trailer, footer_sum.Digest());
  PutU64(&trailer, summary.file_checksum);
  trailer.append(kShardTrailerMagic);
  // The trailer is not part of the file checksum it carries.
  if (Status s = out_.Append(trailer); !s.ok()) return Fail(std::move(s));
  if (Status s = out_.Flush(); !s.ok()) return Fail(std::move(s));

  if (Status s = FsyncFd(fd_.get(), tmp_path_); !s.ok()) return Fail(std::move(s));
  if (Status closed = fd_.Close(tmp_path_); !closed.ok()) return Fail(std::move(closed));
  if (Status renamed = RenameNoReplace(tmp_path_, path_); !renamed.ok()) return Fail(renamed);
  tmp_path_.clear();
  Status synced = SyncDir(DirOf(path_));
  if (!synced.ok()) {
    // Keep "Finish failed => nothing at path": the rename may not be durable.
    unlink(path_.c_str());
    return synced;
  }
  finished_ = true;
  return summary;
}

}  // namespace strata
