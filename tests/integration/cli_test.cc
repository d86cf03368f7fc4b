// The strata CLI against a live stratad, as a user runs it: ingest each source
// kind, inspect, stream with --output, resume from the printed token.
#include <gtest/gtest.h>

#include <algorithm>
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

class CliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { node_ = new SingleNode(); }
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

  static std::string Generate(const std::string& name, const std::string& format, int samples) {
    const std::string dir = node_->dir().Join(name);
    CommandResult gen =
        RunCommand({STRATA_MAKE_DATASET_BINARY, "--out", dir, "--format", format, "--samples", std::to_string(samples),
                    "--size", "300", "--classes", "4", "--samples-per-tar", "40"});
    EXPECT_EQ(gen.exit_code, 0) << gen.err;
    return dir;
  }

  // Streams the whole dataset as one rank and returns id -> (label, payload).
  static std::map<uint64_t, std::pair<std::string, std::string>> Contents(const std::string& dataset) {
    auto client = Client::Connect(node_->address());
    EXPECT_TRUE(client.ok());
    StreamOptions o;
    o.dataset = dataset;
    o.batch_size = 64;
    RankRun run = StreamAll(*client.value(), o);
    EXPECT_EQ(run.end.code(), Code::kOutOfRange) << run.end.ToString();
    std::map<uint64_t, std::pair<std::string, std::string>> out;
    for (const Batch& b : run.batches) {
      for (size_t i = 0; i < b.size(); ++i) out[b.ids()[i]] = {b.labels()[i], std::string(b.sample(i))};
    }
    return out;
  }

  static std::map<std::string, uint64_t> LabelCounts(const std::string& dataset) {
    auto d = node_->client().Describe(dataset);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    std::map<std::string, uint64_t> out;
    for (const auto& c : d->dataset.label_counts) out[c.key] = c.count;
    return out;
  }

  static SingleNode* node_;
};
SingleNode* CliTest::node_ = nullptr;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST_F(CliTest, IngestsAFolderTreeWithLabelsFromSubFolders) {
  const std::string dir = Generate("folder", "folder", 120);
  CommandResult r = Cli({"ingest", "--dataset", "from-folder", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("120 samples"), std::string::npos) << r.out;
  std::map<std::string, uint64_t> expect;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) ++expect[e.path().parent_path().filename().string()];
  }
  EXPECT_EQ(LabelCounts("from-folder"), expect);
  // Every stored payload is a file of that label's folder, byte for byte.
  for (const auto& [id, lp] : Contents("from-folder")) {
    EXPECT_EQ(lp.second.size(), 300u);
    EXPECT_TRUE(lp.first.rfind("class", 0) == 0) << lp.first;
  }
}

