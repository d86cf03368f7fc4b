// The scrubber: re-verifies every local file's checksums in the background,
// at scrub_bytes_per_sec, pass after pass. A corrupt copy is quarantined
// (moved aside, never served again) and the repair loop copies a good one
// back from another holder. Reads meanwhile check every record anyway; the
// scrubber finds damage in data nobody is reading. A copy the node's
// inventory lists that is gone from disk is damage too: quarantining it drops
// it from the inventory, so the repair loop fetches it again.
//
// A parity file of an erasure-coded version that passes its own checksums is
// also checked against its stripe (CheckStripeParity, ec_rebuild.h): its
// holder recomputes it from the stripe's K data shards, read at the same
// pace, and quarantines it if it differs (counted in
// strata_scrub_parity_mismatches_total), so repair rebuilds it. The check is
// skipped while a data shard cannot be read intact.
//
// It runs as a PeriodicTask: each run verifies one file (paced piece by
// piece, blocking on the disk and on the rate limiter), then the next, and
// pauses between passes. The executor it is given must be one whose threads
// may block for a whole file's verification: the daemon gives it a thread of
// its own (the scrub executor), never the I/O pool or the background pool
// whose timers (repair, heartbeats) must not wait behind a disk read.
//
// Thread-safety: Start/Stop from one thread.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <functional>
#include <string>
#include <vector>

#include "server/base/metrics.h"
#include "server/base/periodic_task.h"
#include "server/cluster/ec_rebuild.h"
#include "server/cluster/rate_limiter.h"
#include "server/storage/catalog.h"
#include "server/storage/data_dir.h"
#include "server/storage/local_files.h"

namespace strata {

class Scrubber {
 public:
  // What the parity check reads: the catalog (K, M and the data shards'
  // lengths and checksums) and the stripe's chunks. A null catalog skips it.
  struct StripeDeps {
    const Catalog* catalog = nullptr;
    RebuildDeps rebuild;
  };

  // `bytes_per_sec` 0 disables scrubbing (Start does nothing). `quarantine`
  // sets a corrupt copy aside. `executor`: see the class comment. The
  // pointers must outlive the Scrubber.
  Scrubber(const LocalFiles* files, const DataDir* dir, Metrics* metrics,
           std::function<void(const v1::FileRef&)> quarantine, uint64_t bytes_per_sec,
           boost::asio::any_io_executor executor, StripeDeps stripes);
  ~Scrubber();  // Stop()

  void Start();
  // Ends the verification in progress at its next piece; returns once no run
  // is left. Idempotent.
  void Stop();

 private:
  // One run: verifies the next file of the pass; returns the delay until the
  // next run (none within a pass, kPassPause after the last file).
  std::chrono::milliseconds Step();
  void Verify(const v1::FileRef& file);
  // The parity check of a PARITY file that passed its own checksums (its
  // reads paced by `pace`); quarantines it if it differs.
  void CheckParity(const v1::FileRef& file, const std::function<bool(size_t)>& pace);

  const LocalFiles* const files_;
  const DataDir* const dir_;
  Metrics* const metrics_;
  const std::function<void(const v1::FileRef&)> quarantine_;
  const uint64_t bytes_per_sec_;
  const StripeDeps stripes_;
  RateLimiter limiter_;
  // The pass in progress: the files listed at its start, and the next one.
  // Touched by runs only, which never overlap (PeriodicTask).
  std::vector<v1::FileRef> pass_;
  size_t next_ = 0;
  PeriodicTask task_;  // last: stopped (by its destructor) before the rest goes
};

}  // namespace strata
