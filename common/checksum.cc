#include "common/checksum.h"

#include <xxhash.h>

namespace strata {

uint64_t Checksum64(const void* data, size_t size) { return XXH3_64bits(data, size); }

uint64_t Hash64(std::string_view data, uint64_t seed) { return XXH3_64bits_withSeed(data.data(), data.size(), seed); }

Hash128 ContentHash(std::string_view data) {
  XXH128_hash_t h = XXH3_128bits(data.data(), data.size());
  return {h.high64, h.low64};
}

struct Checksum64Stream::State {
  XXH3_state_t* s = XXH3_createState();
  ~State() { XXH3_freeState(s); }
};

Checksum64Stream::Checksum64Stream() : state_(std::make_unique<State>()) { XXH3_64bits_reset(state_->s); }
Checksum64Stream::~Checksum64Stream() = default;
void Checksum64Stream::Update(const void* data, size_t size) { XXH3_64bits_update(state_->s, data, size); }
uint64_t Checksum64Stream::Digest() const { return XXH3_64bits_digest(state_->s); }

struct ContentHashStream::State {
  XXH3_state_t* s = XXH3_createState();
  ~State() { XXH3_freeState(s); }
};

ContentHashStream::ContentHashStream() : state_(std::make_unique<State>()) { XXH3_128bits_reset(state_->s); }
ContentHashStream::~ContentHashStream() = default;
void ContentHashStream::Update(std::string_view s) { XXH3_128bits_update(state_->s, s.data(), s.size()); }
Hash128 ContentHashStream::Digest() const {
  XXH128_hash_t h = XXH3_128bits_digest(state_->s);
  return {h.high64, h.low64};
}

}  // namespace strata
