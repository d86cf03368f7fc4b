#include "server/serve/batch_stream.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <map>
#include <set>

#include "server/daemon/server.h"
#include "tests/server/server_test_util.h"

namespace strata {
namespace {

using testing::MakeSample;
using testing::TempDir;
using testing::TestNodeConfig;

// Builds the stream's next step, which must come as one part.
v1::Batch NextPart(BatchStream& stream) {
  EXPECT_FALSE(stream.done());
  std::vector<WirePart> parts;
  const Status s = stream.BuildNext(&parts);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(parts.size(), 1u);
  return parts.empty() ? v1::Batch() : parts[0].ToMessage();
}

class BatchStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto node = Server::Open(TestNodeConfig(dir_.path()));
    ASSERT_TRUE(node.ok()) << node.status().ToString();
    node_ = std::move(node).value();
    v1::IngestOptions o;
    o.set_dataset("ds");
    auto session = node_->ingests().Start(o);
    ASSERT_TRUE(session.ok());
    for (int i = 0; i < kSamples; ++i) {
      v1::Sample s = MakeSample("k" + std::to_string(i), "L" + std::to_string(i % 4), Payload(i), "jpg");
      v1::Field* cls = s.add_fields();
      cls->set_name("cls");
      cls->set_data(std::to_string(i % 4));
      ASSERT_TRUE(session.value()->Add(s).ok());
    }
    ASSERT_TRUE(session.value()->Commit(kSamples).ok());
  }

  static std::string Payload(int i) {
    return "sample-" + std::to_string(i) + std::string(static_cast<size_t>(i % 50), '#');
  }

  v1::StreamRequest Request(uint32_t rank, uint32_t world, uint32_t batch) {
    v1::StreamRequest r;
    r.set_dataset("ds");
    r.set_rank(rank);
    r.set_world(world);
    r.set_batch_size(batch);
    r.set_seed(11);
    return r;
  }

  static constexpr int kSamples = 103;
  TempDir dir_;
  std::unique_ptr<Server> node_;
};

TEST_F(BatchStreamTest, EveryRankTogetherGetsEverySampleOnceWithItsBytes) {
  std::map<uint64_t, int> seen;
  for (uint32_t rank = 0; rank < 3; ++rank) {
    auto stream = node_->streams().Open(Request(rank, 3, 8));
    ASSERT_TRUE(stream.ok()) << stream.status().ToString();
    std::vector<WirePart> parts;
    while (!stream.value()->done()) {
      parts.clear();
      ASSERT_TRUE(stream.value()->BuildNext(&parts).ok());
      ASSERT_EQ(parts.size(), 1u);
      const v1::Batch b = parts[0].ToMessage();
      uint64_t offset = 0;
      for (int i = 0; i < b.ids_size(); ++i) {
        const int id = static_cast<int>(b.ids(i));
        ++seen[b.ids(i)];
        EXPECT_EQ(b.labels(i), "L" + std::to_string(id % 4));
        EXPECT_EQ(b.slots(i), static_cast<uint32_t>(i));
        const std::string expect = Payload(id) + std::to_string(id % 4);  // jpg then cls, back to back
        EXPECT_EQ(b.payload().substr(offset, b.sizes(i)), expect);
        EXPECT_EQ(b.layouts(static_cast<int>(b.layout_of(i))).names(0), "jpg");
        offset += b.sizes(i);
      }
      EXPECT_EQ(offset, b.payload().size());
    }
  }
  ASSERT_EQ(seen.size(), static_cast<size_t>(kSamples));
  for (const auto& [id, n] : seen) EXPECT_EQ(n, 1) << id;
}

