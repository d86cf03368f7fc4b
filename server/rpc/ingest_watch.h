// The ingest calls of a node, watched for a client that went quiet: a call
// waiting for its client's next message longer than the idle timeout is
// expired (its reactor finishes it with DEADLINE_EXCEEDED and aborts its
// ingest: nothing of it is kept). A live client
// that never sends its commit would otherwise hold the version open, and its
// shard writers' files and buffers, for as long as its connection lives
// (keepalives find only a dead peer).
//
// Thread-safety: safe for concurrent use. A Call is registered from its
// reactor's construction until its OnDone, which removes it before the
// reactor is deleted.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <set>
#include <string>

#include "common/mutex.h"
#include "common/steady_clock.h"

namespace strata {

class IngestWatch {
 public:
  // 0 s: no timeout (Sweep cancels nothing).
  explicit IngestWatch(std::chrono::seconds idle_timeout) : idle_timeout_(idle_timeout) {}

  struct Call {
    // When the call began to wait for its client (SteadyNowNs); 0 while
    // the server works on its last message or is done reading.
    std::atomic<int64_t> waiting_since{0};
    // Ends the call if it still waits for its client (`shutdown`: because the
    // node is shutting down, else because the client went quiet); false if it
    // no longer did. Called under the watch's lock, so it must not call back
    // into it.
    std::function<bool(bool shutdown)> expire;
  };

  std::chrono::seconds idle_timeout() const { return idle_timeout_; }
  void Add(Call* call);
  void Remove(Call* call);
  // Expires the calls that have waited for their client longer than the
  // timeout; returns how many.
  size_t Sweep(int64_t now_ns);
  // Ends every call that waits for its client now, saying the node is
  // shutting down (the drain's time ran out); returns how many. From then on
  // shutting_down() is true, and a call busy with a message ends itself
  // instead of reading the next (IngestReactor::ReadNext).
  size_t EndAllForShutdown();
  bool shutting_down() const { return shutting_down_.load(std::memory_order_acquire); }

 private:
  const std::chrono::seconds idle_timeout_;
  std::atomic<bool> shutting_down_{false};
  Mutex mu_;
  std::set<Call*> calls_ GUARDED_BY(mu_);
};

}  // namespace strata
