#include "server/storage/path_guard.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "tests/support/temp_dir.h"

namespace strata {
namespace {

using testing::TempDir;

TEST(PathGuardTest, RelativePathsInsideTheRootResolve) {
  TempDir dir;
  auto p = ResolveInside(dir.path(), "shards/cats/v1/000000.shard");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p.value(), std::filesystem::weakly_canonical(dir.path()).string() + "/shards/cats/v1/000000.shard");
}

TEST(PathGuardTest, EscapesAreRefused) {
  TempDir dir;
  for (const char* bad : {"", "/etc/passwd", "shards/../../x", "..", "shards//x", "./x", "shards/."}) {
    auto p = ResolveInside(dir.path(), bad);
    EXPECT_EQ(p.status().code(), Code::kInvalidArgument) << "'" << bad << "'";
  }
}

TEST(PathGuardTest, ASymbolicLinkOutOfTheRootIsRefused) {
  TempDir dir;
  TempDir outside;
  std::filesystem::create_directories(dir.Join("data/shards"));
  std::filesystem::create_symlink(outside.path(), dir.Join("data/shards/evil"));
  auto p = ResolveInside(dir.Join("data"), "shards/evil/v1/000000.shard");
  EXPECT_EQ(p.status().code(), Code::kInvalidArgument) << p.status().ToString();
}

TEST(PathGuardTest, FileRefsAreChecked) {
  v1::FileRef f;
  f.set_dataset("cats");
  f.set_version(1);
  EXPECT_TRUE(ValidateFileRef(f).ok());
  f.set_dataset("../x");
  EXPECT_FALSE(ValidateFileRef(f).ok());
  f.set_dataset(std::string(1 << 20, 'a'));
  Status s = ValidateFileRef(f);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_LT(s.message().size(), 200u) << "the error quotes the whole name";
  f.set_dataset("cats");
  f.set_version(0);
  EXPECT_FALSE(ValidateFileRef(f).ok());
  f.set_version(1);
  f.set_seq(kMaxShardSeq + 1);
  EXPECT_FALSE(ValidateFileRef(f).ok());
}

}  // namespace
}  // namespace strata
