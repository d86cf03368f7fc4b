// TarSource: WebDataset shards (plain and gzipped) grouped into samples,
// their labels and attributes, and damaged or hostile archives refused.
#include <archive.h>
#include <archive_entry.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/client/drain_source.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace strata {
namespace {

using ::testing::_;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using testing::TempDir;
using ::testing::UnorderedElementsAre;
using testing::WriteFile;

// --------------------------------------------------------------------- tar

struct Member {
  std::string name;  // a trailing '/' makes a directory
  std::string data;
};

// Writes a pax tar (gzip-compressed when `gzip`) that ends right after its
// two end-of-archive blocks.
void WriteTar(const std::string& path, const std::vector<Member>& members, bool gzip = false) {
  archive* a = archive_write_new();
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
  if (gzip) {
    ASSERT_EQ(archive_write_add_filter_gzip(a), ARCHIVE_OK);
  }
  ASSERT_EQ(archive_write_set_bytes_in_last_block(a, 1), ARCHIVE_OK);
  ASSERT_EQ(archive_write_open_filename(a, path.c_str()), ARCHIVE_OK);
  for (const Member& m : members) {
    archive_entry* entry = archive_entry_new();
    archive_entry_set_pathname(entry, m.name.c_str());
    const bool dir = m.name.ends_with('/');
    archive_entry_set_filetype(entry, dir ? AE_IFDIR : AE_IFREG);
    archive_entry_set_perm(entry, dir ? 0755 : 0644);
    archive_entry_set_size(entry, dir ? 0 : static_cast<la_int64_t>(m.data.size()));
    // WARN: a name the C locale cannot translate is stored as raw bytes.
    ASSERT_GE(archive_write_header(a, entry), ARCHIVE_WARN);
    if (!dir) {
      ASSERT_EQ(archive_write_data(a, m.data.data(), m.data.size()), static_cast<la_ssize_t>(m.data.size()));
    }
    archive_entry_free(entry);
  }
  ASSERT_EQ(archive_write_close(a), ARCHIVE_OK);
  archive_write_free(a);
}

std::vector<Member> Shard() {
  return {
      {"./", ""},
      {"./000001.jpg", "jpeg-1"},
      {"./000001.cls", " 3\n"},
      {"./000001.json", R"({"w": 640, "ok": true, "who": "ann", "box": [1, 2], "o": {}})"},
      {"./000001.seg.png", "seg-1"},
      {"sub/", ""},
      {"sub/000002.jpg", std::string(700, 'x')},  // crosses a 512-byte block
      {"sub/000002.json", "{not json"},
      {"sub/noext", "skipped"},
      {"sub/._000003.jpg", "skipped"},
      {"000004.cls", "dog"},
      {"000004.json", R"({"source": "cam"})"},
  };
}

void ExpectShard(const Drained& d, const std::string& source_name) {
  ASSERT_TRUE(d.status.ok()) << d.status.ToString();
  EXPECT_THAT(Keys(d), ElementsAre("000001", "sub/000002", "000004"));
  ASSERT_EQ(d.samples.size(), 3u);
  const Sample& first = d.samples[0];
  EXPECT_EQ(first.label, "3");
  EXPECT_THAT(Fields(first),
              ElementsAre(Pair("jpg", "jpeg-1"), Pair("cls", " 3\n"), Pair("json", _), Pair("seg.png", "seg-1")));
  EXPECT_THAT(first.attributes, UnorderedElementsAre(Pair("w", "640"), Pair("ok", "true"), Pair("who", "ann"),
                                                     Pair("source", source_name)));
  EXPECT_EQ(d.samples[1].label, "");
  EXPECT_THAT(Fields(d.samples[1]), ElementsAre(Pair("jpg", std::string(700, 'x')), Pair("json", "{not json")));
  EXPECT_EQ(d.samples[2].label, "dog");
  EXPECT_EQ(d.samples[2].attributes.at("source"), "cam");
  EXPECT_EQ(d.bytes_read, d.total_bytes);
}

TEST(TarSourceTest, GroupsMembersIntoSamples) {
  TempDir tmp;
  const std::string path = tmp.Join("shard.tar");
  WriteTar(path, Shard());
  const Drained d = ReadAll(path);
  ExpectShard(d, "shard.tar");
  EXPECT_EQ(d.total_bytes, std::filesystem::file_size(path));
  EXPECT_EQ(d.description, "tar " + path);
}

TEST(TarSourceTest, ReadsGzippedShards) {
  TempDir tmp;
  const std::string path = tmp.Join("shard.tar.gz");
  WriteTar(path, Shard(), /*gzip=*/true);
  const Drained d = ReadAll(path);
  ExpectShard(d, "shard.tar.gz");
  EXPECT_EQ(d.total_bytes, std::filesystem::file_size(path));
}

TEST(TarSourceTest, EmptyArchiveHasNoSamples) {
  TempDir tmp;
  WriteTar(tmp.Join("empty.tar"), {});
  const Drained d = ReadAll(tmp.Join("empty.tar"));
  ASSERT_TRUE(d.status.ok()) << d.status.ToString();
  EXPECT_TRUE(d.samples.empty());
}

TEST(TarSourceTest, NonAsciiNamesAreKeptAsUtf8) {
  TempDir tmp;
  WriteTar(tmp.Join("s.tar"), {{"caf\u00e9/\u00e9t\u00e9.jpg", "1"}, {"caf\u00e9/\u00e9t\u00e9.cls", "x"}});
  const Drained d = ReadAll(tmp.Join("s.tar"));
  ASSERT_TRUE(d.status.ok()) << d.status.ToString();
  EXPECT_THAT(Keys(d), ElementsAre("caf\u00e9/\u00e9t\u00e9"));
}

TEST(TarSourceTest, NonAdjacentKeyIsAnError) {
  TempDir tmp;
  WriteTar(tmp.Join("s.tar"), {{"a.jpg", "1"}, {"b.jpg", "2"}, {"a.cls", "3"}});
  const Drained d = ReadAll(tmp.Join("s.tar"));
  EXPECT_EQ(d.status.code(), Code::kInvalidArgument);
  EXPECT_THAT(d.status.message(), HasSubstr("\"a\""));
  EXPECT_THAT(d.status.message(), HasSubstr("not adjacent"));
}

TEST(TarSourceTest, DuplicateFieldIsAnError) {
  TempDir tmp;
  WriteTar(tmp.Join("s.tar"), {{"a.jpg", "1"}, {"./a.jpg", "2"}});
  const Drained d = ReadAll(tmp.Join("s.tar"));
  EXPECT_EQ(d.status.code(), Code::kInvalidArgument);
  EXPECT_THAT(d.status.message(), HasSubstr("two \"jpg\" members"));
}

// Every cut of the archive short of its last end-of-archive block must fail
// cleanly, never crash and never look like a shorter, whole dataset.
TEST(TarSourceTest, TruncatedArchivesAreInvalidArgument) {
  TempDir tmp;
  const std::string whole = tmp.Join("whole.tar");
  WriteTar(whole, Shard());
  const std::string bytes = testing::ReadFile(whole);
  ASSERT_EQ(bytes.size() % 512, 0u);
  const std::string cut = tmp.Join("cut.tar");
  std::vector<size_t> cuts;
  for (size_t block = 0; block + 512 < bytes.size(); block += 512) {
    for (size_t offset : {0, 1, 100, 257, 511}) cuts.push_back(block + offset);
  }
  for (size_t size : cuts) {
    WriteFile(cut, bytes.substr(0, size));
    const Drained d = ReadAll(cut);
    ASSERT_EQ(d.status.code(), Code::kInvalidArgument) << "cut at " << size << ": " << d.status.ToString();
    ASSERT_THAT(d.status.message(), HasSubstr("truncated or damaged tar archive " + cut));
  }
}

TEST(TarSourceTest, TruncatedGzipIsInvalidArgument) {
  TempDir tmp;
  const std::string whole = tmp.Join("whole.tar.gz");
  WriteTar(whole, Shard(), /*gzip=*/true);
  const std::string bytes = testing::ReadFile(whole);
  const std::string cut = tmp.Join("cut.tgz");
  for (size_t size : {size_t{0}, size_t{10}, bytes.size() / 2, bytes.size() - 9, bytes.size() - 1}) {
    WriteFile(cut, bytes.substr(0, size));
    const Drained d = ReadAll(cut);
    EXPECT_EQ(d.status.code(), Code::kInvalidArgument) << "cut at " << size << ": " << d.status.ToString();
  }
}

TEST(TarSourceTest, GarbageIsInvalidArgument) {
  TempDir tmp;
  WriteFile(tmp.Join("junk.tar"), std::string(4096, 'j'));
  const Drained d = ReadAll(tmp.Join("junk.tar"));
  EXPECT_EQ(d.status.code(), Code::kInvalidArgument);
  EXPECT_THAT(d.status.message(), HasSubstr("truncated or damaged tar archive"));
}

// A sparse member declares any size in a few blocks of archive: one past a
// sample's limit is refused before its bytes are held (a 1 GiB member took
// 2 GB of memory, a 1 TiB one ended in bad_alloc), and so is a file of a
// folder. (1 GiB: where the file system cannot tell tar its holes, tar reads
// the zeros.)
TEST(TarSourceTest, AMemberLargerThanASampleMayBeIsRefusedUnread) {
  TempDir tmp;
  std::filesystem::create_directories(tmp.Join("big/c"));
  const std::string file = tmp.Join("big/c/s.bin");
  WriteFile(file, "x");
  ASSERT_EQ(::truncate(file.c_str(), off_t{1} << 30), 0);
  const std::string tar = tmp.Join("sparse.tar");
  const testing::CommandResult made =
      testing::RunCommand({"/usr/bin/tar", "--sparse", "-cf", tar, "-C", tmp.Join("big/c"), "s.bin"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  ASSERT_LT(std::filesystem::file_size(tar), 1u << 20);
  Drained d = ReadAll(tar);
  EXPECT_EQ(d.status.code(), Code::kInvalidArgument) << d.status.ToString();
  EXPECT_THAT(d.status.message(), HasSubstr("member \"s.bin\" is 1024 MiB; samples may be at most 64 MiB"));
  d = ReadAll(tmp.Join("big"));
  EXPECT_EQ(d.status.code(), Code::kInvalidArgument) << d.status.ToString();
  EXPECT_THAT(d.status.message(), HasSubstr("s.bin is 1024 MiB; samples may be at most 64 MiB"));
}

}  // namespace
}  // namespace strata
