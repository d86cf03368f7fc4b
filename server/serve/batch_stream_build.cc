// BatchStream's builds: a claimed step's samples read from this node's
// shards into parts, and those it serves without a good copy fetched from
// other nodes, asynchronously (BuildOrDefer, FinishDeferred; Build waits).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <map>

#include "common/serving_errors.h"
#include "common/steady_clock.h"
#include "server/serve/batch_stream.h"
#include "server/serve/batch_stream_internal.h"
#include "server/serve/part_builder.h"
#include "server/storage/local_files.h"

namespace strata {

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
      std::vector<uint64_t> indexes;
      for (const auto& w : wanted) indexes.push_back(w.second);
      return indexes;
    }
  };
  std::vector<Remote> remote;
};

uint64_t BatchStream::DeferredStepNumber(const DeferredStep& step) { return step.step; }

Status BatchStream::Build(StepClaim claim, std::vector<WirePart>* parts) {
  Status status;
  std::promise<std::shared_ptr<DeferredStep>> arrived;
  std::future<std::shared_ptr<DeferredStep>> deferred = arrived.get_future();
  if (BuildOrDefer(std::move(claim), parts, &status,
                   [&arrived](std::shared_ptr<DeferredStep> d) { arrived.set_value(std::move(d)); })) {
    return status;
  }
  return FinishDeferred(*deferred.get(), parts);  // waits for the other nodes' answers
}

bool BatchStream::BuildOrDefer(StepClaim claim, std::vector<WirePart>* parts, Status* status, Resume resume) {
  auto d = std::make_shared<DeferredStep>();
  std::unique_ptr<Scratch> scratch = TakeScratch();
  Status s = BuildLocal(claim, *scratch, *d);
  ReturnScratch(std::move(scratch));
  // Without a fetcher BuildLocal fails rather than leave samples remote.
  if (!s.ok() || d->remote.empty()) {
    *status = s.ok() ? FinishDeferred(*d, parts) : s;
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
  const uint64_t step = claim.step;
  const uint32_t batch_size =
      static_cast<uint32_t>(has_work() ? plan_.RankBatchSize(step, request_.rank()) : claim.ids.size());
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
  PartBuilder& builder = d.builder.emplace(header, limits_.max_part_bytes, &d.out, request_.indexed_labels());
  // Samples this node serves but has no good copy of, per shard: (slot, record),
  // and why the local copy could not serve them.
  std::map<size_t, std::vector<std::pair<uint32_t, uint64_t>>> remote;
  std::map<size_t, Status> local_error;
  // The samples this node serves from its own shards, in the claim's order.
  reads.clear();
  const int64_t now = SteadyNowNs();
  for (size_t i = 0; i < claim.ids.size(); ++i) {
    const uint32_t slot = claim.slots.empty() ? static_cast<uint32_t>(i) : claim.slots[i];
    const uint64_t id = claim.ids[i];
    const OpenVersion::Location at = version_->Locate(id);
    if (!Serves(at.shard, id)) continue;
    if (Local(at.shard, now)) {
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
    if (!Local(r.shard, now)) {  // an earlier read of this step found its copy bad
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
        if (s.ok()) builder.Add(r.slot, r.id, view, std::move(copy));  // the buffer owns the bytes
      } else if (shard.compressed()) {
        // Decompressed here, on the server (docs/design.md, "Compression"):
        // the part refers to the decompressed block until it is sent.
        std::shared_ptr<const std::string> block;
        s = shard.ReadBlockRecord(r.record, &block, &view);
        if (s.ok()) builder.Add(r.slot, r.id, view, std::move(block));
      } else {
        s = shard.Read(r.record, &view);
        // The mapping stays while the part lives; with a cache, so do the step's pins.
        if (s.ok()) {
          // A record large enough to use its blocks densely by itself, or in
          // blocks the step uses densely, is sent from the mapping.
          const bool may_reference = sparse.empty() || view.payload.size() < WirePart::kZeroCopyMinBytes ||
                                     BlockCache::Dense(view.payload.size(), server_.blocks->options().block_bytes) ||
                                     !InBlocks(shard, r.record, sparse);
          builder.Add(
              r.slot, r.id, view,
              step_owner ? std::shared_ptr<const void>(step_owner) : std::shared_ptr<const void>(reader.value()),
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
    SetRemote(r.shard, now);
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
        return Status(r.local_error.code(),
                      r.local_error.message() + "; no other node could serve it: " + r.fetched.message())
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
    const v1::ShardInfo& info = version_->shard(r.shard).info();
    for (size_t i = 0; i < r.wanted.size(); ++i) {
      const uint64_t id = info.first_id() + r.wanted[i].second;
      // The record carries the id its file counts (ShardInfo.id_offset).
      STRATA_RETURN_IF_ERROR(
          ParseRecord((*r.raw)[i], id - info.id_offset(), &view).WithContext(where + ", record from a peer"));
      d.builder->Add(r.wanted[i].first, id, view, r.raw);
    }
    if (metrics_) metrics_->proxied_records.Increment(static_cast<double>(r.wanted.size()));
  }
  d.builder->Finish();
  if (metrics_) {
    MutexLock lock(&composition_mu_);
    if (!composition_) {
      composition_ =
          std::make_unique<CompositionRecorder>(version_->shape(), plan_.sampler().TargetShares(), &metrics_->strata());
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
