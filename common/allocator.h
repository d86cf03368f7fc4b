// Process-wide allocator settings for processes that move batches.
//
// gRPC reads every message into freshly allocated slices and frees them once
// parsed. With glibc's defaults the freed memory goes back to the kernel at
// once (heap trimming, and mmap for blocks over 128 KiB), so the next batch
// faults every page in again and every free flushes TLBs: on 1 MiB samples
// that cost the client half its throughput (bench/peers.sh, README
// "Performance"). TuneAllocatorForStreaming keeps up to 256 MiB of freed heap
// for reuse and serves blocks up to 32 MiB (a whole default batch part) from
// the heap.
//
// Call it once, early in main(), before threads start: it changes malloc for
// the whole process. stratad and the strata CLI call it; trainers that use
// libstrata may (strata::TuneAllocatorForStreaming in C++,
// strata.tune_allocator() in Python). A no-op where the C library is not glibc.
#pragma once

namespace strata {

// Returns false if the C library refused a setting (or is not glibc).
bool TuneAllocatorForStreaming();

// Consolidates the free heap of every arena and gives what it can back to the
// kernel (glibc's malloc_trim). Call it after a burst of work that freed a lot
// (stratad does after each ingest), so that neither the memory nor the cost of
// consolidating it falls on the next request: after ingesting 10M samples
// that cost was most of the first batch's time. A no-op without glibc.
void ReleaseFreeHeap();

}  // namespace strata
