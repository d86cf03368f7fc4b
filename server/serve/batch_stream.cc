#include "server/serve/batch_stream.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "common/dataset_ref.h"
#include "common/mutex.h"
#include "common/placement.h"
#include "common/serving_errors.h"
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
  const bool same = c.dataset() == v.shape().name && c.version() == v.shape().version &&
                    c.spec_hash() == plan_hash && c.seed() == r.seed() && c.epoch() == r.epoch();
  return same ? c.step() : r.start_step();
}

}  // namespace

// What one Build (or PlanAhead) works in, kept from step to step so that its
// vectors keep their capacity.
struct BatchStream::Scratch {
  explicit Scratch(size_t num_shards) : readers(num_shards) {}

  // The reader of `shard` for this step: OpenVersion::Reader takes a lock, so
  // each step looks each of its shards up once. Forget starts a step (each
  // step looks its readers up again: a shard may have been replaced).
  const Result<std::shared_ptr<const ShardReader>>& Reader(const OpenVersion& version, size_t shard) {
    auto& slot = readers[shard];
    if (!slot) {
      slot.emplace(version.Reader(shard));
      shards.push_back(shard);
    }
    return *slot;
  }
  void Forget() {
    for (size_t shard : shards) readers[shard].reset();
    shards.clear();
  }

  std::vector<std::optional<Result<std::shared_ptr<const ShardReader>>>> readers;  // per shard
  std::vector<size_t> shards;  // the shards `readers` holds
  // The step's samples this node reads from its own shards.
  struct LocalRead {
    uint32_t slot;
    uint64_t id;
    size_t shard;
    uint64_t record;
  };
  std::vector<LocalRead> reads;
  RecordView view;
};

// With a block cache, a step's payload's owner: its pinned blocks (unpinned
// once gRPC has sent the bytes) and the mappings its records point into.
struct BatchStream::StepOwner {
  std::shared_ptr<const void> pins;
  std::vector<std::shared_ptr<const void>> readers;
};

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
  return std::unique_ptr<BatchStream>(new BatchStream(r, std::move(version).value(), std::move(plan).value(), start,
                                                      end, metrics, limits, std::move(server)));
}

BatchStream::BatchStream(v1::StreamRequest request, std::shared_ptr<const OpenVersion> version, EpochPlan plan,
                         uint64_t start, uint64_t end, Metrics* metrics, const StreamLimits& limits,
                         StreamServer server)
    : request_(std::move(request)),
      version_(std::move(version)),
      plan_(std::move(plan)),
      next_step_(start),
      end_step_(end),
      metrics_(metrics),
      limits_(limits),
      server_(std::move(server)),
      placement_(version_->num_shards()),
      members_(StreamMembers(request_)),
      near_(NearMembers(request_)),
      excluded_(request_.excluded().begin(), request_.excluded().end()),
      claim_scratch_(std::make_unique<Scratch>(version_->num_shards())),
      planned_end_(start) {}

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
  std::vector<std::pair<const std::shared_ptr<const ShardReader>*, uint64_t>> records;
  claim_scratch_->Forget();
  for (; planned_end_ < horizon; ++planned_end_) {
    Planned p;
    plan_.RankBatch(planned_end_, request_.rank(), &p.ids);
    records.clear();
    for (uint64_t id : p.ids) {
      const OpenVersion::Location at = version_->Locate(id);
      if (!ServesHere(at.shard, id) || !Local(at.shard)) continue;
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
      server_.blocks->AddRange(*records[i].first, begin, end, &p.blocks);
    }
    BlockCache::Dedupe(&p.blocks);
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
      p.known.store(true, std::memory_order_release);  // holders and ranked do not change after
    }
  }
  const auto node = ServingNode(p.holders, p.ranked, excluded_, id, near_);
  return node.has_value() && *node == server_.node_id;
}

