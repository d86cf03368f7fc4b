// Balanced minibatches end to end, as a user runs them: ingest a manifest with
// --stratify-by label,source and --time-bucket, see the strata in describe,
// stream --sampler stratified on several ranks and check, from the JSON lines,
// that every sample comes once and every global batch holds each stratum's
// floor or ceiling; then --report, --plot, weighted streams and resumption.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "tests/integration/cluster_fixture.h"

namespace strata::testing {
namespace {

constexpr int kSamples = 3000;

class StratifiedTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    node_ = new SingleNode();
    // A CSV manifest: label (Zipf over 6 classes), source (web 10%, camera 90%), ts (a sample a minute).
    const std::string dir = node_->dir().Join("manifest");
    CommandResult gen = RunCommand({STRATA_MAKE_DATASET_BINARY, "--out", dir, "--format", "csv", "--samples",
                                    std::to_string(kSamples), "--size", "64", "--classes", "6", "--zipf", "1.5"});
    ASSERT_EQ(gen.exit_code, 0) << gen.err;
    CommandResult ingest = Cli({"ingest", "--dataset", "balanced", "--stratify-by", "label,source", "--time-bucket",
                                "ts:1d", "-q", dir + "/manifest.csv"});
    ASSERT_EQ(ingest.exit_code, 0) << ingest.err;
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(node_->Stop(), 0);
    delete node_;
  }

  static CommandResult Cli(std::vector<std::string> args) {
    std::vector<std::string> argv = {StrataCliBinary()};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("--server");
    argv.push_back(node_->address());
    return RunCommand(argv);
  }

  static std::map<std::string, uint64_t> StratumCounts() {
    auto d = node_->client().Describe("balanced");
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    std::map<std::string, uint64_t> out;
    for (const auto& c : d->dataset.stratum_counts) out[c.key] = c.count;
    return out;
  }

  // Parsed in file order, so key order can be checked.
  static std::vector<nlohmann::ordered_json> ReadLines(const std::string& path) {
    std::vector<nlohmann::ordered_json> out;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) out.push_back(nlohmann::ordered_json::parse(line));
    return out;
  }

  static SingleNode* node_;
};
SingleNode* StratifiedTest::node_ = nullptr;