TEST_F(BatchStreamTest, LargeBatchesAreSplitIntoParts) {
  NodeConfig c = TestNodeConfig(dir_.path());
  StreamLimits limits;
  limits.max_part_bytes = 100;  // a few samples per part
  DatasetCache cache(&node_->catalog(), &node_->data_dir());
  auto stream = BatchStream::Open(Request(0, 1, 32), &cache, nullptr, nullptr, limits);
  ASSERT_TRUE(stream.ok());
  std::vector<WirePart> parts;
  ASSERT_TRUE(stream.value()->BuildNext(&parts).ok());
  ASSERT_GT(parts.size(), 3u);
  std::set<uint32_t> slots;
  for (const auto& part : parts) {
    const v1::Batch& p = part.message();
    EXPECT_EQ(p.batch_size(), 32u);
    for (uint32_t s : p.slots()) EXPECT_TRUE(slots.insert(s).second);
  }
  EXPECT_EQ(slots.size(), 32u);
}

TEST_F(BatchStreamTest, RefusesBadRequests) {
  EXPECT_EQ(node_->streams().Open(Request(0, 1, 0)).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(node_->streams().Open(Request(3, 3, 4)).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(node_->streams().Open(Request(0, 0, 4)).status().code(), Code::kInvalidArgument);
  v1::StreamRequest unknown = Request(0, 1, 4);
  unknown.set_dataset("nope");
  EXPECT_EQ(node_->streams().Open(unknown).status().code(), Code::kNotFound);
  v1::StreamRequest past = Request(0, 1, 4);
  past.set_start_step(1000);
  EXPECT_EQ(node_->streams().Open(past).status().code(), Code::kInvalidArgument);
  v1::StreamRequest token = Request(0, 1, 4);
  token.set_expect_plan_hash(42);
  EXPECT_EQ(node_->streams().Open(token).status().code(), Code::kFailedPrecondition);
  // Members' zones must name every member or none; a member listed twice.
  v1::StreamRequest zones = Request(0, 1, 4);
  zones.add_members("node-1");
  zones.add_members("node-2");
  zones.add_member_zones("zone-a");
  EXPECT_EQ(node_->streams().Open(zones).status().code(), Code::kInvalidArgument);
  zones.add_member_zones("zone-b");
  zones.add_member_racks("r1");
  EXPECT_EQ(node_->streams().Open(zones).status().code(), Code::kInvalidArgument);
  v1::StreamRequest twice = Request(0, 1, 4);
  twice.add_members("node-1");
  twice.add_members("node-1");
  EXPECT_EQ(node_->streams().Open(twice).status().code(), Code::kInvalidArgument);
}

// A client that plans names a node's samples (StreamRequest.work): the node
// serves exactly those, each at its slot with its bytes, in its plan's
// frame (batch size, steps, plan hash), and computes no plan ids itself.
TEST_F(BatchStreamTest, WorkIsServedAtItsSlotsWithoutPlanning) {
  // The plan's ids for rank 1 of 2, steps 2 to 4, as a planning stream gives them.
  v1::StreamRequest planned = Request(1, 2, 8);
  planned.set_start_step(2);
  planned.set_max_steps(3);
  auto reference = node_->streams().Open(planned);
  ASSERT_TRUE(reference.ok()) << reference.status().ToString();
  std::vector<std::vector<uint64_t>> expect;
  uint64_t plan_hash = 0;
  std::vector<WirePart> parts;
  while (!reference.value()->done()) {
    parts.clear();
    ASSERT_TRUE(reference.value()->BuildNext(&parts).ok());
    const v1::Batch b = parts[0].ToMessage();
    expect.emplace_back(b.ids().begin(), b.ids().end());
    plan_hash = b.plan_hash();
  }
  ASSERT_EQ(expect.size(), 3u);

  // This node owes the odd slots of steps 2 and 4 (named in reverse) and
  // nothing of step 3.
  v1::StreamRequest work = Request(1, 2, 8);
  work.set_start_step(2);
  for (uint64_t step = 2; step <= 4; ++step) {
    v1::WorkStep* w = work.add_work();
    w->set_step(step);
    if (step == 3) continue;
    for (uint32_t slot = 7; slot < 8; slot -= 2) {
      w->add_slots(slot);
      w->add_ids(expect[step - 2][slot]);
    }
  }
  const double planned_before = node_->metrics().planned_samples.Value();
  auto stream = node_->streams().Open(work);
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  EXPECT_EQ(stream.value()->next_step(), 2u);
  EXPECT_EQ(stream.value()->end_step(), 5u);
  for (uint64_t step = 2; step <= 4; ++step) {
    const v1::Batch b = NextPart(*stream.value());
    EXPECT_EQ(b.step(), step);
    EXPECT_EQ(b.batch_size(), 8u) << "the rank's whole batch, not this node's share";
    EXPECT_EQ(b.plan_hash(), plan_hash);
    EXPECT_TRUE(b.last_part());
    ASSERT_EQ(b.ids_size(), step == 3 ? 0 : 4);
    uint64_t offset = 0;
    for (int i = 0; i < b.ids_size(); ++i) {
      const uint32_t slot = 7 - 2 * static_cast<uint32_t>(i);
      EXPECT_EQ(b.slots(i), slot);
      EXPECT_EQ(b.ids(i), expect[step - 2][slot]);
      const int id = static_cast<int>(b.ids(i));
      EXPECT_EQ(b.payload().substr(offset, b.sizes(i)), Payload(id) + std::to_string(id % 4));
      offset += b.sizes(i);
    }
  }
  EXPECT_TRUE(stream.value()->done());
  EXPECT_EQ(node_->metrics().planned_samples.Value(), planned_before) << "a stream with work plans no ids";
  EXPECT_GT(planned_before, 0.0) << "the planning stream counted its ids";
}

TEST_F(BatchStreamTest, RefusesWorkThatDoesNotFitThePlan) {
  const auto refused = [this](const std::function<void(v1::StreamRequest*)>& change) {
    v1::StreamRequest r = Request(0, 2, 4);  // 103 samples: 13 steps, the last rank 0's 3 (103 = 12 * 8 + 7)
    r.set_start_step(1);
    for (uint64_t step = 1; step <= 2; ++step) {
      v1::WorkStep* w = r.add_work();
      w->set_step(step);
      w->add_slots(0);
      w->add_ids(5);
    }
    change(&r);
    return node_->streams().Open(r).status();
  };
  EXPECT_TRUE(refused([](v1::StreamRequest*) {}).ok());
  const std::vector<std::pair<const char*, std::function<void(v1::StreamRequest*)>>> bad = {
      {"a gap", [](v1::StreamRequest* r) { r->mutable_work(1)->set_step(3); }},
      {"not from start_step", [](v1::StreamRequest* r) { r->set_start_step(0); }},
      {"a slot without an id", [](v1::StreamRequest* r) { r->mutable_work(0)->add_slots(1); }},
      {"a slot past the batch", [](v1::StreamRequest* r) { r->mutable_work(0)->set_slots(0, 4); }},
      {"a slot twice",
       [](v1::StreamRequest* r) {
         r->mutable_work(0)->add_slots(0);
         r->mutable_work(0)->add_ids(6);
       }},
      {"an id past the version", [](v1::StreamRequest* r) { r->mutable_work(1)->set_ids(0, kSamples); }},
      {"past the epoch",
       [](v1::StreamRequest* r) {
         r->set_start_step(12);
         r->mutable_work(0)->set_step(12);
         r->mutable_work(1)->set_step(13);
       }},
  };
  for (const auto& [what, change] : bad) {
    const Status s = refused(change);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << what << ": " << s.ToString();
  }
}

// ServeWork gives a stream its work as the call goes on (AddWork): the steps
// must follow the last one given and fit the plan as the first work does; a
// refused message changes nothing, and the stream is done only until more comes.
TEST_F(BatchStreamTest, MoreWorkIsServedAsItComesAndBadWorkChangesNothing) {
  v1::StreamRequest r = Request(0, 2, 4);  // 13 steps
  r.set_start_step(1);
  v1::WorkStep* first = r.add_work();
  first->set_step(1);
  first->add_slots(2);
  first->add_ids(5);
  auto stream = node_->streams().Open(r);
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  std::vector<WirePart> parts;
  ASSERT_TRUE(stream.value()->BuildNext(&parts).ok());
  EXPECT_TRUE(stream.value()->done()) << "every step given is claimed";

  const auto more = [](uint64_t start, uint64_t steps, const std::function<void(v1::WorkMore*)>& change) {
    v1::WorkMore m;
    m.set_start_step(start);
    for (uint64_t step = start; step < start + steps; ++step) {
      v1::WorkStep* w = m.add_work();
      w->set_step(step);
      w->add_slots(3);
      w->add_ids(step * 7);
    }
    change(&m);
    return m;
  };
  const auto same = [](v1::WorkMore*) {};
  const std::vector<std::pair<const char*, v1::WorkMore>> bad = {
      {"a gap before it", more(3, 1, same)},
      {"a step again", more(1, 1, same)},
      {"a slot past the batch", more(2, 1, [](v1::WorkMore* m) { m->mutable_work(0)->set_slots(0, 4); })},
      {"an id past the version", more(2, 1, [](v1::WorkMore* m) { m->mutable_work(0)->set_ids(0, kSamples); })},
      {"past the epoch", more(2, 12, same)},
  };
  for (const auto& [what, m] : bad) {
    const Status s = stream.value()->AddWork(m);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << what << ": " << s.ToString();
    EXPECT_TRUE(stream.value()->done()) << what;
    EXPECT_EQ(stream.value()->end_step(), 2u) << what;
  }
  ASSERT_TRUE(stream.value()->AddWork(more(2, 2, same)).ok());
  EXPECT_EQ(stream.value()->end_step(), 4u);
  for (uint64_t step = 2; step < 4; ++step) {
    const v1::Batch b = NextPart(*stream.value());
    EXPECT_EQ(b.step(), step);
    ASSERT_EQ(b.ids_size(), 1);
    EXPECT_EQ(b.ids(0), step * 7);
    EXPECT_EQ(b.slots(0), 3u);
  }
  EXPECT_TRUE(stream.value()->done());

  auto planning = node_->streams().Open(Request(0, 2, 4));
  ASSERT_TRUE(planning.ok());
  EXPECT_EQ(planning.value()->AddWork(more(0, 1, same)).code(), Code::kInvalidArgument)
      << "a stream that plans takes no work";
}

TEST_F(BatchStreamTest, DamagedRecordIsCorruptionAndNeverSent) {
  auto shards = node_->catalog().ListShards("ds", 1);
  ASSERT_TRUE(shards.ok());
  const std::string path = node_->data_dir().Absolute(shards->front().path());
  {
    // Flip a byte in the middle of the first record's payload.
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(40);
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x5a);
    f.seekp(40);
    f.write(&c, 1);
  }
  const double failures_before = node_->metrics().checksum_failures.Value();
  auto stream = node_->streams().Open(Request(0, 1, kSamples));  // one batch reads every sample
  ASSERT_TRUE(stream.ok());
  std::vector<WirePart> parts;
  Status s = stream.value()->BuildNext(&parts);
  EXPECT_EQ(s.code(), Code::kDataLoss) << s.ToString();
  EXPECT_TRUE(parts.empty()) << "no part of a batch with a damaged record is produced";
  EXPECT_EQ(node_->metrics().checksum_failures.Value(), failures_before + 1);
}

// Streams verify the stratum index a block at a time as they read it: a
// damaged id fails the stream before any batch built from it is produced, and
// once the file is sound again the next stream maps it anew.
TEST_F(BatchStreamTest, DamagedStratumIndexFailsTheStreamUntilRepaired) {
  const std::string path = node_->data_dir().VersionDir("ds", 1) + "/" + kStratumIndexFileName;
  const std::string good = testing::ReadFile(path);
  std::string bytes = good;
  bytes[kStratumIndexHeaderSize + (4 + 1) * 8 + 2 * 8] ^= 0x01;  // the third id (4 strata: 5 offsets)
  testing::WriteFile(path, bytes);
  v1::StreamRequest r = Request(0, 1, 8);
  r.mutable_sampler()->set_kind(v1::SamplerSpec::STRATIFIED);
  auto stream = node_->streams().Open(r);
  ASSERT_TRUE(stream.ok()) << "header, offsets and block sums are sound: " << stream.status().ToString();
  std::vector<WirePart> parts;
  const double failures_before = node_->metrics().checksum_failures.Value();
  const Status s = stream.value()->BuildNext(&parts);
  EXPECT_EQ(s.code(), Code::kDataLoss) << s.ToString();
  EXPECT_EQ(node_->metrics().checksum_failures.Value(), failures_before + 1);
  EXPECT_NE(s.message().find("stratum index"), std::string::npos) << s.ToString();
  EXPECT_TRUE(parts.empty());
  EXPECT_EQ(node_->streams().Open(r).value()->BuildNext(&parts).code(), Code::kDataLoss) << "still damaged";

  testing::WriteFile(path, good);  // as a repair would
  auto repaired = node_->streams().Open(r);
  ASSERT_TRUE(repaired.ok()) << repaired.status().ToString();
  std::set<uint64_t> seen;
  while (!repaired.value()->done()) {
    parts.clear();
    ASSERT_TRUE(repaired.value()->BuildNext(&parts).ok());
    for (const auto& part : parts) {
      for (uint64_t id : part.message().ids()) EXPECT_TRUE(seen.insert(id).second) << id;
    }
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kSamples));
}

