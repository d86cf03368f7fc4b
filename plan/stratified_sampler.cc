#include "plan/stratified_sampler.h"

#include <algorithm>
#include <string>

#include "common/checksum.h"
#include "common/int128.h"
#include "common/mutex.h"
#include "plan/splitmix.h"
#include "plan/windowed_permutation.h"

namespace strata {

namespace {

// Saved pick counts are bounded by this many numbers in all.
constexpr uint64_t kMaxCheckpointWords = uint64_t{1} << 21;
constexpr uint64_t kMinCheckpointInterval = 1024;
// CheckReachable's bound, in steps replayed times (plan strata + 2): a step
// of the schedule cost 30 ns with 3 strata and 13 us with 1000
// (bench/sampler_bench), so 2^28 is about 1.6 to 3.5 s of CPU: inside the 5 s
// a client waits for a node that sends nothing before it fails over.
constexpr uint64_t kMaxReplayWork = uint64_t{1} << 28;

std::string PlanName(const DatasetShape& shape, const PlanSpec& spec) {
  return shape.name + "@" + std::to_string(shape.version) + "|" + std::to_string(spec.epoch);
}

std::vector<uint64_t> Rates(const QuotaPlan& q) {
  std::vector<uint64_t> rates;
  rates.reserve(q.strata.size());
  for (const auto& s : q.strata) rates.push_back(s.rate);
  return rates;
}

}  // namespace

Result<std::unique_ptr<StratifiedSampler>> StratifiedSampler::Create(const DatasetShape& shape, const PlanSpec& spec) {
  const std::string name = shape.name + "@" + std::to_string(shape.version);
  if (!shape.members) {
    return Status::FailedPrecondition("dataset " + name +
                                      " has no stratum index (it was ingested by an older server); re-ingest it "
                                      "to stream it with a stratified or weighted sampler");
  }
  if (shape.members->num_strata() != shape.strata.size()) {
    return Status::FailedPrecondition("the stratum index of " + name + " has " +
                                      std::to_string(shape.members->num_strata()) + " strata, its counts " +
                                      std::to_string(shape.strata.size()));
  }
  for (uint32_t s = 0; s < shape.strata.size(); ++s) {
    if (shape.members->count(s) != shape.strata[s].count()) {
      return Status::FailedPrecondition("the stratum index of " + name + " disagrees with its count of stratum '" +
                                        shape.strata[s].key() + "'");
    }
  }
  auto quotas = PlanQuotas(shape, spec);
  if (!quotas.ok()) return quotas.status();
  return std::unique_ptr<StratifiedSampler>(new StratifiedSampler(shape, spec, std::move(quotas).value()));
}

StratifiedSampler::StratifiedSampler(const DatasetShape& shape, const PlanSpec& spec, QuotaPlan quotas)
    : members_(shape.members),
      quotas_(std::move(quotas)),
      window_(spec.sampler.block_window()),
      num_shape_strata_(shape.strata.size()),
      schedule_(Rates(quotas_), quotas_.denom),
      recent_(kRecent) {
  const std::string plan = PlanName(shape, spec);
  for (const StratumQuota& q : quotas_.strata) {
    stratum_keys_.push_back(Hash64("strata.stratum.v1|" + plan + "|" + shape.strata[q.stratum].key(), spec.seed));
    first_cycle_.emplace_back(q.members, window_, stratum_keys_.back());
  }
  order_key_ = Hash64("strata.order.v1|" + plan, spec.seed);
  const uint64_t words = quotas_.full_steps * std::max<uint64_t>(quotas_.strata.size(), 1);
  interval_ = std::max(kMinCheckpointInterval, words / kMaxCheckpointWords + 1);
  checkpoints_.push_back(schedule_.picks());
}

uint64_t StratifiedSampler::batch_size(uint64_t step) const {
  return step < quotas_.full_steps ? quotas_.global_batch : quotas_.last_batch;
}

std::vector<double> StratifiedSampler::TargetShares() const {
  std::vector<double> out(num_shape_strata_, 0.0);
  for (size_t i = 0; i < quotas_.strata.size(); ++i) out[quotas_.strata[i].stratum] = quotas_.Share(i);
  return out;
}

void StratifiedSampler::MaybeCheckpoint() const {
  const uint64_t t = schedule_.time();
  if (t % interval_ == 0 && t / interval_ == checkpoints_.size()) checkpoints_.push_back(schedule_.picks());
}

void StratifiedSampler::AdvanceTo(uint64_t slot) const {
  const uint64_t now = schedule_.time();
  const uint64_t c = std::min<uint64_t>(slot / interval_, checkpoints_.size() - 1);
  // Restart from a checkpoint when the cursor is past the slot or further from it.
  if (now > slot || c * interval_ > now) schedule_.Reset(c * interval_, checkpoints_[c]);
  while (schedule_.time() < slot) {
    MaybeCheckpoint();
    picked_.clear();
    schedule_.Step(&picked_);
  }
  MaybeCheckpoint();
}

Status StratifiedSampler::CheckReachable(uint64_t step) const {
  const uint64_t slot = std::min(step, quotas_.full_steps);
  uint64_t from = 0;
  {
    MutexLock lock(&mu_);
    from = std::min<uint64_t>(slot / interval_, checkpoints_.size() - 1) * interval_;
    if (schedule_.time() <= slot) from = std::max(from, schedule_.time());
  }
  const uint64_t most = kMaxReplayWork / (quotas_.strata.size() + 2);
  if (slot - from <= most) return Status::OK();
  return Status::InvalidArgument("step " + std::to_string(step) + " lies " + std::to_string(slot - from) +
                                 " steps past the nearest point of this plan's schedule the node has computed (step " +
                                 std::to_string(from) + "), and a node replays at most " + std::to_string(most) +
                                 " for a request; start at step " + std::to_string(from + most) +
                                 " or before, or stream from a cluster of several nodes, whose clients plan "
                                 "their own streams");
}

std::shared_ptr<const StratifiedSampler::Layout> StratifiedSampler::LayoutAt(uint64_t step) const {
  MutexLock lock(&mu_);
  std::shared_ptr<const Layout>& cached = recent_[step % kRecent];
  if (cached && cached->step == step) return cached;
  const size_t n = quotas_.strata.size();
  const uint64_t slot = std::min(step, quotas_.full_steps);
  AdvanceTo(slot);
  const std::vector<uint64_t>& picks = schedule_.picks();
  auto layout = std::make_shared<Layout>();
  layout->step = step;
  layout->taken.resize(n);
  for (size_t i = 0; i < n; ++i) layout->taken[i] = slot * quotas_.strata[i].base + picks[i];
  std::vector<uint64_t> counts(n);
  if (step < quotas_.full_steps) {
    picked_.clear();
    schedule_.Step(&picked_);
    for (size_t i = 0; i < n; ++i) counts[i] = quotas_.strata[i].base;
    for (uint32_t i : picked_) ++counts[i];
  } else if (quotas_.exhaustive) {
    // The short last batch: every stratum's remainder (boosted strata: their minimum).
    for (size_t i = 0; i < n; ++i) {
      const StratumQuota& q = quotas_.strata[i];
      counts[i] = q.boosted ? q.base : q.members - std::min(q.members, layout->taken[i]);
    }
  } else {
    ApportionLast(picks, &counts);
  }
  layout->start.resize(n + 1, 0);
  for (size_t i = 0; i < n; ++i) layout->start[i + 1] = layout->start[i] + counts[i];
  cached = std::move(layout);
  return cached;
}

void StratifiedSampler::ApportionLast(const std::vector<uint64_t>& picks, std::vector<uint64_t>* counts) const {
  // Target of plan stratum i in a batch of L: q_i * L / G, over the common
  // denominator G * D. The floors first; the remaining samples go to the strata
  // with a fractional target whose cumulative count is furthest behind.
  const u128 g = quotas_.global_batch, d = quotas_.denom, l = quotas_.last_batch;
  const u128 gd = g * d;
  const u128 k = quotas_.full_steps;
  std::vector<std::pair<i128, size_t>> behind;
  uint64_t given = 0;
  for (size_t i = 0; i < quotas_.strata.size(); ++i) {
    const StratumQuota& q = quotas_.strata[i];
    const u128 num = (u128{q.base} * d + q.rate) * l;
    (*counts)[i] = static_cast<uint64_t>(num / gd);
    given += (*counts)[i];
    const u128 frac = num % gd;
    if (frac == 0) continue;
    const i128 lag = static_cast<i128>(k * q.rate) - static_cast<i128>(d * picks[i]);  // in units of 1/D
    behind.emplace_back(static_cast<i128>(frac) + lag * static_cast<i128>(g), i);
  }
  std::sort(behind.begin(), behind.end(),
            [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  const uint64_t extra = quotas_.last_batch - given;
  for (uint64_t e = 0; e < extra && e < behind.size(); ++e) ++(*counts)[behind[e].second];
}

std::vector<uint64_t> StratifiedSampler::Composition(uint64_t step) const {
  const std::shared_ptr<const Layout> layout = LayoutAt(step);
  std::vector<uint64_t> counts(layout->taken.size());
  for (size_t i = 0; i < counts.size(); ++i) counts[i] = layout->start[i + 1] - layout->start[i];
  return counts;
}

void StratifiedSampler::MembersAt(size_t i, uint64_t j, uint64_t stride, size_t count, uint64_t* out) const {
  const StratumQuota& q = quotas_.strata[i];
  if (j < q.members) return first_cycle_[i].ForwardMany(j, stride, count, out);
  // A later cycle of a stratum drawn with replacement: a permutation of its own.
  const uint64_t key = SplitMixFinalize(stratum_keys_[i] + (j / q.members) * 0x9E3779B97F4A7C15ULL);
  WindowedPermutation(q.members, window_, key).ForwardMany(j % q.members, stride, count, out);
}

void StratifiedSampler::Select(uint64_t step, uint64_t first, uint64_t stride, std::vector<uint64_t>* ids) const {
  const std::shared_ptr<const Layout> layout = LayoutAt(step);
  const std::vector<uint64_t>& start = layout->start;
  const uint64_t size = batch_size(step);
  // Full batches are rotated by one position per step, so a stratum's run does
  // not start on the same rank every time (G is a multiple of every world size,
  // so a run that wraps is still dealt evenly); a short last batch is not.
  // Measured against a random rotation, this keeps each rank's cumulative
  // count of a stratum closer to its share.
  const uint64_t rotation = step < quotas_.full_steps ? step % size : 0;
  // The rank's samples in a keyed order (a hash of id and step), not sorted by stratum.
  const uint64_t key = SplitMixFinalize(order_key_ ^ (step * 0xD6E8FEB86659FD93ULL));
  // First (stratum, position among its members), then (order key, id).
  std::vector<std::pair<uint64_t, uint64_t>> keyed;
  keyed.reserve(size / stride + 1);
  std::vector<uint64_t> stretch;  // one stretch's positions among its stratum's members
  size_t i = 0;                   // the run holding `at`; positions only move forward, but for one wrap
  for (uint64_t p = first; p < size;) {
    const uint64_t at = (p + size - rotation) % size;
    if (at < start[i] || at >= start[i + 1]) {
      const auto from = at < start[i] ? start.begin() : start.begin() + static_cast<std::ptrdiff_t>(i);
      i = static_cast<size_t>(std::upper_bound(from, start.end(), at) - start.begin()) - 1;
    }
    // The stretch p, p + stride, ... that stays in run i, in this turn of the
    // rotation (`at` wraps to 0 where p reaches it) and in one cycle of the
    // stratum: consecutive positions of one permutation, computed together.
    const StratumQuota& q = quotas_.strata[i];
    const uint64_t j = layout->taken[i] + (at - start[i]);
    const uint64_t in_cycle = j < q.members ? j : j % q.members;  // most runs are in the first cycle: no division
    const uint64_t span = std::min({start[i + 1] - at, (p < rotation ? rotation : size) - p, q.members - in_cycle});
    const size_t count = span <= stride ? 1 : static_cast<size_t>((span - 1) / stride + 1);  // often 1 over many ranks
    stretch.resize(count);
    MembersAt(i, j, stride, count, stretch.data());
    for (const uint64_t m : stretch) {
      members_->WillRead(q.stratum, m);
      keyed.emplace_back(q.stratum, m);
    }
    p += count * stride;
  }
  // Read after all were announced: an index that left the page cache reads
  // them from storage together.
  for (auto& [stratum_then_key, position_then_id] : keyed) {
    const uint64_t id = members_->Member(static_cast<uint32_t>(stratum_then_key), position_then_id);
    stratum_then_key = SplitMixFinalize(id ^ key);
    position_then_id = id;
  }
  std::sort(keyed.begin(), keyed.end());
  for (const auto& [hash, id] : keyed) ids->push_back(id);
}

}  // namespace strata
