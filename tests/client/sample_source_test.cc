#include "client/ingest/sample_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "tests/client/drain_source.h"
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

// ---------------------------------------------------------------- folders

TEST(FolderSourceTest, LabelsKeysFieldsAndOrder) {
  TempDir tmp;
  const std::string root = tmp.Join("pets");
  WriteFile(root + "/cats/2.JPG", "c2");
  WriteFile(root + "/cats/10.jpg", "c10");
  WriteFile(root + "/cats/sub/deep.png", "deep");
  WriteFile(root + "/dogs/rex", "rex!");
  WriteFile(root + "/readme.txt", "top");
  WriteFile(root + "/.hidden", "no");
  WriteFile(root + "/cats/.DS_Store", "no");
  WriteFile(root + "/.git/config", "no");

  const Drained d = ReadAll(root);
  ASSERT_TRUE(d.status.ok()) << d.status.ToString();
  EXPECT_THAT(Keys(d), ElementsAre("cats/10", "cats/2", "cats/sub/deep", "dogs/rex", "readme"));
  ASSERT_EQ(d.samples.size(), 5u);
  EXPECT_EQ(d.samples[0].label, "cats");
  EXPECT_EQ(d.samples[2].label, "cats");
  EXPECT_EQ(d.samples[3].label, "dogs");
  EXPECT_EQ(d.samples[4].label, "");
  EXPECT_THAT(Fields(d.samples[1]), ElementsAre(Pair("jpg", "c2")));
  EXPECT_THAT(Fields(d.samples[2]), ElementsAre(Pair("png", "deep")));
  EXPECT_THAT(Fields(d.samples[3]), ElementsAre(Pair("bin", "rex!")));
  EXPECT_THAT(Fields(d.samples[4]), ElementsAre(Pair("txt", "top")));
  EXPECT_THAT(d.samples[0].attributes, UnorderedElementsAre(Pair("source", "pets")));
  EXPECT_EQ(d.total_bytes, 2u + 3 + 4 + 4 + 3);
  EXPECT_EQ(d.bytes_read, d.total_bytes);
  EXPECT_EQ(d.description, "folder " + root);
}

TEST(FolderSourceTest, TrailingSlashKeepsTheSourceName) {
  TempDir tmp;
  WriteFile(tmp.Join("cats/a/1.jpg"), "x");
  const Drained d = ReadAll(tmp.Join("cats/"));
  ASSERT_TRUE(d.status.ok()) << d.status.ToString();
  ASSERT_EQ(d.samples.size(), 1u);
  EXPECT_EQ(d.samples[0].attributes.at("source"), "cats");
  EXPECT_EQ(d.samples[0].label, "a");
}

TEST(FolderSourceTest, EmptyFolderHasNoSamples) {
  TempDir tmp;
  std::filesystem::create_directories(tmp.Join("empty/.hidden-only"));
  const Drained d = ReadAll(tmp.Join("empty"));
  ASSERT_TRUE(d.status.ok()) << d.status.ToString();
  EXPECT_TRUE(d.samples.empty());
  EXPECT_EQ(d.total_bytes, 0u);
}

TEST(FolderSourceTest, DanglingSymlinkIsNotFoundNamingIt) {
  TempDir tmp;
  WriteFile(tmp.Join("data/a/ok.jpg"), "x");
  std::filesystem::create_symlink(tmp.Join("nowhere.jpg"), tmp.Join("data/a/gone.jpg"));
  const Drained d = ReadAll(tmp.Join("data"));
  EXPECT_EQ(d.status.code(), Code::kNotFound) << d.status.ToString();
  EXPECT_THAT(d.status.message(), HasSubstr("gone.jpg"));
}

TEST(FolderSourceTest, FollowsSymlinkedFilesAndRejectsCycles) {
  TempDir tmp;
  WriteFile(tmp.Join("elsewhere.jpg"), "far");
  WriteFile(tmp.Join("data/a/ok.jpg"), "x");
  std::filesystem::create_symlink(tmp.Join("elsewhere.jpg"), tmp.Join("data/a/link.jpg"));
  Drained d = ReadAll(tmp.Join("data"));
  ASSERT_TRUE(d.status.ok()) << d.status.ToString();
  EXPECT_THAT(Keys(d), ElementsAre("a/link", "a/ok"));
  EXPECT_THAT(Fields(d.samples[0]), ElementsAre(Pair("jpg", "far")));

  std::filesystem::create_directory_symlink(tmp.Join("data"), tmp.Join("data/a/loop"));
  d = ReadAll(tmp.Join("data"));
  EXPECT_EQ(d.status.code(), Code::kInvalidArgument) << d.status.ToString();
  EXPECT_THAT(d.status.message(), HasSubstr("cycle"));
}

