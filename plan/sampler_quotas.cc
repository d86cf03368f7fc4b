#include "plan/sampler_quotas.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "common/int128.h"

namespace strata {

namespace {

// Quotas below this denominator bound keep every Pfair time below 2^63.
constexpr uint64_t kMaxDenom = uint64_t{1} << 62;
// Weighted shares are quantised to this many units.
constexpr double kWeightScale = 4294967296.0;  // 2^32

struct Candidate {
  uint32_t stratum;
  uint64_t members;
  uint64_t natural;  // c_s (stratified) or the quantised weight (weighted)
  uint32_t minimum;  // min_per_batch, 0 if none
};

std::map<std::string, uint32_t> StratumIndexByKey(const DatasetShape& shape) {
  std::map<std::string, uint32_t> out;
  for (uint32_t i = 0; i < shape.strata.size(); ++i) out.emplace(shape.strata[i].key(), i);
  return out;
}

Status UnknownStratum(const DatasetShape& shape, const std::string& what, const std::string& key) {
  return Status::InvalidArgument(what + " names stratum '" + key + "', which dataset " + shape.name + "@" +
                                 std::to_string(shape.version) + " does not have");
}

// Quantised weights per stratum index (0 for strata left out).
Result<std::vector<uint64_t>> WeightsOf(const DatasetShape& shape, const v1::SamplerSpec& spec,
                                        const std::map<std::string, uint32_t>& index) {
  std::vector<double> w(shape.strata.size(), 0.0);
  if (!spec.weights().empty()) {
    for (const auto& [key, value] : spec.weights()) {
      auto it = index.find(key);
      if (it == index.end()) return UnknownStratum(shape, "weights", key);
      if (!std::isfinite(value) || value < 0) {
        return Status::InvalidArgument("weight of stratum '" + key + "' must be a finite number >= 0");
      }
      w[it->second] = value;
    }
  } else {
    const double p = spec.weight_power();
    if (!std::isfinite(p) || std::fabs(p) > 16) return Status::InvalidArgument("weight_power must be in [-16, 16]");
    for (size_t i = 0; i < w.size(); ++i) {
      const uint64_t c = shape.strata[i].count();
      w[i] = c == 0 ? 0.0 : std::pow(static_cast<double>(c), p);
    }
  }
  double total = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    if (shape.strata[i].count() == 0) w[i] = 0;
    total += w[i];
  }
  if (std::isinf(total) && !spec.weights().empty()) {
    // Finite weights whose sum overflows a double: the same shares, relative
    // to the largest. Only here: the quantised weights of every plan whose sum
    // did not overflow stay as they were. (count^power cannot overflow: counts
    // are below 2^53 and |power| at most 16.)
    const double largest = *std::max_element(w.begin(), w.end());
    total = 0;
    for (double& x : w) total += (x /= largest);
  }
  if (!(total > 0) || !std::isfinite(total)) {
    return Status::InvalidArgument("the weights give no stratum with samples a positive share");
  }
  std::vector<uint64_t> out(w.size());
  for (size_t i = 0; i < w.size(); ++i) out[i] = static_cast<uint64_t>(std::llround(w[i] / total * kWeightScale));
  return out;
}

Status CheckShape(const DatasetShape& shape) {
  const std::string name = shape.name + "@" + std::to_string(shape.version);
  if (shape.strata.empty()) {
    return Status::FailedPrecondition("dataset " + name + " has no stratum counts; a stratified plan needs them");
  }
  u128 total = 0;
  for (const auto& s : shape.strata) total += s.count();
  if (total != shape.num_samples) {
    return Status::FailedPrecondition("the stratum counts of dataset " + name + " do not add up to its " +
                                      std::to_string(shape.num_samples) + " samples");
  }
  return Status::OK();
}

}  // namespace

double QuotaPlan::Share(size_t i) const {
  const StratumQuota& q = strata[i];
  return (static_cast<double>(q.base) + static_cast<double>(q.rate) / static_cast<double>(denom)) /
         static_cast<double>(global_batch);
}