TEST_F(CliTest, IngestsCsvAndJsonlManifestsWithAttributes) {
  const std::string csv = Generate("csv", "csv", 80);
  CommandResult r = Cli({"ingest", "--dataset", "from-csv", csv + "/manifest.csv"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string jsonl = Generate("jsonl", "jsonl", 80);
  r = Cli({"ingest", "--dataset", "from-jsonl", jsonl + "/manifest.jsonl"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Same generator seed: the two manifests describe the same samples in the same order.
  EXPECT_EQ(LabelCounts("from-csv"), LabelCounts("from-jsonl"));
  auto a = Contents("from-csv");
  auto b = Contents("from-jsonl");
  ASSERT_EQ(a.size(), 80u);
  EXPECT_EQ(a, b);
  // The manifest's rows, in order, are ids 0..n-1 with the files' bytes.
  std::ifstream m(csv + "/manifest.csv");
  std::string line;
  std::getline(m, line);  // header
  for (uint64_t id = 0; std::getline(m, line); ++id) {
    const std::string path = line.substr(0, line.find(','));
    const std::string label = line.substr(line.find(',') + 1, line.find(',', line.find(',') + 1) - line.find(',') - 1);
    EXPECT_EQ(a[id].first, label) << id;
    EXPECT_EQ(a[id].second, ReadAll(csv + "/" + path)) << id;
  }
}

TEST_F(CliTest, IngestsWebDatasetTarsGroupingMembersByKey) {
  const std::string dir = Generate("tar", "tar", 100);  // 3 tars of 40, 40, 20
  std::vector<std::string> args = {"ingest", "--dataset", "from-tar"};
  for (int i = 0; i < 3; ++i) args.push_back(dir + "/shard-00000" + std::to_string(i) + ".tar");
  CommandResult r = Cli(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto contents = Contents("from-tar");
  ASSERT_EQ(contents.size(), 100u);
  for (const auto& [id, lp] : contents) {
    // Each sample holds two fields, bin then cls, and the cls text is the label.
    EXPECT_EQ(lp.second.size(), 300u + lp.first.size()) << id;
    EXPECT_EQ(lp.second.substr(300), lp.first);
  }
}

TEST_F(CliTest, VersionIsTheProjectsAsStratadReportsIt) {
  const CommandResult strata = RunCommand({StrataCliBinary(), "--version"});
  const CommandResult stratad = RunCommand({StratadBinary(), "--version"});
  ASSERT_EQ(strata.exit_code, 0) << strata.err;
  ASSERT_EQ(stratad.exit_code, 0) << stratad.err;
  ASSERT_EQ(stratad.out.rfind("stratad ", 0), 0u) << stratad.out;
  EXPECT_EQ(strata.out, "strata " + stratad.out.substr(8)) << "both from the project's version";
  EXPECT_GT(strata.out.size(), std::string("strata \n").size()) << strata.out;
}

TEST_F(CliTest, LsDescribeAndStatusReportTheDataset) {
  const std::string dir = Generate("inspect", "folder", 30);
  ASSERT_EQ(Cli({"ingest", "--dataset", "inspect", dir}).exit_code, 0);
  CommandResult ls = Cli({"ls"});
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  EXPECT_NE(ls.out.find("inspect@1"), std::string::npos) << ls.out;
  CommandResult describe = Cli({"describe", "inspect", "--shards"});
  ASSERT_EQ(describe.exit_code, 0) << describe.err;
  EXPECT_NE(describe.out.find("30"), std::string::npos);
  CommandResult json = Cli({"describe", "inspect@1", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  auto parsed = nlohmann::json::parse(json.out);
  EXPECT_EQ(parsed["dataset"]["samples"], "30") << "protobuf JSON prints 64-bit integers as strings";
  CommandResult status = Cli({"status"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("node-1"), std::string::npos) << status.out;
}

TEST_F(CliTest, ConnectionOptionsMayComeBeforeTheSubcommand) {
  const std::string dir = Generate("before", "folder", 12);
  // As the README shows it: `strata --server H:P ... ingest ...`.
  CommandResult ingest =
      RunCommand({StrataCliBinary(), "--server", node_->address(), "ingest", "--dataset", "before", dir});
  ASSERT_EQ(ingest.exit_code, 0) << ingest.err;
  CommandResult ls = RunCommand({StrataCliBinary(), "--server=" + node_->address(), "ls"});
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  EXPECT_NE(ls.out.find("before@1"), std::string::npos) << ls.out;
  // The address given before the subcommand is the one used: nobody serves
  // this one, and the error names it.
  CommandResult nobody = RunCommand({StrataCliBinary(), "--server", "127.0.0.1:1", "ls"});
  EXPECT_EQ(nobody.exit_code, 1) << nobody.out;
  EXPECT_NE(nobody.err.find("127.0.0.1:1"), std::string::npos) << nobody.err;
  // Anything else before the subcommand is still a usage error.
  CommandResult other = RunCommand({StrataCliBinary(), "--server", node_->address(), "--json", "ls"});
  EXPECT_EQ(other.exit_code, 2) << other.out;
  CommandResult no_subcommand = RunCommand({StrataCliBinary(), "--server", node_->address()});
  EXPECT_EQ(no_subcommand.exit_code, 2) << no_subcommand.out;
}

TEST_F(CliTest, RmDeletesOneVersionWithKeepVersionsAndClearErrors) {
  const std::string dir = Generate("rm", "folder", 20);
  ASSERT_EQ(Cli({"ingest", "--dataset", "rmme", dir}).exit_code, 0);
  ASSERT_EQ(Cli({"ingest", "--dataset", "rmme", dir}).exit_code, 0);
  CommandResult rm = Cli({"rm", "rmme@1"});
  ASSERT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_NE(rm.out.find("deleted rmme@1"), std::string::npos) << rm.out;
  CommandResult ls = Cli({"ls"});
  EXPECT_EQ(ls.out.find("rmme@1"), std::string::npos) << ls.out;
  EXPECT_NE(ls.out.find("rmme@2"), std::string::npos) << ls.out;
  EXPECT_NE(Cli({"ls", "--all"}).out.find("deleted"), std::string::npos);
  CommandResult unknown = Cli({"rm", "rmme@7"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("NotFound: dataset 'rmme' has no version 7"), std::string::npos) << unknown.err;
  CommandResult bare = Cli({"rm", "rmme"});
  EXPECT_EQ(bare.exit_code, 2) << "a usage error";
  EXPECT_NE(bare.err.find("NAME@N"), std::string::npos) << bare.err;
  EXPECT_EQ(Cli({"rm", "rmme@0"}).exit_code, 2);
  EXPECT_EQ(Cli({"describe", "rmme@0"}).exit_code, 2);
  EXPECT_NE(Cli({"rm", "--help"}).out.find("every node"), std::string::npos);
  // --keep-versions 1 on the third ingest leaves only it.
  ASSERT_EQ(Cli({"ingest", "--dataset", "rmme", "--keep-versions", "1", dir}).exit_code, 0);
  ls = Cli({"ls"});
  EXPECT_EQ(ls.out.find("rmme@2"), std::string::npos) << ls.out;
  EXPECT_NE(ls.out.find("rmme@3"), std::string::npos) << ls.out;
  EXPECT_NE(Cli({"describe", "rmme"}).out.find("keeps the newest 1 versions"), std::string::npos);
}

TEST_F(CliTest, StreamWritesOneJsonLinePerBatchAndEveryIdOnce) {
  const std::string dir = Generate("stream", "folder", 250);
  ASSERT_EQ(Cli({"ingest", "--dataset", "to-stream", dir}).exit_code, 0);
  std::set<uint64_t> ids;
  for (int rank = 0; rank < 2; ++rank) {
    const std::string out = node_->dir().Join("rank" + std::to_string(rank) + ".jsonl");
    CommandResult r =
        Cli({"stream", "--dataset", "to-stream", "--batch-size", "16", "--world", "2", "--rank", std::to_string(rank),
             "--seed", "4", "--epoch", "2", "--output", out, "--quiet", "--stall-timeout", "60000"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("samples/s"), std::string::npos) << "prints throughput";
    EXPECT_NE(r.out.find("class00"), std::string::npos) << "prints a per-label summary";
    std::ifstream in(out);
    std::string line;
    uint64_t step = 0;
    while (std::getline(in, line)) {
      auto j = nlohmann::json::parse(line);
      ASSERT_EQ(j.size(), 5u) << line;
      for (const char* key : {"epoch", "step", "rank", "ids", "labels"}) {
        auto found = j.find(key);
        ASSERT_NE(found, j.end()) << key;
      }
      EXPECT_EQ(line.substr(0, 10), "{\"epoch\":2");
      EXPECT_EQ(j["step"], step++);
      EXPECT_EQ(j["rank"], rank);
      ASSERT_EQ(j["ids"].size(), j["labels"].size());
      for (auto& id : j["ids"]) EXPECT_TRUE(ids.insert(id.get<uint64_t>()).second);
    }
    EXPECT_EQ(step, 8u) << "250 samples, global batch 32: 7 full steps and a short one";
  }
  EXPECT_EQ(ids.size(), 250u);
  EXPECT_EQ(*ids.rbegin(), 249u) << "ids are the dense indexes 0..n-1";
  const CommandResult zero = Cli({"stream", "--dataset", "to-stream", "--batch-size", "16", "--stall-timeout", "0"});
  EXPECT_EQ(zero.exit_code, 2) << "a stall timeout must be positive";
  EXPECT_NE(zero.err.find("--stall-timeout"), std::string::npos) << zero.err;
  // A version no node has is NotFound, named as such (not every node failing).
  const CommandResult missing = Cli({"stream", "--dataset", "to-stream@9", "--batch-size", "16", "-q"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("error: NotFound: dataset 'to-stream' has no version 9"), std::string::npos)
      << missing.err;
  EXPECT_EQ(missing.err.find("failed"), std::string::npos) << missing.err;
}

TEST_F(CliTest, StreamStoppedEarlyPrintsAResumeTokenThatContinues) {
  const std::string dir = Generate("resume", "folder", 200);
  ASSERT_EQ(Cli({"ingest", "--dataset", "resume", dir}).exit_code, 0);
  const std::string full = node_->dir().Join("full.jsonl");
  ASSERT_EQ(
      Cli({"stream", "--dataset", "resume", "--batch-size", "10", "--seed", "8", "--output", full, "-q"}).exit_code, 0);
  const std::string head = node_->dir().Join("head.jsonl");
  CommandResult first = Cli({"stream", "--dataset", "resume", "--batch-size", "10", "--seed", "8", "--max-steps", "6",
                             "--output", head, "-q"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  std::smatch m;
  const std::string all = first.out + first.err;
  ASSERT_TRUE(std::regex_search(all, m, std::regex("--resume (strata2:\\S+)"))) << all;
  const std::string tail = node_->dir().Join("tail.jsonl");
  CommandResult second = Cli({"stream", "--resume", m[1], "--batch-size", "10", "--output", tail, "-q"});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(ReadAll(head) + ReadAll(tail), ReadAll(full));
}

// An output that cannot be written prints no token past what it holds (the
// writes were buffered, and the token skipped batches never written), and
// Ctrl-C (or SIGTERM) stops after the batch in hand with a token that continues right
// after the file's last line (it used to die with half a line and no token).
TEST_F(CliTest, StreamInterruptedOrFailingToWriteNeverSkipsBatches) {
  const std::string dir = Generate("interrupt", "folder", 600);
  ASSERT_EQ(Cli({"ingest", "--dataset", "interrupt", dir}).exit_code, 0);
  const std::vector<std::string> plan = {"stream", "--dataset", "interrupt", "--batch-size", "1", "--seed", "8", "-q"};
  std::vector<std::string> full_args = plan;
  full_args.insert(full_args.end(), {"--output", "/dev/full"});
  CommandResult full = Cli(full_args);
  EXPECT_EQ(full.exit_code, 1);
  EXPECT_NE(full.err.find("cannot write"), std::string::npos) << full.err;
  EXPECT_EQ(full.err.find("--resume"), std::string::npos) << "nothing was written: " << full.err;

  // Into a FIFO this test reads: one line read (the stream runs), SIGTERM (a
  // background job ignores SIGINT, and the CLI keeps it so), then
  // the rest drained; the token's step is the number of lines.
  const std::string fifo = node_->dir().Join("interrupt.fifo");
  const std::string head = node_->dir().Join("interrupt-head.jsonl");
  std::string cli;
  for (const std::string& a : plan) cli += a + " ";
  const std::string script = "mkfifo " + fifo + " && (" + StrataCliBinary() + " " + cli + "--server " +
                             node_->address() + " --output " + fifo + " & pid=$!; exec 3<" + fifo +
                             "; read -r line <&3; printf '%s\\n' \"$line\" > " + head +
                             "; kill -TERM $pid; cat <&3 >> " + head + "; wait $pid; echo rc=$?)";
  CommandResult run = RunCommand({"/bin/bash", "-c", script});
  ASSERT_NE(run.out.find("rc=143"), std::string::npos) << run.out << run.err;  // 128 + SIGTERM
  std::smatch m;
  ASSERT_TRUE(std::regex_search(run.err, m, std::regex("--resume (strata2:\\S+)"))) << run.err;
  const std::string token = m[1];
  const std::string lines = ReadAll(head);
  const auto written = static_cast<uint64_t>(std::count(lines.begin(), lines.end(), '\n'));
  ASSERT_LT(written, 600u) << "the stream ended before the interrupt";
  EXPECT_TRUE(token.ends_with(":" + std::to_string(written))) << token << " after " << written << " lines";
  const std::string tail = node_->dir().Join("interrupt-tail.jsonl");
  ASSERT_EQ(Cli({"stream", "--resume", token, "--output", tail, "-q"}).exit_code, 0);
  const std::string whole = node_->dir().Join("interrupt-whole.jsonl");
  std::vector<std::string> whole_args = plan;
  whole_args.insert(whole_args.end(), {"--output", whole});
  ASSERT_EQ(Cli(whole_args).exit_code, 0);
  EXPECT_EQ(lines + ReadAll(tail), ReadAll(whole));
}

// Before the first batch there is no batch in hand to stop after: SIGTERM
// (or Ctrl-C) ends the command at once. Here the node plans its way to a far
// start step for a second or more when the signal comes (it used to be noted,
// and honoured only after the first batch, minutes later for a farther step).
TEST_F(CliTest, StreamInterruptedBeforeItsFirstBatchEndsAtOnce) {
  const std::string dir = Generate("far", "folder", 60);
  ASSERT_EQ(Cli({"ingest", "--dataset", "far", dir}).exit_code, 0);
  const std::string err = node_->dir().Join("far.err");
  const std::string script = "(" + StrataCliBinary() + " stream --server " + node_->address() +
                             " --dataset far --batch-size 1 --sampler weighted --epoch-samples 1000000000000"
                             " --start-step 40000000 --max-steps 1 -q 2>" +
                             err + " & pid=$!; sleep 0.3; kill -TERM $pid; wait $pid; echo rc=$?)";
  CommandResult run = RunCommand({"/bin/bash", "-c", script});
  const std::string said = ReadAll(err);
  EXPECT_NE(run.out.find("rc=143"), std::string::npos) << run.out << said;
  EXPECT_NE(said.find("interrupted before the first batch"), std::string::npos) << said;
  EXPECT_EQ(said.find("--resume"), std::string::npos) << said;
}

// A stream whose version is deleted under it ends with the node's
// FailedPrecondition and no --resume line: the token would name the deleted
// version. Its output goes into a FIFO this test reads, so that the stream
// is open, and not finished, when the version is deleted.
TEST_F(CliTest, StreamOfAVersionDeletedUnderItEndsWithoutAResumeToken) {
  const std::string dir = Generate("doomed", "folder", 20000);  // more lines than a pipe holds
  ASSERT_EQ(Cli({"ingest", "--dataset", "doomed", dir}).exit_code, 0);
  const std::string fifo = node_->dir().Join("doomed.fifo");
  const std::string err = node_->dir().Join("doomed.err");
  const std::string script = "mkfifo " + fifo + " && (" + StrataCliBinary() + " stream --server " + node_->address() +
                             " --dataset doomed@1 --batch-size 1 -q --output " + fifo + " 2>" + err +
                             " & pid=$!; exec 3<" + fifo + "; read -r line <&3; " + StrataCliBinary() +
                             " rm doomed@1 --server " + node_->address() +
                             " > /dev/null; cat <&3 > /dev/null; wait $pid; echo rc=$?)";
  CommandResult run = RunCommand({"/bin/bash", "-c", script});
  const std::string said = ReadAll(err);
  EXPECT_NE(run.out.find("rc=1"), std::string::npos) << run.out << said;
  EXPECT_NE(said.find("was deleted"), std::string::npos) << said;
  EXPECT_EQ(said.find("--resume"), std::string::npos) << said;
}

// The token carries the whole plan: a stratified stream with --drop-last
// continues from --resume TOKEN alone, on another world size too; options
// that disagree with the token are refused with a message saying which.
TEST_F(CliTest, ResumeTokenAloneContinuesAStratifiedStream) {
  const std::string dir = Generate("resume-plan", "folder", 203);
  ASSERT_EQ(Cli({"ingest", "--dataset", "resume-plan", dir}).exit_code, 0);
  const std::vector<std::string> plan = {"--dataset", "resume-plan", "--batch-size", "12",          "--seed",
                                         "4",         "--sampler",   "stratified",   "--drop-last", "-q"};
  auto with = [&](std::vector<std::string> args, const std::vector<std::string>& more) {
    args.insert(args.begin(), "stream");
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  const std::string full = node_->dir().Join("plan-full.jsonl");
  ASSERT_EQ(Cli(with(plan, {"--output", full})).exit_code, 0);
  const std::string head = node_->dir().Join("plan-head.jsonl");
  CommandResult first = Cli(with(plan, {"--max-steps", "5", "--output", head}));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  std::smatch m;
  const std::string all = first.out + first.err;
  ASSERT_TRUE(std::regex_search(all, m, std::regex("--resume (strata2:\\S+)"))) << all;
  const std::string token = m[1];

  const std::string tail = node_->dir().Join("plan-tail.jsonl");
  CommandResult second = Cli({"stream", "--resume", token, "--output", tail, "-q"});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(ReadAll(head) + ReadAll(tail), ReadAll(full));
  EXPECT_NE(ReadAll(tail).find("\"strata\""), std::string::npos) << "a stratified stream's lines carry strata";
  EXPECT_NE(second.out.find("132 samples"), std::string::npos)
      << "203 samples, global batch 12, drop last: 16 steps of 12, 11 of them resumed = 132; " << second.out;

  // Two ranks of 6 share the same global batches.
  CommandResult rank1 = Cli({"stream", "--resume", token, "--world", "2", "--rank", "1", "-q"});
  ASSERT_EQ(rank1.exit_code, 0) << rank1.err;
  EXPECT_NE(rank1.out.find("66 samples"), std::string::npos) << rank1.out;

  CommandResult bad_batch = Cli({"stream", "--resume", token, "--batch-size", "7", "-q"});
  EXPECT_NE(bad_batch.exit_code, 0);
  EXPECT_NE(bad_batch.err.find("global batch is 12"), std::string::npos) << bad_batch.err;
  CommandResult bad_sampler = Cli({"stream", "--resume", token, "--sampler", "weighted", "-q"});
  EXPECT_NE(bad_sampler.exit_code, 0);
  EXPECT_NE(bad_sampler.err.find("uses sampler STRATIFIED"), std::string::npos) << bad_sampler.err;
  CommandResult old_format = Cli({"stream", "--resume", "strata1:resume-plan@1:0000000000000001:4:0:5", "-q"});
  EXPECT_NE(old_format.exit_code, 0);
  EXPECT_NE(old_format.err.find("give --batch-size"), std::string::npos) << old_format.err;
}

}  // namespace
}  // namespace strata::testing
