// The Ingest call: a gRPC read reactor that feeds an IngestSession.
//
// Messages are handled on the node's I/O pool, one at a time: the next read
// starts only after the previous message is written, so shard writes and
// fsyncs never block gRPC's threads. The call ends with the sealed version's
// summary after the commit message, or with the error that aborted the ingest;
// a stream that ends without a commit aborts it (but one writer's part of an
// ingest with several, cancelled before its first sample, only withdraws), and
// so does a client that sends nothing for ingest_idle_timeout_s. A node takes
// at most max_ingests at once: more are refused with RESOURCE_EXHAUSTED.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <boost/asio/thread_pool.hpp>
#include <memory>
#include <string>

#include "common/mutex.h"
#include "server/base/active_work.h"
#include "server/base/grpc_handoff.h"
#include "server/base/metrics.h"
#include "server/cluster/ingest_coordinator.h"
#include "server/ingest/ingest_session.h"
#include "server/rpc/ingest_watch.h"
#include "strata/v1/data.pb.h"

namespace strata {

// What every ingest call of a node shares. Owned by the data service;
// outlives its reactors.
struct IngestCalls {
  boost::asio::thread_pool::executor_type executor;  // the node's I/O pool: messages are handled there
  ActiveWork* active = nullptr;                      // open ingests (drain waits for them)
  Metrics* metrics = nullptr;
  IngestCoordinator* coordinator = nullptr;
  const std::atomic<bool>* draining = nullptr;  // new ingests are refused once set
  bool tokens_checked = false;                  // calls carry tokens (server/rpc/auth.h)
  uint32_t max_ingests = 0;                     // open at once; more are refused (0: no limit)
  IngestWatch* watch = nullptr;                 // cancels calls whose client went quiet (may be null)
};

// Test only: true when the environment sets STRATA_TEST_LEGACY_INGEST=1.
// stratad then behaves as a build from before the acceptance signal (no
// initial metadata until the call ends, no ingest_accept_signal in the cluster
// map), so that tests can check a new client against an old server.
bool LegacyIngestForTests();

class IngestReactor final : public HandOffVisible<grpc::ServerReadReactor<v1::IngestRequest>> {
 public:
  // `context` is the call's: once the ingest is opened the reactor sends
  // initial metadata with kIngestAcceptedKey, so that the client knows at
  // once that this node took it (and tries the next node otherwise).
  IngestReactor(const IngestCalls* calls, v1::IngestReply* reply, std::string peer,
                grpc::CallbackServerContext* context);
  static constexpr const char* kIngestAcceptedKey = "strata-ingest-accepted";

  void OnReadDone(bool ok) override;
  void OnDone() override;

 private:
  void Process();
  // Opens the ingest or adds samples; a commit is Process's.
  Status Handle(const v1::IngestRequest& request);
  // Counts and logs the refusal, aborts the session, finishes the call.
  void Refuse(const Status& s);
  // Aborts the session (if any) and finishes the call with `status` once the
  // abort is known where it must be: a part's home hears of it before the
  // client does, so that a writer whose ingest has ended has aborted the
  // version for every writer (another writer's later commit is refused).
  // A call the client cancelled before its first sample withdraws a part
  // instead (IngestSession::Withdraw).
  void AbortAndFinish(const std::string& why, grpc::Status status);
  // Several writers: opens this writer's part once the home has answered,
  // and commits it at the home.
  void OpenPart(const v1::IngestOptions& options);
  void CommitPart(uint64_t expected_samples);
  // Sends the initial metadata that tells the client this node took the ingest.
  void Accept();
  // StartRead, with the wait for the client watched (IngestWatch).
  void ReadNext();
  // IngestWatch::Call::expire: finishes the call if it still waits for its
  // client, with DEADLINE_EXCEEDED (idle) or UNAVAILABLE (`shutdown`); the
  // session is aborted in OnDone.
  bool Expire(bool shutdown);
  // Finishes the call UNAVAILABLE, saying the node is shutting down.
  void FinishForShutdown() REQUIRES(read_mu_);
  // Where tokens are checked: PERMISSION_DENIED for keep_versions (it
  // deletes versions) on a call without kKeepVersionsMetadataKey, for which
  // the token check asked an admin token (common/call_metadata.h).
  Status CheckRetentionRole(const v1::IngestOptions& options) const;

  const IngestCalls* const calls_;
  v1::IngestReply* const reply_;
  const std::string peer_;
  grpc::CallbackServerContext* const context_;
  v1::IngestRequest request_;
  std::unique_ptr<IngestSession> session_;
  bool committed_ = false;
  v1::IngestOptions part_options_;  // a part's, as the client opened it
  IngestWatch::Call watched_;
  // A read outstanding, and whether Expire finished the call: a read that
  // completes after that is ignored.
  Mutex read_mu_;
  bool reading_ GUARDED_BY(read_mu_) = false;
  bool expired_ GUARDED_BY(read_mu_) = false;
  bool counted_ = false;  // in calls_->active (a call refused for max_ingests is not)
};

}  // namespace strata
