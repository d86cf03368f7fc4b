// The sampler flags of `strata stream`, turned into the SamplerSpec that the
// server plans with (and that the resume token's plan hash covers).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "strata/sampler.h"

namespace strata {
class Batch;
}

namespace strata::cli {

struct SamplerArgs {
  std::string sampler = "shuffle";         // shuffle | stratified | weighted
  std::vector<std::string> weights;        // "KEY=W" (weighted)
  std::optional<double> weight_power;      // weighted
  uint64_t epoch_samples = 0;              // weighted; 0: the dataset's size
  std::vector<std::string> min_per_batch;  // "KEY=K" (stratified, weighted)
  uint64_t block_window = 0;               // shuffle, stratified
};

// Everything `strata stream` takes.
struct StreamArgs {
  std::vector<std::string> servers;
  std::string dataset;
  uint32_t batch_size = 0;
  uint32_t rank = 0;
  bool rank_given = false;
  uint32_t world = 1;
  uint64_t seed = 0;
  uint64_t epoch = 0;
  uint64_t start_step = 0;
  uint64_t max_steps = 0;
  bool drop_last = false;
  std::string output;
  std::string resume;
  bool quiet = false;
  SamplerArgs sampler;
  bool report = false;           // stream every rank and print the balance report
  std::string plot;              // with the report: draw per-batch composition here
  std::string zone;              // the trainer's zone (ClientOptions::zone)
  int64_t stall_timeout_ms = 0;  // ClientOptions::stall_timeout_ms; 0: the library's default (5 s)
};

// One --output line: {"epoch","step","rank","ids","labels"}, and with
// `with_strata` (stratified and weighted samplers) "strata" after "labels".
std::string BatchJsonLine(const Batch& batch, bool with_strata);

// "KEY=VALUE", split at the last '=' (stratum keys such as
// "label=cat|source=web" hold '=' themselves). InvalidArgument if there is none
// or the value is empty.
Result<std::pair<std::string, std::string>> SplitAssignment(std::string_view item);

// Adds --sampler, --weights, --weight-power, --epoch-samples, --min-per-batch
// and --block-window to `app`.
void AddSamplerOptions(CLI::App* app, SamplerArgs* args);

// The spec, or InvalidArgument naming the flag that does not fit the sampler.
Result<SamplerSpec> BuildSamplerSpec(const SamplerArgs& args);

}  // namespace strata::cli
