#include "server/rpc/peer_service.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/post.hpp>
#include <functional>

#include "common/grpc_status.h"
#include "common/ingest_errors.h"
#include "common/input_limits.h"
#include "common/unique_fd.h"
#include "server/base/grpc_handoff.h"
#include "server/cluster/file_transfer.h"
#include "server/cluster/request_validation.h"
#include "server/cluster/version_confirm.h"
#include "server/storage/path_guard.h"

namespace strata {

namespace {

grpc::ServerUnaryReactor* Done(grpc::CallbackServerContext* context, const Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

// Runs `work` (disk or RocksDB reads: it may block) on `executor`, not on the
// gRPC callback thread, and finishes the call with its status from there. The
// request and reply stay valid until Finish.
template <typename Work>
grpc::ServerUnaryReactor* OnExecutor(grpc::CallbackServerContext* context,
                                     const boost::asio::thread_pool::executor_type& executor, Work work) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  boost::asio::post(executor, [reactor, work = std::move(work)]() mutable { reactor->Finish(ToGrpcStatus(work())); });
  return reactor;
}

// A callback for work that answers later (IngestCoordinator's): it fills
// *reply with the result, if any, and finishes the call with its status.
template <typename Reply>
std::function<void(Result<Reply>)> FinishWith(grpc::ServerUnaryReactor* reactor, Reply* reply) {
  return [reactor, reply](Result<Reply> result) {
    if (result.ok()) *reply = std::move(result).value();
    reactor->Finish(ToGrpcStatus(result.status()));
  };
}

// Receives one file; chunks are written on the peer pool, one at a time.
class PutFileReactor final : public HandOffVisible<grpc::ServerReadReactor<v1::FileChunk>> {
 public:
  PutFileReactor(const PeerServiceImpl::Deps* d, v1::PutFileReply* reply) : d_(d), reply_(reply) {
    if (d_->active_copies != nullptr) d_->active_copies->Begin();
    StartRead(&chunk_);
  }

  void OnReadDone(bool ok) override {
    TakeBackFromGrpc(this);
    if (!ok) {  // the sender is done (or gone)
      boost::asio::post(d_->executor, [this] { Complete(); });
      return;
    }
    boost::asio::post(d_->executor, [this] { Process(); });
  }
  void OnDone() override {
    TakeBackFromGrpc(this);
    if (d_->active_copies != nullptr) d_->active_copies->End();
    delete this;
  }
  // The sender cancelled, or its connection or this node's server went: the
  // chunks read so far are no whole file, and no damage either.
  void OnCancel() override { cancelled_ = true; }

 private:
  void Process() {
    Status s;
    if (!receiver_) {
      // A node that is stopping takes no new replica: the sender gives it
      // to the next node at once rather than have it cut off mid-file.
      if (d_->draining != nullptr && d_->draining->load()) {
        Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "this node is shutting down"));
        return;
      }
      file_ = chunk_.file();
      if (Status valid = ValidateFileRef(file_); !valid.ok()) {
        Finish(ToGrpcStatus(valid));
        return;
      }
      if (d_->files->Has(file_)) {
        reply_->set_already_present(true);
        Finish(grpc::Status::OK);
        return;
      }
      if (Status room = d_->disk->CheckWritable("a replica of " + FileName(file_)); !room.ok()) {
        Finish(ToGrpcStatus(room));
        return;
      }
      auto r = FileReceiver::Begin(*d_->dir, file_);
      if (!r.ok()) {
        Finish(ToGrpcStatus(r.status()));
        return;
      }
      receiver_ = std::move(r).value();
    }
    s = receiver_->Append(chunk_.data());
    if (!s.ok()) {
      Finish(ToGrpcStatus(s));
      return;
    }
    StartRead(&chunk_);
  }

