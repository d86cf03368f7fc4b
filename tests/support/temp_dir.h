// A temporary directory for one test, removed with everything in it at scope exit.
#pragma once

#include <cstdint>
#include <string>

namespace strata::testing {

class TempDir {
 public:
  TempDir();  // creates a fresh directory under $TMPDIR (or /tmp)
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path() + "/" + name
  std::string Join(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Writes `contents` to `path`, creating parent directories. Aborts the test on failure.
void WriteFile(const std::string& path, const std::string& contents);
// The whole file; aborts the test on failure.
std::string ReadFile(const std::string& path);
// XORs the byte at `offset` of `path` with `mask`, in place: a process that
// maps the file (a running stratad) sees the damage, never a truncated file.
void FlipByte(const std::string& path, uint64_t offset, uint8_t mask = 0x01);

}  // namespace strata::testing
