// Checksums and content hashes, from xxHash (XXH3). Every record and every
// shard file carries an XXH3-64 checksum; exact duplicates are found by
// XXH3-128 content hashes.
//
// Thread-safety: the free functions are pure. A Checksum64Stream is not
// thread-safe; use one per writer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace strata {

// XXH3-64 of `data`, seed 0.
uint64_t Checksum64(const void* data, size_t size);
inline uint64_t Checksum64(std::string_view s) { return Checksum64(s.data(), s.size()); }

// XXH3-64 with a seed: used to derive keys (for the epoch plan) from names and numbers.
uint64_t Hash64(std::string_view data, uint64_t seed);

struct Hash128 {
  uint64_t hi = 0;
  uint64_t lo = 0;
  friend bool operator==(const Hash128&, const Hash128&) = default;
};
struct Hash128Hasher {
  size_t operator()(const Hash128& h) const { return static_cast<size_t>(h.lo ^ (h.hi * 0x9E3779B97F4A7C15ULL)); }
};

// XXH3-128 of `data`: the content hash used to find exact duplicate samples.
Hash128 ContentHash(std::string_view data);

// Incremental XXH3-64 over a sequence of byte ranges; Digest() equals
// Checksum64 of their concatenation.
class Checksum64Stream {
 public:
  Checksum64Stream();
  ~Checksum64Stream();
  Checksum64Stream(const Checksum64Stream&) = delete;
  Checksum64Stream& operator=(const Checksum64Stream&) = delete;

  void Update(const void* data, size_t size);
  void Update(std::string_view s) { Update(s.data(), s.size()); }
  uint64_t Digest() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Incremental XXH3-128 (for content hashes over several fields).
class ContentHashStream {
 public:
  ContentHashStream();
  ~ContentHashStream();
  ContentHashStream(const ContentHashStream&) = delete;
  ContentHashStream& operator=(const ContentHashStream&) = delete;

  void Update(std::string_view s);
  Hash128 Digest() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace strata
