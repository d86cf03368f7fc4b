// A Pfair scheduler (the PD^2 priority rule of Anderson and Srinivasan, after
// Baruah et al.) over tasks with exact rational weights.
//
// Task s has weight w_s = rate_s / denom < 1, and the weights sum to an integer
// M (the "processors"). At every slot t = 0, 1, 2, ... the scheduler picks
// exactly M distinct tasks. Because PD^2 is optimal when the weights sum to
// the number of processors, the schedule is Pfair: after t slots, task s has
// been picked E_s(t) times with
//
//     -1 < t * w_s - E_s(t) < 1         for every s and t,
//
// so each task is picked 0 or 1 time per slot and its cumulative count never
// strays a whole unit from its ideal share. The stratified sampler uses it to
// hand out the fractional parts of per-stratum batch quotas.
//
// Subtask i (1-based) of task s has release floor((i-1)/w), pseudo-deadline
// ceil(i/w), b-bit [i/w is not an integer] and, for heavy tasks (w >= 1/2),
// group deadline ceil((d - i) / (1 - w)); a subtask is eligible from its
// release. Priority: earlier deadline, then b-bit 1, then later group
// deadline, then lower task index. All arithmetic is exact (128-bit where
// products need it); nothing is floating point.
//
// The state after t slots is a function of (t, E(t)) only, so a schedule can
// be resumed from a saved count vector with Reset().
//
// Thread-safety: not thread-safe; callers synchronise.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace strata {

class PfairScheduler {
 public:
  // REQUIRES: rates[s] < denom for every s; sum(rates) is a multiple of denom;
  // 0 < denom < 2^62. Tasks with rate 0 are never picked.
  PfairScheduler(std::vector<uint64_t> rates, uint64_t denom);

  // M: tasks picked per slot.
  uint64_t per_slot() const { return per_slot_; }
  size_t num_tasks() const { return rates_.size(); }
  // The next slot Step() schedules.
  uint64_t time() const { return time_; }
  // E_s(time()): how often each task has been picked.
  const std::vector<uint64_t>& picks() const { return picks_; }

  // Restarts the schedule at slot `time` with pick counts `picks` (as saved
  // from picks() at that slot). REQUIRES: picks.size() == num_tasks().
  void Reset(uint64_t time, std::span<const uint64_t> picks);

  // Schedules slot time(): appends the M picked tasks to *picked, in priority
  // order, adds them to picks() and advances time().
  void Step(std::vector<uint32_t>* picked);

  // Slots in which fewer than M tasks were eligible (never, if the theory and
  // this implementation are right; tests check it stays 0).
  uint64_t underfull_slots() const { return underfull_; }

 private:
  // A released subtask in the ready heap. `tie` orders equal deadlines by the
  // rest of PD^2's rule: b-bit 1 before 0, then the later group deadline
  // (heavy before light), encoded so that a smaller value ranks higher.
  struct Ready {
    uint64_t deadline;
    uint64_t tie;
    uint32_t task;
  };
  struct Pending {
    uint64_t release;
    uint32_t task;
  };
  // A task's next subtask i (= picks + 1), kept without divisions: i*D is
  // quot*r + rem, the release is floor((i-1)*D/r), and for heavy tasks
  // (d - i)*D is gquot*(D - r) + grem. Advancing to i+1 adds D's quotient and
  // remainder once (and D to the group numerator when the deadline skips).
  struct Cursor {
    uint64_t quot = 0, rem = 0, release = 0;
    uint64_t gquot = 0, grem = 0;
  };
  struct Rate {
    uint64_t r = 0, q = 0, m = 0;    // r, D / r, D % r
    uint64_t c = 0, cq = 0, cm = 0;  // heavy: D - r, D / (D - r), D % (D - r)
    bool heavy = false;
  };
  // Strict weak orders for the heaps: true when a ranks below b (heap top = highest priority, earliest release).
  static bool LowerPriority(const Ready& a, const Ready& b);
  static bool LaterRelease(const Pending& a, const Pending& b);
  // Sets cursor `task` to subtask picks_[task] + 1 from scratch (128-bit division).
  void Seek(uint32_t task);
  // Moves cursor `task` to its next subtask.
  void Advance(uint32_t task);
  Ready Key(uint32_t task) const;
  // Files task's current subtask in the ready heap if released by slot `now`,
  // else in the ring or the far heap.
  void File(uint32_t task, uint64_t now);

  std::vector<Rate> rates_;
  uint64_t denom_;
  uint64_t per_slot_ = 0;
  uint64_t time_ = 0;
  std::vector<uint64_t> picks_;
  std::vector<Cursor> cursors_;
  // Released subtasks, a heap by priority. Subtasks released later wait in a
  // calendar ring by release slot, or in a heap when further ahead than it spans.
  static constexpr uint64_t kRing = 4096;
  std::vector<Ready> ready_;
  std::vector<std::vector<uint32_t>> ring_;
  std::vector<Pending> far_;
  uint64_t underfull_ = 0;
};

}  // namespace strata
