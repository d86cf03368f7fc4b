// Little-endian integers in byte buffers, as the on-disk formats store them
// (shard files, the stratum index). Loads may be unaligned: memcpy is the
// defined way to read them, and compiles to a plain load.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>

namespace strata {

static_assert(std::endian::native == std::endian::little, "strata's file formats assume a little-endian host");

inline uint32_t LoadU32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline uint64_t LoadU64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Appends v's bytes to *out.
inline void PutU32(std::string* out, uint32_t v) { out->append(reinterpret_cast<const char*>(&v), sizeof v); }
inline void PutU64(std::string* out, uint64_t v) { out->append(reinterpret_cast<const char*>(&v), sizeof v); }

// Overwrites the bytes of *out at `at` with v's. REQUIRES: at + sizeof v <= out->size().
inline void StoreU32(std::string* out, size_t at, uint32_t v) { std::memcpy(out->data() + at, &v, sizeof v); }
inline void StoreU64(std::string* out, size_t at, uint64_t v) { std::memcpy(out->data() + at, &v, sizeof v); }

}  // namespace strata
