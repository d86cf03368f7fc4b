// Process-wide allocator settings for programs that receive batches.
//
// gRPC reads every message into freshly allocated buffers and frees them once
// parsed. With glibc's defaults the freed memory goes back to the kernel at
// once (heap trimming, and mmap for blocks over 128 KiB), so the next batch
// faults every page in again and every free flushes TLBs: on 1 MiB samples
// that cost a trainer half its throughput. TuneAllocatorForStreaming keeps
// up to 256 MiB of freed heap for reuse and serves blocks up to 32 MiB (a
// whole default batch part) from the heap.
//
// Call it once, early in main(), before threads start: it changes malloc for
// the whole process (Python: strata.tune_allocator()). stratad and the strata
// CLI call it themselves. A no-op where the C library is not glibc.
//
// Thread-safety: not safe to call while other threads allocate.
#pragma once

namespace strata {

// Returns false if the C library refused a setting (or is not glibc).
bool TuneAllocatorForStreaming();

}  // namespace strata