  void Complete() {
    if (cancelled_) {
      receiver_.reset();  // removes the partial file
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the copy was cut off before its end"));
      return;
    }
    if (!receiver_) {
      Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no file was sent"));
      return;
    }
    auto committed = receiver_->Commit();
    if (!committed.ok()) {
      spdlog::error("receiving {}: {}", FileName(file_), committed.status().ToString());
      Finish(ToGrpcStatus(committed.status()));
      return;
    }
    d_->files->Add(file_);
    if (d_->versions->DropIfDead(file_)) {
      Finish(ToGrpcStatus(VersionDeadOnArrival(file_.dataset().substr(0, 64), file_.version())));
      return;
    }
    reply_->set_already_present(committed.value());
    Finish(grpc::Status::OK);
  }

  const PeerServiceImpl::Deps* const d_;
  v1::PutFileReply* const reply_;
  v1::FileChunk chunk_;
  v1::FileRef file_;
  std::unique_ptr<FileReceiver> receiver_;
  std::atomic<bool> cancelled_{false};
};

// Sends one local file in chunks. The file is opened, and each chunk read,
// on the peer pool: never on the gRPC callback thread that created the reactor.
class GetFileReactor final : public HandOffVisible<grpc::ServerWriteReactor<v1::FileChunk>> {
 public:
  GetFileReactor(const PeerServiceImpl::Deps* d, const v1::FileRef& file) : d_(d), file_(file) {
    boost::asio::post(d_->executor, [this] { Open(); });
  }

  void OnWriteDone(bool ok) override {
    TakeBackFromGrpc(this);
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the receiver went away"));
      return;
    }
    if (sent_ >= size_) {
      Finish(grpc::Status::OK);
      return;
    }
    boost::asio::post(d_->executor, [this] { Next(); });
  }
  void OnDone() override {
    TakeBackFromGrpc(this);
    delete this;
  }

 private:
  void Open() {
    auto path = d_->dir->CheckedFilePath(file_);
    if (!path.ok()) {
      Finish(ToGrpcStatus(path.status()));
      return;
    }
    if (d_->files->Has(file_)) fd_.reset(open(path->c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd_.valid()) {
      Finish(grpc::Status(grpc::StatusCode::NOT_FOUND, FileName(file_) + " is not held by " + d_->view->self_id()));
      return;
    }
    size_ = static_cast<uint64_t>(lseek(fd_.get(), 0, SEEK_END));
    Next();
  }

  void Next() {
    chunk_.Clear();
    if (sent_ == 0) {
      *chunk_.mutable_file() = file_;
      chunk_.set_size(size_);
    }
    std::string* data = chunk_.mutable_data();
    data->resize(static_cast<size_t>(std::min<uint64_t>(kFileChunkBytes, size_ - sent_)));
    const ssize_t n = pread(fd_.get(), data->data(), data->size(), static_cast<off_t>(sent_));
    if (n < 0 || static_cast<size_t>(n) != data->size()) {
      Finish(grpc::Status(grpc::StatusCode::INTERNAL, "cannot read " + FileName(file_)));
      return;
    }
    sent_ += static_cast<uint64_t>(n);
    StartWrite(&chunk_);
  }

  const PeerServiceImpl::Deps* const d_;
  const v1::FileRef file_;
  UniqueFd fd_;
  uint64_t size_ = 0;
  uint64_t sent_ = 0;
  v1::FileChunk chunk_;
};

}  // namespace

grpc::ServerUnaryReactor* PeerServiceImpl::Ping(grpc::CallbackServerContext* context, const v1::PingRequest* request,
                                                v1::PingReply* reply) {
  if (Status valid = ValidatePing(*request); !valid.ok()) return Done(context, valid);
  reply->set_node_id(d_.view->self_id());
  reply->set_map_epoch(d_.view->Current().epoch());
  const DiskFigures disk = d_.disk->Last();
  reply->set_disk_free_bytes(disk.free_bytes);
  reply->set_disk_total_bytes(disk.total_bytes);
  reply->set_disk_full(d_.disk->BelowHigh());
  return Done(context, Status::OK());
}

