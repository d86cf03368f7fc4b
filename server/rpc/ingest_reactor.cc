#include "server/rpc/ingest_reactor.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <cstdlib>

#include "common/allocator.h"
#include "common/call_metadata.h"
#include "common/grpc_status.h"
#include "server/cluster/request_validation.h"

namespace strata {

bool LegacyIngestForTests() {
  static const bool legacy = [] {
    const char* v = std::getenv("STRATA_TEST_LEGACY_INGEST");
    return v != nullptr && std::string(v) == "1";
  }();
  return legacy;
}

IngestReactor::IngestReactor(const IngestCalls* calls, v1::IngestReply* reply, std::string peer,
                             grpc::CallbackServerContext* context)
    : calls_(calls), reply_(reply), peer_(std::move(peer)), context_(context) {
  watched_.expire = [this](bool shutdown) { return Expire(shutdown); };
  if (calls_->watch) calls_->watch->Add(&watched_);
  if (calls_->max_ingests != 0 && calls_->active->count() >= calls_->max_ingests) {
    calls_->metrics->CountRejected(Metrics::Reject::kTooManyIngests);
    Finish(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        "this node takes at most " + std::to_string(calls_->max_ingests) +
                            " ingests at once (max_ingests); retry later or on another node"));
    return;
  }
  calls_->active->Begin();
  counted_ = true;
  ReadNext();
}

void IngestReactor::ReadNext() {
  MutexLock lock(&read_mu_);
  if (calls_->watch != nullptr && calls_->watch->shutting_down()) {
    // The drain's time ran out while this call was busy with a message.
    if (!expired_) {
      expired_ = true;
      FinishForShutdown();
    }
    return;
  }
  reading_ = true;
  watched_.waiting_since.store(SteadyNowNs(), std::memory_order_release);
  StartRead(&request_);
}

void IngestReactor::FinishForShutdown() {
  spdlog::warn("ingest from {} aborted: this node is shutting down (drain_timeout_ms passed before its commit)", peer_);
  // Said here: gRPC's own shutdown would end the call with "Cancelling all calls".
  Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                      "stratad is shutting down and its drain time (drain_timeout_ms) ran out before the commit; "
                      "the ingest was aborted, nothing was stored: run it again"));
}

bool IngestReactor::Expire(bool shutdown) {
  MutexLock lock(&read_mu_);
  if (!reading_ || expired_) return false;
  expired_ = true;
  if (shutdown) {
    FinishForShutdown();
    return true;
  }
  const std::string why = "the client sent nothing for " + std::to_string(calls_->watch->idle_timeout().count()) +
                          " s (ingest_idle_timeout_s)";
  calls_->metrics->CountRejected(Metrics::Reject::kIngestIdle);
  spdlog::warn("ingest from {} aborted: {}", peer_, why);
  // The pending read ends with ok = false; OnDone, which follows, aborts the session.
  Finish(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, why + "; the ingest was aborted, nothing was stored"));
  return true;
}

void IngestReactor::OnReadDone(bool ok) {
  TakeBackFromGrpc(this);
  {
    MutexLock lock(&read_mu_);
    reading_ = false;
    watched_.waiting_since.store(0, std::memory_order_release);
    if (expired_) return;  // finished by Expire
  }
  if (!ok) {
    // The client half-closed or vanished before committing, or this node's
    // shutdown cancelled the call.
    AbortAndFinish(
        calls_->draining->load() ? "the call was cut by this node's shutdown before a commit"
                                 : "the client ended the stream without a commit",
        grpc::Status(grpc::StatusCode::ABORTED, "the ingest stream ended without a commit; nothing was stored"));
    return;
  }
  boost::asio::post(calls_->executor, [this] { Process(); });
}

void IngestReactor::Process() {
  if (request_.body_case() == v1::IngestRequest::kOpen && !session_ && !request_.open().ingest_id().empty()) {
    OpenPart(request_.open());
    return;  // continues when the home answers
  }
  if (request_.body_case() == v1::IngestRequest::kCommit && session_ && session_->is_part()) {
    CommitPart(request_.commit().expected_samples());
    return;
  }
  if (request_.body_case() == v1::IngestRequest::kCommit && session_) {
    // No thread waits for the copies the write policy needs: the session
    // calls back when they are confirmed (on a replicator thread, or at once
    // here), and the seal, a RocksDB write, is posted back to the I/O pool.
    session_->BeginCommit(request_.commit().expected_samples(), [this](Status copies) {
      boost::asio::post(calls_->executor, [this, copies = std::move(copies)] {
        auto reply = session_->FinishCommit(copies);
        if (!reply.ok()) {
          Refuse(reply.status());
          return;
        }
        *reply_ = std::move(reply).value();
        committed_ = true;
        // Free what the ingest built up and give it back before the client
        // hears of the commit, so that the first stream of the new version,
        // which the client may start at once, does not pay for consolidating
        // it (a fraction of a second after 10M samples, against a minute of
        // ingest).
        session_.reset();
        ReleaseFreeHeap();
        Finish(grpc::Status::OK);
      });
    });
    return;  // the session may already be another thread's
  }
  Status s = Handle(request_);
  if (!s.ok()) {
    Refuse(s);
    return;
  }
  ReadNext();
}

void IngestReactor::Refuse(const Status& s) {
  calls_->metrics->CountRejected(s.code() == Code::kInvalidArgument ? Metrics::Reject::kInvalidRequest
                                 : calls_->draining->load()         ? Metrics::Reject::kDraining
                                                                    : Metrics::Reject::kIngestRefused);
  spdlog::warn("ingest from {} refused: {}", peer_, s.ToString());
  AbortAndFinish(s.ToString(), ToGrpcStatus(s));
}

