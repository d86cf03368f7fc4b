// Process-wide allocator settings. TuneAllocatorForStreaming is public
// (strata/allocator.h, installed with libstrata); what follows is for
// stratad.
#pragma once

#include "strata/allocator.h"

namespace strata {

// Consolidates the free heap of every arena and gives what it can back to the
// kernel (glibc's malloc_trim). Call it after a burst of work that freed a lot
// (stratad does after each ingest), so that neither the memory nor the cost of
// consolidating it falls on the next request: after ingesting 10M samples
// that cost was most of the first batch's time. A no-op without glibc.
void ReleaseFreeHeap();

}  // namespace strata
