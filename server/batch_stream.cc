#include "server/batch_stream.h"

#include <chrono>
#include <map>

#include "common/dataset_ref.h"

namespace strata {

namespace {

// Where a job cursor says this request should start, if it matches the plan.
uint64_t CursorStart(const v1::StreamRequest& r, const Catalog* catalog, const OpenVersion& v, uint64_t plan_hash) {
  if (r.job_id().empty() || !r.resume() || catalog == nullptr) return r.start_step();
  auto cursor = catalog->GetCursor(r.job_id(), r.rank());
  if (!cursor.ok()) return r.start_step();
  const auto& c = cursor.value();
  const bool same = c.dataset() == v.shape().name && c.version() == v.shape().version &&
                    c.spec_hash() == plan_hash && c.seed() == r.seed() && c.epoch() == r.epoch();
  return same ? c.step() : r.start_step();
}

}  // namespace

Result<std::unique_ptr<BatchStream>> BatchStream::Open(const v1::StreamRequest& r, DatasetCache* cache,
                                                       const Catalog* catalog, Metrics* metrics,
                                                       const StreamLimits& limits) {
  if (r.batch_size() == 0) return Status::InvalidArgument("batch size must be at least 1");
  if (r.world() == 0) return Status::InvalidArgument("world size must be at least 1");
  if (r.world() > limits.max_world) {
    return Status::InvalidArgument("world size " + std::to_string(r.world()) + " exceeds the limit of " +
                                   std::to_string(limits.max_world));
  }
  if (r.rank() >= r.world()) {
    return Status::InvalidArgument("rank " + std::to_string(r.rank()) + " is not below world size " +
                                   std::to_string(r.world()));
  }
  auto ref = ParseDatasetRef(r.dataset());
  if (!ref.ok()) return ref.status();
  auto version = cache->Open(ref.value());
  if (!version.ok()) return version.status();
  auto plan = EpochPlan::Create(version.value()->shape(), r.sampler(), r.seed(), r.epoch(), r.batch_size(), r.world(),
                                r.remainder());
  if (!plan.ok()) return plan.status();
  if (r.expect_plan_hash() != 0 && r.expect_plan_hash() != plan->plan_hash()) {
    return Status::FailedPrecondition(
        "the resume token belongs to a different plan (dataset version, sampler, global batch or remainder "
        "changed); start a new epoch or resume with the original settings");
  }
  const uint64_t steps = plan->num_steps();
  const uint64_t start = CursorStart(r, catalog, *version.value(), plan->plan_hash());
  if (start > steps) {
    return Status::InvalidArgument("start step " + std::to_string(start) + " is past the end of the epoch (" +
                                   std::to_string(steps) + " steps)");
  }
  const uint64_t end = r.max_steps() == 0 ? steps : std::min(steps, start + r.max_steps());
  return std::unique_ptr<BatchStream>(
      new BatchStream(r, std::move(version).value(), std::move(plan).value(), start, end, metrics, limits));
}

BatchStream::BatchStream(v1::StreamRequest request, std::shared_ptr<const OpenVersion> version, EpochPlan plan,
                         uint64_t start, uint64_t end, Metrics* metrics, const StreamLimits& limits)
    : request_(std::move(request)),
      version_(std::move(version)),
      plan_(std::move(plan)),
      next_step_(start),
      end_step_(end),
      metrics_(metrics),
      limits_(limits) {}

v1::Batch BatchStream::NewPart(uint64_t step, uint32_t batch_size) const {
  v1::Batch b;
  b.set_epoch(request_.epoch());
  b.set_step(step);
  b.set_rank(request_.rank());
  b.set_dataset_version(version_->shape().version);
  b.set_steps_in_epoch(plan_.num_steps());
  b.set_batch_size(batch_size);
  b.set_plan_hash(plan_.plan_hash());
  return b;
}

Status BatchStream::BuildNext(std::vector<v1::Batch>* parts) {
  const auto started = std::chrono::steady_clock::now();
  const uint64_t step = next_step_;
  plan_.RankBatch(step, request_.rank(), &ids_);
  const uint32_t batch_size = static_cast<uint32_t>(ids_.size());

  v1::Batch part = NewPart(step, batch_size);
  std::map<std::string, uint32_t> layouts;  // joined field names -> index in this part
  RecordView view;
  for (uint32_t slot = 0; slot < batch_size; ++slot) {
    Status s = version_->Read(ids_[slot], &view);
    if (!s.ok()) {
      if (s.IsCorruption() && metrics_) metrics_->checksum_failures.Increment();
      return s.WithContext("step " + std::to_string(step) + ", sample " + std::to_string(ids_[slot]));
    }
    if (part.ids_size() > 0 && part.payload().size() + view.payload.size() > limits_.max_part_bytes) {
      parts->push_back(std::move(part));
      part = NewPart(step, batch_size);
      layouts.clear();
    }
    const v1::RecordHeader& h = view.header;
    std::string joined;
    for (const auto& n : h.field_names()) {
      joined += n;
      joined += '\0';
    }
    auto [it, added] = layouts.try_emplace(joined, static_cast<uint32_t>(part.layouts_size()));
    if (added) part.add_layouts()->mutable_names()->CopyFrom(h.field_names());
    part.add_slots(slot);
    part.add_ids(h.id());
    part.add_labels(h.label());
    part.add_strata(h.stratum());
    part.add_sizes(view.payload.size());
    part.add_layout_of(it->second);
    for (uint64_t fs : h.field_sizes()) part.add_field_sizes(fs);
    part.mutable_payload()->append(view.payload);
  }
  parts->push_back(std::move(part));
  ++next_step_;
  if (metrics_) {
    metrics_->batch_build_seconds.Observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }
  return Status::OK();
}

}  // namespace strata
