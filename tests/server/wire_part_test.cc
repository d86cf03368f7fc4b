#include "server/wire_part.h"

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

TEST(WirePartTest, AnEmptyPayloadIsAnEmptyField) {
  WirePart p = Part();
  const v1::Batch parsed = Parse(p.Serialize());
  EXPECT_TRUE(parsed.payload().empty());
  EXPECT_EQ(parsed.SerializeAsString(), p.message().SerializeAsString());
}

}  // namespace
}  // namespace strata