Result<QuotaPlan> PlanQuotas(const DatasetShape& shape, const PlanSpec& spec) {
  const v1::SamplerSpec& s = spec.sampler;
  const bool weighted = s.kind() == v1::SamplerSpec::WEIGHTED;
  if (s.kind() != v1::SamplerSpec::STRATIFIED && !weighted) {
    return Status::InvalidArgument("quotas are for the stratified and weighted samplers");
  }
  if (!weighted && (!s.weights().empty() || s.weight_power() != 0 || s.epoch_samples() != 0)) {
    return Status::InvalidArgument("weights, weight_power and epoch_samples apply to the weighted sampler only");
  }
  if (weighted && !s.weights().empty() && s.weight_power() != 0) {
    return Status::InvalidArgument("give either weights or weight_power, not both");
  }
  STRATA_RETURN_IF_ERROR(CheckShape(shape));
  const std::map<std::string, uint32_t> index = StratumIndexByKey(shape);
  const uint64_t g = spec.global_batch;

  std::vector<uint64_t> natural(shape.strata.size());
  if (weighted) {
    auto w = WeightsOf(shape, s, index);
    if (!w.ok()) return w.status();
    natural = std::move(w).value();
  } else {
    for (size_t i = 0; i < natural.size(); ++i) natural[i] = shape.strata[i].count();
  }
  std::vector<uint32_t> minimum(shape.strata.size(), 0);
  uint64_t min_total = 0;
  for (const auto& [key, k] : s.min_per_batch()) {
    auto it = index.find(key);
    if (it == index.end()) return UnknownStratum(shape, "min_per_batch", key);
    if (k == 0) return Status::InvalidArgument("min_per_batch for '" + key + "' must be at least 1");
    if (shape.strata[it->second].count() == 0) {
      return Status::InvalidArgument("min_per_batch names stratum '" + key + "', which has no samples");
    }
    minimum[it->second] = k;
    min_total += k;
  }
  if (min_total >= g) {
    return Status::InvalidArgument("min_per_batch asks for " + std::to_string(min_total) +
                                   " samples per global batch, which leaves no room in a global batch of " +
                                   std::to_string(g));
  }

  std::vector<Candidate> all;
  for (uint32_t i = 0; i < shape.strata.size(); ++i) {
    if (shape.strata[i].count() == 0 || (natural[i] == 0 && minimum[i] == 0)) continue;
    all.push_back({i, shape.strata[i].count(), natural[i], minimum[i]});
  }
  // Boost named strata below their minimum until none is left below it.
  std::vector<bool> boosted(all.size(), false);
  uint64_t g_rest = g;
  u128 v_rest = 0;
  for (bool changed = true; changed;) {
    changed = false;
    g_rest = g;
    v_rest = 0;
    for (size_t i = 0; i < all.size(); ++i) {
      if (boosted[i]) {
        g_rest -= all[i].minimum;
      } else {
        v_rest += all[i].natural;
      }
    }
    for (size_t i = 0; i < all.size(); ++i) {
      if (boosted[i] || all[i].minimum == 0) continue;
      if (v_rest == 0 || u128{g_rest} * all[i].natural < u128{all[i].minimum} * v_rest) {
        boosted[i] = true;
        changed = true;
      }
    }
  }
  if (v_rest == 0) {
    return Status::InvalidArgument(
        "min_per_batch covers every stratum with a share; nothing is left to fill the "
        "rest of each batch");
  }
  if (v_rest >= kMaxDenom) return Status::InvalidArgument("too many samples for an exact stratified plan");

  QuotaPlan plan;
  plan.global_batch = g;
  plan.denom = static_cast<uint64_t>(v_rest);
  plan.exhaustive = !weighted;
  u128 rates = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    StratumQuota q;
    q.stratum = all[i].stratum;
    q.members = all[i].members;
    if (boosted[i]) {
      q.base = all[i].minimum;
      q.cycle = true;
      q.boosted = true;
    } else {
      const u128 num = u128{g_rest} * all[i].natural;
      q.base = static_cast<uint64_t>(num / plan.denom);
      q.rate = static_cast<uint64_t>(num % plan.denom);
      q.cycle = weighted;
      if (q.base == 0 && q.rate == 0) continue;  // cannot happen for natural > 0; kept for safety
    }
    rates += q.rate;
    plan.strata.push_back(q);
  }
  plan.extras = static_cast<uint64_t>(rates / plan.denom);

  const bool short_last = spec.remainder == v1::REMAINDER_SHORT;
  if (weighted) {
    const uint64_t epoch = s.epoch_samples() != 0 ? s.epoch_samples() : shape.num_samples;
    plan.full_steps = epoch / g;
    plan.last_batch = short_last ? epoch % g : 0;
  } else {
    const uint64_t rest = static_cast<uint64_t>(v_rest);  // samples of the non-boosted strata
    plan.full_steps = rest / g_rest;
    const uint64_t left = rest % g_rest;
    plan.last_batch = short_last && left != 0 ? left + (g - g_rest) : 0;
  }
  return plan;
}

}  // namespace strata
