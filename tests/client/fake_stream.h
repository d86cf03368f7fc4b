// An in-memory Stream for staging tests: `steps` batches of deterministic
// payloads, with an optional error at one step and an optional gate that
// holds one step until the stream is cancelled.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "client/batch_assembler.h"
#include "strata/client.h"
#include "strata/v1/data.pb.h"

namespace strata::testing {

using client_internal::BatchAssembler;

// Sample `slot` of step `step`: `bytes` bytes that name both.
inline std::string FakePayload(uint64_t step, uint32_t slot, size_t bytes) {
  std::string s(bytes, '\0');
  for (size_t i = 0; i < bytes; ++i) s[i] = static_cast<char>((step * 131 + slot * 31 + i) & 0xff);
  return s;
}

class FakeStream final : public Stream {
 public:
  struct Options {
    uint64_t steps = 10;
    uint32_t batch_size = 4;
    // Payload bytes of each sample at a step.
    std::function<size_t(uint64_t step)> sample_bytes = [](uint64_t) { return size_t{100}; };
    int64_t fail_at = -1;  // Next() at this step returns `failure`
    Status failure = Status::Unavailable("injected failure");
    int64_t block_at = -1;  // Next() at this step blocks until Cancel()
  };

  explicit FakeStream(Options o) : o_(std::move(o)) {
    position_.dataset = "fake";
    position_.version = 1;
    position_.plan_hash = 0x1234;
  }

  Status Next(Batch* batch) override {
    calls_.fetch_add(1);
    const uint64_t step = position_.step;
    if (cancelled_) return Status::Cancelled("stream cancelled");
    if (static_cast<int64_t>(step) == o_.block_at) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return cancelled_.load(); });
      return Status::Cancelled("stream cancelled");
    }
    if (static_cast<int64_t>(step) == o_.fail_at) return o_.failure;
    if (step >= o_.steps) return Status::OutOfRange("end of stream at step " + std::to_string(step));
    v1::Batch part;
    part.set_batch_size(o_.batch_size);
    const size_t bytes = o_.sample_bytes(step);
    for (uint32_t i = 0; i < o_.batch_size; ++i) {
      part.add_slots(i);
      part.add_ids(step * o_.batch_size + i);
      part.add_labels("label" + std::to_string(i % 3));
      part.add_sizes(bytes);
      part.mutable_payload()->append(FakePayload(step, i, bytes));
    }
    BatchAssembler::Reset(batch, 0, step, 0, 1, o_.steps, o_.batch_size);
    if (!BatchAssembler::AddPart(batch, &part)) return Status::Internal("fake part rejected");
    position_.step = step + 1;
    return Status::OK();
  }

  uint64_t steps_in_epoch() const override { return o_.steps; }
  uint64_t next_step() const override { return position_.step; }
  ResumeToken resume_token() const override { return position_; }
  void Cancel() override {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
    cv_.notify_all();
  }

  // Calls of Next() so far, from any thread.
  const std::atomic<uint64_t>& calls() const { return calls_; }

 private:
  const Options o_;
  ResumeToken position_;
  std::atomic<uint64_t> calls_{0};
  std::atomic<bool> cancelled_{false};
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace strata::testing
