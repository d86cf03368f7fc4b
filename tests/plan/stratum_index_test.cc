#include "plan/stratum_index.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "common/checksum.h"
#include "common/little_endian.h"
#include "server/ingest/stratum_index_writer.h"
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
    of.push_back(
        static_cast<uint32_t>(std::lower_bound(summary.keys.begin(), summary.keys.end(), k) - summary.keys.begin()));
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

uint64_t U64At(const std::string& bytes, uint64_t at) { return LoadU64(bytes.data() + at); }

void SetU64(std::string* bytes, uint64_t at, uint64_t value) {
  std::string le;
  PutU64(&le, value);
  bytes->replace(at, 8, le);
}

// Where the parts of a format 2 file are.
struct Layout {
  uint64_t strata, samples, blocks, ids_at, sums_at, trailer_at;
};

Layout LayoutOf(const std::string& bytes) {
  Layout l;
  l.strata = U64At(bytes, 16);
  l.samples = U64At(bytes, 24);
  l.blocks = (l.samples + kStratumIndexBlockIds - 1) / kStratumIndexBlockIds;
  l.ids_at = kStratumIndexHeaderSize + (l.strata + 1) * 8;
  l.sums_at = l.ids_at + l.samples * 8;
  l.trailer_at = l.sums_at + l.blocks * 8;
  return l;
}

// Recomputes every block sum and the trailer checksum of a format 2 file, as
// a writer with a bug would: the file then passes its checksums.
void Resum(std::string* bytes) {
  const Layout l = LayoutOf(*bytes);
  for (uint64_t b = 0; b < l.blocks; ++b) {
    const uint64_t lo = b * kStratumIndexBlockIds, hi = std::min(l.samples, lo + kStratumIndexBlockIds);
    SetU64(bytes, l.sums_at + b * 8, Checksum64(bytes->data() + l.ids_at + lo * 8, (hi - lo) * 8));
  }
  const uint64_t sum = Checksum64(bytes->substr(0, l.ids_at) + bytes->substr(l.sums_at, l.blocks * 8));
  SetU64(bytes, l.trailer_at, sum);
}

// The same index in format 1: no block sums, the checksum over header, offsets and ids.
std::string AsFormat1(const std::string& v2) {
  const Layout l = LayoutOf(v2);
  std::string v1 = v2.substr(0, l.sums_at);
  v1[8] = 1;
  PutU64(&v1, Checksum64(v1));
  v1.append(kStratumIndexTrailerMagic);
  return v1;
}

