// ClusterStream: one rank's batches from every node that serves part of them.
//
// The client plans (client/stream_plan.h): on a cluster of several nodes that
// serve work (ClusterMap.serves_work), the stream computes the epoch plan
// itself and sends each node the samples it owes for a window of steps
// (StreamRequest.work), opening calls only to nodes that owe something; the
// next window's calls open when half of the current one has been delivered.
// Every part is checked against the plan: a sample at a slot the plan gives
// another, or a step outside the call's window, fails the stream. Otherwise
// (one node, a job cursor, older servers, or ClientOptions.plan_on_client
// off) each node computes the same plan and sends the samples it serves
// (common/placement.h). Either way this stream fills each step's slots from
// the parts and yields complete steps in order. Exactly once is kept at the
// slot: a slot is filled once, and a second copy of it (after a failover
// reassigns samples) is dropped.
//
// Failover: a node whose call ends with an error, or that stalls, is
// excluded. The remaining calls are cancelled and new ones open from the
// first incomplete step: the holders that remain take over the excluded
// node's samples (planning here: the slots still empty are planned again
// without it; else the excluded nodes are named in the request). Slots
// already filled stay filled.
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

#include "client/batch_assembler.h"
#include "client/client_internal.h"
#include "client/node_probe.h"
#include "client/part_reader.h"
#include "client/stream_plan.h"
#include "common/serving_errors.h"
#include "plan/stream_start.h"