TEST_F(BatchStreamTest, JobCursorResumesWhereTheJobLeftOff) {
  auto first = node_->streams().Open(Request(0, 1, 10));
  ASSERT_TRUE(first.ok());
  v1::CursorRecord c;
  c.set_dataset("ds");
  c.set_version(1);
  c.set_seed(11);
  c.set_epoch(0);
  c.set_step(4);
  c.set_spec_hash(first.value()->plan().plan_hash());
  ASSERT_TRUE(node_->catalog().PutCursor("job-a", 0, c).ok());
  v1::StreamRequest r = Request(0, 1, 10);
  r.set_job_id("job-a");
  r.set_resume(true);
  auto resumed = node_->streams().Open(r);
  ASSERT_TRUE(resumed.ok());
  EXPECT_EQ(resumed.value()->next_step(), 4u);
  r.set_seed(12);  // another plan: the cursor does not apply
  auto other = node_->streams().Open(r);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other.value()->next_step(), 0u);
}

// A node whose block cache is far smaller than the dataset: blocks it admits
// are sent from the mapping, the rest are read with pread, and every sample
// still arrives once with its bytes; the cache never holds more than its budget.
TEST(BatchStreamCacheTest, ASmallCacheServesEverySampleOnceAndStaysWithinBudget) {
  TempDir dir;
  NodeConfig config = TestNodeConfig(dir.path());
  config.shard_target_bytes = 4 << 20;
  config.cache_block_bytes = 1 << 20;
  config.cache_bytes = 2 << 20;  // 2 of the ~12 blocks
  config.read_ahead_steps = 3;
  auto node = Server::Open(config);
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  constexpr int kSamples = 1500;
  auto payload = [](int i) { return std::string(8000 + i % 100, static_cast<char>('A' + i % 26)); };
  {
    v1::IngestOptions o;
    o.set_dataset("big");
    auto session = node.value()->ingests().Start(o);
    ASSERT_TRUE(session.ok());
    for (int i = 0; i < kSamples; ++i) {
      ASSERT_TRUE(session.value()->Add(MakeSample("k" + std::to_string(i), "L", payload(i), "bin")).ok());
    }
    ASSERT_TRUE(session.value()->Commit(kSamples).ok());
  }
  v1::StreamRequest r;
  r.set_dataset("big");
  r.set_world(1);
  r.set_batch_size(64);
  r.set_seed(5);
  auto stream = node.value()->streams().Open(r);
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  std::map<uint64_t, int> seen;
  std::vector<WirePart> parts;
  while (!stream.value()->done()) {
    parts.clear();
    ASSERT_TRUE(stream.value()->BuildNext(&parts).ok());
    for (const WirePart& part : parts) {
      const v1::Batch b = part.ToMessage();
      uint64_t offset = 0;
      for (int i = 0; i < b.ids_size(); ++i) {
        ++seen[b.ids(i)];
        ASSERT_EQ(b.payload().substr(offset, b.sizes(i)), payload(static_cast<int>(b.ids(i))));
        offset += b.sizes(i);
      }
    }
    ASSERT_LE(node.value()->blocks().stats().resident_bytes, config.cache_bytes);
  }
  ASSERT_EQ(seen.size(), static_cast<size_t>(kSamples));
  for (const auto& [id, n] : seen) ASSERT_EQ(n, 1) << id;
  stream.value().reset();  // unpins what it planned ahead
  parts.clear();           // the last batch's parts hold its blocks until they are sent
  const BlockCache::Stats s = node.value()->blocks().stats();
  EXPECT_GT(s.hits, 0u);
  EXPECT_GT(s.misses, 0u);  // some records were read around the cache
  EXPECT_EQ(s.pinned_blocks, 0u);
}

