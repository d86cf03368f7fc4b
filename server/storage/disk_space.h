// DiskSpace: the free space of the file system that holds the data
// directory, against the node's two watermarks.
//
//   free < low watermark:  the node refuses ingests and incoming replicas
//                          (ResourceExhausted naming the node and its free space)
//   free < high watermark: the node takes no new replicas: ingests place
//                          copies elsewhere and its repair loop pulls nothing,
//                          but it still accepts writes it is sent
//
// The figures are sampled (statvfs) by Sample(), which the node calls on its
// periodic work (server/cluster/peer_disks.h), never per request; the checks
// read the last sample. Before the first sample the node counts as having
// room, so a node is never refused for want of a figure.
//
// Thread-safety: every method is safe from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "common/status.h"
#include "common/units.h"

namespace strata {

struct DiskFigures {
  uint64_t free_bytes = 0;   // available to stratad (statvfs f_bavail)
  uint64_t total_bytes = 0;  // the file system's size
};

class DiskSpace {
 public:
  struct Options {
    std::string node_id;
    std::string path;  // the data directory
    ByteThreshold low;
    ByteThreshold high;  // the larger of it and `low` is used
    // Test only: report this many bytes free (statvfs still gives the total). 0: the real figure.
    uint64_t test_free_bytes = 0;
  };
  explicit DiskSpace(Options options);

  // Reads the file system's figures. IOError (the last sample stays) if statvfs fails.
  Status Sample();

  DiskFigures Last() const { return {free_.load(), total_.load()}; }
  // The watermarks in bytes for the last sampled total.
  uint64_t LowBytes() const;
  uint64_t HighBytes() const;
  // True when the last sample is below the watermark.
  bool BelowLow() const;
  bool BelowHigh() const;

  // OK while free space is at or above the low watermark; else
  // ResourceExhausted: "<node> refuses <what>: 1.2 GiB free of 50.0 GiB on
  // <dir>, below disk_low_watermark (5% = 2.5 GiB)".
  Status CheckWritable(const std::string& what) const;

 private:
  const Options o_;
  std::atomic<bool> sampled_{false};
  std::atomic<uint64_t> free_{0};
  std::atomic<uint64_t> total_{0};
};

}  // namespace strata
