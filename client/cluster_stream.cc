#include "client/cluster_stream.h"

#include <algorithm>

#include "client/batch_assembler.h"
#include "client/log.h"
#include "common/dataset_ref.h"
#include "common/serving_errors.h"
#include "plan/stream_start.h"
#include "strata/v1/admin.grpc.pb.h"

namespace strata::client_internal {

ClusterStream::ClusterStream(ChannelSource channels, v1::ClusterMap map, v1::StreamRequest request,
                             ResumeToken position, const ClientOptions& options,
                             std::shared_ptr<StratumIndexCache> indexes)
    : channels_(std::move(channels)),
      indexes_(std::move(indexes)),
      map_(std::move(map)),
      request_(std::move(request)),
      position_(std::move(position)),
      stall_(options.stall_timeout_ms),
      max_parts_(std::max<uint64_t>(2, options.max_buffered_parts)),
      max_bytes_(options.max_buffered_bytes),
      queue_(max_parts_),
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
  request_.set_indexed_labels(true);  // BatchAssembler reads either form
  request_.set_joined_steps(true);    // PartReader splits Batch.following on every call
  const auto& nodes = map_.nodes();
  if (!options.zone.empty() &&
      std::none_of(nodes.begin(), nodes.end(), [&](const v1::NodeInfo& n) { return n.zone() == options.zone; })) {
    Log().warn("strata: no node of the cluster is in zone '{}'; the stream prefers none", options.zone);
  }
}

Status ClusterStream::Open(uint64_t from_step) {
  calls_.clear();  // cancels the calls open and waits for their end
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
    return Fail(NoNodeLeft());
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

Status ClusterStream::NoNodeLeft() const {
  return Status(last_failure_code_ == Code::kDataLoss ? Code::kDataLoss : Code::kUnavailable,
                "every node that could serve this stream has failed" +
                    (last_failure_.empty() ? std::string() : "; last: " + last_failure_));
}

Status ClusterStream::Failover(const std::string& node, const std::string& why, Code code) {
  excluded_.Exclude(node, Address(node), Clock::now());
  ++stats_.failovers;
  last_failure_ = node + " " + why;
  last_failure_code_ = code;
  Log().warn("strata: node {} {}; the other holders take over its share from step {}", node, why, position_.step);
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
  Log().info("strata: node {} answers again; it serves its share from step {}", names, position_.step);
  return Open(position_.step);
}

void ClusterStream::PinVersion() {
  auto ref = ParseDatasetRef(request_.dataset());
  if (!ref.ok() || ref->version) return;  // named, or wrong: the nodes say what is wrong with it
  const auto timeout = std::max(stall_, std::chrono::milliseconds(2000));
  for (const auto& n : map_.nodes()) {
    if (excluded_.Contains(n.id())) continue;
    auto admin = v1::AdminService::NewStub(channels_(n.address()));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + timeout);
    v1::DescribeDatasetRequest describe;
    describe.set_dataset(ref->name);
    v1::DescribeDatasetReply reply;
    if (admin->DescribeDataset(&context, describe, &reply).ok() && reply.dataset().version() != 0) {
      request_.set_dataset(ref->name + "@" + std::to_string(reply.dataset().version()));
      return;
    }
  }
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
    if ((e.status.IsNotFound() || IsNotSealed(e.status)) && !served_) {
      node.unknown = true;
      if (unknown_.ok()) unknown_ = e.status;
      return SettleUnknown();
    }
    // A node that does not know a version the others serve, or has not seen
    // it sealed (it was down when it was sealed), is behind, not the request
    // wrong.
    const bool behind = e.status.IsNotFound() || IsNotSealed(e.status);
    if (IsRequestError(e.status) && !behind) return Fail(e.status);
    return Failover(e.node, "failed (" + e.status.ToString() + ")", e.status.code());
  }
  v1::Batch& part = e.part;
  if (part.last_part()) {
    node.completed_through = std::max<int64_t>(node.completed_through, static_cast<int64_t>(part.step()));
    node.owed.erase(part.step());
  }
  if (part.step() < position_.step) return Status::OK();  // already delivered
  if (part.epoch() != position_.epoch || part.rank() != request_.rank() ||
      (position_.version != 0 && part.dataset_version() != position_.version) ||
      (position_.plan_hash != 0 && part.plan_hash() != position_.plan_hash) || part.step() < node.first ||
      part.step() >= node.end ||
      // The batch's slots are sized by this, before any sample: never past what was asked for.
      part.batch_size() > request_.batch_size() || part.step() >= part.steps_in_epoch() ||
      (steps_in_epoch_ != 0 && part.steps_in_epoch() != steps_in_epoch_)) {
    return Fail(Status::Internal("node " + e.node + " sent a part of another stream (step " +
                                 std::to_string(part.step()) + ")"));
  }
  if (auto ids = plan_ids_.find(part.step()); planner_ && (ids == plan_ids_.end() || !MatchesPlan(part, ids->second))) {
    return Fail(Status::Internal("node " + e.node + " sent samples of step " + std::to_string(part.step()) +
                                 " at slots the plan gives others"));
  }
  if (planner_) planner_->Received(e.node, static_cast<uint64_t>(part.ids_size()));
  served_ = true;
  position_.version = part.dataset_version();
  position_.plan_hash = part.plan_hash();
  steps_in_epoch_ = part.steps_in_epoch();
  if (!end_step_) {
    const uint64_t start = request_.start_step();
    end_step_ = EndStep(start, request_.max_steps(), steps_in_epoch_);
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
  BatchAssembler::DropFilled(batch, &part, &e.payload);
  if (!BatchAssembler::AddPart(&batch, &part, &e.payload)) {
    return Fail(
        Status::Internal("node " + e.node + " sent an inconsistent part of step " + std::to_string(part.step())));
  }
  // What AddPart swapped out (the batch's old buffer) goes back with the
  // part: a reader copies the next whole batch into it.
  if (e.payload.owning()) *part.mutable_payload() = e.payload.TakeOwned();
  queue_.Recycle(std::move(part));  // and its repeated fields' elements, to parse into
  return unknown_.ok() ? Status::OK() : SettleUnknown();
}

