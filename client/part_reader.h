// Private to libstrata. One StreamBatches or ServeWork call to one server,
// driven by the stream's ReadLoop (client/read_loop.h: one thread for every
// call of a stream) into a PartQueue shared by every server of a
// ClusterStream. A ServeWork call is given more work as the stream goes on
// (Give, from the stream's thread), which the loop writes while it reads: a
// node that stops reading (stopped, or its host gone silent) can hold a
// write forever, and it holds neither the stream's thread nor the loop,
// which go on reading the other nodes while the stall clock watches. Steps a
// server joined into one message (Batch.following) are queued as parts of
// their own; a server that nests them deeper has its call end with Internal.
//
// The queue bounds memory: a part more than `lookahead` steps ahead of the
// step the trainer waits for waits in its reader, which reads nothing more
// from its call until the trainer catches up, so a fast server cannot flood
// the client while a slow one lags, and HTTP/2 flow control passes the wait
// on to the server. So does a part that would take the bytes queued past
// the queue's byte cap (twice the lookahead's steps, at least 64 MiB): parts
// of steps the trainer has had, or the same part sent again and again, are
// dropped only once the stream's thread takes them, so without it a node
// that sends them (a bug, or a hostile node) could fill the client's memory
// while the trainer computes.
//
// A part's payload is not parsed: it stays in the buffers gRPC received it
// in (client/received_part.h) until its batch is assembled. The queue keeps
// parts the stream has consumed, so that readers parse the other fields into
// messages whose repeated fields already have their elements.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/read_loop.h"
#include "client/received_part.h"
#include "common/mutex.h"
#include "common/status.h"
#include "strata/v1/data.pb.h"

namespace strata::client_internal {

// A part from a server, or the end of its call.
struct PartEvent {
  std::string node;
  uint64_t generation = 0;  // which set of readers it came from (failover starts a new one)
  bool end = false;         // the call ended; `status` says how
  Status status;
  v1::Batch part;       // every field but the payload
  PartPayload payload;  // the part's payload
};

class PartQueue {
 public:
  explicit PartQueue(uint64_t lookahead_steps) : lookahead_(lookahead_steps) {}

  // Queues *e (moving it) unless its part is too far ahead, or the queue
  // holds bytes and *e would take them past the byte cap: then *e stays as
  // it was, `when_room` is kept, and it returns false. An end is always
  // queued. Each `when_room` kept runs once, when room may have opened
  // (SetNextStep, WakeAll, a Pop that halves the bytes queued), on the thread
  // that made it, with no lock held.
  bool TryPush(PartEvent* e, std::function<void()> when_room);
  // The oldest event, waiting up to `timeout`.
  std::optional<PartEvent> Pop(std::chrono::milliseconds timeout);
  // The trainer now waits for `step`: parts before step + lookahead may
  // come (lookahead 0: it stays as it was), and the byte cap becomes twice
  // lookahead + 1 steps of `step_bytes` (0: it stays), at least kMinCapBytes.
  void SetNextStep(uint64_t step, uint64_t lookahead = 0, uint64_t step_bytes = 0);
  // What the queue counts for an event: its payload and a little per sample.
  static uint64_t EventBytes(const PartEvent& e);
  static constexpr uint64_t kMinCapBytes = 64 << 20;
  // Steps ahead of the next one that may come now.
  uint64_t lookahead() const;
  // Runs every `when_room` kept (a reader cancelled stops waiting for room).
  void WakeAll();
  // A consumed part to parse into (an empty one if none is kept), and the
  // return of one. At most kSpares are kept.
  v1::Batch TakeSpare();
  void Recycle(v1::Batch part);
  static constexpr size_t kSpares = 8;

 private:
  // Every `when_room` kept, for the caller to run once it has let go of mu_.
  std::vector<std::function<void()>> TakeWaiting() REQUIRES(mu_);

  mutable Mutex mu_;
  uint64_t lookahead_ GUARDED_BY(mu_);
  CondVar pushed_;
  std::vector<std::function<void()>> waiting_ GUARDED_BY(mu_);            // the `when_room` kept: parts too far ahead
  std::vector<std::function<void()>> waiting_for_bytes_ GUARDED_BY(mu_);  // ... parts past the byte cap
  std::deque<PartEvent> events_ GUARDED_BY(mu_);
  uint64_t bytes_ GUARDED_BY(mu_) = 0;  // EventBytes of events_
  uint64_t cap_bytes_ GUARDED_BY(mu_) = kMinCapBytes;
  uint64_t next_step_ GUARDED_BY(mu_) = 0;
  std::vector<v1::Batch> spares_ GUARDED_BY(mu_);
};

class PartReader {
 public:
  enum class Call {
    kStream,  // StreamBatches(request)
    kWork,    // ServeWork, opened with request (which has work)
  };
  // Starts the call on `loop`. `loop` and `queue` must outlive the reader.
  PartReader(ReadLoop* loop, std::shared_ptr<grpc::Channel> channel, v1::StreamRequest request, std::string node,
             uint64_t generation, PartQueue* queue, Call call = Call::kStream);
  // Cancels the call and waits until it has ended: nothing of it reaches the
  // queue afterwards.
  ~PartReader();
  PartReader(const PartReader&) = delete;
  PartReader& operator=(const PartReader&) = delete;

  void Cancel();

  // ServeWork: gives the node the steps it owes next, or half-closes (the
  // node ends the call once it has sent every step given). Neither waits:
  // the loop sends them, in order. Give returns false, sending nothing,
  // after Close or once the call has ended (a write that fails later ends
  // the call, which the reader reports).
  bool Give(const v1::WorkMore& more);
  void Close();
  bool closed() const { return closed_; }

  // While the call has a read outstanding (the reader waits for the
  // server's next message): the steady-clock time (ns since its epoch) the
  // read began; 0 while it has none (a part waits for room in the queue, or
  // the call is done). This is what measures a silent node: time waiting
  // for a read is time the transport delivered nothing, whatever the
  // trainer is doing.
  int64_t reading_since_ns() const;

 private:
  class State;  // the call, run on the loop (client/part_reader.cc)
  std::shared_ptr<State> state_;
  bool closed_ = false;  // Close was called (the stream's thread only)
};

}  // namespace strata::client_internal
