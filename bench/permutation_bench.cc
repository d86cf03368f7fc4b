// Keyed permutation throughput: KeyedPermutation::Forward one position at a
// time, as the samplers call it, over n = 300,000 and 10,000,000; and a SHUFFLE
// plan's sequential steps (global batch 1024: 8 ranks x 128), per sample, with
// and without a block window. per_pos is the time per position (per sample for
// the plan).
//
//   permutation_bench [--benchmark_repetitions=3] [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <vector>

#include "plan/epoch_plan.h"
#include "plan/keyed_permutation.h"

namespace strata {
namespace {

constexpr uint64_t kKey = 0x5EED;

// Arguments: n, positions per call, stride. The calls start where the last
// ended, so the walks sample the whole domain.
void BM_Forward(benchmark::State& state) {
  const auto n = static_cast<uint64_t>(state.range(0));
  const auto count = static_cast<size_t>(state.range(1));
  const auto stride = static_cast<uint64_t>(state.range(2));
  const KeyedPermutation perm(n, kKey);
  std::vector<uint64_t> out(count);
  uint64_t first = 0;
  for (auto _ : state) {
    for (size_t k = 0; k < count; ++k) out[k] = perm.Forward(first + k * stride);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
    first = (first + count * stride) % (n - count * stride);
  }
  state.counters["per_pos"] = benchmark::Counter(static_cast<double>(state.iterations() * count),
                                                 benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// 1024 consecutive positions per call, and one rank's slice of a global batch
// of 1024 over 8 ranks (128 positions, stride 8), as the shuffle sampler asks.
#define PERMUTATION_CASES(fn)              \
  BENCHMARK(fn)                            \
      ->ArgNames({"n", "count", "stride"}) \
      ->Args({300'000, 1024, 1})           \
      ->Args({10'000'000, 1024, 1})        \
      ->Args({300'000, 128, 8})            \
      ->Args({10'000'000, 128, 8})
PERMUTATION_CASES(BM_Forward);

// Arguments: n, block window. Every rank's batch of one step per iteration.
void BM_ShufflePlan(benchmark::State& state) {
  DatasetShape shape;
  shape.name = "bench";
  shape.version = 1;
  shape.num_samples = static_cast<uint64_t>(state.range(0));
  v1::SamplerSpec spec;
  spec.set_kind(v1::SamplerSpec::SHUFFLE);
  spec.set_block_window(static_cast<uint64_t>(state.range(1)));
  constexpr uint32_t kBatch = 128, kWorld = 8;
  auto plan = EpochPlan::Create(shape, spec, 1, 0, kBatch, kWorld, v1::REMAINDER_SHORT);
  if (!plan.ok()) {
    state.SkipWithError(plan.status().ToString().c_str());
    return;
  }
  std::vector<uint64_t> ids;
  uint64_t step = 0, samples = 0;
  for (auto _ : state) {
    for (uint32_t r = 0; r < kWorld; ++r) {
      plan->RankBatch(step, r, &ids);
      samples += ids.size();
      benchmark::DoNotOptimize(ids.data());
    }
    step = (step + 1) % plan->num_steps();
  }
  state.counters["per_pos"] =
      benchmark::Counter(static_cast<double>(samples), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ShufflePlan)
    ->ArgNames({"n", "window"})
    ->Args({300'000, 0})
    ->Args({10'000'000, 0})
    ->Args({300'000, 1024})
    ->Args({10'000'000, 1024});

}  // namespace
}  // namespace strata

BENCHMARK_MAIN();
