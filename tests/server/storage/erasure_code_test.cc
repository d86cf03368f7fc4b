#include "server/storage/erasure_code.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "server/storage/parity_file.h"
#include "tests/support/temp_dir.h"

namespace strata {
namespace {

using testing::FlipByte;
using testing::TempDir;
using testing::WriteFile;

// K + M chunks of `len` bytes: random data, then parity from Encode.
std::vector<std::vector<uint8_t>> Stripe(const ErasureCode& code, size_t len, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::vector<uint8_t>> chunks(code.k() + code.m(), std::vector<uint8_t>(len));
  for (uint32_t i = 0; i < code.k(); ++i) {
    for (auto& b : chunks[i]) b = static_cast<uint8_t>(rng());
  }
  std::vector<const uint8_t*> data;
  std::vector<uint8_t*> parity;
  for (uint32_t i = 0; i < code.k(); ++i) data.push_back(chunks[i].data());
  for (uint32_t i = code.k(); i < code.k() + code.m(); ++i) parity.push_back(chunks[i].data());
  EXPECT_TRUE(code.Encode(data, len, parity).ok());
  return chunks;
}

TEST(ErasureCodeTest, RejectsBadShapes) {
  EXPECT_EQ(ErasureCode::Create(0, 2).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(ErasureCode::Create(4, 0).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(ErasureCode::Create(30, 3).status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(ErasureCode::Create(30, 2).ok());
  EXPECT_TRUE(ErasureCode::Create(1, 1).ok());
}

TEST(ErasureCodeTest, ParityIsNotData) {
  auto code = ErasureCode::Create(4, 2).value();
  const auto chunks = Stripe(code, 1000, 1);
  EXPECT_NE(chunks[4], chunks[0]);
  EXPECT_NE(chunks[4], chunks[5]);
}

// Every way of losing M chunks of a 4+2 stripe (and of a 3+3 one) is rebuilt
// byte for byte from the K left.
TEST(ErasureCodeTest, RebuildsFromAnyK) {
  for (auto [k, m] : {std::pair<uint32_t, uint32_t>{4, 2}, {3, 3}, {1, 1}, {10, 4}}) {
    auto code = ErasureCode::Create(k, m).value();
    const size_t len = 4099;
    const auto original = Stripe(code, len, k * 100 + m);
    const uint32_t n = k + m;
    for (uint32_t lost = 0; lost < (1u << n); ++lost) {
      if (static_cast<uint32_t>(__builtin_popcount(lost)) != m) continue;
      auto chunks = original;
      std::vector<uint32_t> present, wanted;
      std::vector<uint8_t*> pointers;
      for (uint32_t i = 0; i < n; ++i) {
        if (lost & (1u << i)) {
          wanted.push_back(i);
          std::fill(chunks[i].begin(), chunks[i].end(), 0xEE);
        } else {
          present.push_back(i);
        }
        pointers.push_back(chunks[i].data());
      }
      ASSERT_TRUE(code.Reconstruct(pointers, len, present, wanted).ok()) << k << "+" << m << " lost " << lost;
      EXPECT_EQ(chunks, original) << k << "+" << m << " lost mask " << lost;
    }
  }
}

// One chunk rebuilt from K others with the rest left out (null): what a
// rebuild and the scrubber's parity check do, holding K + 1 chunks.
TEST(ErasureCodeTest, ChunksNeitherPresentNorWantedMayBeNull) {
  auto code = ErasureCode::Create(4, 2).value();
  const size_t len = 3001;
  const auto original = Stripe(code, len, 7);
  for (uint32_t wanted_chunk : {1u, 4u, 5u}) {
    auto chunks = original;
    std::fill(chunks[wanted_chunk].begin(), chunks[wanted_chunk].end(), 0xEE);
    std::vector<uint32_t> present;
    std::vector<uint8_t*> pointers(6, nullptr);
    for (uint32_t c = 0; c < 6 && present.size() < 4; ++c) {
      if (c == wanted_chunk) continue;
      present.push_back(c);
      pointers[c] = chunks[c].data();
    }
    pointers[wanted_chunk] = chunks[wanted_chunk].data();
    const std::vector<uint32_t> wanted{wanted_chunk};
    ASSERT_TRUE(code.Reconstruct(pointers, len, present, wanted).ok()) << wanted_chunk;
    EXPECT_EQ(chunks[wanted_chunk], original[wanted_chunk]) << wanted_chunk;
  }
}

TEST(ErasureCodeTest, FewerThanKIsUnavailable) {
  auto code = ErasureCode::Create(4, 2).value();
  auto chunks = Stripe(code, 64, 7);
  std::vector<uint8_t*> pointers;
  for (auto& c : chunks) pointers.push_back(c.data());
  const std::vector<uint32_t> present = {0, 1, 5}, wanted = {2};
  const Status s = code.Reconstruct(pointers, 64, present, wanted);
  EXPECT_EQ(s.code(), Code::kUnavailable);
  EXPECT_NE(s.message().find("3 of 6"), std::string::npos) << s.ToString();
}

TEST(ErasureCodeTest, BadInputIsInvalidArgument) {
  auto code = ErasureCode::Create(4, 2).value();
  auto chunks = Stripe(code, 64, 8);
  std::vector<uint8_t*> pointers;
  for (auto& c : chunks) pointers.push_back(c.data());
  const std::vector<uint32_t> all = {0, 1, 2, 3, 4, 5};
  const std::vector<uint32_t> out_of_range = {6}, present_too = {1}, none;
  EXPECT_EQ(code.Reconstruct(pointers, 64, all, out_of_range).code(), Code::kInvalidArgument);
  EXPECT_EQ(code.Reconstruct(pointers, 64, all, present_too).code(), Code::kInvalidArgument);
  const std::vector<uint32_t> bad_present = {0, 1, 2, 9};
  EXPECT_EQ(code.Reconstruct(pointers, 64, bad_present, out_of_range).code(), Code::kInvalidArgument);
  std::vector<uint8_t*> too_few(pointers.begin(), pointers.begin() + 5);
  EXPECT_EQ(code.Reconstruct(too_few, 64, all, none).code(), Code::kInvalidArgument);
  std::vector<const uint8_t*> data(3, chunks[0].data());
  std::vector<uint8_t*> parity(2, chunks[4].data());
  EXPECT_EQ(code.Encode(data, 64, parity).code(), Code::kInvalidArgument);
}

TEST(ParityFileTest, WritesAndVerifies) {
  TempDir dir;
  const std::string path = dir.Join("000003.parity");
  ParityTrailer t;
  t.dataset_hash = ParityDatasetHash("cats", 2);
  t.version = 2;
  t.seq = 3;
  t.k = 4;
  t.m = 2;
  const std::string body(100000, 'p');
  ASSERT_TRUE(WriteParityFile(path, body, t).ok());
  std::string read;
  auto verified = VerifyParityFile(path, nullptr, &read);
  ASSERT_TRUE(verified.ok()) << verified.status().ToString();
  EXPECT_EQ(read, body);
  EXPECT_EQ(verified->seq, 3u);
  EXPECT_EQ(verified->k, 4u);
  EXPECT_EQ(verified->m, 2u);
  EXPECT_EQ(verified->dataset_hash, ParityDatasetHash("cats", 2));
  FlipByte(path, 5000);
  EXPECT_TRUE(VerifyParityFile(path).status().IsCorruption());
  FlipByte(path, 5000);
  FlipByte(path, body.size() + 30);  // in the trailer
  EXPECT_TRUE(VerifyParityFile(path).status().IsCorruption());
  WriteFile(path, "short");
  EXPECT_TRUE(VerifyParityFile(path).status().IsCorruption());
}

}  // namespace
}  // namespace strata
