// The staging ring on host memory: order, reuse of buffers, prefetch depth,
// errors, cancellation and the lifetime of held batches. Runs everywhere;
// prefer_device = false keeps it on the host on a GPU machine too.
#include "strata/staging.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "tests/client/fake_stream.h"

namespace strata {
namespace {

using testing::FakePayload;
using testing::FakeStream;

StagingOptions HostOptions(int depth = 2) {
  StagingOptions o;
  o.prefetch_depth = depth;
  o.prefer_device = false;
  return o;
}

struct Opened {
  std::unique_ptr<StagedStream> staged;
  FakeStream* fake;  // owned by staged
};

Opened Open(FakeStream::Options fo, const StagingOptions& so) {
  auto fake = std::make_unique<FakeStream>(std::move(fo));
  FakeStream* raw = fake.get();
  auto staged = StagedStream::Open(std::move(fake), so);
  EXPECT_TRUE(staged.ok()) << staged.status().ToString();
  return {staged.ok() ? std::move(staged).value() : nullptr, raw};
}

// The staged payload of sample `i` equals what the fake sent.
void ExpectPayload(const StagedBatch& b, uint32_t i) {
  const Batch& batch = b.batch();
  const std::string expected = FakePayload(batch.step(), i, batch.sizes()[i]);
  ASSERT_EQ(0, std::memcmp(b.data() + batch.offsets()[i], expected.data(), expected.size()));
}

// Polls `pred` for up to 5 s.
template <typename Pred>
bool Eventually(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return pred();
}

TEST(StagingTest, DeliversEveryBatchInOrderOnHostMemory) {
  auto [staged, fake] = Open({.steps = 20, .batch_size = 5}, HostOptions());
  EXPECT_EQ(staged->memory(), StagingMemory::kHost);
  EXPECT_EQ(staged->device(), -1);
  EXPECT_NE(staged->description().find("host memory"), std::string::npos);
  StagedBatch b;
  for (uint64_t step = 0; step < 20; ++step) {
    ASSERT_TRUE(staged->Next(&b).ok());
    ASSERT_TRUE(b.valid());
    EXPECT_EQ(b.batch().step(), step);
    EXPECT_EQ(b.memory(), StagingMemory::kHost);
    EXPECT_EQ(b.data(), b.host_data());
    EXPECT_EQ(b.bytes(), b.batch().payload_bytes());
    EXPECT_EQ(b.ready_event(), nullptr);
    EXPECT_TRUE(b.Wait().ok());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 256, 0u);
    for (uint32_t i = 0; i < 5; ++i) {
      EXPECT_EQ(b.batch().ids()[i], step * 5 + i);
      ExpectPayload(b, i);
    }
  }
  const Status end = staged->Next(&b);
  EXPECT_EQ(end.code(), Code::kOutOfRange) << end.ToString();
  EXPECT_FALSE(b.valid());
  EXPECT_EQ(staged->Next(&b), end);  // and keeps saying so
}

TEST(StagingTest, ReusesBuffersInsteadOfAllocatingPerBatch) {
  constexpr int depth = 2;
  auto [staged, fake] = Open({.steps = 100, .batch_size = 8}, HostOptions(depth));
  std::set<const std::byte*> buffers;
  StagedBatch b;
  ASSERT_TRUE(staged->Next(&b).ok());
  buffers.insert(b.data());
  // Let the ring fill: one batch held, `depth` staged ahead of it.
  ASSERT_TRUE(Eventually([f = fake] { return f->calls().load() == 1u + depth; }));
  while (staged->Next(&b).ok()) buffers.insert(b.data());
  EXPECT_EQ(staged->slots(), static_cast<size_t>(depth + 1));
  EXPECT_EQ(buffers.size(), static_cast<size_t>(depth + 1));
  EXPECT_EQ(staged->buffer_allocations(), static_cast<uint64_t>(depth + 1));
}

TEST(StagingTest, ALargerBatchGrowsItsSlotOnceThenReusesIt) {
  FakeStream::Options fo{.steps = 60, .batch_size = 4};
  fo.sample_bytes = [](uint64_t step) { return step < 20 ? size_t{1000} : size_t{50000}; };
  StagingOptions so = HostOptions(2);
  auto [staged, fake] = Open(fo, so);
  StagedBatch b;
  uint64_t n = 0;
  ASSERT_TRUE(staged->Next(&b).ok());
  ++n;
  ASSERT_TRUE(Eventually([f = fake] { return f->calls().load() == 3; }));  // all 3 slots filled at 4000 bytes
  while (staged->Next(&b).ok()) {
    ExpectPayload(b, 3);
    ++n;
  }
  EXPECT_EQ(n, 60u);
  EXPECT_EQ(staged->slots(), 3u);
  EXPECT_EQ(staged->buffer_allocations(), 2u * staged->slots());  // each slot: first fill, one grow
}

TEST(StagingTest, MaxBatchBytesSizesBuffersUpFront) {
  FakeStream::Options fo{.steps = 30, .batch_size = 4};
  fo.sample_bytes = [](uint64_t step) { return size_t{1000} * (1 + step % 7); };
  StagingOptions so = HostOptions(2);
  so.max_batch_bytes = 64 * 1024;
  auto [staged, fake] = Open(fo, so);
  StagedBatch b;
  while (staged->Next(&b).ok()) ExpectPayload(b, 0);
  // Never grown: at most one allocation per slot (a slot the ring never
  // needed, because the caller kept up, has none).
  EXPECT_GE(staged->buffer_allocations(), 1u);
  EXPECT_LE(staged->buffer_allocations(), staged->slots());
}

TEST(StagingTest, LargeBatchesCopiedBySeveralThreadsArriveIntact) {
  // Payloads from 4 KB (one piece) to about 5 MB (pieces on every thread),
  // none a multiple of the piece alignment.
  FakeStream::Options fo{.steps = 24, .batch_size = 3};
  fo.sample_bytes = [](uint64_t step) { return step % 4 == 0 ? size_t{1333} : size_t{1700001} + step * 4099; };
  StagingOptions so = HostOptions(2);
  so.copy_threads = 3;
  auto [staged, fake] = Open(fo, so);
  StagedBatch b;
  uint64_t n = 0;
  while (staged->Next(&b).ok()) {
    EXPECT_EQ(b.bytes(), b.batch().payload_bytes());
    for (uint32_t i = 0; i < 3; ++i) ExpectPayload(b, i);
    ++n;
  }
  EXPECT_EQ(n, 24u);
}

TEST(StagingTest, StagesExactlyPrefetchDepthAhead) {
  for (int depth : {1, 2, 4}) {
    auto [staged, fake] = Open({.steps = 50}, HostOptions(depth));
    StagedBatch b;
    ASSERT_TRUE(staged->Next(&b).ok());
    // The held batch plus `depth` more, and no further while the caller holds on.
    const uint64_t expected = 1 + static_cast<uint64_t>(depth);
    EXPECT_TRUE(Eventually([f = fake, expected] { return f->calls().load() == expected; })) << fake->calls().load();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(fake->calls().load(), expected) << "depth " << depth;
    ASSERT_TRUE(staged->Next(&b).ok());
    EXPECT_TRUE(Eventually([f = fake, expected] { return f->calls().load() == expected + 1; }));
  }
}

TEST(StagingTest, ErrorsArriveAfterTheBatchesStagedBeforeThem) {
  auto [staged, fake] =
      Open({.steps = 10, .fail_at = 4, .failure = Status::Unavailable("server gone")}, HostOptions(3));
  StagedBatch b;
  for (uint64_t step = 0; step < 4; ++step) {
    ASSERT_TRUE(staged->Next(&b).ok());
    EXPECT_EQ(b.batch().step(), step);
  }
  const Status s = staged->Next(&b);
  EXPECT_EQ(s.code(), Code::kUnavailable);
  EXPECT_EQ(s.message(), "server gone");
  EXPECT_FALSE(b.valid());
  EXPECT_EQ(staged->Next(&b), s);
}

TEST(StagingTest, CancelUnblocksAWaitingNext) {
  auto [staged, fake] = Open({.steps = 10, .block_at = 2}, HostOptions());
  StagedBatch b;
  ASSERT_TRUE(staged->Next(&b).ok());
  ASSERT_TRUE(staged->Next(&b).ok());
  Status blocked;
  std::thread consumer([&, s = staged.get()] {
    StagedBatch c;
    blocked = s->Next(&c);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  staged->Cancel();
  consumer.join();
  EXPECT_EQ(blocked.code(), Code::kCancelled);
}

TEST(StagingTest, DestroyingTheStreamStopsAProducerBlockedInNext) {
  auto [staged, fake] = Open({.steps = 10, .block_at = 0}, HostOptions());
  EXPECT_TRUE(Eventually([f = fake] { return f->calls().load() == 1; }));
  staged.reset();  // joins the producer: returns only if the inner stream was cancelled
  SUCCEED();
}

TEST(StagingTest, AHeldBatchOutlivesItsStream) {
  auto [staged, fake] = Open({.steps = 5, .batch_size = 3}, HostOptions());
  StagedBatch b;
  ASSERT_TRUE(staged->Next(&b).ok());
  ASSERT_TRUE(staged->Next(&b).ok());
  staged.reset();
  ASSERT_TRUE(b.valid());
  EXPECT_EQ(b.batch().step(), 1u);
  for (uint32_t i = 0; i < 3; ++i) ExpectPayload(b, i);
  b.Release();
  EXPECT_FALSE(b.valid());
}

TEST(StagingTest, HoldingManyBatchesAddsSlotsAndKeepsEachIntact) {
  auto [staged, fake] = Open({.steps = 12, .batch_size = 2}, HostOptions(2));
  std::vector<StagedBatch> held(8);
  for (auto& b : held) ASSERT_TRUE(staged->Next(&b).ok());
  std::set<const std::byte*> buffers;
  for (uint64_t k = 0; k < held.size(); ++k) {
    EXPECT_EQ(held[k].batch().step(), k);
    ExpectPayload(held[k], 0);
    ExpectPayload(held[k], 1);
    buffers.insert(held[k].data());
  }
  EXPECT_EQ(buffers.size(), held.size());
  EXPECT_GE(staged->slots(), held.size());
  EXPECT_LE(staged->slots(), held.size() + 2);
  held.clear();  // released: the rest of the epoch reuses them
  StagedBatch b;
  uint64_t rest = 0;
  while (staged->Next(&b).ok()) ++rest;
  EXPECT_EQ(rest, 4u);
}

TEST(StagingTest, ResumeTokenFollowsTheCallerNotThePrefetch) {
  auto [staged, fake] = Open({.steps = 10}, HostOptions(4));
  EXPECT_EQ(staged->resume_token().step, 0u);
  StagedBatch b;
  for (uint64_t k = 1; k <= 3; ++k) {
    ASSERT_TRUE(staged->Next(&b).ok());
    EXPECT_EQ(staged->resume_token().step, k);
    EXPECT_EQ(staged->resume_token().dataset, "fake");
    EXPECT_EQ(staged->resume_token().plan_hash, 0x1234u);
  }
  EXPECT_TRUE(Eventually([f = fake] { return f->calls().load() == 7; }));  // producer is ahead
  EXPECT_EQ(staged->resume_token().step, 3u);
  EXPECT_EQ(staged->steps_in_epoch(), 10u);
}

TEST(StagingTest, EmptyPayloadsAreStaged) {
  FakeStream::Options fo{.steps = 3, .batch_size = 2};
  fo.sample_bytes = [](uint64_t) { return size_t{0}; };
  auto [staged, fake] = Open(fo, HostOptions());
  StagedBatch b;
  for (int k = 0; k < 3; ++k) {
    ASSERT_TRUE(staged->Next(&b).ok());
    EXPECT_EQ(b.bytes(), 0u);
    EXPECT_EQ(b.batch().size(), 2u);
  }
}

TEST(StagingTest, RejectsBadOptions) {
  StagingOptions o = HostOptions(0);
  EXPECT_EQ(StagedStream::Open(std::make_unique<FakeStream>(FakeStream::Options{}), o).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(StagedStream::Open(nullptr, HostOptions()).status().code(), Code::kInvalidArgument);
  for (int threads : {-1, 65}) {
    o = HostOptions();
    o.copy_threads = threads;
    const Status s = StagedStream::Open(std::make_unique<FakeStream>(FakeStream::Options{}), o).status();
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << threads;
    EXPECT_NE(s.message().find("copy threads"), std::string::npos) << s.ToString();
  }
}

TEST(StagingTest, ProbeNamesThePathAndFallsBackToHost) {
  std::string description;
  EXPECT_EQ(StagedStream::Probe(HostOptions(), &description), StagingMemory::kHost);
  EXPECT_EQ(description, "host memory (prefer_device is off)");
  // Default options: the device when this machine has one, else host memory
  // with the reason, and never a failure.
  StagingOptions defaults;
  const StagingMemory memory = StagedStream::Probe(defaults, &description);
  auto [staged, fake] = Open({.steps = 2}, defaults);
  ASSERT_NE(staged, nullptr);
  EXPECT_EQ(staged->memory(), memory);
  EXPECT_EQ(staged->description(), description);
  if (memory == StagingMemory::kHost) {
    EXPECT_EQ(description.rfind("host memory (", 0), 0u) << description;
  }
  StagedBatch b;
  EXPECT_TRUE(staged->Next(&b).ok());
  EXPECT_TRUE(b.Wait().ok());
}

}  // namespace
}  // namespace strata
