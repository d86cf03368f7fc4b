#include "server/base/periodic_task.h"

#include <boost/asio/post.hpp>

namespace strata {

PeriodicTask::PeriodicTask(boost::asio::any_io_executor executor, std::function<std::chrono::milliseconds()> run)
    : strand_(boost::asio::make_strand(executor)), timer_(strand_), run_(std::move(run)) {}

PeriodicTask::~PeriodicTask() { Stop(); }

void PeriodicTask::Post(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_.load()) return;
    ++pending_;
  }
  boost::asio::post(strand_, [this, fn = std::move(fn)] {
    fn();
    Done();
  });
}

void PeriodicTask::Done() {
  // Notified under the lock: Stop() may return, and the task be destroyed,
  // as soon as it has the lock.
  std::lock_guard<std::mutex> lock(mu_);
  if (--pending_ == 0) idle_.notify_all();
}

void PeriodicTask::Start() {
  Post([this] { Arm(std::chrono::milliseconds(0)); });
}

void PeriodicTask::Kick() {
  // An aborted wait runs at once (see Arm); a run in progress is followed by
  // the next one as soon as it has armed its timer.
  Post([this] { timer_.cancel(); });
}

void PeriodicTask::Arm(std::chrono::milliseconds delay) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_.load()) return;
    ++pending_;
  }
  timer_.expires_after(delay);
  timer_.async_wait([this](const boost::system::error_code&) {
    // Expired or cancelled by Kick: run either way, unless stopping.
    if (!stopping_.load()) Arm(run_());
    Done();
  });
}

void PeriodicTask::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_.exchange(true) && pending_ == 0) return;
    ++pending_;
  }
  // Cancel the wait on the strand (the timer is not thread-safe); its handler
  // then ends without running.
  boost::asio::post(strand_, [this] {
    timer_.cancel();
    Done();
  });
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [this] { return pending_ == 0; });
}

}  // namespace strata