bool BatchStream::Local(size_t shard) const { return placement_[shard].local.load(std::memory_order_relaxed); }

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
      // batch waits to go out.
      if (!BlockCache::Dense(b.use_bytes, server_.blocks->options().block_bytes)) claim->sparse.push_back(keys.back());
    }
    claim->owner->pins = server_.blocks->Hold(std::move(now.blocks), &mapped);
    for (size_t i = 0; i < keys.size(); ++i) {
      // Blocks the cache did not admit: records in them are read with pread.
      if (!mapped[i]) claim->unmapped.push_back(keys[i]);  // stays sorted
    }
    ahead_.pop_front();
  } else {
    claim->ids.clear();
    plan_.RankBatch(claim->step, request_.rank(), &claim->ids);
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

// A step built but for its samples from other nodes: the parts so far (the
// builder writes into `out`, so the step stays at one address), and per shard
// what to fetch and, once fetched, the records.
struct BatchStream::DeferredStep {
  uint64_t step = 0;
  uint32_t batch_size = 0;
  std::chrono::steady_clock::time_point started, asked;
  v1::Batch header;
  std::vector<WirePart> out;
  std::optional<PartBuilder> builder;
  struct Remote {
    size_t shard = 0;
    std::vector<std::pair<uint32_t, uint64_t>> wanted;  // (slot, record)
    Status local_error;                                 // why the local copy could not serve them, if it was asked
    Status fetched;
    std::shared_ptr<std::vector<std::string>> raw = std::make_shared<std::vector<std::string>>();  // until sent
    std::vector<uint64_t> Indexes() const {
      std::vector<uint64_t> out;
      for (const auto& w : wanted) out.push_back(w.second);
      return out;
    }
  };
  std::vector<Remote> remote;
};

uint64_t BatchStream::DeferredStepNumber(const DeferredStep& step) { return step.step; }

Status BatchStream::Build(StepClaim claim, std::vector<WirePart>* parts) {
  Status status;
  BuildOrDefer(std::move(claim), parts, &status, nullptr);
  return status;
}

bool BatchStream::BuildOrDefer(StepClaim claim, std::vector<WirePart>* parts, Status* status, Resume resume) {
  auto d = std::make_shared<DeferredStep>();
  std::unique_ptr<Scratch> scratch = TakeScratch();
  Status s = BuildLocal(claim, *scratch, *d);
  ReturnScratch(std::move(scratch));
  if (!s.ok() || d->remote.empty()) {
    *status = s.ok() ? FinishDeferred(*d, parts) : s;
    return true;
  }
  if (!resume) {  // fetch here, waiting
    for (auto& r : d->remote) {
      d->asked = std::chrono::steady_clock::now();
      r.fetched = server_.fetcher->Fetch(ShardFile(r.shard), r.Indexes(), r.raw.get());
      if (metrics_) {
        metrics_->peer_fetch_seconds.Observe(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - d->asked).count());
      }
    }
    *status = FinishDeferred(*d, parts);
    return true;
  }
  // Ask every shard's holders at once; the last answer resumes the step.
  // Nothing here touches `d` after the asking: the last answer may come before
  // this returns.
  d->asked = std::chrono::steady_clock::now();
  auto pending = std::make_shared<std::atomic<size_t>>(d->remote.size());
  Metrics* metrics = metrics_;
  std::vector<std::pair<v1::FileRef, std::vector<uint64_t>>> asks;
  for (const auto& r : d->remote) asks.emplace_back(ShardFile(r.shard), r.Indexes());
  for (size_t i = 0; i < asks.size(); ++i) {
    server_.fetcher->FetchAsync(
        asks[i].first, std::move(asks[i].second),
        [d, i, pending, resume, metrics](Status fetched, std::vector<std::string> raw) {
          d->remote[i].fetched = std::move(fetched);
          *d->remote[i].raw = std::move(raw);
          if (metrics) {
            metrics->peer_fetch_seconds.Observe(
                std::chrono::duration<double>(std::chrono::steady_clock::now() - d->asked).count());
          }
          if (pending->fetch_sub(1, std::memory_order_acq_rel) == 1) resume(d);
        });
  }
  return false;
}

