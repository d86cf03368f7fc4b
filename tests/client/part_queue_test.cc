// The queue between a stream's calls and its thread (client/part_reader.h):
// a part more than the lookahead ahead of the step the trainer waits for is
// refused and its reader told once when room may have opened; an end is
// always queued; WakeAll tells every reader waiting; the lookahead may change
// with the next step.
#include <gtest/gtest.h>

#include "client/part_reader.h"

namespace strata::client_internal {
namespace {

PartEvent PartOfStep(uint64_t step) {
  PartEvent e;
  e.node = "n";
  e.part.set_step(step);
  return e;
}

TEST(PartQueueTest, APartTooFarAheadWaitsAndItsReaderIsToldOnceWhenRoomOpens) {
  PartQueue queue(2);  // steps 0 and 1 may come
  int told = 0;
  PartEvent first = PartOfStep(1);
  EXPECT_TRUE(queue.TryPush(&first, [&] { ++told; }));
  PartEvent ahead = PartOfStep(2);
  EXPECT_FALSE(queue.TryPush(&ahead, [&] { ++told; }));
  EXPECT_EQ(ahead.part.step(), 2u) << "a part refused stays with its reader";
  EXPECT_EQ(told, 0);
  queue.SetNextStep(1);  // steps 1 and 2 may come now
  EXPECT_EQ(told, 1);
  queue.SetNextStep(2);
  EXPECT_EQ(told, 1) << "told once";
  EXPECT_TRUE(queue.TryPush(&ahead, [&] { ++told; }));
  auto popped = queue.Pop(std::chrono::milliseconds(0));
  ASSERT_TRUE(popped.has_value());
  EXPECT_EQ(popped->part.step(), 1u);
  popped = queue.Pop(std::chrono::milliseconds(0));
  ASSERT_TRUE(popped.has_value());
  EXPECT_EQ(popped->part.step(), 2u);
  EXPECT_FALSE(queue.Pop(std::chrono::milliseconds(0)).has_value());
}

TEST(PartQueueTest, AnEndIsAlwaysQueuedAndWakeAllTellsEveryReaderWaiting) {
  PartQueue queue(1);
  int told = 0;
  PartEvent a = PartOfStep(5), b = PartOfStep(7);
  EXPECT_FALSE(queue.TryPush(&a, [&] { ++told; }));
  EXPECT_FALSE(queue.TryPush(&b, [&] { ++told; }));
  PartEvent end;
  end.end = true;
  end.part.set_step(100);  // an end's step is never looked at
  EXPECT_TRUE(queue.TryPush(&end, nullptr));
  queue.WakeAll();
  EXPECT_EQ(told, 2);
  auto popped = queue.Pop(std::chrono::milliseconds(0));
  ASSERT_TRUE(popped.has_value());
  EXPECT_TRUE(popped->end);
}

TEST(PartQueueTest, TheLookaheadMovesWithTheNextStep) {
  PartQueue queue(8);
  int told = 0;
  PartEvent e = PartOfStep(5);
  queue.SetNextStep(2, 2);  // steps 2 and 3 may come
  EXPECT_FALSE(queue.TryPush(&e, [&] { ++told; }));
  queue.SetNextStep(3);  // the lookahead stays 2: steps 3 and 4
  EXPECT_EQ(told, 1);
  EXPECT_FALSE(queue.TryPush(&e, [&] { ++told; }));
  queue.SetNextStep(3, 3);  // steps 3, 4 and 5
  EXPECT_EQ(told, 2);
  EXPECT_TRUE(queue.TryPush(&e, [&] { ++told; }));
}

// Parts near enough but past the byte cap wait too (parts of steps already
// delivered, or sent again, are dropped only once popped); a pop that halves
// the bytes queued tells them. A first part is taken whatever its size.
TEST(PartQueueTest, PartsPastTheByteCapWaitUntilPopsHalveTheBytesQueued) {
  PartQueue queue(4);
  const auto big = [](uint64_t step) {
    PartEvent e = PartOfStep(step);
    e.payload = PartPayload::Owning(std::string(PartQueue::kMinCapBytes / 2 + 1, 'x'));
    return e;
  };
  int told = 0;
  PartEvent a = big(0), b = big(0), c = big(1);
  EXPECT_TRUE(queue.TryPush(&a, [&] { ++told; }));
  EXPECT_FALSE(queue.TryPush(&b, [&] { ++told; })) << "two would pass the cap";
  PartEvent end;
  end.end = true;
  EXPECT_TRUE(queue.TryPush(&end, nullptr)) << "an end is always queued";
  ASSERT_TRUE(queue.Pop(std::chrono::milliseconds(0)).has_value());
  EXPECT_EQ(told, 1) << "the pop emptied the queue of bytes";
  EXPECT_TRUE(queue.TryPush(&b, [&] { ++told; }));
  EXPECT_FALSE(queue.TryPush(&c, [&] { ++told; }));
  // A larger step moves the cap: twice (lookahead + 1) steps.
  queue.SetNextStep(0, 4, PartQueue::kMinCapBytes);
  EXPECT_EQ(told, 2);
  EXPECT_TRUE(queue.TryPush(&c, [&] { ++told; }));
}

}  // namespace
}  // namespace strata::client_internal
