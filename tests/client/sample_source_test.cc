#include "client/ingest/sample_source.h"

#include <archive.h>
#include <archive_entry.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

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

// Everything one pass over a source yields.
struct Drained {
  Status status;  // the first error of Open or Next, other than the end
  std::vector<Sample> samples;
  uint64_t total_bytes = 0;
  uint64_t bytes_read = 0;
  std::string description;
};

Drained ReadAll(const std::string& path) {
  Drained d;
  Result<std::unique_ptr<SampleSource>> source = SampleSource::Open(path);
  if (!source.ok()) {
    d.status = source.status();
    return d;
  }
  for (;;) {
    Sample sample;
    Status status = (*source)->Next(&sample);
    if (status.code() == Code::kOutOfRange) break;
    if (!status.ok()) {
      d.status = status;
      break;
    }
    d.samples.push_back(std::move(sample));
  }
  d.total_bytes = (*source)->total_bytes();
  d.bytes_read = (*source)->bytes_read();
  d.description = (*source)->description();
  return d;
}

std::vector<std::string> Keys(const Drained& d) {
  std::vector<std::string> keys;
  for (const Sample& s : d.samples) keys.push_back(s.key);
  return keys;
}

std::vector<std::pair<std::string, std::string>> Fields(const Sample& s) {
  std::vector<std::pair<std::string, std::string>> fields;
  for (const Field& f : s.fields) fields.emplace_back(f.name, f.data);
  return fields;
}

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
// sample's limit is refused before its bytes are held (a 1 TiB member used to
// end in bad_alloc), and so is a file of a folder.
TEST(TarSourceTest, AMemberLargerThanASampleMayBeIsRefusedUnread) {
  TempDir tmp;
  std::filesystem::create_directories(tmp.Join("big/c"));
  const std::string file = tmp.Join("big/c/s.bin");
  WriteFile(file, "x");
  ASSERT_EQ(::truncate(file.c_str(), off_t{1} << 40), 0);
  const std::string tar = tmp.Join("sparse.tar");
  const testing::CommandResult made =
      testing::RunCommand({"/usr/bin/tar", "--sparse", "-cf", tar, "-C", tmp.Join("big/c"), "s.bin"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  ASSERT_LT(std::filesystem::file_size(tar), 1u << 20);
  Drained d = ReadAll(tar);
  EXPECT_EQ(d.status.code(), Code::kInvalidArgument) << d.status.ToString();
  EXPECT_THAT(d.status.message(), HasSubstr("member \"s.bin\" is 1048576 MiB; samples may be at most 64 MiB"));
  d = ReadAll(tmp.Join("big"));
  EXPECT_EQ(d.status.code(), Code::kInvalidArgument) << d.status.ToString();
  EXPECT_THAT(d.status.message(), HasSubstr("s.bin is 1048576 MiB; samples may be at most 64 MiB"));
}

}  // namespace
}  // namespace strata
