// The errors a writer of a multi-writer ingest gets when another writer's
// failure aborted the version: built by the nodes, told from a cause by the
// CLI (common/ingest_errors.h).
#include "common/ingest_errors.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(IngestErrorsTest, EachConsequenceIsRecognisedAndSaysWhat) {
  const Status home = IngestAborted("job-7", "writer 1 failed: no samples found");
  EXPECT_EQ(home.code(), Code::kFailedPrecondition);
  EXPECT_EQ(home.message(), "ingest job-7 was aborted: writer 1 failed: no samples found");
  EXPECT_TRUE(IsVersionAbortedError(home));

  const Status session = IngestAbortedForAll("job-7", "shard 3's file is gone");
  EXPECT_EQ(session.code(), Code::kFailedPrecondition);
  EXPECT_NE(session.message().find("ingest job-7 was aborted for every writer"), std::string::npos);
  EXPECT_NE(session.message().find("(here: shard 3's file is gone)"), std::string::npos);
  EXPECT_TRUE(IsVersionAbortedError(session));

  const Status replica = VersionDeadOnArrival("imgs", 4);
  EXPECT_EQ(replica.message(), "dataset version imgs@4 was deleted or aborted");
  EXPECT_TRUE(IsVersionAbortedError(replica));
}

TEST(IngestErrorsTest, AQuotedConsequenceIsOneAndAWritersOwnErrorIsNot) {
  // The sender of a replica quotes the refusal inside its own error.
  const Status quoted =
      Status::Unavailable("only 1 of 2 copies of imgs@4/0.shard could be written; last error: node-2: " +
                          VersionDeadOnArrival("imgs", 4).ToString());
  EXPECT_TRUE(IsVersionAbortedError(quoted));
  EXPECT_FALSE(IsVersionAbortedError(Status::InvalidArgument("no samples found in /data/empty")));
  EXPECT_FALSE(
      IsVersionAbortedError(Status::Unavailable("only 1 of 2 copies of imgs@4/0.shard could be written; "
                                                "no other node could take one: node-2 is down")));
  EXPECT_FALSE(IsVersionAbortedError(Status::OK()));
}

}  // namespace
}  // namespace strata
