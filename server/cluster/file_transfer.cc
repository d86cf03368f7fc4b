#include "server/cluster/file_transfer.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <random>

#include "common/file_env.h"
#include "common/grpc_status.h"
#include "common/input_limits.h"
#include "common/unique_fd.h"
#include "plan/stratum_index.h"
#include "server/storage/local_files.h"
#include "server/storage/parity_file.h"
#include "server/storage/shard_format.h"

namespace strata {

namespace {

Status FsyncDir(const std::string& dir) {
  UniqueFd fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus("open " + dir, errno);
  STRATA_RETURN_IF_ERROR(FsyncFd(fd.get(), dir));
  return Status::OK();
}

}  // namespace

Status VerifyLocalFile(v1::FileRef::Kind kind, const std::string& path,
                       const std::function<bool(size_t)>& before_piece) {
  if (kind == v1::FileRef::SHARD) {
    auto reader = ShardReader::Open(path);
    if (!reader.ok()) return reader.status();
    return reader.value()->VerifyFile(before_piece);
  }
  if (kind == v1::FileRef::PARITY) return VerifyParityFile(path, before_piece).status();
  if (before_piece) {
    std::error_code ec;
    const uint64_t size = std::filesystem::file_size(path, ec);
    if (ec) return Status::NotFound(path + ": " + ec.message());
    if (!before_piece(static_cast<size_t>(size))) return Status::Cancelled("verification of " + path + " stopped");
  }
  auto index = StratumIndexFile::Open(path);  // verifies the whole file
  return index.ok() ? Status::OK() : index.status();
}

Result<std::unique_ptr<FileReceiver>> FileReceiver::Begin(const DataDir& dir, const v1::FileRef& file) {
  // The reference comes from the network: checked, and its path resolved
  // inside the data directory, before anything is created. The copy is
  // written in a staging folder; the version's folder is made only when a
  // verified copy is committed.
  auto final_path = dir.CheckedFilePath(file);
  if (!final_path.ok()) return final_path.status();
  const std::string staging = dir.Absolute(kIncomingDir);
  std::error_code ec;
  std::filesystem::create_directories(staging, ec);
  if (ec) return Status::IOError("cannot create " + staging + ": " + ec.message());
  std::random_device rd;
  const std::string tmp =
      staging + "/.tmp." + std::filesystem::path(final_path.value()).filename().string() + "." + std::to_string(rd());
  const int fd = Env().Open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus("create " + tmp, errno);
  return std::unique_ptr<FileReceiver>(new FileReceiver(std::move(final_path).value(), tmp, fd, file));
}

FileReceiver::FileReceiver(std::string final_path, std::string tmp_path, int fd, const v1::FileRef& file)
    : final_path_(std::move(final_path)),
      tmp_path_(std::move(tmp_path)),
      fd_(fd),
      kind_(file.kind()),
      file_(file),
      out_(fd_.get(), tmp_path_) {}

FileReceiver::~FileReceiver() {
  fd_.reset();
  if (!committed_) unlink(tmp_path_.c_str());
}

Status FileReceiver::Append(std::string_view data) { return out_.Append(data); }

Result<bool> FileReceiver::Commit() {
  STRATA_RETURN_IF_ERROR(out_.Flush());
  STRATA_RETURN_IF_ERROR(FsyncFd(fd_.get(), tmp_path_));
  STRATA_RETURN_IF_ERROR(fd_.Close(tmp_path_));
  STRATA_RETURN_IF_ERROR(VerifyLocalFile(kind_, tmp_path_).WithContext("received copy"));
  STRATA_RETURN_IF_ERROR(CheckIdentity());
  const std::filesystem::path parent = std::filesystem::path(final_path_).parent_path();
  std::error_code ec;
  std::filesystem::create_directories(parent, ec);
  if (ec) return Status::IOError("cannot create " + parent.string() + ": " + ec.message());
  // link() fails with EEXIST instead of replacing: the first complete copy wins.
  if (link(tmp_path_.c_str(), final_path_.c_str()) != 0) {
    if (errno == EEXIST) return true;
    return ErrnoStatus("link " + final_path_, errno);
  }
  unlink(tmp_path_.c_str());
  committed_ = true;
  STRATA_RETURN_IF_ERROR(FsyncDir(std::filesystem::path(final_path_).parent_path().string()));
  return false;
}

Status FileReceiver::CheckIdentity() const {
  if (kind_ == v1::FileRef::PARITY) {
    auto trailer = VerifyParityFile(tmp_path_);
    if (!trailer.ok()) return trailer.status();
    if (trailer->dataset_hash != ParityDatasetHash(file_.dataset(), file_.version()) ||
        trailer->version != file_.version() || trailer->seq != file_.seq()) {
      return Status::InvalidArgument("received copy of " + FileName(file_) + " is another parity file");
    }
    return Status::OK();
  }
  if (kind_ != v1::FileRef::SHARD) return Status::OK();
  auto reader = ShardReader::Open(tmp_path_);
  if (!reader.ok()) return reader.status();
  const v1::ShardFooter& footer = reader.value()->footer();
  if (footer.dataset() != file_.dataset() || footer.version() != file_.version() || footer.seq() != file_.seq()) {
    return Status::InvalidArgument("received copy of " + FileName(file_) + " is a shard of " +
                                   QuotePrefix(footer.dataset()) + " version " + std::to_string(footer.version()) +
                                   " seq " + std::to_string(footer.seq()));
  }
  return Status::OK();
}

Status ReadFileChunks(const std::string& path, const v1::FileRef& file, RateLimiter* limiter,
                      const std::function<bool(v1::FileChunk&)>& send) {
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return Status::NotFound(FileName(file) + " is not held here");
    return ErrnoStatus("open " + path, errno);
  }
  struct stat st {};
  fstat(fd.get(), &st);
  std::string buffer(kFileChunkBytes, '\0');
  bool first = true;
  Status result;
  for (;;) {
    const ssize_t n = read(fd.get(), buffer.data(), buffer.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      result = ErrnoStatus("read " + path, errno);
      break;
    }
    if (n == 0 && !first) break;
    if (limiter && !limiter->Acquire(static_cast<uint64_t>(n))) {
      result = Status::Cancelled("sending " + path + " stopped: the node is stopping");
      break;
    }
    v1::FileChunk chunk;
    if (first) {
      *chunk.mutable_file() = file;
      chunk.set_size(static_cast<uint64_t>(st.st_size));
      first = false;
    }
    chunk.set_data(buffer.data(), static_cast<size_t>(n));
    if (!send(chunk)) {
      result = Status::Cancelled("the receiver stopped the transfer of " + FileName(file));
      break;
    }
    if (n == 0) break;
  }
  return result;
}

