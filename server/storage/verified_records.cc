#include "server/storage/verified_records.h"

#include <errno.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace strata {
namespace {

uint64_t Words(uint64_t bits) { return (bits + 63) / 64; }

std::unique_ptr<std::atomic<uint64_t>[]> Bits(uint64_t bits) {
  auto words = std::make_unique<std::atomic<uint64_t>[]>(Words(bits));
  for (uint64_t i = 0; i < Words(bits); ++i) words[i].store(0, std::memory_order_relaxed);
  return words;
}

// The mask of bits [from, to) within one word. REQUIRES: from < to <= 64.
uint64_t Mask(uint64_t from, uint64_t to) {
  const uint64_t high = to == 64 ? ~0ull : (1ull << to) - 1;
  return high & ~((1ull << from) - 1);
}

}  // namespace

VerifiedRecords::VerifiedRecords(const char* base, uint64_t file_size, uint64_t records)
    : base_(const_cast<char*>(base)),
      size_(file_size),
      page_(static_cast<uint64_t>(sysconf(_SC_PAGESIZE))),
      records_(records),
      pages_((file_size + page_ - 1) / page_),
      verified_(Bits(records)),
      locked_(Bits(pages_)) {}

void VerifiedRecords::MarkPages(uint64_t offset, uint64_t len, bool locked) {
  if (offset >= size_ || len == 0) return;
  const uint64_t first = offset / page_;
  const uint64_t end = (std::min(size_, offset + std::min(len, size_ - offset)) + page_ - 1) / page_;
  for (uint64_t p = first; p < end;) {
    const uint64_t word = p / 64;
    const uint64_t stop = std::min(end, (word + 1) * 64);
    const uint64_t mask = Mask(p % 64, stop - word * 64);
    if (locked) {
      locked_[word].fetch_or(mask);
    } else {
      locked_[word].fetch_and(~mask);
    }
    p = stop;
  }
}

bool VerifiedRecords::Locked(uint64_t begin, uint64_t end) const {
  if (begin >= end || end > size_) return false;
  const uint64_t last = (end - 1) / page_;
  for (uint64_t p = begin / page_; p <= last;) {
    const uint64_t word = p / 64;
    const uint64_t stop = std::min(last + 1, (word + 1) * 64);
    const uint64_t mask = Mask(p % 64, stop - word * 64);
    if ((locked_[word].load(std::memory_order_acquire) & mask) != mask) return false;
    p = stop;
  }
  return true;
}

bool VerifiedRecords::Lock(uint64_t offset, uint64_t len) {
  if (offset >= size_ || len == 0) return true;
  const uint64_t first = offset / page_ * page_;
  const uint64_t end = std::min(size_, offset + std::min(len, size_ - offset));
  MutexLock lock(&lock_mu_);
  if (mlock(base_ + first, end - first) != 0) {
    const int error = errno;
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) {
      spdlog::warn(
          "cannot lock shard blocks in memory ({}): every read checksums its record again; give stratad "
          "CAP_IPC_LOCK or a memlock limit of at least cache_bytes (systemd: LimitMEMLOCK=infinity)",
          std::strerror(error));
    }
    return false;
  }
  MarkPages(first, end - first, true);
  return true;
}

void VerifiedRecords::Unlock(uint64_t offset, uint64_t len) {
  if (offset >= size_ || len == 0) return;
  MutexLock lock(&lock_mu_);
  unlocking_.fetch_add(1);
  generation_.fetch_add(1);
  const uint64_t first = offset / page_ * page_;
  const uint64_t end = std::min(size_, offset + std::min(len, size_ - offset));
  MarkPages(first, end - first, false);
  // Every record, not only those in the range: the bits say nothing of where
  // a record lies, and a release is rare beside the reads it saves.
  for (uint64_t i = 0; i < Words(records_); ++i) {
    if (verified_[i].load(std::memory_order_relaxed) != 0) verified_[i].store(0);
  }
  munlock(base_ + first, end - first);
  generation_.fetch_add(1);
  unlocking_.fetch_sub(1);
}

bool VerifiedRecords::Trusted(uint64_t index, uint64_t begin, uint64_t end) const {
  if (index >= records_) return false;
  if ((verified_[index / 64].load(std::memory_order_acquire) & (1ull << (index % 64))) == 0) return false;
  return Locked(begin, end);
}

uint64_t VerifiedRecords::Begin(uint64_t begin, uint64_t end) const {
  if (unlocking_.load() != 0) return 0;
  const uint64_t ticket = generation_.load();
  return Locked(begin, end) ? ticket : 0;
}

void VerifiedRecords::Verified(uint64_t ticket, uint64_t index) {
  if (ticket == 0 || index >= records_) return;
  const uint64_t bit = 1ull << (index % 64);
  verified_[index / 64].fetch_or(bit);
  // An unlock that began since Begin, or runs now, may have cleared the bits
  // before this one was set: take it back.
  if (generation_.load() != ticket || unlocking_.load() != 0) verified_[index / 64].fetch_and(~bit);
}

}  // namespace strata