// Files whose checksums match but whose structure is wrong (a writer bug, not
// a bit flip): ids out of order, also where a block or the whole-file check's
// 1 MiB read starts, ids past the end, offsets out of order. A whole check
// refuses them at Open; a check on use when a stream reads the part.
TEST(StratumIndexTest, MatchingChecksumWithWrongIdsOrOffsetsIsCorruption) {
  TempDir dir;
  const std::string path = dir.Join("strata.idx");
  std::vector<std::string> keys(300'000, "one");  // one stratum: ids 0..299,999 in order, 2.4 MB
  keys[7] = "other";
  Write(path, keys);
  const std::string good = ReadFile(path);
  const Layout l = LayoutOf(good);
  ASSERT_EQ(l.trailer_at + kStratumIndexTrailerSize, good.size());
  const std::string damaged = dir.Join("damaged.idx");
  auto with = [&](uint64_t at, uint64_t value) {
    std::string bytes = good;
    SetU64(&bytes, at, value);
    Resum(&bytes);
    WriteFile(damaged, bytes);
    return StratumIndexFile::Open(damaged).status();
  };
  auto id_at = [&](uint64_t j) { return U64At(good, l.ids_at + 8 * j); };
  ASSERT_TRUE(with(l.ids_at, id_at(0)).ok()) << "rewriting a value with itself keeps the file valid";
  const uint64_t at_chunk = (uint64_t{1} << 20) / 8;  // the first id of the second 1 MiB read
  for (uint64_t j : {uint64_t{5}, kStratumIndexBlockIds, at_chunk, at_chunk + 1}) {
    const Status s = with(l.ids_at + 8 * j, id_at(j - 1));  // equal to the id before it
    EXPECT_EQ(s.code(), Code::kDataLoss) << "id " << j << ": " << s.ToString();
    EXPECT_NE(s.message().find("not ascending"), std::string::npos) << s.ToString();

    // Checked on use: Open succeeds, members in other blocks are served, and
    // reading the bad block reports it ("one" is the first stratum, so its
    // member j is at position j of the ids).
    auto lazy = StratumIndexFile::Open(damaged, nullptr, IndexCheck::kOnUse);
    ASSERT_TRUE(lazy.ok()) << lazy.status().ToString();
    const uint64_t far = j < 100'000 ? 200'000 : 1'000;
    EXPECT_EQ(lazy.value()->Member(0, far), id_at(far));
    EXPECT_TRUE(lazy.value()->Damage().ok());
    EXPECT_EQ(lazy.value()->blocks_checked(), 1u);
    EXPECT_EQ(lazy.value()->Member(0, j), 0u) << "a damaged block gives id 0";
    const Status found = lazy.value()->Damage();
    EXPECT_EQ(found.code(), Code::kDataLoss) << found.ToString();
    EXPECT_NE(found.message().find("not ascending"), std::string::npos) << found.ToString();
    EXPECT_NE(found.message().find(damaged), std::string::npos) << found.ToString();
  }
  EXPECT_EQ(with(l.ids_at + 8 * 299'998, 300'000).code(), Code::kDataLoss) << "an id past the end";
  EXPECT_EQ(with(kStratumIndexHeaderSize + 8, 300'001).code(), Code::kDataLoss) << "offsets out of order";
  std::string bytes = good;
  SetU64(&bytes, kStratumIndexHeaderSize + 8, 300'001);
  Resum(&bytes);
  WriteFile(damaged, bytes);
  EXPECT_EQ(StratumIndexFile::Open(damaged, nullptr, IndexCheck::kOnUse).status().code(), Code::kDataLoss)
      << "offsets are checked at Open in either mode";
}

// A bit flip in the ids: a whole check refuses the file; a check on use maps
// it, serves the sound blocks, and finds the damage in the block it reads.
TEST(StratumIndexTest, CheckOnUseVerifiesEachBlockItReads) {
  TempDir dir;
  const std::string path = dir.Join("strata.idx");
  std::vector<std::string> keys;
  for (int i = 0; i < 20'000; ++i) keys.push_back(i % 3 == 0 ? "a" : "b");  // a: 6,667 ids, b: 13,333
  const StratumIndexSummary summary = Write(path, keys);
  const StratumIndexExpect expect{summary.file_bytes, summary.checksum, summary.counts};
  {
    auto lazy = StratumIndexFile::Open(path, &expect, IndexCheck::kOnUse);
    ASSERT_TRUE(lazy.ok()) << lazy.status().ToString();
    EXPECT_EQ(lazy.value()->format_version(), kStratumIndexFormatVersion);
    EXPECT_EQ(lazy.value()->blocks_checked(), 0u) << "Open reads no block of ids";
    for (uint64_t j = 0; j < 6'667; j += 997) EXPECT_EQ(lazy.value()->Member(0, j), 3 * j);
    EXPECT_EQ(lazy.value()->blocks_checked(), 7u) << "each block once: 6,667 ids of stratum a span 14 blocks";
    EXPECT_EQ(lazy.value()->Member(1, 0), 1u);
    EXPECT_TRUE(lazy.value()->Damage().ok());
  }
  std::string bytes = ReadFile(path);
  const Layout l = LayoutOf(bytes);
  const uint64_t flipped = 9'000;  // position 9,000: in stratum b, block 17
  bytes[l.ids_at + flipped * 8 + 1] ^= 0x10;
  const std::string damaged = dir.Join("damaged.idx");
  WriteFile(damaged, bytes);
  EXPECT_EQ(StratumIndexFile::Open(damaged, &expect).status().code(), Code::kDataLoss);
  auto lazy = StratumIndexFile::Open(damaged, &expect, IndexCheck::kOnUse);
  ASSERT_TRUE(lazy.ok()) << "the damage is in a block no one has read: " << lazy.status().ToString();
  const uint64_t j = flipped - 6'667;  // stratum b's member at position 9,000
  EXPECT_NE(lazy.value()->Member(1, j - 1000), 0u);
  EXPECT_TRUE(lazy.value()->Damage().ok());
  EXPECT_EQ(lazy.value()->Member(1, j), 0u);
  const Status s = lazy.value()->Damage();
  EXPECT_EQ(s.code(), Code::kDataLoss);
  EXPECT_NE(s.message().find("block 17"), std::string::npos) << s.ToString();
  EXPECT_EQ(lazy.value()->Member(1, j + 1), 0u) << "the whole block stays refused";
  EXPECT_NE(lazy.value()->Member(0, 0) + lazy.value()->Member(1, 1), 0u) << "other blocks are still served";
}

// WillRead only asks the kernel for pages: it checks no block, returns
// nothing and reports no damage, and Member reads as before.
TEST(StratumIndexTest, WillReadChangesNothing) {
  TempDir dir;
  const std::string path = dir.Join("strata.idx");
  std::vector<std::string> keys;
  for (int i = 0; i < 20'000; ++i) keys.push_back(i % 3 == 0 ? "a" : "b");
  const StratumIndexSummary summary = Write(path, keys);
  std::string bytes = ReadFile(path);
  bytes[LayoutOf(bytes).ids_at + 9'000 * 8 + 1] ^= 0x10;  // stratum b, block 17
  const std::string damaged = dir.Join("damaged.idx");
  WriteFile(damaged, bytes);
  auto lazy = StratumIndexFile::Open(damaged, nullptr, IndexCheck::kOnUse);
  ASSERT_TRUE(lazy.ok()) << lazy.status().ToString();
  const StratumIndexFile& index = *lazy.value();
  for (uint64_t j = 0; j < 6'667; ++j) index.WillRead(0, j);
  for (uint64_t j = 0; j < 13'333; ++j) index.WillRead(1, j);
  index.WillRead(2, 0);       // no such stratum
  index.WillRead(1, 13'333);  // past its members
  EXPECT_EQ(index.blocks_checked(), 0u);
  EXPECT_TRUE(index.Damage().ok()) << "announcing a damaged block is not reading it";
  EXPECT_EQ(index.Member(0, 5), 15u);
  EXPECT_EQ(index.Member(1, 9'000 - 6'667), 0u);
  EXPECT_EQ(index.Damage().code(), Code::kDataLoss);
}

// Indexes written by earlier servers (format 1) are still read, and verified
// whole at Open in either mode, since they have no block sums.
TEST(StratumIndexTest, ReadsFormat1) {
  TempDir dir;
  std::vector<std::string> keys;
  for (int i = 0; i < 5'000; ++i) keys.push_back(i % 5 == 0 ? "rare" : "common");
  Write(dir.Join("strata.idx"), keys);
  const std::string v1 = AsFormat1(ReadFile(dir.Join("strata.idx")));
  const std::string path = dir.Join("v1.idx");
  WriteFile(path, v1);
  for (IndexCheck check : {IndexCheck::kWhole, IndexCheck::kOnUse}) {
    auto file = StratumIndexFile::Open(path, nullptr, check);
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    EXPECT_EQ(file.value()->format_version(), 1u);
    ASSERT_EQ(file.value()->count(1), 1'000u);  // "rare" sorts after "common"
    for (uint64_t j = 0; j < 1'000; ++j) ASSERT_EQ(file.value()->Member(1, j), 5 * j);
  }
  std::string bytes = v1;
  bytes[bytes.size() / 2] ^= 0x01;
  WriteFile(path, bytes);
  EXPECT_EQ(StratumIndexFile::Open(path, nullptr, IndexCheck::kOnUse).status().code(), Code::kDataLoss);
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
