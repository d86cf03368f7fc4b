// ParsePart and PartPayload (client/received_part.h): a part split into its
// fields and its payload, whatever slices gRPC received it in, and batches
// assembled from such parts.
#include "client/received_part.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "client/batch_assembler.h"

namespace strata::client_internal {
namespace {

v1::Batch SamplePart() {
  v1::Batch part;
  part.set_epoch(2);
  part.set_step(7);
  part.set_rank(1);
  part.set_dataset_version(3);
  part.set_steps_in_epoch(10);
  part.set_batch_size(4);
  part.set_node_id("node-2");
  const std::vector<std::string> payloads = {"alpha", "", std::string(300, 'c'), "delta"};
  for (uint32_t i = 0; i < payloads.size(); ++i) {
    part.add_slots(3 - i);
    part.add_ids(100 + i);
    part.add_labels("label-" + std::to_string(i));
    part.add_strata("s" + std::to_string(i % 2));
    part.add_sizes(payloads[i].size());
    part.mutable_payload()->append(payloads[i]);
  }
  v1::Batch& next = *part.add_following();
  next.set_step(8);
  next.set_payload("joined step's own bytes");
  return part;
}

// `bytes` as a gRPC message received in slices of `slice_bytes` each.
grpc::ByteBuffer Received(const std::string& bytes, size_t slice_bytes) {
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < bytes.size(); at += slice_bytes) {
    slices.emplace_back(bytes.data() + at, std::min(slice_bytes, bytes.size() - at));
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

// What ParsePart makes of a message, and the buffers it parses into.
struct Parsed {
  v1::Batch header;
  PartPayload payload;
  std::vector<ReceivedPart> joined;
  std::string scratch;

  // Parses `bytes` received in slices of `slice_bytes` bytes.
  Status Parse(const std::string& bytes, size_t slice_bytes) {
    grpc::ByteBuffer buffer = Received(bytes, slice_bytes);
    return ParsePart(&buffer, &header, &payload, &joined, &scratch);
  }
};

std::string All(const PartPayload& payload) {
  std::string out;
  payload.AppendTo(0, payload.size(), &out);
  return out;
}

TEST(ReceivedPartTest, SplitsAnyPartIntoItsFieldsAndItsPayloadWhateverTheSlices) {
  const v1::Batch part = SamplePart();
  const std::string bytes = part.SerializeAsString();
  v1::Batch expected = part;
  expected.clear_payload();
  expected.clear_following();
  v1::Batch expected_joined = part.following(0);
  expected_joined.clear_payload();
  std::string scratch;
  std::vector<ReceivedPart> joined;
  v1::Batch header;  // reused, as a recycled part is
  for (size_t slice_bytes : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{64}, bytes.size()}) {
    SCOPED_TRACE("slices of " + std::to_string(slice_bytes) + " bytes");
    grpc::ByteBuffer buffer = Received(bytes, slice_bytes);
    PartPayload payload;
    joined.clear();
    ASSERT_TRUE(ParsePart(&buffer, &header, &payload, &joined, &scratch).ok());
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(header, expected)) << header.DebugString();
    EXPECT_FALSE(payload.owning());
    EXPECT_EQ(All(payload), part.payload());
    // The joined step, split the same way from the same slices.
    ASSERT_EQ(joined.size(), 1u);
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(joined[0].fields, expected_joined));
    EXPECT_FALSE(joined[0].payload.owning());
    EXPECT_EQ(All(joined[0].payload), part.following(0).payload());
    // Every range, appended to what a buffer already holds.
    for (uint64_t from = 0; from <= payload.size(); from += 13) {
      for (uint64_t len : {uint64_t{0}, uint64_t{1}, uint64_t{40}, payload.size() - from}) {
        if (from + len > payload.size()) continue;
        std::string out = "x";
        payload.AppendTo(from, len, &out);
        EXPECT_EQ(out, "x" + part.payload().substr(from, len));
      }
    }
  }
}

