// Batch assembly (client/batch_assembler.h) and the Batch accessors it fills.
#include "strata/batch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "client/batch_assembler.h"
#include "strata/v1/data.pb.h"

namespace strata {
namespace {

using client_internal::BatchAssembler;

// One sample of a part: where it goes and what it holds.
struct PartSample {
  uint32_t slot;
  uint64_t id;
  std::string label;
  std::string payload;
};

v1::Batch MakePart(uint32_t batch_size, const std::vector<PartSample>& samples, uint64_t step = 7) {
  v1::Batch part;
  part.set_epoch(2);
  part.set_step(step);
  part.set_rank(1);
  part.set_dataset_version(3);
  part.set_steps_in_epoch(10);
  part.set_batch_size(batch_size);
  for (const PartSample& s : samples) {
    part.add_slots(s.slot);
    part.add_ids(s.id);
    part.add_labels(s.label);
    part.add_strata("stratum-" + s.label);
    part.add_sizes(s.payload.size());
    part.mutable_payload()->append(s.payload);
  }
  return part;
}

void ResetFor(Batch* batch, size_t size) { BatchAssembler::Reset(batch, 2, 7, 1, 3, 10, size); }

TEST(BatchTest, OneInOrderPartIsTakenWholeWithoutCopy) {
  const std::string big(1000, 'z');  // beyond the small-string buffer, so a swap moves the heap block
  v1::Batch part = MakePart(3, {{0, 10, "cat", "aaa"}, {1, 11, "dog", "b"}, {2, 12, "cat", "cc" + big}});
  const char* payload_data = part.payload().data();
  Batch batch;
  ResetFor(&batch, 3);
  EXPECT_FALSE(BatchAssembler::Complete(batch));
  ASSERT_TRUE(BatchAssembler::AddPart(&batch, &part));
  ASSERT_TRUE(BatchAssembler::Complete(batch));
  EXPECT_EQ(batch.payload_buffer().data(), payload_data);  // swapped, not copied
  EXPECT_EQ(batch.payload(), "aaabcc" + big);
  EXPECT_EQ(batch.ids(), (std::vector<uint64_t>{10, 11, 12}));
  EXPECT_EQ(batch.labels(), (std::vector<std::string>{"cat", "dog", "cat"}));
  EXPECT_EQ(batch.strata()[1], "stratum-dog");
  EXPECT_EQ(batch.offsets(), (std::vector<uint64_t>{0, 3, 4}));
  EXPECT_EQ(batch.sample(0), "aaa");
  EXPECT_EQ(batch.sample(2), "cc" + big);
  EXPECT_EQ(batch.epoch(), 2u);
  EXPECT_EQ(batch.step(), 7u);
  EXPECT_EQ(batch.rank(), 1u);
  EXPECT_EQ(batch.dataset_version(), 3u);
  EXPECT_EQ(batch.steps_in_epoch(), 10u);
  EXPECT_EQ(batch.payload_bytes(), 1006u);
  EXPECT_TRUE(batch.field_names(0).empty());
  EXPECT_TRUE(batch.field(0, "jpg").empty());
}

TEST(BatchTest, PartsInScrambledSlotOrderAssembleInSlotOrder) {
  v1::Batch first = MakePart(5, {{3, 13, "d", "DDDD"}, {0, 10, "a", "A"}});
  v1::Batch second = MakePart(5, {{4, 14, "e", "EEEEE"}, {2, 12, "c", "CCC"}, {1, 11, "b", "BB"}});
  Batch batch;
  ResetFor(&batch, 5);
  ASSERT_TRUE(BatchAssembler::AddPart(&batch, &first));
  EXPECT_FALSE(BatchAssembler::Complete(batch));
  ASSERT_TRUE(BatchAssembler::AddPart(&batch, &second));
  ASSERT_TRUE(BatchAssembler::Complete(batch));
  EXPECT_EQ(batch.payload(), "ABBCCCDDDDEEEEE");
  EXPECT_EQ(batch.ids(), (std::vector<uint64_t>{10, 11, 12, 13, 14}));
  EXPECT_EQ(batch.labels(), (std::vector<std::string>{"a", "b", "c", "d", "e"}));
  EXPECT_EQ(batch.offsets(), (std::vector<uint64_t>{0, 1, 3, 6, 10}));
  for (size_t i = 0; i < batch.size(); ++i) EXPECT_EQ(batch.sample(i), std::string(i + 1, static_cast<char>('A' + i)));
}

TEST(BatchTest, OneOutOfOrderPartIsAssembled) {
  v1::Batch part = MakePart(2, {{1, 11, "b", "bb"}, {0, 10, "a", "a"}});
  Batch batch;
  ResetFor(&batch, 2);
  ASSERT_TRUE(BatchAssembler::AddPart(&batch, &part));
  ASSERT_TRUE(BatchAssembler::Complete(batch));
  EXPECT_EQ(batch.payload(), "abb");
  EXPECT_EQ(batch.sample(1), "bb");
}

// Parts with their own layout lists, in different orders: fields are found by
// name in every sample.
TEST(BatchTest, MultiFieldLayoutsAcrossParts) {
  v1::Batch first = MakePart(3, {{2, 12, "x", "JPG2cls2"}});
  first.add_layouts()->add_names("jpg");
  first.mutable_layouts(0)->add_names("cls");
  first.add_layout_of(0);
  first.add_field_sizes(4);
  first.add_field_sizes(4);

  v1::Batch second = MakePart(3, {{0, 10, "y", "c0J0"}, {1, 11, "y", "only1"}});
  second.add_layouts()->add_names("txt");
  second.add_layouts()->add_names("cls");
  second.mutable_layouts(1)->add_names("jpg");
  second.add_layout_of(1);
  second.add_layout_of(0);
  second.add_field_sizes(2);  // sample slot 0: cls, jpg
  second.add_field_sizes(2);
  second.add_field_sizes(5);  // sample slot 1: txt

  Batch batch;
  ResetFor(&batch, 3);
  ASSERT_TRUE(BatchAssembler::AddPart(&batch, &first));
  ASSERT_TRUE(BatchAssembler::AddPart(&batch, &second));
  ASSERT_TRUE(BatchAssembler::Complete(batch));
  EXPECT_EQ(batch.payload(), "c0J0only1JPG2cls2");

  ASSERT_EQ(batch.field_names(0).size(), 2u);
  EXPECT_EQ(batch.field_names(0)[0], "cls");
  EXPECT_EQ(batch.field_names(0)[1], "jpg");
  EXPECT_EQ(batch.field(0, "cls"), "c0");
  EXPECT_EQ(batch.field(0, "jpg"), "J0");
  EXPECT_EQ(batch.field(1, "txt"), "only1");
  EXPECT_TRUE(batch.field(1, "jpg").empty());
  EXPECT_EQ(batch.field_names(2)[0], "jpg");
  EXPECT_EQ(batch.field(2, "jpg"), "JPG2");
  EXPECT_EQ(batch.field(2, "cls"), "cls2");
}

TEST(BatchTest, EmptyBatchIsCompleteAtOnce) {
  Batch batch;
  ResetFor(&batch, 0);
  EXPECT_TRUE(BatchAssembler::Complete(batch));
  EXPECT_TRUE(batch.empty());
  v1::Batch part = MakePart(0, {});
  EXPECT_TRUE(BatchAssembler::AddPart(&batch, &part));
  EXPECT_TRUE(BatchAssembler::Complete(batch));
  EXPECT_EQ(batch.payload_bytes(), 0u);
}

TEST(BatchTest, ResetClearsAPreviousBatch) {
  Batch batch;
  ResetFor(&batch, 2);
  v1::Batch part = MakePart(2, {{0, 1, "a", "xx"}, {1, 2, "b", "y"}});
  ASSERT_TRUE(BatchAssembler::AddPart(&batch, &part));
  ResetFor(&batch, 1);
  EXPECT_FALSE(BatchAssembler::Complete(batch));
  EXPECT_EQ(batch.size(), 1u);
  EXPECT_TRUE(batch.payload().empty());
  v1::Batch next = MakePart(1, {{0, 9, "c", "z"}});
  ASSERT_TRUE(BatchAssembler::AddPart(&batch, &next));
  EXPECT_EQ(batch.payload(), "z");
  EXPECT_EQ(batch.ids(), (std::vector<uint64_t>{9}));
}

// A refused part leaves the batch as it was: the right parts still complete it.
void ExpectRefused(v1::Batch bad) {
  Batch batch;
  ResetFor(&batch, 3);
  v1::Batch good = MakePart(3, {{1, 11, "b", "bb"}});
  ASSERT_TRUE(BatchAssembler::AddPart(&batch, &good));
  EXPECT_FALSE(BatchAssembler::AddPart(&batch, &bad));
  v1::Batch rest = MakePart(3, {{0, 10, "a", "a"}, {2, 12, "c", "ccc"}});
  ASSERT_TRUE(BatchAssembler::AddPart(&batch, &rest));
  EXPECT_TRUE(BatchAssembler::Complete(batch));
  EXPECT_EQ(batch.payload(), "abbccc");
}

TEST(BatchTest, RefusesSlotOutOfRange) { ExpectRefused(MakePart(3, {{3, 13, "d", "d"}})); }

TEST(BatchTest, RefusesSlotAlreadyFilled) { ExpectRefused(MakePart(3, {{0, 10, "a", "a"}, {1, 11, "b", "bb"}})); }

TEST(BatchTest, RefusesSlotTwiceInOnePart) { ExpectRefused(MakePart(3, {{0, 10, "a", "a"}, {0, 10, "a", "a"}})); }

TEST(BatchTest, RefusesSizesThatDoNotSumToThePayload) {
  v1::Batch longer = MakePart(3, {{0, 10, "a", "a"}});
  longer.mutable_payload()->append("extra");
  ExpectRefused(longer);
  v1::Batch shorter = MakePart(3, {{0, 10, "a", "aaa"}});
  shorter.mutable_payload()->resize(1);
  ExpectRefused(shorter);
  v1::Batch overflow = MakePart(3, {{0, 10, "a", "a"}, {2, 12, "c", "c"}});
  overflow.set_sizes(0, ~uint64_t{0});  // wraps around to the payload size if summed carelessly
  overflow.set_sizes(1, 3);
  ExpectRefused(overflow);
}

TEST(BatchTest, RefusesMismatchedArrayLengths) {
  v1::Batch ids = MakePart(3, {{0, 10, "a", "a"}});
  ids.add_ids(99);
  ExpectRefused(ids);
  v1::Batch labels = MakePart(3, {{0, 10, "a", "a"}});
  labels.clear_labels();
  ExpectRefused(labels);
  v1::Batch strata = MakePart(3, {{0, 10, "a", "a"}, {2, 12, "c", "ccc"}});
  strata.mutable_strata()->RemoveLast();
  ExpectRefused(strata);
  v1::Batch layout_of = MakePart(3, {{0, 10, "a", "a"}});
  layout_of.add_layouts()->add_names("bin");
  layout_of.add_layout_of(0);
  layout_of.add_layout_of(0);
  layout_of.add_field_sizes(1);
  ExpectRefused(layout_of);
}

TEST(BatchTest, RefusesFieldSizesThatDoNotMatchTheLayout) {
  auto with_fields = [](std::vector<uint64_t> field_sizes, uint32_t layout) {
    v1::Batch part = MakePart(3, {{0, 10, "a", "abc"}});
    part.add_layouts()->add_names("x");
    part.mutable_layouts(0)->add_names("y");
    part.add_layout_of(layout);
    for (uint64_t f : field_sizes) part.add_field_sizes(f);
    return part;
  };
  ExpectRefused(with_fields({1, 1}, 0));     // sums to 2, not 3
  ExpectRefused(with_fields({3}, 0));        // one size for two fields
  ExpectRefused(with_fields({1, 2, 0}, 0));  // one size too many
  ExpectRefused(with_fields({1, 2}, 1));     // no layout 1
  v1::Batch no_layout = MakePart(3, {{0, 10, "a", "a"}});
  no_layout.add_field_sizes(1);  // field sizes without layout_of
  ExpectRefused(no_layout);
}

// `part` with its labels and strata named once (as a server sends them to a
// client that asks: StreamRequest.indexed_labels).
v1::Batch Indexed(const v1::Batch& part) {
  v1::Batch out = part;
  out.clear_labels();
  out.clear_strata();
  auto index = [](google::protobuf::RepeatedPtrField<std::string>* names, const std::string& value) {
    auto it = std::find(names->begin(), names->end(), value);
    if (it != names->end()) return static_cast<uint32_t>(it - names->begin());
    *names->Add() = value;
    return static_cast<uint32_t>(names->size() - 1);
  };
  for (int i = 0; i < part.slots_size(); ++i) {
    out.add_label_index(index(out.mutable_label_names(), part.labels(i)));
    out.add_stratum_index(index(out.mutable_stratum_names(), part.strata(i)));
  }
  return out;
}

TEST(BatchTest, IndexedLabelsAssembleAsStringsDo) {
  const std::vector<PartSample> first = {{3, 13, "dog", "DDDD"}, {0, 10, "cat", "A"}, {1, 11, "dog", "BB"}};
  const std::vector<PartSample> second = {{4, 14, "cat", "EEEEE"}, {2, 12, "emu", "CCC"}};
  Batch strings, indexed, mixed;
  for (Batch* b : {&strings, &indexed, &mixed}) ResetFor(b, 5);
  v1::Batch parts[] = {MakePart(5, first),           MakePart(5, second),         Indexed(MakePart(5, first)),
                       Indexed(MakePart(5, second)), Indexed(MakePart(5, first)), MakePart(5, second)};
  EXPECT_EQ(parts[2].label_names_size(), 2);  // "dog", "cat"
  ASSERT_TRUE(BatchAssembler::AddPart(&strings, &parts[0]));
  ASSERT_TRUE(BatchAssembler::AddPart(&strings, &parts[1]));
  ASSERT_TRUE(BatchAssembler::AddPart(&indexed, &parts[2]));
  ASSERT_TRUE(BatchAssembler::AddPart(&indexed, &parts[3]));
  ASSERT_TRUE(BatchAssembler::AddPart(&mixed, &parts[4]));  // one node indexed, another not
  ASSERT_TRUE(BatchAssembler::AddPart(&mixed, &parts[5]));
  const std::vector<std::string> labels = {"cat", "dog", "emu", "dog", "cat"};
  for (const Batch* b : {&strings, &indexed, &mixed}) {
    ASSERT_TRUE(BatchAssembler::Complete(*b));
    EXPECT_EQ(b->labels(), labels);
    EXPECT_EQ(b->strata(),
              (std::vector<std::string>{"stratum-cat", "stratum-dog", "stratum-emu", "stratum-dog", "stratum-cat"}));
    EXPECT_EQ(b->payload(), "ABBCCCDDDDEEEEE");
  }
}

TEST(BatchTest, RefusesIndexedLabelsThatNameNothing) {
  v1::Batch out_of_range = Indexed(MakePart(3, {{0, 10, "a", "a"}}));
  out_of_range.set_label_index(0, 1);  // one name only
  ExpectRefused(out_of_range);
  v1::Batch stratum_out_of_range = Indexed(MakePart(3, {{0, 10, "a", "a"}}));
  stratum_out_of_range.set_stratum_index(0, 7);
  ExpectRefused(stratum_out_of_range);
  v1::Batch both = Indexed(MakePart(3, {{0, 10, "a", "a"}}));
  both.add_labels("a");  // strings and indexes at once
  ExpectRefused(both);
  v1::Batch short_index = Indexed(MakePart(3, {{0, 10, "a", "a"}, {2, 12, "c", "ccc"}}));
  short_index.mutable_label_index()->RemoveLast();
  ExpectRefused(short_index);
  v1::Batch names_only = Indexed(MakePart(3, {{0, 10, "a", "a"}}));
  names_only.clear_stratum_index();  // names without a sample's index
  ExpectRefused(names_only);
}

TEST(BatchTest, DropFilledKeepsTheIndexesOfTheSamplesItKeeps) {
  Batch batch;
  ResetFor(&batch, 3);
  v1::Batch first = MakePart(3, {{1, 11, "b", "bb"}});
  ASSERT_TRUE(BatchAssembler::AddPart(&batch, &first));
  // Sent again after a failover, with the samples not yet delivered.
  v1::Batch again = Indexed(MakePart(3, {{0, 10, "a", "a"}, {1, 11, "b", "bb"}, {2, 12, "c", "ccc"}}));
  BatchAssembler::DropFilled(batch, &again);
  EXPECT_EQ(again.slots_size(), 2);
  EXPECT_EQ(again.label_index_size(), 2);
  EXPECT_EQ(again.labels_size(), 0);
  ASSERT_TRUE(BatchAssembler::AddPart(&batch, &again));
  ASSERT_TRUE(BatchAssembler::Complete(batch));
  EXPECT_EQ(batch.labels(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(batch.strata()[2], "stratum-c");
  EXPECT_EQ(batch.payload(), "abbccc");
}

// A hostile node's part with fewer ids and labels than slots, sent for a slot
// already filled: DropFilled must not read past the arrays, and AddPart
// refuses it.
TEST(BatchTest, DropFilledLeavesAnInconsistentPartForAddPartToRefuse) {
  Batch batch;
  ResetFor(&batch, 3);
  v1::Batch first = MakePart(3, {{1, 11, "b", "bb"}});
  ASSERT_TRUE(BatchAssembler::AddPart(&batch, &first));
  v1::Batch bad = MakePart(3, {{1, 11, "b", "bb"}});
  for (uint32_t slot : {0u, 2u}) bad.add_slots(slot);  // three slots, one id, one label, one size
  BatchAssembler::DropFilled(batch, &bad);
  EXPECT_EQ(bad.slots_size(), 3);  // left whole
  EXPECT_FALSE(BatchAssembler::AddPart(&batch, &bad));
  v1::Batch rest = MakePart(3, {{0, 10, "a", "a"}, {2, 12, "c", "ccc"}});
  ASSERT_TRUE(BatchAssembler::AddPart(&batch, &rest));
  EXPECT_EQ(batch.payload(), "abbccc");
}

TEST(BatchTest, RefusesAPartForAnotherBatchSize) { ExpectRefused(MakePart(4, {{0, 10, "a", "a"}})); }

}  // namespace
}  // namespace strata

namespace strata {
namespace {

// A server with nothing to send for a step still sends an empty last part; it
// may arrive after the other servers' parts completed the batch.
TEST(BatchEmptyPartTest, EmptyPartAfterCompletionChangesNothing) {
  Batch batch;
  BatchAssembler::Reset(&batch, 0, 3, 0, 1, 10, 2);
  v1::Batch a;
  a.set_batch_size(2);
  a.add_slots(1);
  a.add_ids(11);
  a.add_labels("x");
  a.add_sizes(3);
  a.set_payload("bbb");
  v1::Batch b = a;
  b.set_slots(0, 0);
  b.set_ids(0, 10);
  b.set_payload("aaa");
  ASSERT_TRUE(BatchAssembler::AddPart(&batch, &a));
  ASSERT_TRUE(BatchAssembler::AddPart(&batch, &b));
  ASSERT_TRUE(BatchAssembler::Complete(batch));
  v1::Batch empty;
  empty.set_batch_size(2);
  ASSERT_TRUE(BatchAssembler::AddPart(&batch, &empty));
  EXPECT_EQ(batch.payload(), "aaabbb");
  EXPECT_EQ(batch.sample(0), "aaa");
  EXPECT_EQ(batch.sample(1), "bbb");
}

}  // namespace
}  // namespace strata
