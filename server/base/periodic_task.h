// PeriodicTask: a function run again and again on a Boost.Asio executor,
// paced by a steady_timer on a strand: once at Start(), then after the delay
// each run returns, or soon after Kick(). Runs never overlap (the strand),
// and a run may block (the executor's threads are meant for such work, e.g.
// the daemon's background pool).
//
// Stop() ends it: no run starts afterwards, and it returns once every
// handler the task issued has finished, so the task (and what its function
// uses) may then be destroyed even while the executor runs on.
//
// Thread-safety: Start, Kick, Stop and stopping() are safe from any thread.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>

namespace strata {

class PeriodicTask {
 public:
  // `run` returns the delay until its next run.
  PeriodicTask(boost::asio::any_io_executor executor, std::function<std::chrono::milliseconds()> run);
  ~PeriodicTask();  // Stop()
  PeriodicTask(const PeriodicTask&) = delete;
  PeriodicTask& operator=(const PeriodicTask&) = delete;

  // The first run starts at once. REQUIRES: called at most once.
  void Start();
  // The next run starts as soon as the current one (if any) ends.
  void Kick();
  // See the class comment. Idempotent.
  void Stop();
  // True once Stop() began: a long run checks it to end early.
  bool stopping() const { return stopping_.load(); }

 private:
  // Posts `fn` to the strand, counted in pending_. Nothing once stopped.
  void Post(std::function<void()> fn);
  void Arm(std::chrono::milliseconds delay);  // REQUIRES: on the strand
  void Done();                                // a counted handler ended

  boost::asio::strand<boost::asio::any_io_executor> strand_;
  boost::asio::steady_timer timer_;  // used on the strand only
  const std::function<std::chrono::milliseconds()> run_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::condition_variable idle_;
  int pending_ = 0;  // GUARDED_BY(mu_): handlers issued and not yet finished
};

}  // namespace strata