TEST(FolderSourceTest, UnreadableFileIsPermissionDenied) {
  if (geteuid() == 0) GTEST_SKIP() << "root reads files whatever their mode";
  TempDir tmp;
  WriteFile(tmp.Join("data/a/secret.jpg"), "x");
  ASSERT_EQ(chmod(tmp.Join("data/a/secret.jpg").c_str(), 0), 0);
  const Drained d = ReadAll(tmp.Join("data"));
  EXPECT_EQ(d.status.code(), Code::kPermissionDenied) << d.status.ToString();
  EXPECT_THAT(d.status.message(), HasSubstr("secret.jpg"));
}

// ------------------------------------------------------------- dispatching

TEST(SampleSourceTest, MissingPathIsNotFound) {
  TempDir tmp;
  const Result<std::unique_ptr<SampleSource>> source = SampleSource::Open(tmp.Join("nope.csv"));
  EXPECT_EQ(source.status().code(), Code::kNotFound);
  EXPECT_THAT(source.status().message(), HasSubstr("nope.csv"));
}

TEST(SampleSourceTest, UnsupportedExtensionIsInvalidArgument) {
  TempDir tmp;
  WriteFile(tmp.Join("data.parquet"), "x");
  const Result<std::unique_ptr<SampleSource>> source = SampleSource::Open(tmp.Join("data.parquet"));
  EXPECT_EQ(source.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(source.status().message(), HasSubstr("unsupported source"));
  EXPECT_THAT(source.status().message(), HasSubstr(".tar.gz or .tgz"));
  EXPECT_THAT(source.status().message(), HasSubstr("data.parquet"));
}

// -------------------------------------------------------------------- CSV

TEST(CsvManifestTest, QuotingAttributesAndRelativePaths) {
  TempDir tmp;
  WriteFile(tmp.Join("m/img/a.jpg"), "aaa");
  WriteFile(tmp.Join("m/img/b.PNG"), "bb");
  WriteFile(tmp.Join("abs.txt"), "absolute");
  const std::string manifest = tmp.Join("m/train.csv");
  const std::string absolute_row = "\"" + tmp.Join("abs.txt") + "\",,\"\",val\n";
  WriteFile(manifest,
            "\xEF\xBB\xBFpath,label,caption,split\r\n"
            "img/a.jpg,cat,\"a cat, \"\"sitting\"\"\non two lines\",train\r\n"
            "\r\n"
            "img/b.PNG,dog,plain,\r\n" +
                absolute_row);
  const Drained d = ReadAll(manifest);
  ASSERT_TRUE(d.status.ok()) << d.status.ToString();
  ASSERT_EQ(d.samples.size(), 3u);
  EXPECT_EQ(d.samples[0].key, "img/a.jpg");
  EXPECT_EQ(d.samples[0].label, "cat");
  EXPECT_THAT(Fields(d.samples[0]), ElementsAre(Pair("jpg", "aaa")));
  EXPECT_THAT(d.samples[0].attributes, UnorderedElementsAre(Pair("caption", "a cat, \"sitting\"\non two lines"),
                                                            Pair("split", "train"), Pair("source", "train.csv")));
  EXPECT_THAT(Fields(d.samples[1]), ElementsAre(Pair("png", "bb")));
  EXPECT_EQ(d.samples[1].attributes.at("split"), "");
  EXPECT_EQ(d.samples[2].key, tmp.Join("abs.txt"));
  EXPECT_EQ(d.samples[2].label, "");
  EXPECT_EQ(d.total_bytes, 3u + 2 + 8);
  EXPECT_EQ(d.bytes_read, d.total_bytes);
  EXPECT_EQ(d.description, "manifest " + manifest);
}

TEST(CsvManifestTest, SourceColumnOverridesTheDefault) {
  TempDir tmp;
  WriteFile(tmp.Join("a.jpg"), "a");
  WriteFile(tmp.Join("m.csv"), "source,path\ncamera-3,a.jpg\n");
  const Drained d = ReadAll(tmp.Join("m.csv"));
  ASSERT_TRUE(d.status.ok()) << d.status.ToString();
  ASSERT_EQ(d.samples.size(), 1u);
  EXPECT_EQ(d.samples[0].attributes.at("source"), "camera-3");
}

TEST(CsvManifestTest, HeaderOnlyHasNoSamples) {
  TempDir tmp;
  WriteFile(tmp.Join("m.csv"), "path,label\n");
  const Drained d = ReadAll(tmp.Join("m.csv"));
  ASSERT_TRUE(d.status.ok()) << d.status.ToString();
  EXPECT_TRUE(d.samples.empty());
  EXPECT_EQ(d.total_bytes, 0u);
}

TEST(CsvManifestTest, MissingPathColumn) {
  TempDir tmp;
  WriteFile(tmp.Join("m.csv"), "file,label\na.jpg,cat\n");
  const Drained d = ReadAll(tmp.Join("m.csv"));
  EXPECT_EQ(d.status.code(), Code::kInvalidArgument);
  EXPECT_THAT(d.status.message(), HasSubstr("m.csv"));
  EXPECT_THAT(d.status.message(), HasSubstr("\"path\""));
}

TEST(CsvManifestTest, DuplicateColumnIsRefusedNamingIt) {
  TempDir tmp;
  std::string header = "path,label";
  for (int i = 0; i < 20000; ++i) header += ",c" + std::to_string(i);
  WriteFile(tmp.Join("m.csv"), header + ",c7\na.jpg,cat\n");  // c7 twice, at the far end
  const Drained d = ReadAll(tmp.Join("m.csv"));
  EXPECT_EQ(d.status.code(), Code::kInvalidArgument);
  EXPECT_THAT(d.status.message(), HasSubstr("duplicate column \"c7\""));
  WriteFile(tmp.Join("n.csv"), "path,label,,\n");  // unnamed columns are not duplicates
  EXPECT_THAT(ReadAll(tmp.Join("n.csv")).status.message(), ::testing::Not(HasSubstr("duplicate")));
}

TEST(CsvManifestTest, RaggedRowNamesItsLine) {
  TempDir tmp;
  WriteFile(tmp.Join("a.jpg"), "a");
  WriteFile(tmp.Join("m.csv"), "path,label\na.jpg,\"two\nlines\"\n\na.jpg,cat,extra\n");
  const Drained d = ReadAll(tmp.Join("m.csv"));
  EXPECT_EQ(d.status.code(), Code::kInvalidArgument);
  EXPECT_THAT(d.status.message(), HasSubstr("m.csv line 5"));
  EXPECT_THAT(d.status.message(), HasSubstr("expected 2 columns, found 3"));
}

TEST(CsvManifestTest, MalformedQuotingNamesItsLine) {
  TempDir tmp;
  WriteFile(tmp.Join("a.jpg"), "a");
  WriteFile(tmp.Join("m.csv"), "path,label\na.jpg,ok\na.jpg,\"bad\"x\n");
  const Drained d = ReadAll(tmp.Join("m.csv"));
  EXPECT_EQ(d.status.code(), Code::kInvalidArgument);
  EXPECT_THAT(d.status.message(), HasSubstr("m.csv line 3"));
}

TEST(CsvManifestTest, MissingReferencedFileIsNotFound) {
  TempDir tmp;
  WriteFile(tmp.Join("a.jpg"), "a");
  WriteFile(tmp.Join("m.csv"), "path\na.jpg\nmissing.jpg\n");
  const Drained d = ReadAll(tmp.Join("m.csv"));
  EXPECT_EQ(d.status.code(), Code::kNotFound);
  EXPECT_THAT(d.status.message(), HasSubstr("missing.jpg"));
  EXPECT_THAT(d.status.message(), HasSubstr("line 3"));
}

TEST(CsvManifestTest, DirectoryWhereAFileIsExpected) {
  TempDir tmp;
  std::filesystem::create_directories(tmp.Join("adir.jpg"));
  WriteFile(tmp.Join("m.csv"), "path\nadir.jpg\n");
  const Drained d = ReadAll(tmp.Join("m.csv"));
  EXPECT_EQ(d.status.code(), Code::kIOError);
  EXPECT_THAT(d.status.message(), HasSubstr("adir.jpg is a directory"));
}

TEST(CsvManifestTest, EmptyFileHasNoHeader) {
  TempDir tmp;
  WriteFile(tmp.Join("m.csv"), "");
  const Drained d = ReadAll(tmp.Join("m.csv"));
  EXPECT_EQ(d.status.code(), Code::kInvalidArgument);
  EXPECT_THAT(d.status.message(), HasSubstr("header"));
}

// ------------------------------------------------------------------- JSONL

TEST(JsonlManifestTest, ValueTypes) {
  TempDir tmp;
  WriteFile(tmp.Join("d/x.wav"), "wave");
  WriteFile(tmp.Join("d/y"), "yy");
  WriteFile(tmp.Join("d/m.jsonl"),
            "{\"path\": \"x.wav\", \"label\": \"speech\", \"n\": 3, \"ok\": true, \"who\": \"ann\","
            " \"tags\": [1, \"a\"], \"none\": null}\n"
            "\n"
            "{\"path\": \"y\", \"label\": 7, \"source\": \"mic\"}\n");
  const Drained d = ReadAll(tmp.Join("d/m.jsonl"));
  ASSERT_TRUE(d.status.ok()) << d.status.ToString();
  ASSERT_EQ(d.samples.size(), 2u);
  EXPECT_EQ(d.samples[0].key, "x.wav");
  EXPECT_EQ(d.samples[0].label, "speech");
  EXPECT_THAT(Fields(d.samples[0]), ElementsAre(Pair("wav", "wave")));
  EXPECT_THAT(d.samples[0].attributes,
              UnorderedElementsAre(Pair("n", "3"), Pair("ok", "true"), Pair("who", "ann"), Pair("tags", "[1,\"a\"]"),
                                   Pair("none", "null"), Pair("source", "m.jsonl")));
  EXPECT_EQ(d.samples[1].label, "7");
  EXPECT_THAT(Fields(d.samples[1]), ElementsAre(Pair("bin", "yy")));
  EXPECT_EQ(d.samples[1].attributes.at("source"), "mic");
  EXPECT_EQ(d.total_bytes, 6u);
}

TEST(JsonlManifestTest, MalformedLineNamesItsNumber) {
  TempDir tmp;
  WriteFile(tmp.Join("a.jpg"), "a");
  WriteFile(tmp.Join("m.jsonl"), "{\"path\": \"a.jpg\"}\n\n{\"path\": \"a.jpg\",}\n");
  const Drained d = ReadAll(tmp.Join("m.jsonl"));
  EXPECT_EQ(d.status.code(), Code::kInvalidArgument);
  EXPECT_THAT(d.status.message(), HasSubstr("m.jsonl line 3"));
}

// A line nested deeper than any label needs is refused, naming the line;
// 200,000 levels used to overflow the stack turning the attribute into text.
TEST(JsonlManifestTest, DeepNestingIsRefused) {
  TempDir tmp;
  WriteFile(tmp.Join("a.jpg"), "a");
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  WriteFile(tmp.Join("m.jsonl"), "{\"path\": \"a.jpg\", \"x\": " + deep + "}\n");
  Drained d = ReadAll(tmp.Join("m.jsonl"));
  EXPECT_EQ(d.status.code(), Code::kInvalidArgument);
  EXPECT_THAT(d.status.message(), HasSubstr("line 1: JSON nested more than 64 levels deep"));
  // Nesting that data carries is kept as its text.
  WriteFile(tmp.Join("m.jsonl"), "{\"path\": \"a.jpg\", \"x\": [[1], {\"y\": [2]}]}\n");
  d = ReadAll(tmp.Join("m.jsonl"));
  EXPECT_TRUE(d.status.ok()) << d.status.ToString();
}

TEST(JsonlManifestTest, PathIsRequiredAndObjectsOnly) {
  TempDir tmp;
  WriteFile(tmp.Join("m.jsonl"), "{\"label\": \"x\"}\n");
  Drained d = ReadAll(tmp.Join("m.jsonl"));
  EXPECT_EQ(d.status.code(), Code::kInvalidArgument);
  EXPECT_THAT(d.status.message(), HasSubstr("line 1"));
  EXPECT_THAT(d.status.message(), HasSubstr("\"path\""));

  WriteFile(tmp.Join("m.jsonl"), "[1, 2]\n");
  d = ReadAll(tmp.Join("m.jsonl"));
  EXPECT_EQ(d.status.code(), Code::kInvalidArgument);
  EXPECT_THAT(d.status.message(), HasSubstr("object"));
}

}  // namespace
}  // namespace strata
