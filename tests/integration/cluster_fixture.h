// Shared pieces of the integration tests: a real stratad on loopback, a
// connected client, and a deterministic synthetic dataset.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "strata/client.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace strata::testing {

// The payload of sample i of a synthetic dataset (its length varies with i).
inline std::string SyntheticPayload(uint64_t i) {
  return "payload-" + std::to_string(i) + "-" + std::string(static_cast<size_t>(i % 97), static_cast<char>('a' + i % 26));
}
inline std::string SyntheticLabel(uint64_t i, uint32_t labels) { return "label" + std::to_string(i % labels); }

// Ingests n synthetic samples as `dataset`; fails the test on error.
inline IngestSummary IngestSynthetic(Client& client, const std::string& dataset, uint64_t n, uint32_t labels,
                                     const std::function<std::string(uint64_t)>& payload = SyntheticPayload) {
  IngestOptions o;
  o.dataset = dataset;
  auto writer = client.StartIngest(o);
  EXPECT_TRUE(writer.ok()) << writer.status().ToString();
  if (!writer.ok()) return {};
  for (uint64_t i = 0; i < n; ++i) {
    Sample s;
    s.key = "k" + std::to_string(i);
    s.label = SyntheticLabel(i, labels);
    s.fields.push_back({"bin", payload(i)});
    Status st = writer.value()->Write(s);
    EXPECT_TRUE(st.ok()) << st.ToString();
    if (!st.ok()) return {};
  }
  auto reply = writer.value()->Commit();
  EXPECT_TRUE(reply.ok()) << reply.status().ToString();
  return reply.ok() ? reply.value() : IngestSummary();
}

// Every batch of one rank's stream, or the error that ended it.
struct RankRun {
  std::vector<Batch> batches;
  Status end;  // OutOfRange after a full epoch
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
      return run;
    }
    run.batches.push_back(std::move(b));
  }
}

// One stratad with a data directory, started fresh for a test suite.
class SingleNode {
 public:
  SingleNode() { Start(); }

  void Start() {
    StratadProcess::Options o;
    o.data_dir = dir_.Join("data");
    o.extra_args = {"--log-level", "info"};
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
  TempDir dir_;
  std::unique_ptr<StratadProcess> process_;
  std::unique_ptr<Client> client_;
};

}  // namespace strata::testing
