// ClusterStream: one rank's batches from every node that serves part of them.
//
// Each node computes the same epoch plan and sends the samples it serves
// (common/placement.h); this stream fills each step's slots from their parts
// and yields complete steps in order. Exactly once is kept at the slot: a slot
// is filled once, and a second copy of it (after a failover reassigns samples)
// is dropped.
//
// Failover: a node whose call ends with an error, or that stalls, is
// excluded. The remaining calls are cancelled and new ones open on every node
// still serving, from the first incomplete step, with the excluded nodes named
// in the request: the holders that remain take over the excluded node's
// samples. Slots already filled stay filled.
//
// Stalled means: the trainer waits in Next() for a step the node owes (it has
// not sent that step's last part), everything the node sent has been read
// from the queue, and its reader has waited inside Read() (its connection
// delivering nothing) for stall_timeout_ms. Time the trainer spends away from
// Next(), and parts waiting unread in the queue, never count against a node.
//
// Nodes come back: an excluded node (or one the map said was down) is probed
// in the background (client/node_probe.h); once it answers, every call is
// opened again from the first incomplete step with it no longer excluded, so
// it serves its share again from there. Exactly once still holds at the slot.
//
// A node that reports that a sample's holders are all down
// (common/serving_errors.h) is not at fault: the stream probes the excluded
// nodes at once and fails with that error (Unavailable, naming the shard)
// only if none of them is back within the wait below.
#include <spdlog/spdlog.h>

#include <map>
#include <memory>
#include <set>

#include "client/batch_assembler.h"
#include "client/client_internal.h"
#include "client/node_probe.h"
#include "client/part_reader.h"
#include "common/serving_errors.h"

namespace strata::client_internal {

namespace {

// Errors that every node would repeat: they end the stream, not a node.
bool IsRequestError(const Status& s) {
  switch (s.code()) {
    case Code::kInvalidArgument:
    case Code::kNotFound:
    case Code::kFailedPrecondition:
    case Code::kOutOfRange:
    case Code::kUnimplemented:
    case Code::kPermissionDenied:
    case Code::kUnauthenticated: return true;
    default: return false;
  }
}

// Removes the samples of `part` whose slots `batch` already holds.
void DropFilledSlots(const Batch& batch, v1::Batch* part) {
  bool any = false;
  for (uint32_t slot : part->slots()) any = any || (slot < batch.size() && BatchAssembler::Filled(batch, slot));
  if (!any) return;
  v1::Batch kept;
  kept.CopyFrom(*part);
  kept.clear_slots();
  kept.clear_ids();
  kept.clear_labels();
  kept.clear_sizes();
  kept.clear_layout_of();
  kept.clear_field_sizes();
  kept.clear_strata();
  kept.clear_payload();
  uint64_t offset = 0;
  int field = 0;
  for (int i = 0; i < part->slots_size(); ++i) {
    const int fields = part->layout_of_size() ? part->layouts(static_cast<int>(part->layout_of(i))).names_size() : 0;
    const uint32_t slot = part->slots(i);
    if (slot >= batch.size() || !BatchAssembler::Filled(batch, slot)) {
      kept.add_slots(slot);
      kept.add_ids(part->ids(i));
      kept.add_labels(part->labels(i));
      kept.add_sizes(part->sizes(i));
      if (part->layout_of_size()) kept.add_layout_of(part->layout_of(i));
      if (part->strata_size()) kept.add_strata(part->strata(i));
      for (int k = 0; k < fields; ++k) kept.add_field_sizes(part->field_sizes(field + k));
      kept.mutable_payload()->append(part->payload(), offset, part->sizes(i));
    }
    offset += part->sizes(i);
    field += fields;
  }
  *part = std::move(kept);
}

class ClusterStream final : public Stream {
 public:
  ClusterStream(ChannelSource channels, v1::ClusterMap map, v1::StreamRequest request, ResumeToken position,
                const ClientOptions& options)
      : channels_(std::move(channels)),
        map_(std::move(map)),
        request_(std::move(request)),
        position_(std::move(position)),
        stall_(options.stall_timeout_ms),
        queue_(std::max<uint64_t>(2, options.max_buffered_parts)),
        excluded_(channels_) {
    const auto now = Clock::now();
    bool domains = false;
    for (const auto& n : map_.nodes()) domains = domains || !n.zone().empty() || !n.rack().empty();
    for (const auto& n : map_.nodes()) {
      request_.add_members(n.id());
      if (domains) {  // a server placing without them would place as a server built before zones
        request_.add_member_zones(n.zone());
        request_.add_member_racks(n.rack());
      }
      if (n.state() != v1::NODE_UP) excluded_.Exclude(n.id(), n.address(), now);
    }
    request_.set_zone(options.zone);
  }

