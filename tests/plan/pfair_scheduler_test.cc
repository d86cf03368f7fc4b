#include "plan/pfair_scheduler.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "common/int128.h"

namespace strata {
namespace {

// Runs `slots` slots and checks the Pfair property at every one: exactly M
// distinct tasks per slot and -1 < t*w - picks < 1 for every task.
void CheckPfair(const std::vector<uint64_t>& rates, uint64_t denom, uint64_t slots) {
  PfairScheduler s(rates, denom);
  const uint64_t m = std::accumulate(rates.begin(), rates.end(), uint64_t{0}) / denom;
  ASSERT_EQ(s.per_slot(), m);
  std::vector<uint32_t> picked;
  for (uint64_t t = 0; t < slots; ++t) {
    picked.clear();
    s.Step(&picked);
    ASSERT_EQ(picked.size(), m) << "slot " << t;
    ASSERT_EQ(std::set<uint32_t>(picked.begin(), picked.end()).size(), m) << "a task twice in slot " << t;
    for (size_t i = 0; i < rates.size(); ++i) {
      // lag * denom = (t+1) * rate - picks * denom, strictly inside (-denom, denom).
      const i128 lag = static_cast<i128>(t + 1) * rates[i] - static_cast<i128>(s.picks()[i]) * denom;
      ASSERT_LT(lag, static_cast<i128>(denom)) << "task " << i << " fell behind at slot " << t;
      ASSERT_GT(lag, -static_cast<i128>(denom)) << "task " << i << " ran ahead at slot " << t;
    }
  }
  EXPECT_EQ(s.underfull_slots(), 0u);
}

// Random weights in (0, 1) with an integer sum over a common denominator.
std::vector<uint64_t> RandomRates(std::mt19937_64& rng, uint64_t denom, size_t tasks, uint64_t m) {
  // Split m * denom into `tasks` parts, each in [1, denom - 1].
  std::vector<uint64_t> rates(tasks, 1);
  uint64_t left = m * denom - tasks;
  while (left > 0) {
    const size_t i = rng() % tasks;
    const uint64_t room = denom - 1 - rates[i];
    if (room == 0) continue;
    const uint64_t add = std::min<uint64_t>(left, 1 + rng() % room);
    rates[i] += add;
    left -= add;
  }
  return rates;
}

TEST(PfairSchedulerTest, RandomSystemsStayPfair) {
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 300; ++trial) {
    const uint64_t denom = 2 + rng() % 60;
    const uint64_t m = 1 + rng() % 6;
    const size_t min_tasks = static_cast<size_t>((m * denom + denom - 2) / (denom - 1));
    const size_t tasks = std::max<size_t>(min_tasks, m + 1 + rng() % 12);
    if (tasks > m * denom) continue;
    const auto rates = RandomRates(rng, denom, tasks, m);
    SCOPED_TRACE("trial " + std::to_string(trial));
    CheckPfair(rates, denom, 3 * denom + 7);
    if (HasFatalFailure()) return;
  }
}

TEST(PfairSchedulerTest, HeavyTasksNeedTheTieBreaks) {
  // Mixes of heavy weights (>= 1/2) and light ones: the cases where PD^2's
  // b-bit and group deadline matter.
  CheckPfair({3, 3, 3, 3, 2, 2}, 8, 200);            // 3/8 x4 + 2/8 x2 = 2
  CheckPfair({5, 5, 5, 3, 2}, 10, 300);              // M = 2
  CheckPfair({7, 7, 7, 7, 2, 2, 2, 2, 4}, 10, 300);  // M = 4
  CheckPfair({8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 4, 4}, 12, 500);
  CheckPfair({999, 999, 2}, 1000, 3000);  // nearly 1, plus a tiny one
}

TEST(PfairSchedulerTest, LongPeriodsWaitBeyondTheCalendarRing) {
  // Weights of 1/20000 and 3/20000: releases further ahead than the ring spans.
  CheckPfair({1, 1, 3, 19995}, 20000, 60000);
  CheckPfair({7, 13, 9980, 10000, 10000, 10000}, 20000, 45000);
}

TEST(PfairSchedulerTest, ResetResumesTheSameSchedule) {
  std::mt19937_64 rng(7);
  const auto rates = RandomRates(rng, 97, 40, 9);
  PfairScheduler a(rates, 97);
  std::vector<std::vector<uint32_t>> slots(500);
  std::vector<std::vector<uint64_t>> saved(500);
  for (auto& slot : slots) {
    saved[a.time()] = a.picks();
    a.Step(&slot);
  }
  PfairScheduler b(rates, 97);
  for (uint64_t at : {0, 1, 123, 250, 499}) {
    b.Reset(at, saved[at]);
    for (uint64_t t = at; t < 500; ++t) {
      std::vector<uint32_t> got;
      b.Step(&got);
      ASSERT_EQ(got, slots[t]) << "resumed at " << at << ", slot " << t;
    }
  }
}

TEST(PfairSchedulerTest, HugeDenominatorsAreExact) {
  // Denominators near the 2^62 bound: products need 128 bits.
  const uint64_t d = (uint64_t{1} << 61) + 12345;
  CheckPfair({d / 3, d / 3, d - 2 * (d / 3) - 1, 1}, d, 400);
}

}  // namespace
}  // namespace strata
