#include "server/serve/batch_stream.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "common/dataset_ref.h"
#include "common/input_limits.h"
#include "common/mutex.h"
#include "common/placement.h"
#include "common/serving_errors.h"
#include "common/steady_clock.h"
#include "plan/stream_start.h"
#include "server/serve/batch_stream_internal.h"
#include "server/serve/part_builder.h"
#include "server/serve/stream_members.h"
#include "server/storage/ec_stripes.h"
#include "server/storage/local_files.h"

namespace strata {

namespace {

// Where a job cursor says this request should start, if it matches the plan.
uint64_t CursorStart(const v1::StreamRequest& r, const Catalog* catalog, const OpenVersion& v, uint64_t plan_hash) {
  if (r.job_id().empty() || !r.resume() || catalog == nullptr) return r.start_step();
  auto cursor = catalog->GetCursor(r.job_id(), r.rank());
  if (!cursor.ok()) return r.start_step();
  const auto& c = cursor.value();
  const bool same = c.dataset() == v.shape().name && c.version() == v.shape().version && c.spec_hash() == plan_hash &&
                    c.seed() == r.seed() && c.epoch() == r.epoch();
  return same ? c.step() : r.start_step();
}

// Work for the steps from `start` on, against the plan: one step each, in
// order, inside the epoch; each sample an id of the version at a slot of the
// rank's batch that no other sample of the step takes.
Status CheckWork(uint64_t start, const google::protobuf::RepeatedPtrField<v1::WorkStep>& work, uint32_t rank,
                 const EpochPlan& plan, uint64_t num_samples) {
  const uint64_t steps = plan.num_steps();
  for (int i = 0; i < work.size(); ++i) {
    const v1::WorkStep& w = work[i];
    if (w.step() != start + static_cast<uint64_t>(i) || w.slots_size() != w.ids_size()) {
      return Status::InvalidArgument("work step " + std::to_string(w.step()) + " at position " + std::to_string(i) +
                                     " (" + std::to_string(w.slots_size()) + " slots, " + std::to_string(w.ids_size()) +
                                     " ids): work names the steps from step " + std::to_string(start) +
                                     " on, one each in order, a slot per id");
    }
  }
  if (start + static_cast<uint64_t>(work.size()) > steps) {
    return Status::InvalidArgument("work for steps up to " +
                                   std::to_string(start + static_cast<uint64_t>(work.size()) - 1) +
                                   " runs past the end of the epoch (" + std::to_string(steps) + " steps)");
  }
  std::vector<bool> taken;
  for (const v1::WorkStep& w : work) {
    const uint64_t size = plan.RankBatchSize(w.step(), rank);
    taken.assign(size, false);
    for (int i = 0; i < w.ids_size(); ++i) {
      const uint32_t slot = w.slots(i);
      if (slot >= size || taken[slot]) {
        return Status::InvalidArgument("work step " + std::to_string(w.step()) + ": slot " + std::to_string(slot) +
                                       (slot >= size ? " is outside the rank's batch of " + std::to_string(size)
                                                     : std::string(" is named twice")));
      }
      taken[slot] = true;
      if (w.ids(i) >= num_samples) {
        return Status::InvalidArgument("work step " + std::to_string(w.step()) + ": sample " +
                                       std::to_string(w.ids(i)) + " is not in the version (" +
                                       std::to_string(num_samples) + " samples)");
      }
    }
  }
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<BatchStream>> BatchStream::Open(const v1::StreamRequest& r, DatasetCache* cache,
                                                       const Catalog* catalog, Metrics* metrics,
                                                       const StreamLimits& limits, StreamServer server) {
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
  STRATA_RETURN_IF_ERROR(ValidateStreamMembers(r));
  auto ref = ParseDatasetRef(r.dataset());
  if (!ref.ok()) return ref.status();
  auto version = cache->Open(ref.value());
  if (!version.ok()) return version.status();
  auto shape = version.value()->PlanShape(r.sampler());  // with the stratum index if the sampler needs it
  if (!shape.ok()) return shape.status();
  auto plan = EpochPlan::Create(shape.value(), r.sampler(), r.seed(), r.epoch(), r.batch_size(), r.world(),
                                r.remainder(), version.value()->samplers());
  if (!plan.ok()) return plan.status();
  STRATA_RETURN_IF_ERROR(CheckResumedPlan(r.expect_plan_hash(), plan->plan_hash()));
  const uint64_t steps = plan->num_steps();
  // Work names its steps: no job cursor moves them.
  const uint64_t start =
      r.work_size() != 0 ? r.start_step() : CursorStart(r, catalog, *version.value(), plan->plan_hash());
  STRATA_RETURN_IF_ERROR(CheckStartStep(start, steps));
  // A node that plans the stream itself replays the plan to its start: bounded
  // here, since the request comes from the network. Work names its steps, and
  // checking it reads no schedule.
  if (r.work_size() == 0 && start < steps) STRATA_RETURN_IF_ERROR(plan->CheckReachable(start));
  uint64_t end = EndStep(start, r.max_steps(), steps);
  v1::StreamRequest request = r;
  std::deque<v1::WorkStep> work;  // the stream keeps the steps not yet begun, apart
  if (r.work_size() != 0) {
    STRATA_RETURN_IF_ERROR(CheckWork(start, r.work(), r.rank(), plan.value(), version.value()->shape().num_samples));
    end = start + static_cast<uint64_t>(r.work_size());
    for (v1::WorkStep& w : *request.mutable_work()) work.push_back(std::move(w));
    request.clear_work();
  }
  return std::unique_ptr<BatchStream>(new BatchStream(std::move(request), std::move(work), std::move(version).value(),
                                                      std::move(plan).value(), start, end, metrics, limits,
                                                      std::move(server)));
}

BatchStream::BatchStream(v1::StreamRequest request, std::deque<v1::WorkStep> work,
                         std::shared_ptr<const OpenVersion> version, EpochPlan plan, uint64_t start, uint64_t end,
                         Metrics* metrics, const StreamLimits& limits, StreamServer server)
    : request_(std::move(request)),
      version_(std::move(version)),
      plan_(std::move(plan)),
      next_step_(start),
      end_step_(end),
      has_work_(!work.empty()),
      work_(std::move(work)),
      metrics_(metrics),
      limits_(limits),
      server_(std::move(server)),
      placement_(version_->num_shards()),
      members_(StreamMembers(request_)),
      near_(NearMembers(request_)),
      excluded_(request_.excluded().begin(), request_.excluded().end()),
      claim_scratch_(std::make_unique<Scratch>(version_->num_shards())),
      planned_end_(start) {
  for (const v1::WorkStep& w : work_) work_ids_ += static_cast<uint64_t>(w.ids_size());
}

Status BatchStream::AddWork(v1::WorkMore more) {
  if (!has_work_) return Status::InvalidArgument("this stream was opened without work: it takes none");
  if (more.start_step() != end_step_) {
    return Status::InvalidArgument("more work from step " + std::to_string(more.start_step()) +
                                   ": it must follow the last step given (" + std::to_string(end_step_) + ")");
  }
  uint64_t ids = 0;
  for (const v1::WorkStep& w : more.work()) ids += static_cast<uint64_t>(w.ids_size());
  if (work_.size() + static_cast<uint64_t>(more.work_size()) > InputLimits::kMaxWorkSteps ||
      work_ids_ + ids > InputLimits::kMaxWorkIds) {
    return Status::InvalidArgument("more work would have this node hold " +
                                   std::to_string(work_.size() + static_cast<uint64_t>(more.work_size())) + " steps (" +
                                   std::to_string(work_ids_ + ids) + " samples) not yet begun; at most " +
                                   std::to_string(InputLimits::kMaxWorkSteps) + " (" +
                                   std::to_string(InputLimits::kMaxWorkIds) + ") are taken");
  }
  STRATA_RETURN_IF_ERROR(CheckWork(end_step_, more.work(), request_.rank(), plan_, version_->shape().num_samples));
  for (v1::WorkStep& w : *more.mutable_work()) work_.push_back(std::move(w));
  work_ids_ += ids;
  end_step_ += static_cast<uint64_t>(more.work_size());
  return Status::OK();
}

BatchStream::~BatchStream() {
  for (const Planned& p : ahead_) server_.blocks->Unpin(p.blocks);
}

bool BatchStream::InBlocks(const ShardReader& reader, uint64_t record,
                           std::span<const std::pair<const void*, uint64_t>> blocks) const {
  const auto [begin, end] = reader.RecordRange(record);
  if (end <= begin) return false;
  const uint64_t bs = server_.blocks->options().block_bytes;
  for (uint64_t b = begin / bs; b <= (end - 1) / bs; ++b) {
    if (std::binary_search(blocks.begin(), blocks.end(), std::make_pair<const void*>(&reader, b))) return true;
  }
  return false;
}

std::unique_ptr<BatchStream::Scratch> BatchStream::TakeScratch() {
  {
    MutexLock lock(&scratch_mu_);
    if (!spare_scratch_.empty()) {
      auto scratch = std::move(spare_scratch_.back());
      spare_scratch_.pop_back();
      return scratch;
    }
  }
  return std::make_unique<Scratch>(version_->num_shards());
}

void BatchStream::ReturnScratch(std::unique_ptr<Scratch> scratch) {
  scratch->Forget();  // the readers' mappings are not kept past the step
  MutexLock lock(&scratch_mu_);
  spare_scratch_.push_back(std::move(scratch));
}

void BatchStream::PlanAhead() {
  // The stream's first step is planned alone: planning the steps after it
  // (their ids, the shard blocks they read) would delay the first batch, and
  // the next call plans them while the trainer works on it.
  const uint64_t ahead = first_planned_ ? limits_.read_ahead_steps : 0;
  first_planned_ = true;
  const uint64_t horizon = std::min(end_step_, next_step_ + 1 + ahead);
  std::vector<OpenVersion::Location> served;  // the step's samples this node reads
  std::vector<std::pair<const std::shared_ptr<const ShardReader>*, uint64_t>> records;
  claim_scratch_->Forget();
  if (!step_blocks_) step_blocks_.emplace(server_.blocks->options().block_bytes);
  const int64_t now = SteadyNowNs();
  for (; planned_end_ < horizon; ++planned_end_) {
    Planned p;
    StepSamples(planned_end_, &p.ids, &p.slots);
    served.clear();
    records.clear();
    for (uint64_t id : p.ids) {
      const OpenVersion::Location at = version_->Locate(id);
      if (Serves(at.shard, id) && Local(at.shard, now)) served.push_back(at);
    }
    if (ahead == 0) {  // the first step opens its shards' readers at once
      std::vector<size_t> shards;
      for (const OpenVersion::Location& at : served) shards.push_back(at.shard);
      version_->OpenReaders(std::move(shards));
    }
    for (const OpenVersion::Location& at : served) {
      const auto& reader = claim_scratch_->Reader(*version_, at.shard);
      if (reader.ok()) records.emplace_back(&reader.value(), at.record);  // else the read reports why
    }
    // The first step's offset-table pages are asked of storage together:
    // after the page cache has dropped the version, looking its records up one
    // after another waited for one read from storage after another.
    if (ahead == 0) {
      for (const auto& [reader, record] : records) (*reader)->AdviseOffset(record);
    }
    for (size_t i = 0; i < records.size(); ++i) {
      if (i + kOffsetsAhead < records.size()) {
        (*records[i + kOffsetsAhead].first)->PrefetchOffset(records[i + kOffsetsAhead].second);
      }
      const auto [begin, end] = (*records[i].first)->RecordRange(records[i].second);
      step_blocks_->Add(*records[i].first, begin, end);
      p.large |= end - begin >= WirePart::kZeroCopyMinBytes;
    }
    p.blocks = step_blocks_->Take();
    // The step being built now is read at once: reading it ahead would only race the build.
    server_.blocks->Pin(p.blocks, /*read_ahead=*/planned_end_ > next_step_);
    ahead_.push_back(std::move(p));
  }
}

v1::FileRef BatchStream::ShardFile(size_t shard) const {
  return ShardRef(version_->shape().name, version_->shape().version, version_->shard(shard).info().seq());
}

bool BatchStream::ServesHere(size_t shard, uint64_t id) {
  if (members_.size() == 0) return true;  // a single node serves everything
  ShardPlacement& p = placement_[shard];
  if (!p.known.load(std::memory_order_acquire)) {
    MutexLock lock(&placement_mu_);
    if (!p.known.load(std::memory_order_relaxed)) {
      // Replicated: the shard's first R ranked members; erasure coded: the
      // holder of its chunk, then the members that take over from it
      // (server/storage/ec_stripes.h).
      const v1::FileRef file = ShardFile(shard);
      p.ranked = FileRanked(version_->record().info(), file, members_);
      p.holders = FileHolders(version_->record().info(), file, members_);
      p.serving = ShardServing(p.holders, p.ranked, excluded_, near_, server_.node_id);
      p.known.store(true, std::memory_order_release);  // none of them changes after
    }
  }
  return p.serving.Serves(id);
}

void BatchStream::StepSamples(uint64_t step, std::vector<uint64_t>* ids, std::vector<uint32_t>* slots) {
  if (has_work()) {
    // Steps are taken once each, in order: work_ starts at `step`.
    const v1::WorkStep& w = work_.front();
    ids->assign(w.ids().begin(), w.ids().end());
    slots->assign(w.slots().begin(), w.slots().end());
    work_ids_ -= static_cast<uint64_t>(w.ids_size());
    work_.pop_front();
    return;
  }
  slots->clear();
  plan_.RankBatch(step, request_.rank(), ids);
  if (metrics_) metrics_->planned_samples.Increment(static_cast<double>(ids->size()));
}

bool BatchStream::Local(size_t shard, int64_t now) const {
  return now >= placement_[shard].remote_until.load(std::memory_order_relaxed);
}

void BatchStream::SetRemote(size_t shard, int64_t now) {
  placement_[shard].remote_until.store(now + kLocalRetry.count(), std::memory_order_relaxed);
}

Status BatchStream::Claim(StepClaim* claim) {
  claim->started = std::chrono::steady_clock::now();
  claim->step = next_step_;
  if (version_->deleted()) {  // strata rm or retention (docs/operations.md, "Deleting versions")
    return Status::FailedPrecondition("dataset '" + version_->shape().name + "' version " +
                                      std::to_string(version_->shape().version) + " was deleted while streaming");
  }
  claim->owner = nullptr;
  claim->unmapped.clear();
  claim->sparse.clear();
  if (server_.blocks != nullptr) {
    PlanAhead();
    Planned& now = ahead_.front();
    claim->ids = std::move(now.ids);
    claim->slots = std::move(now.slots);
    claim->owner = std::make_shared<StepOwner>();
    std::vector<bool> mapped;
    std::vector<std::pair<const void*, uint64_t>> keys;
    keys.reserve(now.blocks.size());
    for (const auto& b : now.blocks) {
      keys.emplace_back(b.reader.get(), b.block);
      // Blocks this step reads little of (BlockCache::Dense): records in them
      // are copied into the batch, never sent from the mapping. A slice that
      // refers to a record keeps its whole block pinned and resident until
      // gRPC has sent it, and a 64 KiB record alone in a 2 MiB block would
      // hold 32 times its size beside the cache's budget for as long as the
      // batch waits to go out. (Records too small to be sent from the
      // mapping are copied wherever they lie: a step of only those needs no
      // list.)
      if (now.large && !BlockCache::Dense(b.use_bytes, server_.blocks->options().block_bytes)) {
        claim->sparse.push_back(keys.back());
      }
    }
    claim->owner->pins = server_.blocks->Hold(std::move(now.blocks), &mapped);
    for (size_t i = 0; i < keys.size(); ++i) {
      // Blocks the cache did not admit: records in them are read with pread.
      if (!mapped[i]) claim->unmapped.push_back(keys[i]);
    }
    // InBlocks searches both lists.
    std::sort(claim->sparse.begin(), claim->sparse.end());
    std::sort(claim->unmapped.begin(), claim->unmapped.end());
    ahead_.pop_front();
  } else {
    StepSamples(claim->step, &claim->ids, &claim->slots);
  }
  ++next_step_;
  // A stratified plan reads its stratum index as it goes and verifies each
  // part on first use: a damaged part fails the stream before its ids are
  // used, and like a damaged shard the copy is counted and, in a cluster, set
  // aside to be fetched again.
  if (Status damage = plan_.Damage(); !damage.ok()) {
    if (metrics_) metrics_->checksum_failures.Increment();
    if (server_.fetcher) server_.fetcher->Quarantine(IndexRef(version_->shape().name, version_->shape().version));
    return damage.WithContext("step " + std::to_string(claim->step));
  }
  return Status::OK();
}

Status BatchStream::BuildNext(std::vector<WirePart>* parts) {
  StepClaim claim;
  STRATA_RETURN_IF_ERROR(Claim(&claim));
  return Build(std::move(claim), parts);
}

}  // namespace strata
