// Which records of a mapped shard file a read may serve without hashing them
// again: those whose checksum a read verified while every page they lie in
// was locked in this process's memory (mlock), and has stayed locked since.
//
// Why that is safe: a record is checksummed to catch bytes that storage
// damaged. A page of a file mapping that is not locked can be dropped by the
// kernel at any time and read again from storage when next touched, so its
// bytes must be verified on every read. A locked page cannot be dropped: the
// bytes a read verified are the bytes every later read of it finds, until the
// page is unlocked. Unlocking forgets every verification of the file (the
// pages may come from storage again), so the next read of each record hashes
// it again. (A process writing into the file itself changes locked pages too;
// shard files are immutable and only stratad writes the data directory. The
// scrubber re-reads every file from storage in any case.)
//
// The block cache (server/storage/block_cache.h) locks the blocks it reads
// ahead, and those sparse uses keep coming back to, and unlocks them when it
// lets them go (ShardReader::Populate, Lock, Release). Where the kernel refuses to lock (RLIMIT_MEMLOCK without
// CAP_IPC_LOCK, or vm.max_map_count), nothing is locked and every read hashes
// its record, as it would without a cache. (ASan and TSan make mlock a no-op
// that succeeds: in their builds the pages are marked locked but are not.)
//
// Thread-safety: thread-safe. A read that overlaps an unlock of its pages may
// still serve bytes it verified before (as a read that overlaps the cache's
// release always could); a verification that overlaps an unlock is never
// remembered. Locks and unlocks of the file take turns, so that the bits
// saying which pages are locked end as the last of them left the pages (a
// lock of a block being evicted, from the I/O pool, may run beside the
// eviction's unlock).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "common/mutex.h"

namespace strata {

class VerifiedRecords {
 public:
  // For a mapping of `file_size` bytes at `base` that holds `records` records.
  VerifiedRecords(const char* base, uint64_t file_size, uint64_t records);

  // Locks the mapped pages that cover [offset, offset + len) (mlock, which
  // reads them from storage first where needed). False if the kernel refused;
  // its refusal is logged once per process.
  bool Lock(uint64_t offset, uint64_t len);
  // Forgets every verification of the file, then unlocks those pages.
  void Unlock(uint64_t offset, uint64_t len);

  // Whether record `index`, at bytes [begin, end) of the file, may be served
  // without its checksum: verified while its pages stayed locked.
  bool Trusted(uint64_t index, uint64_t begin, uint64_t end) const;
  // Call before verifying record `index` at [begin, end); pass what it
  // returns to Verified once the checksum matched. 0: not lockable now.
  uint64_t Begin(uint64_t begin, uint64_t end) const;
  void Verified(uint64_t ticket, uint64_t index);

  // Whether every page of bytes [begin, end) of the file is locked.
  bool Locked(uint64_t begin, uint64_t end) const;

 private:
  void MarkPages(uint64_t offset, uint64_t len, bool locked);

  Mutex lock_mu_;  // Lock and Unlock, each with its marking, one at a time
  char* const base_;
  const uint64_t size_;
  const uint64_t page_;
  const uint64_t records_;
  const uint64_t pages_;
  std::unique_ptr<std::atomic<uint64_t>[]> verified_;  // a bit per record
  std::unique_ptr<std::atomic<uint64_t>[]> locked_;    // a bit per page
  // Advanced at the start and the end of every Unlock, which unlocking_
  // counts while it runs: a verification begun during one, or during which
  // one began, is not remembered. Starts at 1, so that tickets are never 0.
  std::atomic<uint64_t> generation_{1};
  std::atomic<uint32_t> unlocking_{0};
};

}  // namespace strata