Result<bool> PushFile(v1::PeerService::Stub* peer, const DataDir& dir, const v1::FileRef& file, RateLimiter* limiter,
                      grpc::ClientContext* context) {
  v1::PutFileReply reply;
  auto writer = peer->PutFile(context, &reply);
  Status read = ReadFileChunks(dir.Absolute(dir.FileRelativePath(file)), file, limiter,
                               [&](v1::FileChunk& chunk) { return writer->Write(chunk); });
  writer->WritesDone();
  Status remote = FromGrpcStatus(writer->Finish());
  if (!remote.ok()) return remote;           // the peer's reason beats "the receiver stopped"
  if (reply.already_present()) return true;  // it may have stopped the transfer early
  if (!read.ok()) return read;
  return false;
}

Result<uint64_t> PullFile(v1::PeerService::Stub* peer, const DataDir& dir, const v1::FileRef& file,
                          RateLimiter* limiter, grpc::ClientContext* context) {
  v1::GetFileRequest request;
  *request.mutable_file() = file;
  auto reader = peer->GetFile(context, request);
  auto receiver = FileReceiver::Begin(dir, file);
  if (!receiver.ok()) {
    context->TryCancel();
    reader->Finish().ok();
    return receiver.status();
  }
  v1::FileChunk chunk;
  uint64_t bytes = 0;
  Status local;
  while (reader->Read(&chunk)) {
    if (limiter && !limiter->Acquire(chunk.data().size())) {
      local = Status::Cancelled("fetching " + FileName(file) + " stopped: the node is stopping");
    } else {
      bytes += chunk.data().size();
      local = receiver.value()->Append(chunk.data());
    }
    if (!local.ok()) {
      context->TryCancel();
      while (reader->Read(&chunk)) {
      }
      break;
    }
  }
  Status remote = FromGrpcStatus(reader->Finish());
  if (!local.ok()) return local;
  if (!remote.ok()) return remote;
  auto committed = receiver.value()->Commit();
  if (!committed.ok()) return committed.status();
  return committed.value() ? 0 : bytes;
}

}  // namespace strata
