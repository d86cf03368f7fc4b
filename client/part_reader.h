// Private to libstrata. One StreamBatches or ServeWork call to one server,
// read on its own thread into a PartQueue shared by every server of a
// ClusterStream. A ServeWork call is given more work as the stream goes on
// (Give, from the stream's thread), which a writer thread of the call's own
// sends while its reader reads: a node that stops reading (stopped, or its
// host gone silent) can hold a write forever, and it must hold neither the
// stream's thread nor the reader, which the stall clock watches. Steps a
// server joined into one message (Batch.following) are queued as parts of
// their own; a server that nests them deeper has its call end with Internal.
//
// The queue bounds memory: a reader holding a part more than `lookahead`
// steps ahead of the step the trainer waits for blocks until the trainer
// catches up, so a fast server cannot flood the client while a slow one
// lags, and HTTP/2 flow control passes the wait on to the server.
//
// A part's payload is not parsed: it stays in the buffers gRPC received it
// in (client/received_part.h) until its batch is assembled. The queue keeps
// parts the stream has consumed, so that readers parse the other fields into
// messages whose repeated fields already have their elements.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "client/received_part.h"
#include "common/mutex.h"
#include "common/status.h"
#include "strata/v1/data.grpc.pb.h"

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

  // Queues `e`, first waiting while its part is too far ahead. Returns false
  // (dropping it) if `cancelled` becomes true meanwhile.
  bool Push(PartEvent e, const std::atomic<bool>& cancelled);
  // The oldest event, waiting up to `timeout`.
  std::optional<PartEvent> Pop(std::chrono::milliseconds timeout);
  // The trainer now waits for `step`: parts up to step + lookahead may come.
  void SetNextStep(uint64_t step);
  // Wakes blocked pushers (after cancelling their readers).
  void WakeAll();
  // A consumed part to parse into (an empty one if none is kept), and the
  // return of one. At most kSpares are kept.
  v1::Batch TakeSpare();
  void Recycle(v1::Batch part);
  static constexpr size_t kSpares = 8;

 private:
  const uint64_t lookahead_;
  Mutex mu_;
  CondVar pushed_;
  CondVar room_;
  std::deque<PartEvent> events_ GUARDED_BY(mu_);
  uint64_t next_step_ GUARDED_BY(mu_) = 0;
  std::vector<v1::Batch> spares_ GUARDED_BY(mu_);
};

class PartReader {
 public:
  enum class Call {
    kStream,  // StreamBatches(request)
    kWork,    // ServeWork, opened with request (which has work)
  };
  PartReader(std::shared_ptr<grpc::Channel> channel, v1::StreamRequest request, std::string node, uint64_t generation,
             PartQueue* queue, Call call = Call::kStream);
  ~PartReader();  // cancels the call and joins the thread

  void Cancel();

  // ServeWork: gives the node the steps it owes next, or half-closes (the
  // node ends the call once it has sent every step given). Neither waits:
  // the writer thread sends them, in order. Give returns false, sending
  // nothing, after Close or once the call has ended (a write that fails
  // later ends the call, which the reader reports).
  bool Give(const v1::WorkMore& more);
  void Close();
  bool closed() const { return closed_; }

  // While the reader waits inside Read() for the server's next message: the
  // steady-clock time (ns since its epoch) it began waiting; 0 while it is
  // not (it is queueing a part, blocked by a full queue, or done). This is
  // what measures a silent node: time in Read() is time the transport
  // delivered nothing, whatever the trainer is doing.
  int64_t reading_since_ns() const { return reading_since_ns_.load(std::memory_order_acquire); }

 private:
  void Run();
  // Reads the call's messages into the queue until it ends; its end status,
  // or what the node sent that no node may send.
  template <typename Reader>
  Status ReadAll(Reader* reader);
  // ServeWork's writer: the first message, then the outbox, until the call
  // ends (stop_).
  void WriteAll(grpc::ClientReaderWriter<v1::WorkRequest, grpc::ByteBuffer>* stream);

  // The calls are made as the generated stub makes them, but read each
  // message as the bytes received (grpc::ByteBuffer), which ParsePart splits.
  const std::shared_ptr<grpc::Channel> channel_;
  const grpc::internal::RpcMethod stream_batches_;
  const grpc::internal::RpcMethod serve_work_;
  const v1::StreamRequest request_;
  const Call call_;
  // ServeWork's writing side: messages wait in outbox_ for the writer.
  Mutex write_mu_;
  CondVar wake_writer_;
  std::vector<v1::WorkRequest> outbox_ GUARDED_BY(write_mu_);
  bool close_ GUARDED_BY(write_mu_) = false;  // WritesDone is due after the outbox
  bool stop_ GUARDED_BY(write_mu_) = false;   // the call has ended: the writer stops
  bool closed_ = false;                       // Close was called (the stream's thread only)
  const std::string node_;
  const uint64_t generation_;
  PartQueue* const queue_;
  grpc::ClientContext context_;
  std::atomic<bool> cancelled_{false};
  std::atomic<int64_t> reading_since_ns_{0};
  std::thread thread_;
};

}  // namespace strata::client_internal
