#include "server/storage/disk_space.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>

namespace strata {

DiskSpace::DiskSpace(Options options) : o_(std::move(options)) {}

Status DiskSpace::Sample() {
  struct statvfs fs {};
  if (statvfs(o_.path.c_str(), &fs) != 0) return ErrnoStatus("statvfs " + o_.path, errno);
  const uint64_t unit = fs.f_frsize ? fs.f_frsize : fs.f_bsize;
  const uint64_t total = static_cast<uint64_t>(fs.f_blocks) * unit;
  const uint64_t free = o_.test_free_bytes ? o_.test_free_bytes : static_cast<uint64_t>(fs.f_bavail) * unit;
  total_ = std::max(total, free);
  free_ = free;
  sampled_ = true;
  return Status::OK();
}

uint64_t DiskSpace::LowBytes() const { return o_.low.Of(total_.load()); }

uint64_t DiskSpace::HighBytes() const { return std::max(LowBytes(), o_.high.Of(total_.load())); }

bool DiskSpace::BelowLow() const { return sampled_.load() && free_.load() < LowBytes(); }

bool DiskSpace::BelowHigh() const { return sampled_.load() && free_.load() < HighBytes(); }

Status DiskSpace::CheckWritable(const std::string& what) const {
  if (!BelowLow()) return Status::OK();
  const DiskFigures f = Last();
  std::string mark = FormatBytes(LowBytes());
  if (o_.low.percent) mark = FormatByteThreshold(o_.low) + " = " + mark;
  return Status::ResourceExhausted(o_.node_id + " refuses " + what + ": " + FormatBytes(f.free_bytes) + " free of " +
                                   FormatBytes(f.total_bytes) + " on " + o_.path + ", below disk_low_watermark (" +
                                   mark + ")");
}

}  // namespace strata
