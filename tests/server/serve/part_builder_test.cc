#include "server/serve/part_builder.h"

#include <grpcpp/support/proto_buffer_reader.h>
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

namespace strata {
namespace {

v1::Batch Parse(const WirePart& part) {
  grpc::ByteBuffer wire = part.Serialize();
  grpc::ProtoBufferReader reader(&wire);
  v1::Batch b;
  EXPECT_TRUE(b.ParseFromZeroCopyStream(&reader));
  return b;
}

v1::Batch Header() {
  v1::Batch h;
  h.set_epoch(2);
  h.set_step(5);
  h.set_rank(1);
  h.set_batch_size(4);
  h.set_plan_hash(99);
  h.set_node_id("node-1");
  return h;
}

// A sample whose payload is `bytes`, with the given field names.
RecordView Sample(uint64_t id, const std::string& bytes, std::vector<std::string_view> names) {
  RecordView v;
  v.id = id;
  v.label = "cat";
  v.stratum = "s";
  v.payload = bytes;
  v.field_names = std::move(names);
  v.field_sizes.assign(v.field_names.size(), 0);
  if (!v.field_sizes.empty()) v.field_sizes[0] = bytes.size();
  return v;
}

TEST(PartBuilderTest, PartsHoldAtMostTheLimitAndOnlyTheLastIsMarked) {
  const v1::Batch header = Header();
  auto bytes = std::make_shared<std::string>(40, 'x');
  std::vector<WirePart> parts;
  PartBuilder b(header, 100, &parts);
  for (uint32_t slot = 0; slot < 5; ++slot) b.Add(slot, 10 + slot, Sample(10 + slot, *bytes, {"jpg"}), bytes);
  b.Finish();
  // 40 + 40 fit in 100, a third would not: parts of 2, 2 and 1 samples.
  ASSERT_EQ(parts.size(), 3u);
  std::vector<uint64_t> ids;
  for (size_t i = 0; i < parts.size(); ++i) {
    const v1::Batch m = Parse(parts[i]);
    EXPECT_EQ(m.ids_size(), i < 2 ? 2 : 1);
    EXPECT_LE(m.payload().size(), 100u);
    EXPECT_EQ(m.last_part(), i == parts.size() - 1);
    EXPECT_EQ(m.step(), 5u);
    EXPECT_EQ(m.epoch(), 2u);
    EXPECT_EQ(m.node_id(), "node-1");
    EXPECT_EQ(m.plan_hash(), 99u);
    for (int k = 0; k < m.ids_size(); ++k) {
      ids.push_back(m.ids(k));
      EXPECT_EQ(m.slots(k), m.ids(k) - 10);
      EXPECT_EQ(m.sizes(k), 40u);
    }
  }
  EXPECT_EQ(ids, (std::vector<uint64_t>{10, 11, 12, 13, 14}));
}

TEST(PartBuilderTest, ASampleOverTheLimitGoesAlone) {
  const v1::Batch header = Header();
  auto small = std::make_shared<std::string>(10, 's');
  auto big = std::make_shared<std::string>(500, 'b');
  std::vector<WirePart> parts;
  PartBuilder b(header, 100, &parts);
  b.Add(0, 1, Sample(1, *small, {"a"}), small);
  b.Add(1, 2, Sample(2, *big, {"a"}), big);
  b.Add(2, 3, Sample(3, *small, {"a"}), small);
  b.Finish();
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(Parse(parts[1]).payload(), *big);
  EXPECT_EQ(Parse(parts[2]).payload(), *small);
}

TEST(PartBuilderTest, SamplesShareALayoutPerDistinctListOfFieldNames) {
  const v1::Batch header = Header();
  auto bytes = std::make_shared<std::string>("payload");
  std::vector<WirePart> parts;
  PartBuilder b(header, 1 << 20, &parts);
  b.Add(0, 1, Sample(1, *bytes, {"jpg", "cls"}), bytes);
  b.Add(1, 2, Sample(2, *bytes, {"png"}), bytes);
  b.Add(2, 3, Sample(3, *bytes, {"jpg", "cls"}), bytes);
  // Same names joined differently must not collide with {"jpg", "cls"}.
  b.Add(3, 4, Sample(4, *bytes, {"jpgcls"}), bytes);
  b.Finish();
  ASSERT_EQ(parts.size(), 1u);
  const v1::Batch m = Parse(parts[0]);
  ASSERT_EQ(m.layouts_size(), 3);
  EXPECT_EQ(std::vector<uint32_t>(m.layout_of().begin(), m.layout_of().end()), (std::vector<uint32_t>{0, 1, 0, 2}));
  EXPECT_EQ(m.layouts(0).names_size(), 2);
  EXPECT_EQ(m.layouts(0).names(1), "cls");
  EXPECT_EQ(m.field_sizes_size(), 2 + 1 + 2 + 1);
  EXPECT_EQ(m.payload(), *bytes + *bytes + *bytes + *bytes);
}

// Labels and strata named once per part (StreamRequest.indexed_labels): each
// part lists its own distinct names, past the few compared one by one too, and
// every sample's index names its own label and stratum.
TEST(PartBuilderTest, IndexedLabelsNameEachDistinctLabelOncePerPart) {
  const v1::Batch header = Header();
  auto bytes = std::make_shared<std::string>(10, 'x');
  std::vector<WirePart> parts;
  PartBuilder b(header, 200, &parts, /*indexed_labels=*/true);
  std::vector<std::string> labels, strata;
  for (uint32_t slot = 0; slot < 40; ++slot) {
    labels.push_back("class-" + std::to_string(slot * 7 % 13));  // 13 labels: past the names compared in turn
    strata.push_back(slot % 3 == 0 ? "rare" : "common");
  }
  for (uint32_t slot = 0; slot < 40; ++slot) {
    RecordView v = Sample(slot, *bytes, {"bin"});
    v.label = labels[slot];
    v.stratum = strata[slot];
    b.Add(slot, slot, v, bytes);
  }
  b.Finish();
  ASSERT_EQ(parts.size(), 2u);  // 20 samples of 10 bytes each
  uint32_t slot = 0;
  for (const WirePart& part : parts) {
    const v1::Batch m = Parse(part);
    EXPECT_EQ(m.labels_size(), 0);
    EXPECT_EQ(m.strata_size(), 0);
    ASSERT_EQ(m.label_index_size(), m.ids_size());
    ASSERT_EQ(m.stratum_index_size(), m.ids_size());
    EXPECT_EQ(m.label_names_size(), 13);
    EXPECT_EQ(m.stratum_names_size(), 2);
    std::set<std::string> distinct(m.label_names().begin(), m.label_names().end());
    EXPECT_EQ(distinct.size(), 13u);
    for (int i = 0; i < m.ids_size(); ++i, ++slot) {
      ASSERT_LT(m.label_index(i), 13u);
      EXPECT_EQ(m.label_names(static_cast<int>(m.label_index(i))), labels[slot]);
      EXPECT_EQ(m.stratum_names(static_cast<int>(m.stratum_index(i))), strata[slot]);
    }
  }
  EXPECT_EQ(slot, 40u);
}

TEST(PartBuilderTest, WithoutIndexedLabelsEverySampleCarriesItsStrings) {
  const v1::Batch header = Header();
  auto bytes = std::make_shared<std::string>("p");
  std::vector<WirePart> parts;
  PartBuilder b(header, 1 << 20, &parts);
  b.Add(0, 1, Sample(1, *bytes, {"bin"}), bytes);
  b.Add(1, 2, Sample(2, *bytes, {"bin"}), bytes);
  b.Finish();
  const v1::Batch m = Parse(parts.at(0));
  EXPECT_EQ(std::vector<std::string>(m.labels().begin(), m.labels().end()), (std::vector<std::string>{"cat", "cat"}));
  EXPECT_EQ(m.strata_size(), 2);
  EXPECT_EQ(m.label_names_size(), 0);
  EXPECT_EQ(m.label_index_size(), 0);
  EXPECT_EQ(m.stratum_index_size(), 0);
}

}  // namespace
}  // namespace strata