// A record of 16 KiB or more is sent from its mapping (gRPC slices pointing
// at it) only where the step reads its block densely, or the record alone is
// large enough to: a 64 KiB record alone in its 2 MiB block is copied into
// the part, so that once the part is serialised nothing holds the block while
// the batch waits for the socket; a 1 MiB record holds its blocks until its
// bytes have left.
TEST(BatchStreamCacheTest, OnlyDenseUsesAreSentFromTheMapping) {
  TempDir dir;
  NodeConfig config = TestNodeConfig(dir.path());
  config.shard_target_bytes = 64 << 20;
  config.cache_bytes = 256 << 20;  // everything fits: what is held is what a use holds
  auto node = Server::Open(config);
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  auto ingest = [&](const std::string& name, int samples, size_t bytes) {
    v1::IngestOptions o;
    o.set_dataset(name);
    auto session = node.value()->ingests().Start(o);
    ASSERT_TRUE(session.ok());
    for (int i = 0; i < samples; ++i) {
      ASSERT_TRUE(session.value()->Add(MakeSample("k" + std::to_string(i), "L", std::string(bytes, 'x'), "bin")).ok());
    }
    ASSERT_TRUE(session.value()->Commit(static_cast<uint64_t>(samples)).ok());
  };
  ingest("sparse", 64, 64 << 10);  // 4 MiB: 32 records to a 2 MiB block
  ingest("dense", 6, 1 << 20);
  for (const std::string name : {"sparse", "dense"}) {
    SCOPED_TRACE(name);
    v1::StreamRequest r;
    r.set_dataset(name);
    r.set_world(1);
    r.set_batch_size(1);  // one record per step
    r.set_seed(3);
    auto stream = node.value()->streams().Open(r);
    ASSERT_TRUE(stream.ok()) << stream.status().ToString();
    std::vector<WirePart> parts;
    ASSERT_TRUE(stream.value()->BuildNext(&parts).ok());
    grpc::ByteBuffer wire = parts.at(0).Serialize();
    parts.clear();
    stream.value().reset();  // unpins the steps it planned ahead
    const uint64_t held = node.value()->blocks().stats().pinned_blocks;
    if (name == "sparse") {
      EXPECT_EQ(held, 0u) << "the sparse record was copied: the serialised batch holds no block";
    } else {
      EXPECT_GT(held, 0u) << "the large record is referenced: its blocks stay until it is sent";
    }
    wire.Clear();
    EXPECT_EQ(node.value()->blocks().stats().pinned_blocks, 0u);
  }
}

}  // namespace
}  // namespace strata
