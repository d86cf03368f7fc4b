// The StreamBatches call: a gRPC write reactor that sends one rank's batches.
//
// Batches are built on the node's I/O pool by one task per stream, which goes
// on building while the queue has room (no thread hand-off per batch), at most
// prefetch_batches ahead of the network, and written one at a time in step
// order; when the writer is idle, the build task posts the write to another
// pool thread and builds on. HTTP/2 flow control holds writes back for a slow
// client, and the bounded queue holds building back, so a slow trainer bounds
// the server's memory.
//
// Lifetime: gRPC owns the reactor; it deletes itself in OnDone, which gRPC
// calls only after Finish and every outstanding operation has completed.
// Finish is called once, when no build task is running, no posted write is
// pending and no write is outstanding, so no pool task ever touches a
// finished reactor.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <boost/asio/thread_pool.hpp>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/mutex.h"
#include "server/base/active_work.h"
#include "server/base/grpc_handoff.h"
#include "server/base/metrics.h"
#include "server/serve/batch_stream.h"
#include "server/serve/stream_memory.h"
#include "server/storage/catalog.h"
#include "strata/v1/data.pb.h"

namespace strata {

// What every stream of a node shares. Owned by the data service; outlives
// its reactors.
struct StreamCalls {
  boost::asio::thread_pool::executor_type executor;  // the node's I/O pool: builds and writes run there
  ActiveWork* active = nullptr;                      // open streams (drain waits for them)
  Metrics* metrics = nullptr;
  Catalog* catalog = nullptr;                   // resume cursors
  const std::atomic<bool>* draining = nullptr;  // read before each write
  uint32_t prefetch_batches = 4;
  StreamMemory* memory = nullptr;  // built, unsent batches of every stream (issue 18)
};

// Parts go out as raw byte buffers (server/serve/wire_part.h), serialised on the
// pool by the build task, so that payloads reach gRPC without a copy.
class StreamReactor final : public HandOffVisible<grpc::ServerWriteReactor<grpc::ByteBuffer>> {
 public:
  // Starts building at once. `reserved` bytes were taken from
  // calls->memory for the stream (its first step's estimate); the reactor
  // gives them back when it is done.
  StreamReactor(const StreamCalls* calls, std::unique_ptr<BatchStream> stream, v1::StreamRequest request,
                std::string peer, uint64_t reserved);

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  struct Outgoing {
    grpc::ByteBuffer wire;
    uint64_t payload_bytes = 0;
    uint64_t wire_bytes = 0;  // counted in buffered_ until its write completes
    uint64_t samples = 0;
    uint64_t step = 0;  // the last step it carries
    bool last_of_step = false;
    uint32_t steps = 1;  // steps joined in it (Batch.following)
  };
  // With work (a client that plans and reads Batch.following): a step of one
  // small part that finds the queue backed up joins the message before it,
  // up to these bounds. Nothing waits to be joined: an idle writer sends at once.
  static constexpr uint32_t kMaxJoinedSteps = 16;
  static constexpr uint64_t kMaxJoinedBytes = 256 << 10;

  // Build tasks one stream runs at once (each builds a different step).
  static constexpr uint32_t kBuildersPerStream = 2;

  bool CanClaim() REQUIRES(mu_);  // may take more of memory_
  void ShrinkGrant() REQUIRES(mu_);
  void MaybeScheduleBuild() REQUIRES(mu_);
  void BuildTask();
  // Completes a step whose records came from other nodes, then goes on as
  // the BuildTask that deferred it (on the I/O pool).
  void ResumeBuild(BatchStream::DeferredStep& deferred);
  // Queues a built step's parts for writing (in step order), or records its
  // error as the call's end; counts it off in_build_.
  void Queue(uint64_t step, const Status& s, std::vector<WirePart>& parts);
  // Who calls Pump. A posted Pump and an ending build task are counted
  // (kicking_, builders_) until their Pump takes them off under mu_, so the
  // call never finishes while one of them is still to touch the reactor.
  enum class Wake {
    kCallback,      // a gRPC reaction (write done, cancel)
    kKick,          // the task posted to start a write (clears kicking_)
    kBuilderEnded,  // a build task that stops building (decrements builders_)
  };
  // Starts the next write, or finishes the call, if it is time.
  void Pump(Wake wake = Wake::kCallback);
  void RecordCursor(uint64_t next_step);

  const StreamCalls* const calls_;
  std::unique_ptr<BatchStream> stream_;  // Claim under mu_; Build by the build tasks
  const v1::StreamRequest request_;
  const std::string peer_;
  const uint32_t prefetch_;

  Mutex mu_;
  std::deque<Outgoing> ready_ GUARDED_BY(mu_);                       // in step order
  std::map<uint64_t, std::vector<Outgoing>> built_ GUARDED_BY(mu_);  // steps built before an earlier one
  uint64_t next_queued_step_ GUARDED_BY(mu_);                        // the step ready_ takes next
  Outgoing in_flight_;                                               // owned by the outstanding write
  uint32_t builders_ GUARDED_BY(mu_) = 0;                            // build tasks posted or running
  uint32_t in_build_ GUARDED_BY(mu_) = 0;                            // steps claimed, not yet built
  bool writing_ GUARDED_BY(mu_) = false;
  bool kicking_ GUARDED_BY(mu_) = false;      // a posted Pump(kick) has not run yet
  bool claimed_all_ GUARDED_BY(mu_) = false;  // every step of the range is claimed
  bool finishing_ GUARDED_BY(mu_) = false;
  std::optional<grpc::Status> final_status_ GUARDED_BY(mu_);
  uint64_t completed_steps_ GUARDED_BY(mu_);  // next step not yet fully written
  StreamMemory* const memory_;
  const uint64_t reserved_;                 // granted_ never drops below it
  uint64_t granted_ GUARDED_BY(mu_);        // bytes taken from memory_
  uint64_t buffered_ GUARDED_BY(mu_) = 0;   // wire bytes built and not yet sent
  uint64_t step_estimate_ GUARDED_BY(mu_);  // the largest step built so far, or the estimate
  const DatasetMetrics::Served served_;     // this stream's dataset's served counters
};

// Finishes a call at once with an error (a refused stream).
class RefusedStreamReactor final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  explicit RefusedStreamReactor(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

}  // namespace strata