Status BatchStream::BuildLocal(const StepClaim& claim, Scratch& scratch, DeferredStep& d) {
  const uint32_t batch_size = static_cast<uint32_t>(claim.ids.size());
  const uint64_t step = claim.step;
  const std::string where = "step " + std::to_string(step);
  const std::vector<std::pair<const void*, uint64_t>>& unmapped = claim.unmapped;
  const std::vector<std::pair<const void*, uint64_t>>& sparse = claim.sparse;
  const std::shared_ptr<StepOwner>& step_owner = claim.owner;
  auto& reads = scratch.reads;
  d.step = step;
  d.batch_size = batch_size;
  d.started = claim.started;
  v1::Batch& header = d.header;
  header.set_epoch(request_.epoch());
  header.set_step(step);
  header.set_rank(request_.rank());
  header.set_dataset_version(version_->shape().version);
  header.set_steps_in_epoch(plan_.num_steps());
  header.set_batch_size(batch_size);
  header.set_plan_hash(plan_.plan_hash());
  header.set_node_id(server_.node_id);
  PartBuilder& builder = d.builder.emplace(header, limits_.max_part_bytes, &d.out);
  // Samples this node serves but has no good copy of, per shard: (slot, record),
  // and why the local copy could not serve them.
  std::map<size_t, std::vector<std::pair<uint32_t, uint64_t>>> remote;
  std::map<size_t, Status> local_error;
  // The samples this node serves from its own shards, in slot order.
  reads.clear();
  for (uint32_t slot = 0; slot < batch_size; ++slot) {
    const uint64_t id = claim.ids[slot];
    const OpenVersion::Location at = version_->Locate(id);
    if (!ServesHere(at.shard, id)) continue;
    if (Local(at.shard)) {
      reads.push_back({slot, id, at.shard, at.record});
    } else {
      remote[at.shard].emplace_back(slot, at.record);
    }
  }
  // Records lie at random places in the shards: each read would wait for its
  // offset-table entry and then for its record to come from memory. Loading
  // both some reads ahead lets those waits overlap.
  const auto prefetch = [&](size_t i, bool record) {
    if (i >= reads.size()) return;
    const auto& reader = scratch.Reader(*version_, reads[i].shard);
    if (!reader.ok()) return;
    if (record) {
      reader.value()->PrefetchRecord(reads[i].record);
    } else {
      reader.value()->PrefetchOffset(reads[i].record);
    }
  };
  // Records in blocks the cache did not admit are read with pread, each into
  // a buffer of its own. Those in the page cache are read here; the others
  // are all asked of storage here and read in the loop below, so that their
  // reads overlap (the first batch after the shards left the page cache
  // otherwise waits for one read from storage after another).
  std::vector<std::shared_ptr<std::string>> copies;
  if (!unmapped.empty()) {
    copies.resize(reads.size());
    for (size_t i = 0; i < reads.size(); ++i) {
      const Scratch::LocalRead& r = reads[i];
      const auto& reader = scratch.Reader(*version_, r.shard);
      if (!reader.ok() || !InBlocks(*reader.value(), r.record, unmapped)) continue;
      copies[i] = std::make_shared<std::string>();
      if (!reader.value()->CopyRawRecord(r.record, copies[i].get(), /*if_cached=*/true).ok()) copies[i]->clear();
    }
  }
  const auto local_start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < kOffsetsAhead; ++i) prefetch(i, false);
  for (size_t i = 0; i < kRecordsAhead; ++i) prefetch(i, true);
  RecordView& view = scratch.view;
  for (size_t i = 0; i < reads.size(); ++i) {
    prefetch(i + kOffsetsAhead, false);
    prefetch(i + kRecordsAhead, true);
    const Scratch::LocalRead& r = reads[i];
    if (!Local(r.shard)) {  // an earlier read of this step found its copy bad
      remote[r.shard].emplace_back(r.slot, r.record);
      continue;
    }
    const auto& reader = scratch.Reader(*version_, r.shard);
    Status s = reader.status();
    if (s.ok()) {
      const ShardReader& shard = *reader.value();
      if (!copies.empty() && copies[i]) {
        std::shared_ptr<std::string>& copy = copies[i];
        s = copy->empty() ? shard.ReadCopy(r.record, copy.get(), &view) : shard.ParseRaw(r.record, *copy, &view);
        if (s.ok()) builder.Add(r.slot, view, std::move(copy));  // the buffer owns the bytes
      } else if (shard.compressed()) {
        // Decompressed here, on the server (docs/design.md, "Compression"):
        // the part refers to the decompressed block until it is sent.
        std::shared_ptr<const std::string> block;
        s = shard.ReadBlockRecord(r.record, &block, &view);
        if (s.ok()) builder.Add(r.slot, view, std::move(block));
      } else {
        s = shard.Read(r.record, &view);
        // The mapping stays while the part lives; with a cache, so do the step's pins.
        if (s.ok()) {
          // A record large enough to use its blocks densely by itself, or in
          // blocks the step uses densely, is sent from the mapping.
          const bool may_reference =
              sparse.empty() || view.payload.size() < WirePart::kZeroCopyMinBytes ||
              BlockCache::Dense(view.payload.size(), server_.blocks->options().block_bytes) ||
              !InBlocks(shard, r.record, sparse);
          builder.Add(r.slot, view,
                      step_owner ? std::shared_ptr<const void>(step_owner)
                                 : std::shared_ptr<const void>(reader.value()),
                      may_reference);
        }
      }
      if (s.ok()) continue;
    }
    if (s.IsCorruption()) {
      if (metrics_) metrics_->checksum_failures.Increment();
      if (server_.fetcher) {
        server_.fetcher->Quarantine(ShardFile(r.shard));
        version_->Invalidate(r.shard);
      }
    }
    if (!server_.fetcher || (!s.IsCorruption() && !s.IsNotFound())) {
      return s.WithContext(where + ", sample " + std::to_string(r.id));
    }
    placement_[r.shard].local.store(false, std::memory_order_relaxed);
    local_error[r.shard] = s;
    remote[r.shard].emplace_back(r.slot, r.record);
  }
  if (metrics_ && !reads.empty()) {
    metrics_->local_read_seconds.Observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - local_start).count());
  }
  if (step_owner) {
    for (size_t shard : scratch.shards) {
      if (scratch.readers[shard]->ok()) step_owner->readers.push_back(scratch.readers[shard]->value());
    }
  }
  for (auto& [shard, wanted] : remote) {
    DeferredStep::Remote& r = d.remote.emplace_back();
    r.shard = shard;
    r.wanted = std::move(wanted);
    if (auto it = local_error.find(shard); it != local_error.end()) r.local_error = it->second;
  }
  return Status::OK();
}

