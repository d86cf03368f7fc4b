// The StreamBatches and ServeWork calls: gRPC reactors that send one rank's
// batches (BatchSender, the same for both), StreamBatches' for the steps of
// its request, ServeWork's (server/rpc/work_reactor.h) for the work its
// client gives as the call goes on.
//
// Batches are built on the stream's lane (server/base/stream_lanes.h: one
// thread, which the stream shares only with other streams) by a build task
// that goes on building while the queue has room (no thread hand-off per
// batch), at most prefetch_batches ahead of the network, and written one at a
// time in step order. When the writer is idle, the build task posts the
// write's start to the node's I/O pool and builds on; later writes start from
// gRPC's callback threads as the one before completes. Only the builds stay on
// the lane: a write's start is short and runs beside them (1.08 times the rate
// of starting it on the lane after the build). HTTP/2 flow control holds
// writes back for a slow client, and the bounded queue holds building back, so
// a slow trainer bounds the server's memory.
//
// Lifetime: gRPC owns the reactor; it deletes itself in OnDone, which gRPC
// calls only after Finish and every outstanding operation has completed.
// Finish is called once, when no build task is running, no posted write is
// pending, no write is outstanding and no read is being started, so no pool
// task ever touches a finished reactor.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <boost/asio/thread_pool.hpp>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "common/mutex.h"
#include "server/base/active_work.h"
#include "server/base/grpc_handoff.h"
#include "server/base/metrics.h"
#include "server/base/stream_lanes.h"
#include "server/serve/batch_stream.h"
#include "server/serve/stream_memory.h"
#include "server/storage/catalog.h"
#include "strata/v1/data.pb.h"

namespace strata {

// The node's open streams, so that a drain can wake those that wait for
// nothing but their client (a ServeWork call that has sent every step it was
// given). Thread-safe.
class OpenStreams {
 public:
  class Member {
   public:
    virtual ~Member() = default;
    // Has the stream look at the drain flag soon, on another thread; must not
    // block or call into gRPC.
    virtual void WakeForDrain() = 0;
  };
  void Add(Member* stream);
  void Remove(Member* stream);  // before it is destroyed
  void WakeAll();

 private:
  Mutex mu_;
  std::set<Member*> members_ GUARDED_BY(mu_);
};

// What every stream of a node shares. Owned by the data service; outlives
// its reactors.
struct StreamCalls {
  boost::asio::thread_pool::executor_type executor;  // the node's I/O pool: write starts, ReadStratumIndex
  StreamLanes* lanes = nullptr;                      // each stream's builds run on one lane
  ActiveWork* active = nullptr;                      // open streams (drain waits for them)
  Metrics* metrics = nullptr;
  Catalog* catalog = nullptr;                   // resume cursors
  const std::atomic<bool>* draining = nullptr;  // read before each write
  uint32_t prefetch_batches = 4;
  StreamMemory* memory = nullptr;  // built, unsent batches of every stream (issue 18)
  OpenStreams* open = nullptr;     // every started stream, until it is done
  // Admits and opens a stream for a validated request from `peer`: the node's
  // checks (draining, its stream limit, memory), then StreamOpener: the
  // stream and the bytes reserved for it, or the status to refuse the call with.
  std::function<grpc::Status(const v1::StreamRequest& request, const std::string& peer,
                             std::unique_ptr<BatchStream>* stream, uint64_t* reserved)>
      admit;
};

// Parts go out as raw byte buffers (server/serve/wire_part.h), serialised on the
// pool by the build task, so that payloads reach gRPC without a copy.
// `Base`: the gRPC reactor (a server-streaming or a bidirectional one).
template <typename Base>
class BatchSender : public HandOffVisible<Base>, public OpenStreams::Member {
 public:
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;
  void WakeForDrain() override;

 protected:
  BatchSender(const StreamCalls* calls, std::string peer);
  // Starts building at once. `reserved` bytes were taken from
  // calls->memory for the stream (its first step's estimate); the sender
  // gives them back when it is done. With `more_work`, the stream is given
  // work as the call goes on (GiveWork) until InputClosed, and the call ends
  // only after that; the sender then counts a read being started, so the
  // caller must call ReadStarted after its StartRead.
  void Start(std::unique_ptr<BatchStream> stream, v1::StreamRequest request, uint64_t reserved, bool more_work);
  bool started() const { return started_; }
  const StreamCalls* calls() const { return calls_; }
  const std::string& peer() const { return peer_; }
  // Gives the stream more work, or ends the call with `refused` (the message
  // was not valid) or with what AddWork found wrong. Returns whether the call
  // goes on: then a read is counted as being started, as in Start.
  bool GiveWork(v1::WorkMore more, const Status& refused);
  // The client half-closed: the call ends once every step given is sent.
  void InputClosed();
  // The read counted by Start or GiveWork has been started (or is not to be).
  void ReadStarted();

