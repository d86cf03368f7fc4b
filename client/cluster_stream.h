// Private to libstrata. ClusterStream: one rank's batches from every node that
// serves part of them (client/cluster_stream.cc; its planning here, in
// client/cluster_stream_plan.cc).
//
// The client plans (client/stream_plan.h): on a cluster of several nodes that
// serve work (ClusterMap.serves_work), the stream computes the epoch plan
// itself and gives each node the samples it owes a window of steps at a time
// over one long-lived ServeWork call per node, opened only to nodes that owe
// something. The next window is planned when half of the current one has been
// delivered, and each node's share goes to the call it has open; a node that
// owes nothing in a window has its call closed (it ends once it has sent what
// it was given) and gets a new one when it owes again.
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
// not sent that step's last part; planning here, a step it was given samples
// of: the stream asks nodes for no part of the other steps,
// StreamRequest.omit_idle_steps), everything the node sent has been read
// from the queue, and its call has had a read outstanding (its connection
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
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "client/client_internal.h"
#include "client/node_probe.h"
#include "client/part_reader.h"
#include "client/read_loop.h"
#include "client/stream_plan.h"
#include "common/input_limits.h"

namespace strata::client_internal {

class ClusterStream final : public Stream {
 public:
  ClusterStream(ChannelSource channels, v1::ClusterMap map, v1::StreamRequest request, ResumeToken position,
                const ClientOptions& options, std::shared_ptr<StratumIndexCache> indexes);

  ~ClusterStream() override { calls_.clear(); }

  Status Next(Batch* batch) override;
  // Tests: the ids a window holds past its first step (kWindowIds if 0), for
  // streams opened after the call.
  static void SetWindowIdsForTesting(uint64_t ids) { window_ids_ = ids == 0 ? kWindowIds : ids; }
  // Steps in the last window of work given to the nodes (0 while the nodes plan).
  uint64_t last_window_steps() const { return window_steps_; }
  // Steps the queue takes ahead of the trainer now (Lookahead).
  uint64_t lookahead() const { return queue_.lookahead(); }
  uint64_t steps_in_epoch() const override { return steps_in_epoch_; }
  uint64_t next_step() const override { return position_.step; }
  ResumeToken resume_token() const override { return position_; }
  void Cancel() override { cancelled_ = true; }
  StreamStats stats() const override { return stats_; }

 private:
  using Clock = std::chrono::steady_clock;
  // One StreamBatches or ServeWork call to one node.
  struct Call {
    std::string node;
    uint64_t first = 0, end = UINT64_MAX;  // the steps it serves (so far, for ServeWork): [first, end)
    std::unique_ptr<PartReader> reader;
    bool ended = false;              // it ended OK: it owes nothing more
    bool holders_down = false;       // it ended reporting a shard with no live holder
    bool unknown = false;            // answered NotFound before any node sent a part
    int64_t completed_through = -1;  // last step whose share it finished
    // ServeWork: the steps it was given samples of and has not finished (it
    // sends no part of the others: StreamRequest.omit_idle_steps).
    bool work = false;
    std::set<uint64_t> owed;
    // Whether parts of `step` may still come from it: it is open, serves the
    // step, and has not said (with the step's last part) that its share is sent.
    bool Owes(uint64_t step) const {
      return !ended && !holders_down && !unknown && first <= step && step < end &&
             completed_through < static_cast<int64_t>(step) && (!work || owed.count(step) != 0);
    }
  };

  Status Fail(Status s) {
    calls_.clear();
    final_ = std::move(s);
    return final_;
  }
  // Planning here: the plan from the first node that gives it, the version
  // and plan hash it fixes, and the epoch's end.
  Status LoadPlan();
  // Nodes that plan: a bare dataset name is pinned to the latest version of
  // the first node that describes it, so that no node serves another (one
  // that missed the latest seal resolves the name to the version before; it
  // now answers NotFound, and is behind). Best effort: left bare otherwise.
  void PinVersion();
  // Gives the nodes the work of the next window: the steps from planned_to_,
  // at most kWindowSteps of them and, past the first, at most kWindowIds
  // ids (so that the windows a call holds stay inside a node's bound on work
  // given and not yet begun, InputLimits::kMaxWorkIds, however big the batch).
  Status PlanWindow();
  Status Open(uint64_t from_step);
  void StartCall(const std::string& node, const v1::StreamRequest& request, uint64_t first, uint64_t end,
                 PartReader::Call kind = PartReader::Call::kStream);
  // `code`: how the node failed; a Corruption (no copy it could read or
  // fetch) makes the stream's end Corruption too once no node is left.
  Status Failover(const std::string& node, const std::string& why, Code code = Code::kUnavailable);
  // The stream's end once no node is left to serve it: Unavailable, or
  // Corruption when the last node failed for want of an intact copy.
  Status NoNodeLeft() const;
  // The nodes that answered NotFound before the version was known: when every
  // node did, the dataset is not there (the stream fails NotFound); once a part
  // shows the others serve it, they are behind (just sealed, or back from
  // down before the version reached them) and fail over.
  Status SettleUnknown();
  Status Handle(PartEvent& e);
  Status CheckStalls(Clock::time_point waiting_since);
  // Steps the queue takes ahead of the trainer after a step of `step_bytes`
  // payload: ClientOptions' max_buffered_parts, cut by max_buffered_bytes.
  uint64_t Lookahead(uint64_t step_bytes) const;
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
  const uint64_t max_parts_;  // ClientOptions::max_buffered_parts, at least 2
  const uint64_t max_bytes_;  // ClientOptions::max_buffered_bytes
  PartQueue queue_;
  ReadLoop loop_;  // drives every call; declared after queue_, destroyed before it
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
  uint64_t window_steps_ = 0;                           // steps in the last window given
  static constexpr uint64_t kWindowSteps = 32;
  // A next window is planned once at most half the last one is left: a node
  // holds at most two windows' ids not yet begun, half its bound.
  static constexpr uint64_t kWindowIds = InputLimits::kMaxWorkIds / 4;
  static std::atomic<uint64_t> window_ids_;  // kWindowIds, but for tests
  std::map<uint64_t, Batch> pending_;        // steps being assembled
  std::vector<Batch> spare_batches_;         // batches callers gave back, to assemble into
  uint64_t steps_in_epoch_ = 0;
  std::optional<uint64_t> end_step_;
  bool opened_ = false;
  Status final_;
  std::string last_failure_;  // why the last node was excluded
  Code last_failure_code_ = Code::kUnavailable;
  Status unknown_;  // the first NotFound answered before served_
  // A node has sent a part of this stream, or described its version for the
  // client's plan: the version exists, so a node that answers NotFound from
  // then on is behind (its share fails over). Before, a NotFound waits for the
  // other nodes: if none serves, the stream ends with it (a version named
  // that no node has, or one deleted since).
  bool served_ = false;
  std::atomic<bool> cancelled_{false};
  const bool options_plan_;
};

}  // namespace strata::client_internal