TEST(ReceivedPartTest, APayloadAnywhereCountsAndTheLastOneGivenWins) {
  v1::Batch first;
  first.set_payload("first");
  v1::Batch rest = SamplePart();
  rest.clear_payload();
  v1::Batch last;
  last.set_payload("last");
  // Fields of one message may come in any order and repeat: payload first,
  // then the other fields, then the payload again.
  const std::string bytes = first.SerializeAsString() + rest.SerializeAsString() + last.SerializeAsString();
  Parsed p;
  ASSERT_TRUE(p.Parse(bytes, 5).ok());
  ASSERT_EQ(p.joined.size(), 1u);
  rest.clear_following();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(p.header, rest));
  EXPECT_EQ(All(p.payload), "last");
  v1::Batch protobuf_says;
  ASSERT_TRUE(protobuf_says.ParseFromString(bytes));
  EXPECT_EQ(protobuf_says.payload(), "last");
}

TEST(ReceivedPartTest, AnEmptyMessageIsAnEmptyPart) {
  Parsed p;
  p.header = SamplePart();  // what a recycled part held goes
  ASSERT_TRUE(p.Parse("", 1).ok());
  EXPECT_EQ(p.header.ByteSizeLong(), 0u);
  EXPECT_EQ(p.payload.size(), 0u);
  EXPECT_TRUE(p.joined.empty());
}

TEST(ReceivedPartTest, StepsJoinedIntoAJoinedStepAreLeftInItsFields) {
  v1::Batch part = SamplePart();
  v1::Batch* inner = part.mutable_following(0)->add_following();
  inner->set_step(9);
  inner->set_payload("deeper");
  Parsed p;
  ASSERT_TRUE(p.Parse(part.SerializeAsString(), 4).ok());
  ASSERT_EQ(p.joined.size(), 1u);
  ASSERT_EQ(p.joined[0].fields.following_size(), 1);  // which the reader refuses
  EXPECT_EQ(p.joined[0].fields.following(0).payload(), "deeper");
  EXPECT_EQ(All(p.joined[0].payload), "joined step's own bytes");
}

TEST(ReceivedPartTest, RefusesBytesThatAreNotABatch) {
  const std::string bytes = SamplePart().SerializeAsString();
  const std::string bad_utf8 = std::string("\x4a\x02\xc3\x28", 4);  // labels = an invalid UTF-8 sequence
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"truncated tag", std::string("\x80", 1)},
      {"field number 0", std::string("\x00\x01", 2)},
      {"a start-group wire type", std::string("\x0b", 1)},
      {"an end-group wire type", std::string("\x0c", 1)},
      {"wire type 6", std::string("\x0e", 1)},
      {"truncated varint", std::string("\x08\x80", 2)},
      {"varint past 64 bits", std::string("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", 11)},
      {"tag past 32 bits", std::string("\x80\x80\x80\x80\x10\x00", 6)},
      {"truncated fixed64", std::string("\x09\x01\x02", 3)},
      {"truncated fixed32", std::string("\x0d\x01", 2)},
      {"payload past the end", std::string("\x7a\x05"
                                           "abc",
                                           5)},
      {"length past 2 GiB", std::string("\x7a\xff\xff\xff\xff\x0f", 6)},
      // Protobuf reads a tag or a length in at most 5 bytes: a payload's,
      // which protobuf never sees, too.
      {"a payload's tag in 6 bytes", std::string("\xfa\x80\x80\x80\x80\x00\x01"
                                                 "A",
                                                 8)},
      {"a payload's length in 7 bytes", std::string("\x7a\x81\x80\x80\x80\x80\x00"
                                                    "A",
                                                    8)},
      {"a joined step's length in 6 bytes", std::string("\x9a\x01\x80\x80\x80\x80\x80\x00", 8)},
      {"a part cut short", bytes.substr(0, bytes.size() - 1)},
      {"a joined step cut short", std::string("\x9a\x01\x02\x10", 4)},
      {"invalid UTF-8 in a joined step", std::string("\x9a\x01\x04", 3) + bad_utf8},
      {"invalid UTF-8 in a string field", bad_utf8},
  };
  for (const auto& [what, input] : cases) {
    SCOPED_TRACE(what);
    Parsed p;
    p.payload = PartPayload::Owning("kept");
    const Status s = p.Parse(input, 2);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
    EXPECT_EQ(All(p.payload), "kept");  // unchanged
  }
}

