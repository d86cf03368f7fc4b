#include "client/read_loop.h"

#include <grpc/support/time.h>

namespace strata::client_internal {

ReadLoop::ReadLoop() {
  // Owner: this loop (joined by its destructor after the queue shuts down).
  // Purpose: every completion of the stream's calls, and the tasks posted.
  thread_ = std::thread([this] { Run(); });
}

ReadLoop::~ReadLoop() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;  // no alarm is set from now on
  }
  // A set alarm fires at once (its deadline is past), so shutting down waits
  // for nothing but the completions already due.
  cq_.Shutdown();
  thread_.join();
}

void ReadLoop::Post(std::function<void()> task) {
  MutexLock lock(&mu_);
  if (stopping_) return;
  tasks_.push_back(std::move(task));
  if (wake_set_) return;
  wake_set_ = true;
  alarm_.Set(&cq_, gpr_inf_past(GPR_CLOCK_MONOTONIC), static_cast<Op*>(&wake_));
}

void ReadLoop::Wake::Done(bool /*ok*/) {
  std::vector<std::function<void()>> tasks;
  {
    MutexLock lock(&loop_->mu_);
    loop_->wake_set_ = false;
    if (!loop_->stopping_) tasks.swap(loop_->tasks_);  // a call done may start nothing more
  }
  for (auto& task : tasks) task();
}

void ReadLoop::Run() {
  void* tag = nullptr;
  bool ok = false;
  while (cq_.Next(&tag, &ok)) static_cast<Op*>(tag)->Done(ok);
}

}  // namespace strata::client_internal
