#include "common/allocator.h"

#include <cstdlib>  // defines __GLIBC__ where the C library is glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace strata {

bool TuneAllocatorForStreaming() {
#if defined(__GLIBC__)
  constexpr int kTrimThreshold = 256 << 20;  // freed heap kept for reuse
  constexpr int kMmapThreshold = 32 << 20;   // glibc's ceiling on 64-bit
  constexpr int kTopPad = 16 << 20;          // heap grown in steps of this much
  const bool trim = mallopt(M_TRIM_THRESHOLD, kTrimThreshold) == 1;
  const bool mmap = mallopt(M_MMAP_THRESHOLD, kMmapThreshold) == 1;
  const bool pad = mallopt(M_TOP_PAD, kTopPad) == 1;
  return trim && mmap && pad;
#else
  return false;
#endif
}

void ReleaseFreeHeap() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace strata