grpc::ServerReadReactor<v1::FileChunk>* PeerServiceImpl::PutFile(grpc::CallbackServerContext*,
                                                                 v1::PutFileReply* reply) {
  return new PutFileReactor(&d_, reply);
}

grpc::ServerWriteReactor<v1::FileChunk>* PeerServiceImpl::GetFile(grpc::CallbackServerContext*,
                                                                  const v1::GetFileRequest* request) {
  return new GetFileReactor(&d_, request->file());
}

grpc::ServerUnaryReactor* PeerServiceImpl::ReadRecords(grpc::CallbackServerContext* context,
                                                       const v1::ReadRecordsRequest* request,
                                                       v1::ReadRecordsReply* reply) {
  if (Status valid = ValidateReadRecords(*request); !valid.ok()) return Done(context, valid);
  return OnExecutor(context, d_.executor, [d = &d_, request, reply] {
    // The reply is built here in full before it is sent: its bytes are
    // bounded, not only its count (one large record asked 65,536 times).
    Status s;
    size_t bytes = 0;
    for (uint64_t index : request->indexes()) {
      if (bytes >= InputLimits::kMaxReadReplyBytes) break;
      std::string* raw = reply->add_records();
      s = d->records->ReadLocal(request->file(), index, raw);
      if (!s.ok()) break;
      bytes += raw->size();
    }
    if (!s.ok()) reply->Clear();
    return s;
  });
}

grpc::ServerUnaryReactor* PeerServiceImpl::PutVersion(grpc::CallbackServerContext* context,
                                                      const v1::PutVersionRequest* request, v1::PutVersionReply*) {
  // The claim is checked, then confirmed with the version's coordinator (an
  // RPC, so on the peer pool, not a gRPC thread); its copy is what is imported.
  v1::VersionRecord claimed;
  std::vector<v1::ShardRecord> shards;
  if (Status valid = ValidateVersionMeta(request->meta(), *d_.dir, &claimed, &shards); !valid.ok()) {
    return Done(context, valid);
  }
  // The confirmation waits on the coordinator without holding a thread; its
  // import (RocksDB and the version's files) runs on the peer pool.
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  ConfirmWithCoordinator(claimed, d_.view->Current(), d_.view->self_id(), *d_.peers, std::chrono::seconds(5),
                         [d = &d_, reactor](Result<v1::VersionMeta> confirmed) {
                           boost::asio::post(d->executor, [d, reactor, confirmed = std::move(confirmed)] {
                             Status s = confirmed.status();
                             if (confirmed.ok()) {
                               auto changed = d->versions->Import(confirmed.value());
                               if (changed.ok() && changed.value()) d->repairer->Kick();
                               s = changed.status();
                             }
                             if (!s.ok()) spdlog::warn("PutVersion refused: {}", s.ToString());
                             reactor->Finish(ToGrpcStatus(s));
                           });
                         });
  return reactor;
}

grpc::ServerUnaryReactor* PeerServiceImpl::ListVersions(grpc::CallbackServerContext* context,
                                                        const v1::ListVersionsRequest* request,
                                                        v1::ListVersionsReply* reply) {
  if (Status valid = ValidateListVersions(*request); !valid.ok()) return Done(context, valid);
  return OnExecutor(context, d_.executor, [d = &d_, request, reply] { return d->versions->Export(*request, reply); });
}

grpc::ServerUnaryReactor* PeerServiceImpl::ListLocalFiles(grpc::CallbackServerContext* context,
                                                          const v1::ListLocalFilesRequest* request,
                                                          v1::ListLocalFilesReply* reply) {
  if (Status valid = ValidateListLocalFiles(*request); !valid.ok()) return Done(context, valid);
  for (auto& f : d_.files->List(request->dataset(), request->version())) {
    *reply->add_files()->mutable_file() = std::move(f);
  }
  return Done(context, Status::OK());
}

