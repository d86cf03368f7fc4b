// StreamLanes: the threads that build streams' batches, each stream kept on
// one of them.
//
// A stream's builds come as many small tasks: a build task per run of steps,
// the rest of a step that waited for other nodes' records. On a shared pool
// each lands on whichever thread is idle, so a stream's state, its blocks'
// pages and its shard readers move between cores and each task wakes a
// sleeping thread. Measured on 2 cores (1 KiB samples, one stream), the build
// then cost 1.7 times the CPU it costs on one thread (bench/README.md, "Stream
// lanes"). So a stream builds on one lane, a thread it shares only with other
// streams; streams spread over the lanes, the least loaded first, so several
// streams use several cores. (The short task that starts a write is not a
// lane's: server/rpc/stream_reactor.h.)
//
// Thread-safety: every method is safe to call from any thread.
#pragma once

#include <boost/asio/thread_pool.hpp>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/mutex.h"

namespace strata {

class StreamLanes {
 public:
  using Executor = boost::asio::thread_pool::executor_type;

  // `lanes` threads, at least one.
  explicit StreamLanes(uint32_t lanes);
  ~StreamLanes();  // joins
  StreamLanes(const StreamLanes&) = delete;
  StreamLanes& operator=(const StreamLanes&) = delete;

  // A lane for one stream: the one with the fewest streams (the lowest index
  // among equals). Give it back with Release when the stream is done.
  uint32_t Acquire();
  void Release(uint32_t lane);
  Executor executor(uint32_t lane) const { return lanes_[lane]->get_executor(); }
  uint32_t size() const { return static_cast<uint32_t>(lanes_.size()); }
  uint32_t streams_on(uint32_t lane) const;

  // Waits until every task posted to a lane has run, then stops the threads.
  void Join();

 private:
  std::vector<std::unique_ptr<boost::asio::thread_pool>> lanes_;
  mutable Mutex mu_;
  std::vector<uint32_t> streams_ GUARDED_BY(mu_);  // per lane
};

}  // namespace strata