namespace strata::client_internal {

namespace {

class ClusterStream final : public Stream {
 public:
  ClusterStream(ChannelSource channels, v1::ClusterMap map, v1::StreamRequest request, ResumeToken position,
                const ClientOptions& options, std::shared_ptr<StratumIndexCache> indexes)
      : channels_(std::move(channels)),
        indexes_(std::move(indexes)),
        map_(std::move(map)),
        request_(std::move(request)),
        position_(std::move(position)),
        stall_(options.stall_timeout_ms),
        queue_(std::max<uint64_t>(2, options.max_buffered_parts)),
        excluded_(channels_),
        options_plan_(options.plan_on_client) {
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

  ~ClusterStream() override { calls_.clear(); }

  Status Next(Batch* batch) override;
  uint64_t steps_in_epoch() const override { return steps_in_epoch_; }
  uint64_t next_step() const override { return position_.step; }
  ResumeToken resume_token() const override { return position_; }
  void Cancel() override { cancelled_ = true; }
  StreamStats stats() const override { return stats_; }

 private:
  using Clock = std::chrono::steady_clock;
  // One StreamBatches call to one node.
  struct Call {
    std::string node;
    uint64_t first = 0, end = UINT64_MAX;  // the steps it serves: [first, end)
    std::unique_ptr<PartReader> reader;
    bool ended = false;              // it ended OK: it owes nothing more
    bool holders_down = false;       // it ended reporting a shard with no live holder
    bool unknown = false;            // answered NotFound before any node sent a part
    int64_t completed_through = -1;  // last step whose share it finished
  };

  Status Fail(Status s) {
    calls_.clear();
    final_ = std::move(s);
    return final_;
  }
  // Planning here: the plan from the first node that gives it, the version
  // and plan hash it fixes, and the epoch's end.
  Status LoadPlan();
  // Opens the calls of steps [planned_to_, planned_to_ + kWindowSteps).
  Status PlanWindow();
  Status Open(uint64_t from_step);
  void StartCall(const std::string& node, const v1::StreamRequest& request, uint64_t first, uint64_t end);
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
  const std::shared_ptr<StratumIndexCache> indexes_;  // the client's: may be null
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
  std::map<uint64_t, Call> calls_;  // by call id (their PartReader's generation)
  uint64_t next_call_ = 0;
  // Planning here (null when the nodes plan).
  std::optional<WorkPlanner> planner_;
  std::shared_ptr<const StreamPlan> plan_;
  uint64_t planned_to_ = 0;                             // calls are open for steps before this
  std::map<uint64_t, std::vector<uint64_t>> plan_ids_;  // the rank's ids of the steps planned, not yet delivered
  static constexpr uint64_t kWindowSteps = 32;
  std::map<uint64_t, Batch> pending_;  // steps being assembled
  std::vector<Batch> spare_batches_;   // batches callers gave back, to assemble into
  uint64_t steps_in_epoch_ = 0;
  std::optional<uint64_t> end_step_;
  bool opened_ = false;
  Status final_;
  std::string last_failure_;  // why the last node was excluded
  Status unknown_;            // the first NotFound answered before the version was known
  std::atomic<bool> cancelled_{false};
  const bool options_plan_;
};

void ClusterStream::StartCall(const std::string& node, const v1::StreamRequest& request, uint64_t first, uint64_t end) {
  const uint64_t id = ++next_call_;
  Call& call = calls_[id];
  call.node = node;
  call.first = first;
  call.end = end;
  call.completed_through = static_cast<int64_t>(first) - 1;
  call.reader = std::make_unique<PartReader>(channels_(Address(node)), request, node, id, &queue_);
}

Status ClusterStream::LoadPlan() {
  const auto timeout = std::max(stall_, std::chrono::milliseconds(2000));
  Status last = Status::Unavailable("no node is up");
  for (const auto& n : map_.nodes()) {
    if (excluded_.Contains(n.id())) continue;
    auto plan = StreamPlan::Load(channels_(n.address()), request_, timeout, indexes_.get());
    if (!plan.ok()) {
      last = plan.status();
      // A node that is down, or behind (it does not know the version yet), is
      // not the request's fault: ask the next.
      if (last.code() == Code::kUnavailable || last.code() == Code::kDeadlineExceeded || last.IsNotFound()) continue;
      return Fail(last);
    }
    plan_ = std::move(plan).value();
    break;
  }
  if (!plan_) return Fail(last);
  const EpochPlan& plan = plan_->plan();
  if (Status s = CheckResumedPlan(position_.plan_hash, plan.plan_hash()); !s.ok()) return Fail(s);
  position_.version = plan_->info().version();
  position_.plan_hash = plan.plan_hash();
  steps_in_epoch_ = plan.num_steps();
  const uint64_t start = request_.start_step();
  if (Status s = CheckStartStep(start, steps_in_epoch_); !s.ok()) return Fail(s);
  end_step_ = request_.max_steps() == 0 ? steps_in_epoch_ : std::min(steps_in_epoch_, start + request_.max_steps());
  // The calls name the version and plan, and only what a node serving work reads.
  request_.set_dataset(position_.dataset + "@" + std::to_string(position_.version));
  request_.set_expect_plan_hash(position_.plan_hash);
  request_.set_max_steps(0);
  request_.clear_members();
  request_.clear_member_zones();
  request_.clear_member_racks();
  request_.clear_excluded();
  planner_.emplace(plan_, map_, request_.zone());
  return Status::OK();
}

Status ClusterStream::PlanWindow() {
  const uint64_t from = planned_to_, to = std::min(*end_step_, from + kWindowSteps);
  if (from >= to) return Status::OK();
  const EpochPlan& plan = plan_->plan();
  for (uint64_t step = from; step < to; ++step) {
    plan.RankBatch(step, request_.rank(), &plan_ids_[step]);
    // A damaged stratum index: the ids are not to be trusted.
    if (Status damage = plan.Damage(); !damage.ok()) return Fail(damage);
    if (plan_ids_[step].empty() && !pending_.count(step)) {  // nothing to receive: complete as it is
      BatchAssembler::Reset(&pending_[step], position_.epoch, step, request_.rank(), position_.version, steps_in_epoch_,
                            0);
    }
  }
  std::map<std::string, std::vector<v1::WorkStep>> work;
  const Status planned = planner_->Plan(
      from, to, plan_ids_,
      [this](uint64_t step, uint32_t slot) {
        auto it = pending_.find(step);
        return it != pending_.end() && slot < it->second.size() && BatchAssembler::Filled(it->second, slot);
      },
      &work);
  if (!planned.ok()) {
    if (planned.code() != Code::kUnavailable) return Fail(planned);
    return Fail(Status::Unavailable("every node that could serve this stream has failed" +
                                    (last_failure_.empty() ? std::string() : "; last: " + last_failure_)));
  }
  for (auto& [node, steps] : work) {
    v1::StreamRequest r = request_;
    r.set_start_step(from);
    for (auto& w : steps) *r.add_work() = std::move(w);
    StartCall(node, r, from, to);
  }
  planned_to_ = to;
  return Status::OK();
}

Status ClusterStream::Open(uint64_t from_step) {
  calls_.clear();  // cancels and joins the calls open
  holders_down_ = Status::OK();
  unknown_ = Status::OK();
  queue_.SetNextStep(from_step);
  if (planner_) {
    planner_->SetExcluded(excluded_.ids());
    planned_to_ = from_step;
    return PlanWindow();
  }
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
  for (const auto& n : map_.nodes()) {
    if (!excluded_.Contains(n.id())) StartCall(n.id(), request_, from_step, UINT64_MAX);
  }
  if (calls_.empty()) {
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
  auto it = calls_.find(e.generation);
  if (it == calls_.end()) return Status::OK();  // from a cancelled call
  Call& node = it->second;
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
      (position_.plan_hash != 0 && part.plan_hash() != position_.plan_hash) || part.step() < node.first ||
      part.step() >= node.end) {
    return Fail(Status::Internal("node " + e.node + " sent a part of another stream (step " +
                                 std::to_string(part.step()) + ")"));
  }
  if (auto ids = plan_ids_.find(part.step()); planner_ && (ids == plan_ids_.end() || !MatchesPlan(part, ids->second))) {
    return Fail(Status::Internal("node " + e.node + " sent samples of step " + std::to_string(part.step()) +
                                 " at slots the plan gives others"));
  }
  if (planner_) planner_->Received(e.node, static_cast<uint64_t>(part.ids_size()));
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
  BatchAssembler::DropFilled(batch, &part);
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
  for (const auto& [call, node] : calls_) {
    if (node.unknown) {
      unknown.push_back(node.node);
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
  for (const auto& [call, node] : calls_) {
    const bool owes = !node.ended && !node.holders_down && node.first <= position_.step &&
                      node.completed_through < static_cast<int64_t>(position_.step);
    const int64_t reading = node.reader->reading_since_ns();
    if (!owes || reading == 0) continue;
    const Clock::time_point silent_since = Clock::time_point(std::chrono::nanoseconds(reading));
    if (now - std::max(silent_since, waiting_since) > stall_) {
      ++stats_.stalls;
      return Failover(node.node, "sent nothing for " + std::to_string(stall_.count()) +
                                     " ms while the client waited for its share of step " +
                                     std::to_string(position_.step));
    }
  }
  return Status::OK();
}

Status ClusterStream::Next(Batch* batch) {
  if (!final_.ok()) return final_;
  if (!opened_) {
    opened_ = true;
    if (options_plan_ && map_.serves_work() && map_.nodes_size() > 1 && request_.job_id().empty()) {
      STRATA_RETURN_IF_ERROR(LoadPlan());
    }
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
      plan_ids_.erase(position_.step);
      ++position_.step;
      queue_.SetNextStep(position_.step);
      if (planner_) {
        // Calls whose window is over have ended: their threads are done.
        std::erase_if(calls_, [this](const auto& c) { return c.second.ended && c.second.end <= position_.step; });
        if (planned_to_ < *end_step_ && position_.step + kWindowSteps / 2 >= planned_to_) {
          STRATA_RETURN_IF_ERROR(PlanWindow());
        }
      }
      return Status::OK();
    }
    if (planner_) {
      // Every call that serves this step has ended, and it is still incomplete.
      const bool owed = std::any_of(calls_.begin(), calls_.end(), [this](const auto& c) {
        return !c.second.ended && c.second.first <= position_.step && position_.step < c.second.end;
      });
      if (!owed) {
        return Fail(Status::Internal("every node finished its work but step " + std::to_string(position_.step) +
                                     " is incomplete"));
      }
    }
    const bool all_ended = std::all_of(calls_.begin(), calls_.end(), [](const auto& r) { return r.second.ended; });
    if (!planner_ && all_ended) {
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
                                         ResumeToken position, const ClientOptions& options,
                                         std::shared_ptr<StratumIndexCache> indexes) {
  return std::make_unique<ClusterStream>(std::move(channels), std::move(map), std::move(request), std::move(position),
                                         options, std::move(indexes));
}

}  // namespace strata::client_internal