grpc::ServerUnaryReactor* PeerServiceImpl::JoinIngest(grpc::CallbackServerContext* context,
                                                      const v1::JoinIngestRequest* request,
                                                      v1::JoinIngestReply* reply) {
  if (d_.multi == nullptr || d_.coordinator == nullptr) {
    return Done(context, Status::Unimplemented("no ingests with several writers here"));
  }
  if (Status valid = ValidateJoinIngest(*request); !valid.ok()) return Done(context, valid);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  // On the peer pool: a join waits on the registry's lock, which a creating join holds across RocksDB writes.
  boost::asio::post(d_.executor, [coordinator = d_.coordinator, request, reply, reactor] {
    coordinator->JoinAsHome(request->options(), request->writer_node(), FinishWith(reactor, reply));
  });
  return reactor;
}

grpc::ServerUnaryReactor* PeerServiceImpl::JoinOpenIngest(grpc::CallbackServerContext* context,
                                                          const v1::JoinIngestRequest* request,
                                                          v1::JoinIngestReply* reply) {
  if (d_.multi == nullptr) return Done(context, Status::Unimplemented("no ingests with several writers here"));
  if (Status valid = ValidateJoinIngest(*request); !valid.ok()) return Done(context, valid);
  return OnExecutor(context, d_.executor, [d = &d_, request, reply]() -> Status {
    auto joined = d->multi->Join(request->options(), MultiIngests::JoinMode::kOpenOnly, request->writer_node());
    if (!joined.ok()) return joined.status();
    *reply = std::move(joined).value();
    return Status::OK();
  });
}

grpc::ServerUnaryReactor* PeerServiceImpl::CommitPart(grpc::CallbackServerContext* context,
                                                      const v1::IngestPart* request, v1::CommitPartReply* reply) {
  if (d_.multi == nullptr || d_.coordinator == nullptr) {
    return Done(context, Status::Unimplemented("no ingests with several writers here"));
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  // MultiIngests::Commit checks every field of the part.
  d_.coordinator->CommitAsHome(*request, FinishWith(reactor, reply));
  return reactor;
}

grpc::ServerUnaryReactor* PeerServiceImpl::FindIngest(grpc::CallbackServerContext* context,
                                                      const v1::FindIngestRequest* request,
                                                      v1::FindIngestReply* reply) {
  if (d_.multi == nullptr) return Done(context, Status::Unimplemented("no ingests with several writers here"));
  if (!ValidIngestId(request->ingest_id())) return Done(context, Status::InvalidArgument("invalid ingest id"));
  if (request->part()) {  // a home watching its writers: does this writer's part run here?
    if (d_.coordinator == nullptr) return Done(context, Status::Unimplemented("no ingests with several writers here"));
    reply->set_open(d_.coordinator->PartRunsHere(request->ingest_id(), request->writer()));
    return Done(context, Status::OK());
  }
  *reply = d_.multi->Find(request->ingest_id());
  return Done(context, Status::OK());
}

grpc::ServerUnaryReactor* PeerServiceImpl::AbortIngest(grpc::CallbackServerContext* context,
                                                       const v1::AbortIngestRequest* request,
                                                       v1::AbortIngestReply* reply) {
  if (d_.multi == nullptr) return Done(context, Status::Unimplemented("no ingests with several writers here"));
  if (Status valid = ValidateAbortIngest(*request); !valid.ok()) return Done(context, valid);
  if (!request->dataset().empty()) {  // an operator's abort, by version
    return OnExecutor(context, d_.executor, [d = &d_, request, reply] {
      const DatasetRef ref = ParseDatasetRef(request->dataset()).value();
      auto found = d->multi->AbortVersion(ref.name, *ref.version, request->why());
      if (!found.ok()) return found.status();
      reply->set_found(found.value());
      return Status::OK();
    });
  }
  return OnExecutor(context, d_.executor, [d = &d_, request] {
    return request->withdraw() ? d->multi->Withdraw(request->ingest_id(), request->writer(), request->why())
                               : d->multi->Abort(request->ingest_id(), request->why());
  });
}

}  // namespace strata