TEST_F(StratifiedTest, DescribeShowsLabelSourceAndDayStrata) {
  CommandResult d = Cli({"describe", "balanced"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.out.find("label, source"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("time bucket"), std::string::npos) << d.out;
  // make_dataset stamps sample i at 1700000000 + 60 i: from 2023-11-14T22:13:20Z over 50 hours, four UTC days.
  EXPECT_NE(d.out.find("label=class00|source=camera|ts=2023-11-14"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("label=class00|source=web|ts=2023-11-16"), std::string::npos) << d.out;
  uint64_t total = 0;
  std::set<std::string> days;
  for (const auto& [key, count] : StratumCounts()) {
    total += count;
    days.insert(key.substr(key.rfind("ts=") + 3));
  }
  EXPECT_EQ(total, static_cast<uint64_t>(kSamples));
  EXPECT_EQ(days, (std::set<std::string>{"2023-11-14", "2023-11-15", "2023-11-16", "2023-11-17"}));
}

TEST_F(StratifiedTest, StratifiedStreamOnFourRanksIsExactlyOnceAndBalanced) {
  const std::map<std::string, uint64_t> counts = StratumCounts();
  constexpr uint32_t kWorld = 4, kBatch = 16, kGlobal = kWorld * kBatch;
  std::map<uint64_t, std::map<std::string, uint64_t>> per_step;  // step -> stratum -> count
  std::map<uint64_t, uint64_t> step_size;
  std::set<uint64_t> ids;
  for (uint32_t rank = 0; rank < kWorld; ++rank) {
    const std::string out = node_->dir().Join("stratified" + std::to_string(rank) + ".jsonl");
    CommandResult r =
        Cli({"stream", "--dataset", "balanced", "--sampler", "stratified", "--batch-size", std::to_string(kBatch),
             "--world", std::to_string(kWorld), "--rank", std::to_string(rank), "--seed", "5", "--output", out, "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const nlohmann::ordered_json& j : ReadLines(out)) {
      ASSERT_EQ(j.size(), 6u);
      auto key = j.begin();
      for (const char* want : {"epoch", "step", "rank", "ids", "labels", "strata"}) {
        ASSERT_EQ(key.key(), want) << "the documented keys first and in order";
        ++key;
      }
      ASSERT_EQ(j["ids"].size(), j["strata"].size());
      const uint64_t step = j["step"];
      for (size_t i = 0; i < j["ids"].size(); ++i) {
        ASSERT_TRUE(ids.insert(j["ids"][i].get<uint64_t>()).second) << "sample twice: " << j["ids"][i];
        ++per_step[step][j["strata"][i].get<std::string>()];
        ++step_size[step];
      }
    }
  }
  EXPECT_EQ(ids.size(), static_cast<uint64_t>(kSamples)) << "every sample exactly once";
  ASSERT_EQ(per_step.size(), (kSamples + kGlobal - 1) / kGlobal);
  for (const auto& [step, got] : per_step) {
    const uint64_t size = step_size[step];
    EXPECT_EQ(size, step + 1 < per_step.size() ? kGlobal : kSamples % kGlobal);
    for (const auto& [stratum, count] : counts) {
      // floor or ceiling of size * count / n
      const uint64_t num = size * count;
      const auto it = got.find(stratum);
      const uint64_t have = it == got.end() ? 0 : it->second;
      EXPECT_GE(have, num / kSamples) << stratum << " at step " << step;
      EXPECT_LE(have, (num + kSamples - 1) / kSamples) << stratum << " at step " << step;
    }
  }
}

TEST_F(StratifiedTest, ReportPrintsBothSamplersAndPlots) {
  const std::string png = node_->dir().Join("balance.png");
  CommandResult r = Cli({"stream", "--dataset", "balanced", "--sampler", "stratified", "--batch-size", "16", "--world",
                         "4", "--seed", "5", "--report", "--plot", png});
  if (r.exit_code != 0 && r.err.find("matplotlib") != std::string::npos) {
    GTEST_SKIP() << "no matplotlib for /usr/bin/python3: " << r.err;
  }
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* want :
       {"balance report", "DistributedSampler", "DEV", "DS DEV", "MISSING", "DS MISSING", "largest per-batch deviation",
        "batches lacking a stratum", "label=class00|source=camera|ts=2023-11-15"}) {
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
  }
  // The stratified plan never misses a stratum whose target is at least 1.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("batches lacking a stratum\\s+(\\d+)\\s+(\\d+)"))) << r.out;
  EXPECT_EQ(m[1], "0");
  std::ifstream f(png, std::ios::binary);
  std::string magic(8, '\0');
  f.read(magic.data(), 8);
  EXPECT_EQ(magic, std::string("\x89PNG\r\n\x1a\n", 8)) << "a PNG at " << png;
}

TEST_F(StratifiedTest, ReportRefusesARank) {
  CommandResult r =
      Cli({"stream", "--dataset", "balanced", "--batch-size", "16", "--world", "4", "--rank", "1", "--report"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--rank"), std::string::npos) << r.err;
}

TEST_F(StratifiedTest, WeightedAndMinPerBatchStream) {
  std::string rare;
  uint64_t fewest = UINT64_MAX;
  for (const auto& [key, count] : StratumCounts()) {
    if (count < fewest) fewest = count, rare = key;
  }
  const std::string out = node_->dir().Join("weighted.jsonl");
  CommandResult r =
      Cli({"stream", "--dataset", "balanced", "--sampler", "weighted", "--weight-power", "0", "--min-per-batch",
           rare + "=3", "--batch-size", "32", "--epoch-samples", "640", "--output", out, "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = ReadLines(out);
  ASSERT_EQ(lines.size(), 20u) << "640 samples in batches of 32";
  for (const auto& j : lines) {
    uint64_t n = 0;
    for (const auto& s : j["strata"]) n += s.get<std::string>() == rare;
    EXPECT_GE(n, 3u) << "at least 3 of " << rare << " in step " << j["step"];
  }
  CommandResult bad = Cli(
      {"stream", "--dataset", "balanced", "--sampler", "weighted", "--weights", "nope=1", "--batch-size", "8", "-q"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("nope"), std::string::npos) << bad.err;
}

TEST_F(StratifiedTest, ResumeTokenCoversTheSampler) {
  const std::vector<std::string> base = {"stream",       "--dataset", "balanced", "--sampler", "stratified",
                                         "--batch-size", "50",        "--seed",   "3",         "-q"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return Cli(args);
  };
  const std::string full = node_->dir().Join("full.jsonl");
  ASSERT_EQ(with({"--output", full}).exit_code, 0);
  const std::string head = node_->dir().Join("head.jsonl");
  CommandResult first = with({"--max-steps", "17", "--output", head});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  std::smatch m;
  const std::string all = first.out + first.err;
  ASSERT_TRUE(std::regex_search(all, m, std::regex("--resume (strata2:\\S+)"))) << all;
  const std::string tail = node_->dir().Join("tail.jsonl");
  CommandResult second =
      Cli({"stream", "--resume", m[1], "--sampler", "stratified", "--batch-size", "50", "--output", tail, "-q"});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  std::ifstream h(head), t(tail), f(full);
  std::stringstream joined, whole;
  joined << h.rdbuf() << t.rdbuf();
  whole << f.rdbuf();
  EXPECT_EQ(joined.str(), whole.str()) << "the resumed stream equals the uninterrupted one";
  // The token carries the sampler: without --sampler it continues the same plan.
  const std::string alone = node_->dir().Join("alone.jsonl");
  CommandResult by_token = Cli({"stream", "--resume", m[1], "--output", alone, "-q"});
  ASSERT_EQ(by_token.exit_code, 0) << by_token.err;
  std::ifstream a(alone);
  std::stringstream resumed;
  resumed << a.rdbuf();
  EXPECT_EQ(resumed.str(), joined.str().substr(joined.str().size() - resumed.str().size()));
  CommandResult other = Cli({"stream", "--resume", m[1], "--sampler", "weighted", "-q"});
  EXPECT_EQ(other.exit_code, 1) << "a token of a stratified plan does not continue a weighted one";
  EXPECT_NE(other.err.find("uses sampler STRATIFIED"), std::string::npos) << other.err;
}

TEST_F(StratifiedTest, BadTimestampsFailTheIngestNamingTheSample) {
  const std::string dir = node_->dir().Join("badts");
  std::filesystem::create_directories(dir + "/data");
  std::ofstream(dir + "/data/a.bin") << "a";
  std::ofstream(dir + "/data/b.bin") << "b";
  std::ofstream(dir + "/m.csv") << "path,label,ts\ndata/a.bin,cat,2024-01-01T10:00:00Z\ndata/b.bin,dog,soon\n";
  CommandResult r = Cli({"ingest", "--dataset", "badts", "--time-bucket", "ts:1h", "-q", dir + "/m.csv"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("data/b.bin"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("soon"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace strata::testing