Status BatchStream::FinishDeferred(DeferredStep& d, std::vector<WirePart>* parts) {
  const std::string where = "step " + std::to_string(d.step);
  RecordView view;
  for (const DeferredStep::Remote& r : d.remote) {
    if (!r.fetched.ok()) {
      // No holder that is up could give them: Unavailable naming the shard
      // (never the local NotFound, which the client would take for a bad
      // request), with the local reason (a damaged or missing copy) said.
      if (r.local_error.IsCorruption()) {
        // A damaged copy and no good one anywhere: the data is lost, not
        // merely out of reach (a Corruption, never served).
        return Status(r.local_error.code(), r.local_error.message() + "; no other node could serve it: " +
                                                r.fetched.message())
            .WithContext(where);
      }
      const std::string local = !r.local_error.ok() ? "here: " + r.local_error.ToString() + "; " : std::string();
      return HoldersDown(FileName(ShardFile(r.shard)), local + "others: " + r.fetched.message()).WithContext(where);
    }
    if (r.raw->size() != r.wanted.size()) {
      return Status::Internal("a peer fetch of " + FileName(ShardFile(r.shard)) + " returned " +
                              std::to_string(r.raw->size()) + " records for " + std::to_string(r.wanted.size()))
          .WithContext(where);
    }
    for (size_t i = 0; i < r.wanted.size(); ++i) {
      const uint64_t id = version_->shard(r.shard).info().first_id() + r.wanted[i].second;
      STRATA_RETURN_IF_ERROR(ParseRecord((*r.raw)[i], id, &view).WithContext(where + ", record from a peer"));
      d.builder->Add(r.wanted[i].first, view, r.raw);
    }
    if (metrics_) metrics_->proxied_records.Increment(static_cast<double>(r.wanted.size()));
  }
  d.builder->Finish();
  if (metrics_) {
    MutexLock lock(&composition_mu_);
    if (!composition_) {
      composition_ = std::make_unique<CompositionRecorder>(version_->shape(), plan_.sampler().TargetShares(),
                                                           &metrics_->strata());
    }
    composition_->Record(d.out, d.batch_size);
  }
  for (auto& p : d.out) parts->push_back(std::move(p));
  d.out.clear();
  if (metrics_) {
    metrics_->batch_build_seconds.Observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - d.started).count());
  }
  return Status::OK();
}

}  // namespace strata