Status ClusterStream::SettleUnknown() {
  std::vector<std::string> unknown;
  bool served = served_, open = false;
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
    last_failure_code_ = Code::kUnavailable;
    Log().warn("strata: node {} does not know {} yet; the other holders take over its share from step {}", id,
               request_.dataset(), position_.step);
  }
  unknown_ = Status::OK();
  return Open(position_.step);
}

uint64_t ClusterStream::Lookahead(uint64_t step_bytes) const {
  if (max_bytes_ == 0 || step_bytes == 0) return max_parts_;
  return std::clamp<uint64_t>(max_bytes_ / step_bytes, 2, max_parts_);
}

Status ClusterStream::CheckStalls(Clock::time_point waiting_since) {
  const auto now = Clock::now();
  if (now - waiting_since <= stall_) return Status::OK();
  for (const auto& [call, node] : calls_) {
    const int64_t reading = node.reader->reading_since_ns();
    if (!node.Owes(position_.step) || reading == 0) continue;
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
    } else if (map_.nodes_size() > 1 && position_.version == 0) {
      PinVersion();
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
      queue_.SetNextStep(position_.step, Lookahead(batch->payload().size()), batch->payload().size());
      if (planner_) {
        // Calls whose window is over have ended: nothing of theirs is outstanding.
        std::erase_if(calls_, [this](const auto& c) { return c.second.ended && c.second.end <= position_.step; });
        if (planned_to_ < *end_step_ && position_.step + (window_steps_ + 1) / 2 >= planned_to_) {
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
    // Every node has sent its share of the step (its last part, read in
    // order after the others) or ended, and the batch is still incomplete:
    // no more of it will come, and waiting would hang the trainer.
    if (holders_down_.ok() && unknown_.ok() &&
        std::none_of(calls_.begin(), calls_.end(), [this](const auto& c) { return c.second.Owes(position_.step); })) {
      return Fail(Status::Internal("every node has sent its share of step " + std::to_string(position_.step) +
                                   ", yet the batch is incomplete (the nodes disagree about placement?)"));
    }
    STRATA_RETURN_IF_ERROR(CheckStalls(waiting_since));
  }
}

std::unique_ptr<Stream> NewClusterStream(ChannelSource channels, v1::ClusterMap map, v1::StreamRequest request,
                                         ResumeToken position, const ClientOptions& options,
                                         std::shared_ptr<StratumIndexCache> indexes) {
  return std::make_unique<ClusterStream>(std::move(channels), std::move(map), std::move(request), std::move(position),
                                         options, std::move(indexes));
}

}  // namespace strata::client_internal
