#include "server/cluster/scrubber.h"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "server/cluster/file_transfer.h"
#include "server/node.h"

namespace strata {

namespace {

// A pause between passes, so an idle node's disk is not read continuously.
constexpr std::chrono::seconds kPassPause{10};

}  // namespace

Scrubber::Scrubber(Node* node, uint64_t bytes_per_sec)
    : node_(node), bytes_per_sec_(bytes_per_sec), limiter_(bytes_per_sec) {}

Scrubber::~Scrubber() { Stop(); }

void Scrubber::Start() {
  if (bytes_per_sec_ == 0) return;
  thread_ = std::thread([this] { Run(); });
}

void Scrubber::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool Scrubber::WaitOrStop(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(mu_);
  return wake_.wait_for(lock, d, [this] { return stopping_; });
}

void Scrubber::Run() {
  for (;;) {
    for (const v1::FileRef& file : node_->local_files().List("", 0)) {
      if (WaitOrStop(std::chrono::milliseconds(0))) return;
      const std::string path = node_->data_dir().Absolute(node_->data_dir().FileRelativePath(file));
      std::error_code ec;
      const uint64_t size = std::filesystem::file_size(path, ec);
      if (ec) continue;  // released or quarantined meanwhile
      // Pace in pieces so Stop() is not held up by a large file.
      for (uint64_t left = size; left > 0;) {
        const uint64_t piece = std::min<uint64_t>(left, 4ull << 20);
        limiter_.Acquire(piece);
        left -= piece;
        if (WaitOrStop(std::chrono::milliseconds(0))) return;
      }
      Status s = VerifyLocalFile(file.kind(), path);
      node_->metrics().scrubbed_bytes.Increment(static_cast<double>(size));
      if (s.IsCorruption()) {
        spdlog::error("scrub: {} is corrupt: {}", FileName(file), s.message());
        node_->Quarantine(file);
      } else if (!s.ok() && !s.IsNotFound()) {
        spdlog::warn("scrub: {}: {}", FileName(file), s.ToString());
      }
    }
    if (WaitOrStop(kPassPause)) return;
  }
}

}  // namespace strata
