// StagedStream: a Stream, a ring, and the producer thread between them.
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "client/staging/copier.h"
#include "client/staging/ring.h"
#include "strata/staging.h"

namespace strata {

namespace {

using staging_internal::RingCore;
using staging_internal::Slot;

class StagedStreamImpl final : public StagedStream {
 public:
  StagedStreamImpl(std::unique_ptr<Stream> stream, staging_internal::SelectedCopier selected, int prefetch_depth)
      : stream_(std::move(stream)),
        memory_(selected.copier->memory()),
        device_(selected.copier->device()),
        description_(std::move(selected.description)),
        ring_(std::make_shared<RingCore>(std::move(selected.copier), prefetch_depth)),
        position_(stream_->resume_token()) {
    // Owner: this stream (joined by its destructor). Purpose: pulls batches
    // from the network stream and copies them into the staging ring ahead
    // of the consumer.
    producer_ = std::thread([this] { Produce(); });
  }

  ~StagedStreamImpl() override {
    Cancel();
    producer_.join();
  }

  Status Next(StagedBatch* batch) override {
    batch->Release();
    if (!final_.ok()) return final_;
    ResumeToken position;
    Status s = ring_->Take(batch, &position);
    if (!s.ok()) {
      batch->Release();
      final_ = std::move(s);
      return final_;
    }
    position_ = std::move(position);
    steps_in_epoch_ = batch->batch().steps_in_epoch();
    return Status::OK();
  }

  StagingMemory memory() const override { return memory_; }
  int device() const override { return device_; }
  const std::string& description() const override { return description_; }
  ResumeToken resume_token() const override { return position_; }
  uint64_t steps_in_epoch() const override { return steps_in_epoch_; }
  size_t slots() const override { return ring_->slots(); }
  uint64_t buffer_allocations() const override { return ring_->copier().allocations(); }

  void Cancel() override {
    ring_->Stop();
    stream_->Cancel();
  }

 private:
  // The producer thread: the only user of stream_ apart from Cancel().
  void Produce() {
    Status bound = ring_->copier().BindThread();
    if (!bound.ok()) {
      ring_->Finish(std::move(bound));
      return;
    }
    while (Slot* slot = ring_->AcquireForFill()) {
      Status s = stream_->Next(&slot->batch);
      if (s.ok()) {
        slot->position = stream_->resume_token();
        s = ring_->copier().Stage(slot);
      }
      const bool ended = !s.ok();
      ring_->Filled(slot, std::move(s));
      if (ended) return;
    }
  }

  const std::unique_ptr<Stream> stream_;
  const StagingMemory memory_;
  const int device_;
  const std::string description_;
  const std::shared_ptr<RingCore> ring_;
  ResumeToken position_;  // after the last batch handed out
  uint64_t steps_in_epoch_ = 0;
  Status final_;
  std::thread producer_;
};

}  // namespace

StagingMemory StagedStream::Probe(const StagingOptions& options, std::string* description) {
  return staging_internal::ProbePath(options, description);
}

Result<std::unique_ptr<StagedStream>> StagedStream::Open(std::unique_ptr<Stream> stream,
                                                         const StagingOptions& options) {
  if (stream == nullptr) return Status::InvalidArgument("no stream to stage");
  if (options.prefetch_depth < 1 || options.prefetch_depth > 64) {
    return Status::InvalidArgument("prefetch depth must be between 1 and 64, not " +
                                   std::to_string(options.prefetch_depth));
  }
  if (options.copy_threads < 0 || options.copy_threads > 64) {
    return Status::InvalidArgument("copy threads must be between 0 (automatic) and 64, not " +
                                   std::to_string(options.copy_threads));
  }
  auto selected = staging_internal::SelectCopier(options);
  if (!selected.ok()) return selected.status();
  const int copiers = selected->copier->copy_threads();
  std::fprintf(stderr, "strata staging: %s, prefetch %d, %d copy thread%s\n", selected->description.c_str(),
               options.prefetch_depth, copiers, copiers == 1 ? "" : "s");
  return std::unique_ptr<StagedStream>(
      std::make_unique<StagedStreamImpl>(std::move(stream), std::move(selected).value(), options.prefetch_depth));
}

}  // namespace strata
