#include "fuzz/fuzz_support.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace strata::fuzz {
namespace {

std::string MakeScratchDir() {
  const char* tmp = getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/strata-fuzz.XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) Fail("mkdtemp " + pattern + " failed");
  return pattern;
}

void RemoveScratchDir();

// Never destroyed: the exit handler that removes the folder runs after
// static destructors would have.
const std::string& Dir() {
  static const std::string* dir = [] {
    auto* d = new std::string(MakeScratchDir());
    atexit(RemoveScratchDir);
    return d;
  }();
  return *dir;
}

void RemoveScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(Dir(), ec);
}

}  // namespace

const std::string& ScratchDir() { return Dir(); }

std::string WriteScratchFile(const std::string& name, std::string_view bytes) {
  const std::string path = ScratchDir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) Fail("writing " + path + " failed");
  return path;
}

void Fail(std::string_view what) {
  fprintf(stderr, "fuzz property failed: %.*s\n", static_cast<int>(what.size()), what.data());
  fflush(stderr);
  abort();
}

}  // namespace strata::fuzz
