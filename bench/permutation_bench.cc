// Keyed permutation throughput: KeyedPermutation::Forward one position at a
// time (the peer: what the samplers did per position) beside ForwardMany, which
// walks several positions side by side, over n = 300,000 and 10,000,000; and a
// SHUFFLE plan's sequential steps (global batch 1024: 8 ranks x 128), per
// sample, with and without a block window. per_pos is the time per position
// (per sample for the plan); the ratios are printed at the end.
//
//   permutation_bench [--benchmark_repetitions=3] [--benchmark_filter=...]
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <set>
#include <string>
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

void BM_ForwardMany(benchmark::State& state) {
  const auto n = static_cast<uint64_t>(state.range(0));
  const auto count = static_cast<size_t>(state.range(1));
  const auto stride = static_cast<uint64_t>(state.range(2));
  const KeyedPermutation perm(n, kKey);
  std::vector<uint64_t> out(count);
  uint64_t first = 0;
  for (auto _ : state) {
    perm.ForwardMany(first, stride, count, out.data());
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
PERMUTATION_CASES(BM_ForwardMany);

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

// Console output, plus each ForwardMany case's time per position over its
// Forward peer's at the end (the medians when repeated).
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  // Colours only on a terminal (a custom reporter does not follow --benchmark_color).
  RatioReporter() : ConsoleReporter(isatty(STDOUT_FILENO) ? OO_Defaults : OO_Tabular) {}
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      const std::string name = run.run_name.function_name + "/" + run.run_name.args;
      if (run.run_type == Run::RT_Iteration) {
        if (!medians_.count(name)) times_[name] = run.GetAdjustedRealTime();
      } else if (run.aggregate_name == "median") {
        medians_.insert(name);
        times_[name] = run.GetAdjustedRealTime();
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void PrintRatios() const {
    for (const auto& [name, time] : times_) {
      if (name.rfind("BM_ForwardMany/", 0) != 0) continue;
      auto peer = times_.find("BM_Forward/" + name.substr(15));
      if (peer == times_.end()) continue;
      std::printf("%-45s %.2fx the time of %s (%.2fx faster)\n", name.c_str(), time / peer->second, peer->first.c_str(),
                  peer->second / time);
    }
  }

 private:
  std::map<std::string, double> times_;
  std::set<std::string> medians_;
};

}  // namespace
}  // namespace strata

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  strata::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintRatios();
  benchmark::Shutdown();
  return 0;
}
