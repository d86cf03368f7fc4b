// Shared by the sampler tests: datasets whose strata are far from even, with
// every id's stratum known, so that a test can check each batch's mix.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "plan/epoch_plan.h"
#include "plan/stratum_index.h"

namespace strata {

struct Dataset {
  std::vector<uint32_t> stratum_of;  // per id
  std::vector<uint64_t> counts;      // per stratum
  DatasetShape shape;
  uint64_t n() const { return stratum_of.size(); }
};

// Strata "s00000", "s00001", ... (so index order is key order) of `counts`
// samples each, ids dealt to them in an order drawn from `seed`.
inline Dataset MakeDataset(const std::vector<uint64_t>& counts, uint64_t seed = 1) {
  Dataset d;
  d.counts = counts;
  for (uint32_t s = 0; s < counts.size(); ++s) d.stratum_of.insert(d.stratum_of.end(), counts[s], s);
  std::mt19937_64 rng(seed);
  std::shuffle(d.stratum_of.begin(), d.stratum_of.end(), rng);
  d.shape.name = "adversarial";
  d.shape.version = 2;
  d.shape.num_samples = d.n();
  for (uint32_t s = 0; s < counts.size(); ++s) {
    char key[16];
    std::snprintf(key, sizeof(key), "s%05u", s);
    v1::StratumCount c;
    c.set_key(key);
    c.set_count(counts[s]);
    d.shape.strata.push_back(c);
  }
  d.shape.members = InMemoryStratumMembers::FromAssignment(d.stratum_of, static_cast<uint32_t>(counts.size()));
  return d;
}

// One class at 0.05% of 100,000 samples among nine common ones.
inline Dataset RareClass() { return MakeDataset({20000, 15000, 50, 15000, 12000, 10000, 10000, 8000, 5000, 4950}); }

// 1000 classes with Zipf sizes: class k has about 20000 / (k + 1) samples (at least 20).
inline Dataset Zipf1000() {
  std::vector<uint64_t> counts(1000);
  for (uint64_t k = 0; k < counts.size(); ++k) counts[k] = 20000 / (k + 1);
  return MakeDataset(counts, 2);
}

// Two sources at 99% and 1%.
inline Dataset TwoSources() { return MakeDataset({49500, 500}, 3); }

}  // namespace strata
