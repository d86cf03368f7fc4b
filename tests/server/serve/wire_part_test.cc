#include "server/serve/wire_part.h"

#include <grpcpp/support/proto_buffer_reader.h>
#include <gtest/gtest.h>

#include <string>

namespace strata {
namespace {

v1::Batch Parse(const grpc::ByteBuffer& wire) {
  grpc::ByteBuffer copy(wire);
  grpc::ProtoBufferReader reader(&copy);
  v1::Batch b;
  EXPECT_TRUE(b.ParseFromZeroCopyStream(&reader));
  return b;
}

WirePart Part() {
  WirePart p;
  p.message().set_step(7);
  p.message().set_rank(1);
  p.message().add_ids(3);
  p.message().add_ids(9);
  p.message().set_node_id("node-2");
  return p;
}

TEST(WirePartTest, SmallAndLargePiecesParseAsTheWholeBatch) {
  auto small = std::make_shared<std::string>("tiny record");
  auto large = std::make_shared<std::string>(3 * WirePart::kZeroCopyMinBytes + 5, 'L');
  for (size_t i = 0; i < large->size(); ++i) (*large)[i] = static_cast<char>('a' + i % 26);
  WirePart p = Part();
  p.AppendPayload(*small, small);
  p.AppendPayload(*large, large);
  p.AppendPayload(std::string_view(*small).substr(0, 4), small);
  p.AppendPayload(*large, large);
  EXPECT_EQ(p.payload_bytes(), small->size() + 4 + 2 * large->size());

  const grpc::ByteBuffer wire = p.Serialize();
  const v1::Batch parsed = Parse(wire);
  EXPECT_EQ(parsed.SerializeAsString(), p.ToMessage().SerializeAsString());
  EXPECT_EQ(parsed.payload(), *small + *large + "tiny" + *large);
  EXPECT_EQ(parsed.step(), 7u);
  EXPECT_EQ(parsed.node_id(), "node-2");
  ASSERT_EQ(parsed.ids_size(), 2);
  EXPECT_EQ(parsed.ids(1), 9u);
}

TEST(WirePartTest, LargePiecesAreReferencedNotCopied) {
  auto large = std::make_shared<std::string>(WirePart::kZeroCopyMinBytes, 'x');
  std::weak_ptr<std::string> watch = large;
  grpc::ByteBuffer wire;
  {
    WirePart p = Part();
    p.AppendPayload(*large, large);
    wire = p.Serialize();
  }
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(wire.Dump(&slices).ok());
  bool referenced = false;
  for (const grpc::Slice& s : slices) {
    if (reinterpret_cast<const char*>(s.begin()) == large->data()) referenced = true;
  }
  EXPECT_TRUE(referenced) << "the payload slice points at the owner's bytes";
  large.reset();
  EXPECT_FALSE(watch.expired()) << "the buffer keeps the owner alive";
  slices.clear();
  wire.Clear();
  EXPECT_TRUE(watch.expired()) << "and releases it with the last slice";
}

// A piece the caller may not have referenced is copied, whatever its size:
// once Serialize returns, nothing refers to its bytes or holds its owner.
TEST(WirePartTest, PiecesThatMayNotBeReferencedAreCopied) {
  auto large = std::make_shared<std::string>(2 * WirePart::kZeroCopyMinBytes, 'y');
  std::weak_ptr<std::string> watch = large;
  grpc::ByteBuffer wire;
  {
    WirePart p = Part();
    p.AppendPayload(*large, large, /*may_reference=*/false);
    wire = p.Serialize();
  }
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(wire.Dump(&slices).ok());
  for (const grpc::Slice& s : slices) {
    const auto* at = reinterpret_cast<const char*>(s.begin());
    EXPECT_FALSE(at >= large->data() && at < large->data() + large->size());
  }
  EXPECT_EQ(Parse(wire).payload(), *large);
  large.reset();
  EXPECT_TRUE(watch.expired()) << "the buffer holds a copy, not the owner";
}

// Consecutive pieces of one owner keep it once; still, every slice that
// refers to its bytes holds it on its own, and owners taking turns each keep
// theirs.
TEST(WirePartTest, EverySliceHoldsTheOwnerOfItsBytes) {
  const size_t quarter = WirePart::kZeroCopyMinBytes;
  auto make_wire = [&](std::weak_ptr<std::string>* watch_a, std::weak_ptr<std::string>* watch_b, std::string* payload) {
    auto a = std::make_shared<std::string>(4 * quarter, 'a');
    auto b = std::make_shared<std::string>(2 * quarter, 'b');
    *watch_a = a;
    *watch_b = b;
    *payload = *a + *b + "small" + a->substr(0, quarter);
    WirePart p = Part();
    for (size_t i = 0; i < 4; ++i) p.AppendPayload(std::string_view(*a).substr(i * quarter, quarter), a);
    p.AppendPayload(*b, b);
    p.AppendPayload("small", a);  // gathered: holds nothing
    p.AppendPayload(std::string_view(*a).substr(0, quarter), a);
    return p.Serialize();
  };
  std::weak_ptr<std::string> watch_a, watch_b;
  std::string payload;
  std::vector<grpc::Slice> all;
  ASSERT_TRUE(make_wire(&watch_a, &watch_b, &payload).Dump(&all).ok());
  for (size_t keep = 0; keep < all.size(); ++keep) {
    SCOPED_TRACE(keep);
    grpc::ByteBuffer wire = make_wire(&watch_a, &watch_b, &payload);
    EXPECT_EQ(Parse(wire).payload(), payload);
    std::vector<grpc::Slice> slices;
    ASSERT_TRUE(wire.Dump(&slices).ok());
    wire.Clear();
    const grpc::Slice kept = slices[keep];
    slices.clear();
    const auto* at = reinterpret_cast<const char*>(kept.begin());
    const auto within = [&](const std::weak_ptr<std::string>& w) {
      auto s = w.lock();
      return s != nullptr && at >= s->data() && at < s->data() + s->size();
    };
    const bool refers = within(watch_a) || within(watch_b);
    if (kept.size() == quarter || kept.size() == 2 * quarter) {
      EXPECT_TRUE(refers) << "a large piece's slice refers to its owner's bytes, and holds the owner";
    } else {
      EXPECT_TRUE(watch_a.expired() && watch_b.expired()) << "a gathered slice holds no owner";
    }
  }
}

TEST(WirePartTest, AnEmptyPayloadIsAnEmptyField) {
  WirePart p = Part();
  const v1::Batch parsed = Parse(p.Serialize());
  EXPECT_TRUE(parsed.payload().empty());
  EXPECT_EQ(parsed.SerializeAsString(), p.message().SerializeAsString());
}

// Steps joined into one message: each following part parses whole, in
// order, its payload referenced from the same slices.
TEST(WirePartTest, JoinedStepsParseAsFollowingParts) {
  auto large = std::make_shared<std::string>(2 * WirePart::kZeroCopyMinBytes, 'x');
  std::vector<WirePart> parts;
  for (uint64_t step = 7; step < 10; ++step) {
    WirePart& p = parts.emplace_back(Part());
    p.message().set_step(step);
    p.message().set_last_part(true);
    auto small = std::make_shared<std::string>("small-" + std::to_string(step));
    p.AppendPayload(*small, small);
    p.AppendPayload(*large, large);
  }
  grpc::ByteBuffer joined = parts[0].Serialize();
  for (size_t i = 1; i < parts.size(); ++i) joined = WirePart::Follow(joined, parts[i].Serialize());
  v1::Batch parsed = Parse(joined);
  ASSERT_EQ(parsed.following_size(), 2);
  for (size_t i = 0; i < parts.size(); ++i) {
    v1::Batch expect = parts[i].ToMessage();
    const v1::Batch& got = i == 0 ? parsed : parsed.following(static_cast<int>(i - 1));
    EXPECT_EQ(got.step(), 7 + i);
    EXPECT_EQ(got.payload(), "small-" + std::to_string(7 + i) + *large);
    v1::Batch bare = got;
    bare.clear_following();
    EXPECT_EQ(bare.SerializeAsString(), expect.SerializeAsString()) << "step " << 7 + i;
  }
}

}  // namespace
}  // namespace strata
