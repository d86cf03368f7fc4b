#include "server/batch_stream.h"

#include <chrono>
#include <map>

#include "common/dataset_ref.h"
#include "common/placement.h"

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

// Packs samples into parts of at most max_part_bytes payload (at least one
// sample each).
class BatchStream::PartBuilder {
 public:
  PartBuilder(const BatchStream& s, uint64_t step, uint32_t batch_size, std::vector<WirePart>* out)
      : stream_(s), step_(step), batch_size_(batch_size), out_(out) {
    Start();
  }

  // `owner` keeps view.payload valid until the part has been written.
  void Add(uint32_t slot, const RecordView& view, std::shared_ptr<const void> owner) {
    if (message().ids_size() > 0 && part_.payload_bytes() + view.payload.size() > stream_.limits_.max_part_bytes) {
      out_->push_back(std::move(part_));
      Start();
    }
    const v1::RecordHeader& h = view.header;
    std::string joined;
    for (const auto& n : h.field_names()) {
      joined += n;
      joined += '\0';
    }
    auto [it, added] = layouts_.try_emplace(joined, static_cast<uint32_t>(message().layouts_size()));
    v1::Batch& m = message();
    if (added) m.add_layouts()->mutable_names()->CopyFrom(h.field_names());
    m.add_slots(slot);
    m.add_ids(h.id());
    m.add_labels(h.label());
    m.add_strata(h.stratum());
    m.add_sizes(view.payload.size());
    m.add_layout_of(it->second);
    for (uint64_t fs : h.field_sizes()) m.add_field_sizes(fs);
    part_.AppendPayload(view.payload, std::move(owner));
  }

  // Emits the last part, marked as the end of this server's share.
  void Finish() {
    message().set_last_part(true);
    out_->push_back(std::move(part_));
  }

 private:
  v1::Batch& message() { return part_.message(); }
  void Start() {
    part_ = WirePart();
    v1::Batch& m = message();
    m.set_epoch(stream_.request_.epoch());
    m.set_step(step_);
    m.set_rank(stream_.request_.rank());
    m.set_dataset_version(stream_.version_->shape().version);
    m.set_steps_in_epoch(stream_.plan_.num_steps());
    m.set_batch_size(batch_size_);
    m.set_plan_hash(stream_.plan_.plan_hash());
    m.set_node_id(stream_.server_.node_id);
    layouts_.clear();
  }

  const BatchStream& stream_;
  const uint64_t step_;
  const uint32_t batch_size_;
  std::vector<WirePart>* out_;
  WirePart part_;
  std::map<std::string, uint32_t> layouts_;  // joined field names -> index in this part
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
      members_(request_.members().begin(), request_.members().end()),
      excluded_(request_.excluded().begin(), request_.excluded().end()) {}

v1::FileRef BatchStream::ShardFile(size_t shard) const {
  v1::FileRef f;
  f.set_dataset(version_->shape().name);
  f.set_version(version_->shape().version);
  f.set_kind(v1::FileRef::SHARD);
  f.set_seq(version_->shard(shard).info().seq());
  return f;
}

bool BatchStream::ServesHere(size_t shard, uint64_t id) {
  if (members_.empty()) return true;  // a single node serves everything
  ShardPlacement& p = placement_[shard];
  if (!p.known) {
    const std::string key = ShardFileKey(version_->shape().name, version_->shape().version,
                                         version_->shard(shard).info().seq());
    p.ranked = RankMembers(key, members_);
    p.holders = p.ranked;
    p.holders.resize(std::min<size_t>(p.holders.size(), version_->Replication(members_.size())));
    p.known = true;
  }
  const auto node = ServingNode(p.holders, p.ranked, excluded_, id);
  return node.has_value() && *node == server_.node_id;
}

Status BatchStream::BuildNext(std::vector<WirePart>* parts) {
  const auto started = std::chrono::steady_clock::now();
  const uint64_t step = next_step_;
  plan_.RankBatch(step, request_.rank(), &ids_);
  const uint32_t batch_size = static_cast<uint32_t>(ids_.size());
  const std::string where = "step " + std::to_string(step);

  std::vector<WirePart> out;
  PartBuilder builder(*this, step, batch_size, &out);
  // Samples this node serves but has no good copy of, per shard: (slot, record),
  // and why the local copy could not serve them.
  std::map<size_t, std::vector<std::pair<uint32_t, uint64_t>>> remote;
  std::map<size_t, Status> local_error;
  RecordView view;
  std::shared_ptr<const void> owner;
  for (uint32_t slot = 0; slot < batch_size; ++slot) {
    const uint64_t id = ids_[slot];
    const OpenVersion::Location at = version_->Locate(id);
    if (!ServesHere(at.shard, id)) continue;
    if (placement_[at.shard].local) {
      Status s = version_->Read(id, &view, &owner);
      if (s.ok()) {
        builder.Add(slot, view, owner);
        continue;
      }
      if (s.IsCorruption()) {
        if (metrics_) metrics_->checksum_failures.Increment();
        if (server_.fetcher) {
          server_.fetcher->Quarantine(ShardFile(at.shard));
          version_->Invalidate(at.shard);
        }
      }
      if (!server_.fetcher || (!s.IsCorruption() && !s.IsNotFound())) {
        return s.WithContext(where + ", sample " + std::to_string(id));
      }
      placement_[at.shard].local = false;
      local_error[at.shard] = s;
    }
    remote[at.shard].emplace_back(slot, at.record);
  }
  for (const auto& [shard, wanted] : remote) {
    std::vector<uint64_t> indexes;
    for (const auto& w : wanted) indexes.push_back(w.second);
    auto raw = std::make_shared<std::vector<std::string>>();  // owns the records until they are sent
    Status s = server_.fetcher->Fetch(ShardFile(shard), indexes, raw.get());
    if (!s.ok()) {
      // The local reason (a damaged record: Corruption) says more than "no peer had it".
      auto it = local_error.find(shard);
      if (it != local_error.end()) {
        return Status(it->second.code(), it->second.message() + "; no other node could serve it: " + s.message())
            .WithContext(where);
      }
      return s.WithContext(where);
    }
    for (size_t i = 0; i < wanted.size(); ++i) {
      const uint64_t id = version_->shard(shard).info().first_id() + wanted[i].second;
      STRATA_RETURN_IF_ERROR(ParseRecord((*raw)[i], id, &view).WithContext(where + ", record from a peer"));
      builder.Add(wanted[i].first, view, raw);
    }
    if (metrics_) metrics_->proxied_records.Increment(static_cast<double>(wanted.size()));
  }
  builder.Finish();
  if (metrics_) {
    if (!composition_) {
      composition_ = std::make_unique<CompositionRecorder>(version_->shape(), plan_.sampler().TargetShares(),
                                                           &metrics_->strata());
    }
    composition_->Record(out, batch_size);
  }
  for (auto& p : out) parts->push_back(std::move(p));
  ++next_step_;
  if (metrics_) {
    metrics_->batch_build_seconds.Observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }
  return Status::OK();
}

}  // namespace strata
