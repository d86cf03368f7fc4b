// ClusterStream's planning on the client: the plan, loaded once per stream,
// and each window's work, given to the nodes' ServeWork calls.
#include <set>

#include "client/batch_assembler.h"
#include "client/cluster_stream.h"
#include "common/serving_errors.h"
#include "plan/stream_start.h"

namespace strata::client_internal {

std::atomic<uint64_t> ClusterStream::window_ids_{ClusterStream::kWindowIds};

void ClusterStream::StartCall(const std::string& node, const v1::StreamRequest& request, uint64_t first, uint64_t end,
                              PartReader::Call kind) {
  const uint64_t id = ++next_call_;
  Call& call = calls_[id];
  call.node = node;
  call.first = first;
  call.end = end;
  call.completed_through = static_cast<int64_t>(first) - 1;
  call.work = kind == PartReader::Call::kWork;
  call.reader = std::make_unique<PartReader>(&loop_, channels_(Address(node)), request, node, id, &queue_, kind);
}

Status ClusterStream::LoadPlan() {
  const auto timeout = std::max(stall_, std::chrono::milliseconds(2000));
  Status last = Status::Unavailable("no node is up");
  Status not_sealed;  // the first node's that holds the version unsealed
  for (const auto& n : map_.nodes()) {
    if (excluded_.Contains(n.id())) continue;
    auto plan = StreamPlan::Load(channels_(n.address()), request_, timeout, indexes_.get());
    if (!plan.ok()) {
      last = plan.status();
      if (IsNotSealed(last) && not_sealed.ok()) not_sealed = last;
      // A node that is down, stopping (a drain cancels the calls it is
      // still answering), or behind (it does not know the version, or has
      // not seen it sealed, yet), is not the request's fault: ask the next.
      if (last.code() == Code::kUnavailable || last.code() == Code::kDeadlineExceeded ||
          last.code() == Code::kCancelled || last.IsNotFound() || IsNotSealed(last)) {
        continue;
      }
      return Fail(last);
    }
    plan_ = std::move(plan).value();
    break;
  }
  // No node has it sealed: the version is being ingested, if one said so.
  if (!plan_) return Fail(not_sealed.ok() ? last : not_sealed);
  const EpochPlan& plan = plan_->plan();
  if (Status s = CheckResumedPlan(position_.plan_hash, plan.plan_hash()); !s.ok()) return Fail(s);
  position_.version = plan_->info().version();
  // A node described the version, so it exists: a node that answers
  // NotFound is behind, even before any part (the nodes that will take over
  // its share may owe nothing yet, and have no call to wait for).
  served_ = true;
  position_.plan_hash = plan.plan_hash();
  steps_in_epoch_ = plan.num_steps();
  const uint64_t start = request_.start_step();
  if (Status s = CheckStartStep(start, steps_in_epoch_); !s.ok()) return Fail(s);
  end_step_ = EndStep(start, request_.max_steps(), steps_in_epoch_);
  // The calls name the version and plan, and only what a node serving work reads.
  request_.set_dataset(position_.dataset + "@" + std::to_string(position_.version));
  request_.set_expect_plan_hash(position_.plan_hash);
  request_.set_max_steps(0);
  request_.clear_members();
  request_.clear_member_zones();
  request_.clear_member_racks();
  request_.clear_excluded();
  request_.set_omit_idle_steps(true);  // a node's share of a step is known from its work
  planner_.emplace(plan_, map_, request_.zone());
  return Status::OK();
}

Status ClusterStream::PlanWindow() {
  const uint64_t from = planned_to_;
  if (from >= *end_step_) return Status::OK();
  const EpochPlan& plan = plan_->plan();
  uint64_t to = from, ids = 0;
  while (to < *end_step_ && to - from < kWindowSteps) {
    // A step's ids are computed once and kept until it is delivered: the
    // next window starts with the step a full window stopped before, and a
    // failover plans its steps again.
    auto [at, fresh] = plan_ids_.try_emplace(to);
    if (fresh) {
      plan.RankBatch(to, request_.rank(), &at->second);
      // A damaged stratum index: the ids are not to be trusted.
      if (Status damage = plan.Damage(); !damage.ok()) return Fail(damage);
    }
    const size_t step_ids = at->second.size();
    if (to > from && ids + step_ids > window_ids_.load()) break;  // the next window's first step
    ids += step_ids;
    if (step_ids == 0 && !pending_.count(to)) {  // nothing to receive: complete as it is
      BatchAssembler::Reset(&pending_[to], position_.epoch, to, request_.rank(), position_.version, steps_in_epoch_, 0);
    }
    ++to;
  }
  std::map<std::string, std::vector<v1::WorkStep>> work;
  const Status planned = planner_->Plan(
      from, to, plan_ids_,
      [this](uint64_t step) -> const std::vector<bool>* {
        auto it = pending_.find(step);
        return it == pending_.end() ? nullptr : BatchAssembler::FilledSlots(it->second);
      },
      &work);
  if (!planned.ok()) {
    if (planned.code() != Code::kUnavailable) return Fail(planned);
    return Fail(NoNodeLeft());
  }
  std::set<uint64_t> given;  // the calls given this window's work
  for (auto& [node, steps] : work) {
    // The node's call that serves the steps up to this window goes on.
    const std::string& owing = node;  // clang 14 cannot capture a structured binding
    auto open = std::find_if(calls_.begin(), calls_.end(), [&owing, from](const auto& c) {
      return c.second.node == owing && c.second.end == from && !c.second.ended && !c.second.reader->closed();
    });
    v1::WorkMore more;
    more.set_start_step(from);
    std::vector<uint64_t> owed;
    for (auto& w : steps) {
      if (w.ids_size() != 0) owed.push_back(w.step());
      *more.add_work() = std::move(w);
    }
    if (open != calls_.end() && open->second.reader->Give(more)) {
      open->second.end = to;
      open->second.owed.insert(owed.begin(), owed.end());
      given.insert(open->first);
      continue;
    }
    v1::StreamRequest r = request_;  // else a new call (if the open one has ended, its end fails it over)
    r.set_start_step(from);
    r.mutable_work()->Swap(more.mutable_work());
    StartCall(node, r, from, to, PartReader::Call::kWork);
    calls_[next_call_].owed.insert(owed.begin(), owed.end());
    given.insert(next_call_);
  }
  // A call given nothing now ends once it has sent what it was given; every
  // call does once the last window is given.
  for (auto& [id, call] : calls_) {
    if (!given.count(id) || to >= *end_step_) call.reader->Close();
  }
  planned_to_ = to;
  window_steps_ = to - from;
  return Status::OK();
}

}  // namespace strata::client_internal