 private:
  struct Outgoing {
    grpc::ByteBuffer wire;
    uint64_t payload_bytes = 0;
    uint64_t wire_bytes = 0;  // counted in buffered_ until its write completes
    uint64_t samples = 0;
    uint64_t step = 0;     // the last step it carries
    uint64_t through = 0;  // the last step it completes: `step`, or an idle step omitted after it
    bool last_of_step = false;
    uint32_t steps = 1;  // steps joined in it (Batch.following)
  };
  // For a client that reads Batch.following (it gave work, or asked with
  // StreamRequest.joined_steps): a step of one part that finds the queue
  // backed up joins the message before it, up to these bounds. Nothing waits
  // to be joined: an idle writer sends at once. Fewer messages cost the
  // client fewer window updates, each of which wakes this node. 768 KiB holds
  // two whole steps of 256 KiB with their fields and leaves the next message
  // room in the client's 1 MiB window; a message larger than the window holds
  // the node's writes back (bench/README.md, "Steps joined on every call").
  static constexpr uint32_t kMaxJoinedSteps = 16;
  static constexpr uint64_t kMaxJoinedBytes = 768 << 10;

  // Build tasks one stream has posted or running at once (each builds a
  // different step). They share the stream's lane, so the second builds while
  // the first waits for records from other nodes (a deferred step).
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
  // Who calls Pump. A posted Pump, an ending build task and a read being
  // started are counted (kicking_, builders_, starting_read_) until their Pump
  // takes them off under mu_, so the call never finishes while one of them is
  // still to touch the reactor.
  enum class Wake {
    kCallback,      // a gRPC reaction (write done, cancel)
    kKick,          // the task posted to start a write (clears kicking_)
    kBuilderEnded,  // a build task that stops building (decrements builders_)
    kReadStarted,   // the read being started is (clears starting_read_)
  };
  // Starts the next write, or finishes the call, if it is time.
  void Pump(Wake wake = Wake::kCallback);
  void RecordCursor(uint64_t next_step);

  // Whether every step the stream will serve is claimed.
  bool AllClaimed() REQUIRES(mu_) { return stream_->done() && !more_work_; }

  const StreamCalls* const calls_;
  const uint32_t lane_;               // from calls_->lanes, given back in OnDone
  const StreamLanes::Executor exec_;  // the lane's: builds, deferred steps, drain wake-ups
  // Set by Start; until then only the thread that calls it touches the
  // reactor, but for OnCancel, which reads it.
  std::atomic<bool> started_{false};
  std::unique_ptr<BatchStream> stream_;  // Claim and AddWork under mu_; Build by the build tasks
  v1::StreamRequest request_;            // without its work
  bool joins_ = false;                   // the client reads Batch.following (it had work, or asked)
  bool omits_idle_ = false;              // it had work and asked for no part of a step it gave nothing of
  const std::string peer_;
  const uint32_t prefetch_;
  std::optional<DatasetMetrics::Served> served_;  // this stream's dataset's served counters

  Mutex mu_;
  std::deque<Outgoing> ready_ GUARDED_BY(mu_);                       // in step order
  std::map<uint64_t, std::vector<Outgoing>> built_ GUARDED_BY(mu_);  // steps built before an earlier one
  uint64_t next_queued_step_ GUARDED_BY(mu_) = 0;                    // the step ready_ takes next
  Outgoing in_flight_;                                               // owned by the outstanding write
  uint32_t builders_ GUARDED_BY(mu_) = 0;                            // build tasks posted or running
  bool budget_blocked_ GUARDED_BY(mu_) = false;  // a claim found the memory budget short: wait for a step to end
  uint32_t in_build_ GUARDED_BY(mu_) = 0;        // steps claimed, not yet built
  bool writing_ GUARDED_BY(mu_) = false;
  bool kicking_ GUARDED_BY(mu_) = false;      // a posted Pump(kick) has not run yet
  bool claimed_all_ GUARDED_BY(mu_) = false;  // every step the stream will serve is claimed
  bool more_work_ GUARDED_BY(mu_) = false;    // ServeWork: the client may give more
  bool starting_read_ GUARDED_BY(mu_) = false;
  bool set_up_ GUARDED_BY(mu_) = false;  // Start has set up what Pump reads (Pump waits for it)
  bool finishing_ GUARDED_BY(mu_) = false;
  std::optional<grpc::Status> final_status_ GUARDED_BY(mu_);
  uint64_t completed_steps_ GUARDED_BY(mu_) = 0;  // next step not yet fully written
  StreamMemory* const memory_;
  uint64_t reserved_ = 0;                       // granted_ never drops below it
  uint64_t granted_ GUARDED_BY(mu_) = 0;        // bytes taken from memory_
  uint64_t buffered_ GUARDED_BY(mu_) = 0;       // wire bytes built and not yet sent
  uint64_t step_estimate_ GUARDED_BY(mu_) = 0;  // the largest step built so far, or the estimate
};

// StreamBatches: the steps of its request.
class StreamReactor final : public BatchSender<grpc::ServerWriteReactor<grpc::ByteBuffer>> {
 public:
  // Starts building at once (BatchSender::Start).
  StreamReactor(const StreamCalls* calls, std::unique_ptr<BatchStream> stream, v1::StreamRequest request,
                std::string peer, uint64_t reserved)
      : BatchSender(calls, std::move(peer)) {
    Start(std::move(stream), std::move(request), reserved, false);
  }
};

// Finishes a call at once with an error (a refused stream).
class RefusedStreamReactor final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  explicit RefusedStreamReactor(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

}  // namespace strata
