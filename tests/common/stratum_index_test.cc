#include "common/stratum_index.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "common/checksum.h"
#include "tests/support/temp_dir.h"

namespace strata {
namespace {

using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

// Writes an index for `keys[i]` = stratum key of sample i.
StratumIndexSummary Write(const std::string& path, const std::vector<std::string>& keys) {
  auto writer = StratumIndexWriter::Create(path);
  EXPECT_TRUE(writer.ok()) << writer.status().ToString();
  for (const auto& k : keys) EXPECT_TRUE(writer.value()->Add(k).ok());
  auto summary = writer.value()->Finish();
  EXPECT_TRUE(summary.ok()) << summary.status().ToString();
  return summary.ok() ? summary.value() : StratumIndexSummary();
}

size_t Entries(const std::string& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

TEST(StratumIndexTest, RoundTripInCanonicalOrder) {
  TempDir dir;
  // Strata arrive in a scrambled order; the file lists them sorted by key.
  std::mt19937_64 rng(3);
  const std::vector<std::string> names = {"zebra", "ant", "label=cat|source=web", "", "Émile", "ant2"};
  std::vector<std::string> keys;
  for (int i = 0; i < 300'000; ++i) keys.push_back(names[rng() % names.size()]);
  keys.push_back("singleton");
  const std::string path = dir.Join("strata.idx");
  const StratumIndexSummary summary = Write(path, keys);
  EXPECT_EQ(Entries(dir.path()), 1u) << "temporary files are gone";
  ASSERT_EQ(summary.keys.size(), 7u);
  EXPECT_TRUE(std::is_sorted(summary.keys.begin(), summary.keys.end()));
  EXPECT_EQ(summary.num_samples, keys.size());

  StratumIndexExpect expect{summary.file_bytes, summary.checksum, summary.counts};
  auto file = StratumIndexFile::Open(path, &expect);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  ASSERT_EQ(file.value()->num_strata(), 7u);
  EXPECT_EQ(std::filesystem::file_size(path), summary.file_bytes);
  // The same members as an in-memory index built from the assignment.
  std::vector<uint32_t> of;
  for (const auto& k : keys) {
    of.push_back(static_cast<uint32_t>(std::lower_bound(summary.keys.begin(), summary.keys.end(), k) -
                                       summary.keys.begin()));
  }
  auto memory = InMemoryStratumMembers::FromAssignment(of, 7);
  for (uint32_t s = 0; s < 7; ++s) {
    ASSERT_EQ(file.value()->count(s), memory->count(s));
    ASSERT_EQ(file.value()->count(s), summary.counts[s]);
    for (uint64_t j = 0; j < memory->count(s); ++j) ASSERT_EQ(file.value()->Member(s, j), memory->Member(s, j));
  }
}

TEST(StratumIndexTest, DamagedFilesAreCorruption) {
  TempDir dir;
  const std::string path = dir.Join("strata.idx");
  std::vector<std::string> keys;
  for (int i = 0; i < 1000; ++i) keys.push_back(i % 7 == 0 ? "rare" : "common");
  const StratumIndexSummary summary = Write(path, keys);
  const std::string good = ReadFile(path);
  auto open_damaged = [&](std::string bytes) {
    const std::string damaged = dir.Join("damaged.idx");
    WriteFile(damaged, bytes);
    return StratumIndexFile::Open(damaged).status();
  };
  for (size_t at : {size_t{0}, size_t{9}, size_t{20}, size_t{40}, good.size() / 2, good.size() - 20, good.size() - 1}) {
    std::string bytes = good;
    bytes[at] = static_cast<char>(bytes[at] ^ 0x20);
    Status s = open_damaged(bytes);
    EXPECT_EQ(s.code(), Code::kDataLoss) << "byte " << at << ": " << s.ToString();
  }
  EXPECT_EQ(open_damaged(good.substr(0, good.size() - 8)).code(), Code::kDataLoss) << "truncated";
  EXPECT_EQ(open_damaged(good + "x").code(), Code::kDataLoss) << "extended";
  EXPECT_EQ(open_damaged("").code(), Code::kDataLoss) << "empty";

  // An intact file that is not the one the catalog recorded.
  StratumIndexExpect expect{summary.file_bytes, summary.checksum ^ 1, summary.counts};
  EXPECT_EQ(StratumIndexFile::Open(path, &expect).status().code(), Code::kDataLoss);
  expect = {summary.file_bytes, summary.checksum, {1, 999}};
  EXPECT_EQ(StratumIndexFile::Open(path, &expect).status().code(), Code::kDataLoss);
  EXPECT_EQ(StratumIndexFile::Open(dir.Join("missing.idx")).status().code(), Code::kNotFound);
}

// Files whose checksum matches but whose structure is wrong (a writer bug, not
// a bit flip): ids out of order, also where the check's read crosses from one
// 1 MiB chunk to the next, ids past the end, offsets out of order.
TEST(StratumIndexTest, MatchingChecksumWithWrongIdsOrOffsetsIsCorruption) {
  TempDir dir;
  const std::string path = dir.Join("strata.idx");
  std::vector<std::string> keys(300'000, "one");  // one stratum: ids 0..299,999 in order, 2.4 MB
  keys[7] = "other";
  Write(path, keys);
  const std::string good = ReadFile(path);
  const uint64_t body = good.size() - kStratumIndexTrailerSize;
  const uint64_t ids_at = kStratumIndexHeaderSize + 3 * 8;  // two strata: three offsets
  auto with = [&](uint64_t at, uint64_t value) {
    std::string bytes = good;
    for (int b = 0; b < 8; ++b) bytes[at + b] = static_cast<char>(value >> (8 * b));
    const uint64_t sum = Checksum64(bytes.data(), body);  // the writer's bug, checksummed
    for (int b = 0; b < 8; ++b) bytes[body + b] = static_cast<char>(sum >> (8 * b));
    const std::string damaged = dir.Join("damaged.idx");
    WriteFile(damaged, bytes);
    return StratumIndexFile::Open(damaged).status();
  };
  auto id_at = [&](uint64_t j) {
    uint64_t v = 0;
    for (int b = 7; b >= 0; --b) v = (v << 8) | static_cast<uint8_t>(good[ids_at + 8 * j + b]);
    return v;
  };
  ASSERT_TRUE(with(ids_at, id_at(0)).ok()) << "rewriting a value with itself keeps the file valid";
  const uint64_t at_chunk = ((uint64_t{1} << 20) - ids_at) / 8;  // the first id of the second 1 MiB chunk
  for (uint64_t j : {uint64_t{5}, at_chunk, at_chunk + 1}) {
    const Status s = with(ids_at + 8 * j, id_at(j - 1));  // equal to the id before it
    EXPECT_EQ(s.code(), Code::kDataLoss) << "id " << j << ": " << s.ToString();
    EXPECT_NE(s.message().find("not ascending"), std::string::npos) << s.ToString();
  }
  EXPECT_EQ(with(ids_at + 8 * 299'998, 300'000).code(), Code::kDataLoss) << "an id past the end";
  EXPECT_EQ(with(kStratumIndexHeaderSize + 8, 300'001).code(), Code::kDataLoss) << "offsets out of order";
}

TEST(StratumIndexTest, WriterNeverReplacesAndCleansUp) {
  TempDir dir;
  const std::string path = dir.Join("strata.idx");
  Write(path, {"a", "b"});
  auto second = StratumIndexWriter::Create(path);
  ASSERT_TRUE(second.ok());
  ASSERT_TRUE(second.value()->Add("a").ok());
  EXPECT_EQ(second.value()->Finish().status().code(), Code::kAlreadyExists);
  second.value().reset();
  EXPECT_EQ(Entries(dir.path()), 1u);
  {
    auto abandoned = StratumIndexWriter::Create(dir.Join("other.idx"));
    ASSERT_TRUE(abandoned.ok());
    ASSERT_TRUE(abandoned.value()->Add("x").ok());
  }
  EXPECT_EQ(Entries(dir.path()), 1u) << "an abandoned writer leaves nothing";
}

TEST(StratumIndexTest, EmptyIndexIsValid) {
  TempDir dir;
  const StratumIndexSummary summary = Write(dir.Join("strata.idx"), {});
  EXPECT_EQ(summary.num_samples, 0u);
  auto file = StratumIndexFile::Open(dir.Join("strata.idx"));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(file.value()->num_strata(), 0u);
}

}  // namespace
}  // namespace strata
