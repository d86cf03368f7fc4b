// The balance report of `strata stream --report`: how well each global batch
// represents the dataset's strata, beside the same figures for PyTorch's
// DistributedSampler(shuffle=True) computed in-process over the same labels.
//
// The DistributedSampler is emulated as torch does it, with std::mt19937_64
// in place of torch's generator (same distribution, not the same draws): a
// uniformly random permutation of the n sample ids seeded with seed + epoch,
// padded to a multiple of the world size by repeating its head, rank r taking
// indices[r::W]; each rank's DataLoader cuts consecutive batches of
// batch_size (the last one short, or dropped with drop_last); global batch k is
// the union of the ranks' k-th batches.
//
// Figures, per stratum and over all: samples delivered against the target
// (the plan's share x samples of the epoch), the largest per-batch deviation
// |count - batch size x share|, and the batches that lack a stratum whose
// per-batch target is at least 1.
//
// Thread-safety: pure functions over values.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "common/status.h"

namespace strata::cli {

// Global batches as the stratum index of every sample in them.
using Compositions = std::vector<std::vector<uint32_t>>;

// The global batches of DistributedSampler + DataLoader, as sample ids.
std::vector<std::vector<uint64_t>> DistributedSamplerBatches(uint64_t n, uint32_t world, uint32_t batch_size,
                                                             uint64_t seed, uint64_t epoch, bool drop_last);

struct SamplerFigures {
  uint64_t batches = 0;
  uint64_t samples = 0;
  std::vector<uint64_t> delivered;    // per stratum
  std::vector<double> max_deviation;  // per stratum, over batches
  std::vector<uint64_t> missing;      // per stratum: batches with target >= 1 and none of it
  double max_deviation_all = 0;
  uint64_t batches_missing = 0;  // batches lacking at least one stratum that should be present
};

// Figures of `batches` against target shares (one per stratum).
SamplerFigures Measure(const Compositions& batches, const std::vector<double>& shares);

struct BalanceReport {
  std::string title;                // dataset, epoch, world, batch, sampler
  std::vector<std::string> strata;  // keys
  std::vector<double> shares;       // the plan's target shares
  std::vector<double> natural;      // count / n: DistributedSampler's expectation
  Compositions ours;
  Compositions distributed;
  SamplerFigures ours_figures;
  SamplerFigures distributed_figures;
};

// Builds the report. `stratum_of_id[i]` is the stratum of sample i (every
// sample of the dataset; see FillUnseen); the DistributedSampler batches are
// computed from it. max_batches (0: all) keeps the first DistributedSampler
// batches only, to match a stream cut short by --max-steps.
BalanceReport MakeReport(std::string title, std::vector<std::string> strata, std::vector<uint64_t> counts,
                         std::vector<double> shares, Compositions ours, const std::vector<uint32_t>& stratum_of_id,
                         uint32_t world, uint32_t batch_size, uint64_t seed, uint64_t epoch, bool drop_last,
                         uint64_t max_batches = 0);

// Gives ids the stream did not deliver (weighted plans, --max-steps) strata so
// that every stratum has its dataset count: unseen ids take the missing
// counts in id order. `seen[i]` < 0 marks id i unseen.
std::vector<uint32_t> FillUnseen(const std::vector<int64_t>& seen, const std::vector<uint64_t>& counts);

// Prints the side-by-side table (at most `max_rows` strata: the largest and
// the smallest) and the summary lines.
void PrintReport(std::ostream& out, const BalanceReport& report, size_t max_rows = 40);

// Draws per-batch composition for both samplers into `png` with
// /usr/bin/python3 and matplotlib. FailedPrecondition naming the package if
// they are missing; IOError if the plot cannot be written.
Status WritePlot(const BalanceReport& report, const std::string& png);

}  // namespace strata::cli
