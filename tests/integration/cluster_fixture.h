// Shared pieces of the integration tests: a real stratad on loopback, a
// connected client, and a deterministic synthetic dataset.
#pragma once

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/status.h"
#include "strata/client.h"
#include "strata/v1/data.grpc.pb.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace strata::testing {

// The payload of sample i of a synthetic dataset (its length varies with i).
inline std::string SyntheticPayload(uint64_t i) {
  return "payload-" + std::to_string(i) + "-" +
         std::string(static_cast<size_t>(i % 97), static_cast<char>('a' + i % 26));
}
inline std::string SyntheticLabel(uint64_t i, uint32_t labels) { return "label" + std::to_string(i % labels); }

// How a synthetic dataset is ingested. 0 leaves the server's default.
struct SyntheticIngest {
  uint32_t labels = 3;
  uint32_t replication = 0;
  uint64_t shard_target_bytes = 0;  // e.g. 16 KiB: many shards, spread over the nodes
  std::function<std::string(uint64_t)> payload = SyntheticPayload;
  std::function<void()> before_commit = nullptr;  // runs after the last write, before the commit
  IngestOptions options = {};    // the rest (write policy, compression, retention); dataset and the two above are set
  std::string key_prefix = "k";  // sample i's key: key_prefix + i
  std::string field = "bin";     // the field that holds payload(i)
};

// Sample i of a synthetic ingest: key key_prefix + i, label
// SyntheticLabel(i, labels), field `field` holding payload(i).
inline Sample SyntheticSample(uint64_t i, const SyntheticIngest& how = {}) {
  Sample s;
  s.key = how.key_prefix + std::to_string(i);
  s.label = SyntheticLabel(i, how.labels);
  s.fields.push_back({how.field, how.payload(i)});
  return s;
}

// Ingests n synthetic samples as `dataset` (sample i: key "k<i>", label
// SyntheticLabel(i, labels), field "bin" holding payload(i), by default). Returns the
// commit's summary, or the first error of the start, a write or the commit.
inline Result<IngestSummary> TryIngestSynthetic(Client& client, const std::string& dataset, uint64_t n,
                                                const SyntheticIngest& how = {}) {
  IngestOptions o = how.options;
  o.dataset = dataset;
  o.replication = how.replication;
  o.shard_target_bytes = how.shard_target_bytes;
  auto writer = client.StartIngest(o);
  if (!writer.ok()) return writer.status();
  for (uint64_t i = 0; i < n; ++i) STRATA_RETURN_IF_ERROR(writer.value()->Write(SyntheticSample(i, how)));
  if (how.before_commit) how.before_commit();
  return writer.value()->Commit();
}

// The same, failing the test on error (an empty summary then).
inline IngestSummary IngestSynthetic(Client& client, const std::string& dataset, uint64_t n, uint32_t labels,
                                     const std::function<std::string(uint64_t)>& payload = SyntheticPayload) {
  SyntheticIngest how;
  how.labels = labels;
  how.payload = payload;
  auto reply = TryIngestSynthetic(client, dataset, n, how);
  EXPECT_TRUE(reply.ok()) << reply.status().ToString();
  return reply.ok() ? reply.value() : IngestSummary();
}

// Every batch of one rank's stream, or the error that ended it.
struct RankRun {
  std::vector<Batch> batches;
  Status end;         // OutOfRange after a full epoch
  StreamStats stats;  // failovers and readmissions, as the stream ended
};

inline RankRun StreamAll(Client& client, const StreamOptions& options) {
  RankRun run;
  auto stream = client.OpenStream(options);
  if (!stream.ok()) {
    run.end = stream.status();
    return run;
  }
  for (;;) {
    Batch b;
    Status s = stream.value()->Next(&b);
    if (!s.ok()) {
      run.end = s;
      run.stats = stream.value()->stats();
      return run;
    }
    run.batches.push_back(std::move(b));
  }
}

// One rank's epoch of `dataset` (world 1), `batch` samples a batch.
inline RankRun StreamDataset(Client& client, const std::string& dataset, uint32_t batch = 50) {
  StreamOptions o;
  o.dataset = dataset;
  o.batch_size = batch;
  return StreamAll(client, o);
}

// The distinct sample ids of that epoch; fails the test unless the stream
// ended at the epoch's end (OutOfRange).
inline std::set<uint64_t> DistinctIdsStreamed(Client& client, const std::string& dataset, uint32_t batch = 50) {
  const RankRun run = StreamDataset(client, dataset, batch);
  EXPECT_EQ(run.end.code(), Code::kOutOfRange) << dataset << ": " << run.end.ToString();
  std::set<uint64_t> ids;
  for (const auto& b : run.batches) ids.insert(b.ids().begin(), b.ids().end());
  return ids;
}

// One stratad with a data directory, started fresh for a test suite, and a
// client of it. `binary`: another stratad binary (empty: this build's);
// `extra_args`: flags added to its command line (`--max-part-bytes 4096`).
class SingleNode {
 public:
  explicit SingleNode(std::string binary = "", std::vector<std::string> extra_args = {})
      : binary_(std::move(binary)), extra_args_(std::move(extra_args)) {
    Start();
  }

  void Start() {
    StratadProcess::Options o;
    o.data_dir = dir_.Join("data");
    o.extra_args = {"--log-level", "info"};
    o.extra_args.insert(o.extra_args.end(), extra_args_.begin(), extra_args_.end());
    o.binary = binary_;
    process_ = StratadProcess::Start(o);
    ASSERT_NE(process_, nullptr);
    auto client = Client::Connect(process_->address());
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(client).value();
  }

  Client& client() { return *client_; }
  StratadProcess& process() { return *process_; }
  TempDir& dir() { return dir_; }
  const std::string& address() const { return process_->address(); }
  // Drops the client and stops the process with SIGTERM; returns its exit status.
  int Stop() {
    client_.reset();
    return process_->Terminate();
  }

 private:
  const std::string binary_;
  const std::vector<std::string> extra_args_;
  TempDir dir_;
  std::unique_ptr<StratadProcess> process_;
  std::unique_ptr<Client> client_;
};

// The sum of every series of `name` on a node's /metrics (e.g. rejections
// of every reason); -1 if the scrape fails or the family has no series.
inline double Metric(const std::string& metrics_address, const std::string& name) {
  CommandResult scrape = RunCommand({"/usr/bin/curl", "-sf", "http://" + metrics_address + "/metrics"});
  if (scrape.exit_code != 0) return -1;
  double sum = 0;
  bool found = false;
  std::istringstream lines(scrape.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(name + "{", 0) != 0) continue;
    const size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    sum += std::stod(line.substr(space + 1));
    found = true;
  }
  return found ? sum : -1;
}

// A raw StreamBatches call to `address`, past the client library: `each`
// sees every part, a joined step (Batch.following) as a part of its own.
// Returns how the call ended.
inline grpc::Status ReadRawStream(const std::string& address, const v1::StreamRequest& request,
                                  const std::function<void(const v1::Batch&)>& each) {
  auto stub = v1::DataService::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  auto reader = stub->StreamBatches(&context, request);
  v1::Batch part;
  while (reader->Read(&part)) {
    each(part);
    for (const v1::Batch& joined : part.following()) each(joined);
  }
  return reader->Finish();
}

}  // namespace strata::testing