void IngestReactor::AbortAndFinish(const std::string& why, grpc::Status status) {
  if (!session_) {
    Finish(status);
    return;
  }
  auto finish = [this, status = std::move(status)] {
    boost::asio::post(calls_->executor, [this, status] {
      session_.reset();
      Finish(status);
    });
  };
  // A client that cancelled the call (it gave up waiting for a slow join, or
  // went away) before any sample arrived withdraws a part instead: the other
  // writers' ingest stays open and this writer may join again.
  if (context_->IsCancelled()) {
    session_->Withdraw(why, std::move(finish));
    return;
  }
  // Files removed, version marked aborted; the call finishes on the I/O pool.
  session_->Abort(why, std::move(finish));
}

Status IngestReactor::Handle(const v1::IngestRequest& request) {
  switch (request.body_case()) {
    case v1::IngestRequest::kOpen: {
      if (session_) return Status::InvalidArgument("the ingest was already opened");
      if (calls_->draining->load())
        return Status::Unavailable("stratad is shutting down; retry on another node or later");
      STRATA_RETURN_IF_ERROR(ValidateIngestOptions(request.open()));
      STRATA_RETURN_IF_ERROR(CheckRetentionRole(request.open()));
      auto session = calls_->coordinator->Start(request.open());
      if (!session.ok()) return session.status();
      session_ = std::move(session).value();
      Accept();
      return Status::OK();
    }
    case v1::IngestRequest::kSamples: {
      if (!session_) return Status::InvalidArgument("the first ingest message must open the ingest");
      STRATA_RETURN_IF_ERROR(calls_->coordinator->CheckRoom(request.samples().samples_size()));
      for (const auto& sample : request.samples().samples()) STRATA_RETURN_IF_ERROR(session_->Add(sample));
      return Status::OK();
    }
    case v1::IngestRequest::kCommit:  // with a session: Process()
      return Status::InvalidArgument("the first ingest message must open the ingest");
    case v1::IngestRequest::BODY_NOT_SET: break;
  }
  return Status::InvalidArgument("an ingest message must hold open, samples or commit");
}

Status IngestReactor::CheckRetentionRole(const v1::IngestOptions& options) const {
  if (options.keep_versions() == 0 || !calls_->tokens_checked) return Status::OK();
  // Retention deletes the older versions, as `strata rm` does: the token
  // check asked for an admin token if the call said so in its metadata.
  if (context_->client_metadata().count(kKeepVersionsMetadataKey) > 0) return Status::OK();
  return Status(Code::kPermissionDenied,
                "an ingest with keep_versions deletes older versions and needs an admin token, which this node "
                "checks on calls that carry the '" +
                    std::string(kKeepVersionsMetadataKey) + "' metadata; this one does not (a client from before it?)");
}

void IngestReactor::Accept() {
  if (LegacyIngestForTests()) return;
  context_->AddInitialMetadata(kIngestAcceptedKey, "1");
  StartSendInitialMetadata();  // the client waits for this before it sends samples
}

void IngestReactor::OpenPart(const v1::IngestOptions& options) {
  if (calls_->draining->load()) return Refuse(Status::Unavailable("stratad is shutting down; retry on another node"));
  if (Status valid = ValidateIngestOptions(options); !valid.ok()) return Refuse(valid);
  if (Status allowed = CheckRetentionRole(options); !allowed.ok()) return Refuse(allowed);
  part_options_ = options;
  calls_->coordinator->StartPart(options, [this](Result<std::unique_ptr<IngestSession>> session) {
    auto shared = std::make_shared<Result<std::unique_ptr<IngestSession>>>(std::move(session));
    boost::asio::post(calls_->executor, [this, shared] {
      if (!shared->ok()) return Refuse(shared->status());
      session_ = std::move(*shared).value();
      Accept();
      ReadNext();
    });
  });
}

void IngestReactor::CommitPart(uint64_t expected_samples) {
  // As a whole version's commit, without a waiting thread: the copies, then
  // the part goes to the home, whose answer finishes the call.
  session_->BeginCommit(expected_samples, [this](Status copies) {
    boost::asio::post(calls_->executor, [this, copies = std::move(copies)] {
      auto part = session_->FinishPart(copies);
      if (!part.ok()) return Refuse(part.status());
      const v1::NodeInfo home = session_->part_home();
      calls_->coordinator->CommitPart(home, std::move(part).value(), [this, home](Result<v1::CommitPartReply> reply) {
        auto shared = std::make_shared<Result<v1::CommitPartReply>>(std::move(reply));
        boost::asio::post(calls_->executor, [this, shared, home] {
          if (!shared->ok()) {
            // Whatever the home made of it, the version must not seal without
            // this part: abort it there (a no-op if it has sealed it), and
            // refuse once the home has answered.
            calls_->coordinator->AbortAtHome(
                home, part_options_.ingest_id(), shared->status().ToString(),
                [this, shared] { boost::asio::post(calls_->executor, [this, shared] { Refuse(shared->status()); }); });
            return;
          }
          *reply_->mutable_dataset() = (*shared)->dataset();
          reply_->set_writers_committed((*shared)->writers_committed());
          reply_->set_writers(part_options_.writers());
          committed_ = true;
          session_.reset();
          ReleaseFreeHeap();
          Finish(grpc::Status::OK);
        });
      });
    });
  });
}

void IngestReactor::OnDone() {
  TakeBackFromGrpc(this);
  if (calls_->watch) calls_->watch->Remove(&watched_);
  session_.reset();  // aborts if it was not committed
  // A committed ingest gave its heap back before replying; an aborted one does now.
  const IngestCalls* calls = calls_;
  const bool committed = committed_;
  const bool counted = counted_;
  delete this;
  if (counted && calls->active->End() && !committed) ReleaseFreeHeap();
}

}  // namespace strata
