#include "plan/pfair_scheduler.h"

#include <algorithm>
#include <limits>

#include "common/int128.h"

namespace strata {

namespace {

uint64_t Clamp(u128 v) {
  return v > std::numeric_limits<uint64_t>::max() ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(v);
}

}  // namespace

PfairScheduler::PfairScheduler(std::vector<uint64_t> rates, uint64_t denom)
    : denom_(denom), picks_(rates.size(), 0), cursors_(rates.size()), ring_(kRing) {
  u128 total = 0;
  for (uint64_t r : rates) {
    total += r;
    Rate rate;
    rate.r = r;
    if (r != 0) {
      rate.q = denom / r;
      rate.m = denom % r;
      rate.heavy = 2 * u128{r} >= denom;
      if (rate.heavy) {
        rate.c = denom - r;
        rate.cq = denom / rate.c;
        rate.cm = denom % rate.c;
      }
    }
    rates_.push_back(rate);
  }
  per_slot_ = static_cast<uint64_t>(total / denom_);
  Reset(0, picks_);
}

bool PfairScheduler::LowerPriority(const Ready& a, const Ready& b) {
  if (a.deadline != b.deadline) return a.deadline > b.deadline;
  if (a.tie != b.tie) return a.tie > b.tie;
  return a.task > b.task;
}

bool PfairScheduler::LaterRelease(const Pending& a, const Pending& b) {
  if (a.release != b.release) return a.release > b.release;
  return a.task > b.task;
}

void PfairScheduler::Seek(uint32_t task) {
  const Rate& rate = rates_[task];
  Cursor& c = cursors_[task];
  const u128 i = u128{picks_[task]} + 1;  // the next subtask, 1-based
  const u128 d = denom_;
  c.quot = Clamp(i * d / rate.r);
  c.rem = static_cast<uint64_t>(i * d % rate.r);
  c.release = Clamp((i - 1) * d / rate.r);
  if (rate.heavy) {
    const u128 deadline = u128{c.quot} + (c.rem != 0 ? 1 : 0);
    const u128 num = (deadline - i) * d;
    c.gquot = Clamp(num / rate.c);
    c.grem = static_cast<uint64_t>(num % rate.c);
  }
}

void PfairScheduler::Advance(uint32_t task) {
  const Rate& rate = rates_[task];
  Cursor& c = cursors_[task];
  const uint64_t old_deadline = c.quot + (c.rem != 0 ? 1 : 0);
  c.release = c.quot;  // floor(i*D/r) is the release of subtask i+1
  c.quot += rate.q;
  c.rem += rate.m;
  if (c.rem >= rate.r) {
    c.rem -= rate.r;
    ++c.quot;
  }
  if (rate.heavy) {
    // d - i grows by (new deadline - old deadline - 1): 0 or 1 for a heavy task.
    const uint64_t deadline = c.quot + (c.rem != 0 ? 1 : 0);
    for (uint64_t k = old_deadline + 1; k < deadline; ++k) {
      c.gquot += rate.cq;
      c.grem += rate.cm;
      if (c.grem >= rate.c) {
        c.grem -= rate.c;
        ++c.gquot;
      }
    }
  }
}

PfairScheduler::Ready PfairScheduler::Key(uint32_t task) const {
  const Cursor& c = cursors_[task];
  Ready r;
  r.task = task;
  r.deadline = c.quot + (c.rem != 0 ? 1 : 0);
  if (c.rem == 0) {
    r.tie = uint64_t{1} << 63;  // b-bit 0: after every b-bit 1
  } else {
    // b-bit 1: a later group deadline ranks higher; a light task (group
    // deadline 0) ranks below every heavy one, whose group deadline is at least
    // its deadline.
    const uint64_t group = rates_[task].heavy ? c.gquot + (c.grem != 0 ? 1 : 0) - r.deadline + 1 : 0;
    r.tie = (uint64_t{1} << 63) - 1 - std::min(group, (uint64_t{1} << 63) - 1);
  }
  return r;
}

void PfairScheduler::File(uint32_t task, uint64_t now) {
  const uint64_t release = cursors_[task].release;
  if (release <= now) {
    ready_.push_back(Key(task));
    std::push_heap(ready_.begin(), ready_.end(), LowerPriority);
  } else if (release - now < kRing) {
    ring_[release % kRing].push_back(task);
  } else {
    far_.push_back({release, task});
    std::push_heap(far_.begin(), far_.end(), LaterRelease);
  }
}

void PfairScheduler::Reset(uint64_t time, std::span<const uint64_t> picks) {
  time_ = time;
  picks_.assign(picks.begin(), picks.end());
  ready_.clear();
  far_.clear();
  for (auto& slot : ring_) slot.clear();
  for (uint32_t t = 0; t < rates_.size(); ++t) {
    if (rates_[t].r == 0) continue;
    Seek(t);
    File(t, time_);
  }
}

void PfairScheduler::Step(std::vector<uint32_t>* picked) {
  std::vector<uint32_t>& due = ring_[time_ % kRing];
  for (uint32_t task : due) {
    ready_.push_back(Key(task));
    std::push_heap(ready_.begin(), ready_.end(), LowerPriority);
  }
  due.clear();
  while (!far_.empty() && far_.front().release <= time_) {
    std::pop_heap(far_.begin(), far_.end(), LaterRelease);
    ready_.push_back(Key(far_.back().task));
    far_.pop_back();
    std::push_heap(ready_.begin(), ready_.end(), LowerPriority);
  }
  const size_t first = picked->size();
  for (uint64_t k = 0; k < per_slot_; ++k) {
    if (ready_.empty()) {
      ++underfull_;
      break;
    }
    std::pop_heap(ready_.begin(), ready_.end(), LowerPriority);
    picked->push_back(ready_.back().task);
    ready_.pop_back();
  }
  // The picked tasks' next subtasks: eligible from the next slot, or later.
  for (size_t k = first; k < picked->size(); ++k) {
    const uint32_t task = (*picked)[k];
    ++picks_[task];
    Advance(task);
    File(task, time_ + 1);
  }
  ++time_;
}

}  // namespace strata