  ~ClusterStream() override { readers_.clear(); }

  Status Next(Batch* batch) override;
  uint64_t steps_in_epoch() const override { return steps_in_epoch_; }
  uint64_t next_step() const override { return position_.step; }
  ResumeToken resume_token() const override { return position_; }
  void Cancel() override { cancelled_ = true; }
  StreamStats stats() const override { return stats_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct ReaderState {
    std::unique_ptr<PartReader> reader;
    bool ended = false;              // its call ended OK: it owes nothing more
    bool holders_down = false;       // its call ended reporting a shard with no live holder
    bool unknown = false;            // answered NotFound before any node sent a part
    int64_t completed_through = -1;  // last step whose share it finished
  };

  Status Fail(Status s) {
    readers_.clear();
    final_ = std::move(s);
    return final_;
  }
  Status Open(uint64_t from_step);
  Status Failover(const std::string& node, const std::string& why);
  // The nodes that answered NotFound before the version was known: when every
  // node did, the dataset is not there (the stream fails NotFound); once a part
  // shows the others serve it, they are behind (just sealed, or back from
  // down before the version reached them) and fail over.
  Status SettleUnknown();
  Status Handle(PartEvent& e);
  Status CheckStalls(Clock::time_point waiting_since);
  // Takes back the excluded nodes that answered their probe.
  Status Readmit();
  const std::string& Address(const std::string& node) const;
  bool Finished() const { return end_step_ && position_.step >= *end_step_; }

  ChannelSource channels_;
  const v1::ClusterMap map_;
  v1::StreamRequest request_;
  ResumeToken position_;
  const std::chrono::milliseconds stall_;
  PartQueue queue_;
  ExcludedNodes excluded_;
  StreamStats stats_;
  // A node reported a shard with no live holder: the error, and when the
  // stream gives up waiting for an excluded holder to come back.
  Status holders_down_;
  Clock::time_point holders_down_until_;
  std::map<std::string, ReaderState> readers_;
  std::map<uint64_t, Batch> pending_;  // steps being assembled
  std::vector<Batch> spare_batches_;   // batches callers gave back, to assemble into
  uint64_t generation_ = 0;
  uint64_t steps_in_epoch_ = 0;
  std::optional<uint64_t> end_step_;
  bool opened_ = false;
  Status final_;
  std::string last_failure_;  // why the last node was excluded
  Status unknown_;            // the first NotFound answered before the version was known
  std::atomic<bool> cancelled_{false};
};

Status ClusterStream::Open(uint64_t from_step) {
  readers_.clear();  // cancels and joins the previous generation
  ++generation_;
  holders_down_ = Status::OK();
  unknown_ = Status::OK();
  request_.clear_excluded();
  for (const auto& x : excluded_.ids()) request_.add_excluded(x);
  request_.set_start_step(from_step);
  if (position_.version != 0) {
    // Calls opened again read the version and plan the first ones served,
    // even if a newer version has been sealed since.
    request_.set_dataset(position_.dataset + "@" + std::to_string(position_.version));
    if (position_.plan_hash != 0) request_.set_expect_plan_hash(position_.plan_hash);
  }
  if (request_.max_steps() != 0 && end_step_) request_.set_max_steps(*end_step_ - from_step);
  queue_.SetNextStep(from_step);
  for (const auto& n : map_.nodes()) {
    if (excluded_.Contains(n.id())) continue;
    ReaderState& state = readers_[n.id()];
    state.completed_through = static_cast<int64_t>(from_step) - 1;
    state.reader = std::make_unique<PartReader>(channels_(n.address()), request_, n.id(), generation_, &queue_);
  }
  if (readers_.empty()) {
    return Fail(Status::Unavailable("every node that could serve this stream has failed" +
                                    (last_failure_.empty() ? std::string() : "; last: " + last_failure_)));
  }
  return Status::OK();
}

const std::string& ClusterStream::Address(const std::string& node) const {
  static const std::string kNone;
  for (const auto& n : map_.nodes()) {
    if (n.id() == node) return n.address();
  }
  return kNone;
}

Status ClusterStream::Failover(const std::string& node, const std::string& why) {
  excluded_.Exclude(node, Address(node), Clock::now());
  ++stats_.failovers;
  last_failure_ = node + " " + why;
  spdlog::warn("strata: node {} {}; the other holders take over its share from step {}", node, why, position_.step);
  return Open(position_.step);
}

Status ClusterStream::Readmit() {
  const std::string dataset =
      position_.version != 0 ? position_.dataset + "@" + std::to_string(position_.version) : request_.dataset();
  const std::vector<std::string> back = excluded_.Poll(dataset, Clock::now());
  if (back.empty()) return Status::OK();
  stats_.readmissions += back.size();
  std::string names;
  for (const auto& id : back) names += (names.empty() ? "" : ", ") + id;
  spdlog::info("strata: node {} answers again; it serves its share from step {}", names, position_.step);
  return Open(position_.step);
}

Status ClusterStream::Handle(PartEvent& e) {
  if (e.generation != generation_) return Status::OK();  // from cancelled calls
  auto it = readers_.find(e.node);
  if (it == readers_.end()) return Status::OK();
  ReaderState& node = it->second;
  if (e.end) {
    if (e.status.ok()) {
      node.ended = true;
      return unknown_.ok() ? Status::OK() : SettleUnknown();
    }
    if (cancelled_) return Fail(e.status);
    if (IsHoldersDown(e.status)) {
      // Not this node's fault: wait for an excluded holder to answer again.
      if (excluded_.empty()) return Fail(e.status);
      node.holders_down = true;
      if (holders_down_.ok()) {
        holders_down_ = e.status;
        holders_down_until_ = Clock::now() + std::max(stall_, 2 * ExcludedNodes::kProbeDeadline);
        excluded_.ProbeNow(Clock::now());
      }
      return Status::OK();
    }
    if (e.status.IsNotFound() && position_.version == 0) {
      node.unknown = true;
      if (unknown_.ok()) unknown_ = e.status;
      return SettleUnknown();
    }
    // A node that does not know a version the others serve (it was down when
    // it was sealed) is behind, not the request wrong.
    const bool behind = e.status.IsNotFound() && position_.version != 0;
    if (IsRequestError(e.status) && !behind) return Fail(e.status);
    return Failover(e.node, "failed (" + e.status.ToString() + ")");
  }
  v1::Batch& part = e.part;
  if (part.last_part())
    node.completed_through = std::max<int64_t>(node.completed_through, static_cast<int64_t>(part.step()));
  if (part.step() < position_.step) return Status::OK();  // already delivered
  if (part.epoch() != position_.epoch || part.rank() != request_.rank() ||
      (position_.version != 0 && part.dataset_version() != position_.version) ||
      (position_.plan_hash != 0 && part.plan_hash() != position_.plan_hash)) {
    return Fail(Status::Internal("node " + e.node + " sent a part of another stream (step " +
                                 std::to_string(part.step()) + ")"));
  }
  position_.version = part.dataset_version();
  position_.plan_hash = part.plan_hash();
  steps_in_epoch_ = part.steps_in_epoch();
  if (!end_step_) {
    const uint64_t start = request_.start_step();
    end_step_ = request_.max_steps() == 0 ? steps_in_epoch_ : std::min(steps_in_epoch_, start + request_.max_steps());
  }
  auto [slot, fresh] = pending_.try_emplace(part.step());
  Batch& batch = slot->second;
  if (fresh) {
    if (!spare_batches_.empty()) {  // the caller's previous batch: its buffers have their capacity
      batch = std::move(spare_batches_.back());
      spare_batches_.pop_back();
    }
    BatchAssembler::Reset(&batch, part.epoch(), part.step(), part.rank(), part.dataset_version(), part.steps_in_epoch(),
                          part.batch_size());
  }
  DropFilledSlots(batch, &part);
  if (!BatchAssembler::AddPart(&batch, &part)) {
    return Fail(
        Status::Internal("node " + e.node + " sent an inconsistent part of step " + std::to_string(part.step())));
  }
  queue_.Recycle(std::move(part));  // holds what AddPart swapped out: buffers to parse into
  return unknown_.ok() ? Status::OK() : SettleUnknown();
}

Status ClusterStream::SettleUnknown() {
  std::vector<std::string> unknown;
  bool served = position_.version != 0, open = false;
  for (const auto& [id, node] : readers_) {
    if (node.unknown) {
      unknown.push_back(id);
    } else if (node.ended) {
      served = true;  // it finished its share: the version exists
    } else {
      open = true;
    }
  }
  if (unknown.empty()) return Status::OK();
  if (!served) return open ? Status::OK() : Fail(unknown_);  // wait for the others, or every node said so
  const auto now = Clock::now();
  for (const auto& id : unknown) {
    excluded_.Exclude(id, Address(id), now);
    ++stats_.failovers;
    last_failure_ = id + " does not know the version yet (" + unknown_.ToString() + ")";
    spdlog::warn("strata: node {} does not know {} yet; the other holders take over its share from step {}", id,
                 request_.dataset(), position_.step);
  }
  unknown_ = Status::OK();
  return Open(position_.step);
}

Status ClusterStream::CheckStalls(Clock::time_point waiting_since) {
  const auto now = Clock::now();
  if (now - waiting_since <= stall_) return Status::OK();
  for (const auto& [id, node] : readers_) {
    const bool owes =
        !node.ended && !node.holders_down && node.completed_through < static_cast<int64_t>(position_.step);
    const int64_t reading = node.reader->reading_since_ns();
    if (!owes || reading == 0) continue;
    const Clock::time_point silent_since = Clock::time_point(std::chrono::nanoseconds(reading));
    if (now - std::max(silent_since, waiting_since) > stall_) {
      ++stats_.stalls;
      return Failover(id, "sent nothing for " + std::to_string(stall_.count()) +
                              " ms while the client waited for its share of step " + std::to_string(position_.step));
    }
  }
  return Status::OK();
}

Status ClusterStream::Next(Batch* batch) {
  if (!final_.ok()) return final_;
  if (!opened_) {
    opened_ = true;
    STRATA_RETURN_IF_ERROR(Open(position_.step));
  }
  const auto poll = std::min(stall_, std::chrono::milliseconds(50));
  const Clock::time_point waiting_since = Clock::now();  // the stall clock never runs while the trainer is away
  for (;;) {
    if (cancelled_) return Fail(Status::Cancelled("stream cancelled"));
    if (Finished()) return Fail(Status::OutOfRange("end of the epoch at step " + std::to_string(position_.step)));
    auto ready = pending_.find(position_.step);
    if (ready != pending_.end() && BatchAssembler::Complete(ready->second)) {
      // The caller's previous batch is overwritten either way: keep it, and
      // its buffers, for a step to come.
      std::swap(*batch, ready->second);
      if (spare_batches_.size() < 2) spare_batches_.push_back(std::move(ready->second));
      pending_.erase(ready);
      ++position_.step;
      queue_.SetNextStep(position_.step);
      return Status::OK();
    }
    const bool all_ended = std::all_of(readers_.begin(), readers_.end(), [](const auto& r) { return r.second.ended; });
    if (all_ended) {
      if (!end_step_ || pending_.empty()) {
        return Fail(Status::OutOfRange("end of stream at step " + std::to_string(position_.step)));
      }
      return Fail(Status::Internal("every node finished but step " + std::to_string(position_.step) +
                                   " is incomplete (the nodes disagree about placement?)"));
    }
    if (!excluded_.empty()) STRATA_RETURN_IF_ERROR(Readmit());
    if (!holders_down_.ok() && Clock::now() > holders_down_until_) return Fail(holders_down_);
    if (auto e = queue_.Pop(poll)) {
      STRATA_RETURN_IF_ERROR(Handle(*e));
      if (!final_.ok()) return final_;
      continue;  // a node is judged only once the queue holds nothing unread
    }
    STRATA_RETURN_IF_ERROR(CheckStalls(waiting_since));
  }
}

}  // namespace

std::unique_ptr<Stream> NewClusterStream(ChannelSource channels, v1::ClusterMap map, v1::StreamRequest request,
                                         ResumeToken position, const ClientOptions& options) {
  return std::make_unique<ClusterStream>(std::move(channels), std::move(map), std::move(request), std::move(position),
                                         options);
}

}  // namespace strata::client_internal
