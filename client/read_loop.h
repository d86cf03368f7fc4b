// Private to libstrata. ReadLoop: the one thread that drives every gRPC call
// of a stream (client/part_reader.h) through one CompletionQueue, and runs
// work that other threads post to it.
//
// Why one thread for all of a stream's nodes, not a thread per call: the
// thread that reads a socket is the one whose malloc arena gRPC's receive
// buffers come from. With a blocking reader per node, whichever reader
// happened to poll read each socket, so the buffers of three nodes' messages
// came from several arenas, each freed block went back to its own, and the
// next read landed in memory that had left the cache: with one arena
// (MALLOC_ARENA_MAX=1) the old three-node client streamed 1.24x faster, its
// kernel's copy out of the socket, page faults and payload copy shrinking
// most. One thread reads every call, so its buffers come from one arena and
// are reused warm (three nodes: 0.67-0.71x the client CPU, 1.19-1.27x the
// rate; bench/README.md, "One thread reads every node"); and a stream needs
// one thread however many nodes it reads, not two per node (a reader, and a
// writer for ServeWork).
//
// Nothing run on the loop may block: an operation's completion and a posted
// task run one at a time, in the order they come.
//
// Thread-safety: Post may be called from any thread; cq() is for starting
// operations on the loop's thread.
#pragma once

#include <grpcpp/alarm.h>
#include <grpcpp/completion_queue.h>

#include <functional>
#include <thread>
#include <vector>

#include "common/mutex.h"

namespace strata::client_internal {

class ReadLoop {
 public:
  // An operation started on cq() passes itself as the tag: Done runs on the
  // loop's thread once it completes (`ok` as gRPC's CompletionQueue::Next).
  class Op {
   public:
    virtual void Done(bool ok) = 0;

   protected:
    ~Op() = default;
  };

  ReadLoop();
  // Shuts the queue down and joins the thread; tasks not yet run are dropped.
  // REQUIRES: no operation outstanding on cq() (every call has finished).
  ~ReadLoop();
  ReadLoop(const ReadLoop&) = delete;
  ReadLoop& operator=(const ReadLoop&) = delete;

  grpc::CompletionQueue* cq() { return &cq_; }
  // Runs `task` on the loop's thread, after every task posted before it.
  void Post(std::function<void()> task);

 private:
  // The alarm that wakes the loop for posted tasks.
  class Wake final : public Op {
   public:
    explicit Wake(ReadLoop* loop) : loop_(loop) {}
    void Done(bool ok) override;

   private:
    ReadLoop* const loop_;
  };

  void Run();

  grpc::CompletionQueue cq_;
  Mutex mu_;
  std::vector<std::function<void()>> tasks_ GUARDED_BY(mu_);
  bool wake_set_ GUARDED_BY(mu_) = false;  // the alarm is set and has not fired
  bool stopping_ GUARDED_BY(mu_) = false;
  grpc::Alarm alarm_;
  Wake wake_{this};
  std::thread thread_;
};

}  // namespace strata::client_internal
