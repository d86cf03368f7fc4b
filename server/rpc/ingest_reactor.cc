#include "server/rpc/ingest_reactor.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <cstdlib>

#include "common/allocator.h"
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
  calls_->active->Begin();
  StartRead(&request_);
}

void IngestReactor::OnReadDone(bool ok) {
  TakeBackFromGrpc(this);
  if (!ok) {
    // The client half-closed or vanished before committing.
    if (session_) session_->Abort("the client ended the stream without a commit");
    session_.reset();
    Finish(grpc::Status(grpc::StatusCode::ABORTED, "the ingest stream ended without a commit; nothing was stored"));
    return;
  }
  boost::asio::post(calls_->executor, [this] { Process(); });
}

void IngestReactor::Process() {
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
  StartRead(&request_);
}

void IngestReactor::Refuse(const Status& s) {
  calls_->metrics->CountRejected(s.code() == Code::kInvalidArgument ? Metrics::Reject::kInvalidRequest
                                 : calls_->draining->load()         ? Metrics::Reject::kDraining
                                                                    : Metrics::Reject::kIngestRefused);
  spdlog::warn("ingest from {} refused: {}", peer_, s.ToString());
  session_.reset();  // aborts: files removed, version marked aborted
  Finish(ToGrpcStatus(s));
}

Status IngestReactor::Handle(const v1::IngestRequest& request) {
  switch (request.body_case()) {
    case v1::IngestRequest::kOpen: {
      if (session_) return Status::InvalidArgument("the ingest was already opened");
      if (calls_->draining->load())
        return Status::Unavailable("stratad is shutting down; retry on another node or later");
      STRATA_RETURN_IF_ERROR(ValidateIngestOptions(request.open()));
      auto session = calls_->coordinator->Start(request.open());
      if (!session.ok()) return session.status();
      session_ = std::move(session).value();
      if (!LegacyIngestForTests()) {
        context_->AddInitialMetadata(kIngestAcceptedKey, "1");
        StartSendInitialMetadata();  // the client waits for this before it sends samples
      }
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

void IngestReactor::OnDone() {
  TakeBackFromGrpc(this);
  session_.reset();  // aborts if it was not committed
  // A committed ingest gave its heap back before replying; an aborted one does now.
  const IngestCalls* calls = calls_;
  const bool committed = committed_;
  delete this;
  if (calls->active->End() && !committed) ReleaseFreeHeap();
}

}  // namespace strata