// Protobuf parsing the whole message counts a joined step as one level of
// nesting: a part it refuses as nested too deeply is refused, one level less
// is not.
TEST(ReceivedPartTest, RefusesWhatProtobufRefusesAsNestedTooDeeply) {
  const auto nested = [](int levels) {  // `levels` joined steps, each inside the one before
    v1::Batch part;
    v1::Batch* at = &part;
    for (int i = 0; i < levels; ++i) at = at->add_following();
    at->set_payload("innermost");
    return part.SerializeAsString();
  };
  int refused = 1;
  while (v1::Batch().ParseFromString(nested(refused))) ++refused;
  ASSERT_GT(refused, 2);
  Parsed deepest;
  ASSERT_TRUE(deepest.Parse(nested(refused - 1), 7).ok());
  ASSERT_EQ(deepest.joined.size(), 1u);
  EXPECT_EQ(deepest.joined[0].fields.following_size(), 1);
  Parsed too_deep;
  EXPECT_EQ(too_deep.Parse(nested(refused), 7).code(), Code::kInvalidArgument);
}

// Assembly from received parts: each byte lands in slot order, copied once
// from the received slices, and a part sent again after a failover adds only
// the samples still missing.
TEST(ReceivedPartTest, BatchesAssembleFromReceivedParts) {
  auto make = [](std::vector<std::pair<uint32_t, std::string>> samples) {
    v1::Batch part;
    part.set_batch_size(4);
    for (const auto& [slot, bytes] : samples) {
      part.add_slots(slot);
      part.add_ids(slot);
      part.add_labels("l");
      part.add_sizes(bytes.size());
      part.mutable_payload()->append(bytes);
    }
    return part.SerializeAsString();
  };
  std::string scratch;
  std::vector<ReceivedPart> joined;
  auto receive = [&](const std::string& bytes, v1::Batch* header, PartPayload* payload) {
    grpc::ByteBuffer buffer = Received(bytes, 3);
    ASSERT_TRUE(ParsePart(&buffer, header, payload, &joined, &scratch).ok());
  };

  Batch batch;
  BatchAssembler::Reset(&batch, 0, 0, 0, 1, 1, 4);
  v1::Batch header;
  PartPayload payload;
  receive(make({{2, "CCC"}, {0, "A"}}), &header, &payload);
  ASSERT_TRUE(BatchAssembler::AddPart(&batch, &header, &payload));
  EXPECT_FALSE(BatchAssembler::Complete(batch));
  // The same part again (a failover resends it) and the missing slots.
  receive(make({{2, "CCC"}, {3, "DDDD"}, {0, "A"}, {1, "BB"}}), &header, &payload);
  BatchAssembler::DropFilled(batch, &header, &payload);
  EXPECT_EQ(header.slots_size(), 2);
  ASSERT_TRUE(BatchAssembler::AddPart(&batch, &header, &payload));
  ASSERT_TRUE(BatchAssembler::Complete(batch));
  EXPECT_EQ(batch.payload(), "ABBCCCDDDD");
  EXPECT_EQ(batch.offsets(), (std::vector<uint64_t>{0, 1, 3, 6}));
  EXPECT_EQ(batch.sample(3), "DDDD");

  // One part, whole and in slot order: copied into the batch's own buffer,
  // which keeps its capacity from batch to batch.
  const std::string big(5000, 'z');
  receive(make({{0, "a"}, {1, big}, {2, "c"}, {3, ""}}), &header, &payload);
  BatchAssembler::Reset(&batch, 0, 1, 0, 1, 1, 4);
  ASSERT_TRUE(BatchAssembler::AddPart(&batch, &header, &payload));
  ASSERT_TRUE(BatchAssembler::Complete(batch));
  EXPECT_EQ(batch.payload(), "a" + big + "c");
  EXPECT_EQ(batch.sample(1), big);
  const char* buffer = batch.payload_buffer().data();
  receive(make({{0, "b"}, {1, ""}, {2, big}, {3, "d"}}), &header, &payload);
  BatchAssembler::Reset(&batch, 0, 2, 0, 1, 1, 4);
  ASSERT_TRUE(BatchAssembler::AddPart(&batch, &header, &payload));
  EXPECT_EQ(batch.payload(), "b" + big + "d");
  EXPECT_EQ(batch.payload_buffer().data(), buffer);
}

}  // namespace
}  // namespace strata::client_internal
