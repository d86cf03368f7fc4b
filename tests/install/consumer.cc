// A program outside strata's build: compiled by install_test against the
// installed headers and libstrata.so alone. It includes every public header,
// lists and describes a dataset, streams one epoch as two ranks through a
// staging ring, and checks that every sample arrived exactly once.
//
//   consumer HOST:PORT DATASET EXPECTED_SAMPLES
//
// Prints "consumer: N samples in M batches" and exits 0 when all checks pass;
// otherwise prints what failed and exits 1.
#include <strata/allocator.h>
#include <strata/batch.h>
#include <strata/client.h>
#include <strata/cluster.h>
#include <strata/dataset.h>
#include <strata/resume_token.h>
#include <strata/sampler.h>
#include <strata/staging.h>
#include <strata/status.h>
#include <strata/version.h>

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <set>
#include <string>

namespace {

int Fail(const std::string& what) {
  std::cerr << "consumer: " << what << std::endl;
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) return Fail("usage: consumer HOST:PORT DATASET EXPECTED_SAMPLES");
  const std::string address = argv[1];
  const std::string dataset = argv[2];
  const uint64_t expected = std::strtoull(argv[3], nullptr, 10);

  // As the README tells trainers to (the installed library must export it).
  if (!strata::TuneAllocatorForStreaming()) std::cerr << "consumer: allocator settings refused (not glibc?)\n";
  auto client = strata::Client::Connect(address);
  if (!client.ok()) return Fail(client.status().ToString());

  auto listed = (*client)->ListDatasets();
  if (!listed.ok()) return Fail(listed.status().ToString());
  bool found = false;
  for (const strata::DatasetInfo& d : *listed) {
    found = found || (d.name == dataset && d.state == strata::VersionState::kSealed);
  }
  if (!found) return Fail("ListDatasets has no sealed '" + dataset + "'");

  auto described = (*client)->Describe(dataset);
  if (!described.ok()) return Fail(described.status().ToString());
  if (described->dataset.samples != expected) {
    return Fail("Describe says " + std::to_string(described->dataset.samples) + " samples, expected " +
                std::to_string(expected));
  }
  auto map = (*client)->GetClusterMap();
  if (!map.ok() || map->nodes.empty() || map->nodes[0].state != strata::NodeState::kUp) {
    return Fail("the cluster map has no node up");
  }

  // A missing dataset is an error with a code, not an exception.
  auto missing = (*client)->Describe("no-such-dataset");
  if (missing.ok() || missing.status().code() != strata::Code::kNotFound) {
    return Fail("Describe of a missing dataset: " + missing.status().ToString());
  }

  std::set<uint64_t> ids;
  uint64_t samples = 0;
  uint64_t batches = 0;
  for (uint32_t rank = 0; rank < 2; ++rank) {
    strata::StreamOptions o;
    o.dataset = dataset;
    o.rank = rank;
    o.world = 2;
    o.batch_size = 8;
    o.seed = 7;
    o.sampler.kind = strata::SamplerSpec::Kind::kShuffle;
    o.remainder = strata::Remainder::kShort;
    auto stream = (*client)->OpenStream(o);
    if (!stream.ok()) return Fail(stream.status().ToString());
    strata::StagingOptions staging;
    staging.prefer_device = false;
    auto staged = strata::StagedStream::Open(std::move(stream).value(), staging);
    if (!staged.ok()) return Fail(staged.status().ToString());
    strata::StagedBatch b;
    strata::Status s;
    while ((s = (*staged)->Next(&b)).ok()) {
      const strata::Batch& batch = b.batch();
      if (b.bytes() != batch.payload_bytes()) return Fail("staged bytes differ from the batch's");
      for (size_t i = 0; i < batch.size(); ++i) {
        if (batch.sample(i).empty()) return Fail("an empty sample");
        if (!ids.insert(batch.ids()[i]).second) return Fail("sample " + std::to_string(batch.ids()[i]) + " twice");
      }
      samples += batch.size();
      ++batches;
    }
    if (s.code() != strata::Code::kOutOfRange) return Fail("rank " + std::to_string(rank) + ": " + s.ToString());
    const strata::ResumeToken token = (*staged)->resume_token();
    auto decoded = strata::ResumeToken::Decode(token.Encode());
    if (!decoded.ok() || !(*decoded == token)) return Fail("the resume token does not round-trip");
  }
  if (samples != expected || ids.size() != expected) {
    return Fail("streamed " + std::to_string(samples) + " samples (" + std::to_string(ids.size()) +
                " distinct), expected " + std::to_string(expected));
  }
  std::cout << "consumer: " << samples << " samples in " << batches << " batches, libstrata " << strata::Version()
            << std::endl;
  return 0;
}
