#include "client/cli/stream_options.h"

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

#include "client/cli/command.h"
#include "strata/batch.h"

namespace strata::cli {

namespace {

Result<double> ParseDouble(const std::string& text, const std::string& what) {
  double v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec == std::errc::result_out_of_range && p == text.data() + text.size()) {
    return Status::InvalidArgument(what + ": '" + text + "' is out of range");
  }
  if (ec != std::errc() || p != text.data() + text.size()) {
    return Status::InvalidArgument(what + ": '" + text + "' is not a number");
  }
  if (!std::isfinite(v)) return Status::InvalidArgument(what + ": '" + text + "' is not a finite number");
  return v;
}

}  // namespace

std::string BatchJsonLine(const Batch& batch, bool with_strata) {
  nlohmann::ordered_json line;
  line["epoch"] = batch.epoch();
  line["step"] = batch.step();
  line["rank"] = batch.rank();
  line["ids"] = batch.ids();
  line["labels"] = batch.labels();
  if (with_strata) line["strata"] = batch.strata();
  // Labels come from file names and manifests: replace bytes that are not UTF-8.
  return line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

Result<std::pair<std::string, std::string>> SplitAssignment(std::string_view item) {
  const size_t eq = item.rfind('=');
  if (eq == std::string_view::npos || eq + 1 == item.size()) {
    return Status::InvalidArgument("'" + std::string(item) + "' is not KEY=VALUE");
  }
  return std::make_pair(std::string(item.substr(0, eq)), std::string(item.substr(eq + 1)));
}

void AddSamplerOptions(CLI::App* app, SamplerArgs* args) {
  app->add_option("--sampler", args->sampler,
                  "How batches are drawn: shuffle (one permutation), stratified (every global batch in the "
                  "dataset's stratum proportions, each sample once) or weighted (target proportions)")
      ->check(CLI::IsMember({"shuffle", "stratified", "weighted"}))
      ->capture_default_str();
  app->add_option("--weights", args->weights,
                  "Weighted: target share per stratum key, KEY=W,... (split at the last '='); unnamed strata get 0")
      ->type_name("KEY=W,...")
      ->delimiter(',');
  app->add_option("--weight-power", args->weight_power,
                  "Weighted: shares proportional to count^P (0: every stratum alike, 1: natural); the default "
                  "when --weights is not given")
      ->type_name("P");
  app->add_option("--epoch-samples", args->epoch_samples, "Weighted: samples per epoch (default: the dataset's size)")
      ->type_name("N")
      ->check(Uint64Validator());
  app->add_option("--min-per-batch", args->min_per_batch,
                  "Stratified or weighted: at least K samples of stratum KEY in every global batch, drawn with "
                  "replacement (repeatable)")
      ->type_name("KEY=K");
  app->add_option("--block-window", args->block_window,
                  "Read locality: shuffle blocks of N neighbouring samples (by id within each stratum) instead of "
                  "single samples; 0 disables it")
      ->type_name("N")
      ->check(Uint64Validator());
}

Result<SamplerSpec> BuildSamplerSpec(const SamplerArgs& args) {
  SamplerSpec spec;
  if (args.sampler == "shuffle") {
    spec.kind = SamplerSpec::Kind::kShuffle;
  } else if (args.sampler == "stratified") {
    spec.kind = SamplerSpec::Kind::kStratified;
  } else if (args.sampler == "weighted") {
    spec.kind = SamplerSpec::Kind::kWeighted;
  } else {
    return Status::InvalidArgument("--sampler must be shuffle, stratified or weighted, not '" + args.sampler + "'");
  }
  const bool weighted = spec.kind == SamplerSpec::Kind::kWeighted;
  if (!weighted && (!args.weights.empty() || args.weight_power || args.epoch_samples != 0)) {
    return Status::InvalidArgument("--weights, --weight-power and --epoch-samples need --sampler weighted");
  }
  if (!args.weights.empty() && args.weight_power) {
    return Status::InvalidArgument("give --weights or --weight-power, not both");
  }
  if (spec.kind == SamplerSpec::Kind::kShuffle && !args.min_per_batch.empty()) {
    return Status::InvalidArgument("--min-per-batch needs --sampler stratified or weighted");
  }
  for (const std::string& item : args.weights) {
    auto kv = SplitAssignment(item);
    if (!kv.ok()) return kv.status().WithContext("--weights");
    auto w = ParseDouble(kv->second, "--weights " + kv->first);
    if (!w.ok()) return w.status();
    if (w.value() < 0) return Status::InvalidArgument("--weights " + kv->first + ": a weight cannot be negative");
    spec.weights[kv->first] = w.value();
  }
  if (args.weight_power) spec.weight_power = *args.weight_power;
  spec.epoch_samples = args.epoch_samples;
  for (const std::string& item : args.min_per_batch) {
    auto kv = SplitAssignment(item);
    if (!kv.ok()) return kv.status().WithContext("--min-per-batch");
    uint32_t k = 0;
    auto [p, ec] = std::from_chars(kv->second.data(), kv->second.data() + kv->second.size(), k);
    if (ec != std::errc() || p != kv->second.data() + kv->second.size() || k == 0) {
      return Status::InvalidArgument("--min-per-batch " + kv->first + ": '" + kv->second +
                                     "' is not a count of at least 1");
    }
    spec.min_per_batch[kv->first] = k;
  }
  spec.block_window = args.block_window;
  return spec;
}

}  // namespace strata::cli
