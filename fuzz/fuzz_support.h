// Helpers shared by the fuzz targets (fuzz/*_fuzzer.cc).
//
// Thread-safety: none; a fuzz target runs its inputs one at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace strata::fuzz {

// A directory of this process's own, created on first use under $TMPDIR (or
// /tmp) and removed when the process exits.
const std::string& ScratchDir();

// Writes `bytes` to ScratchDir()/name (replacing it) and returns the path.
// Aborts if it cannot: a harness that cannot write its input tests nothing.
std::string WriteScratchFile(const std::string& name, std::string_view bytes);

// The input as a string_view.
inline std::string_view AsView(const uint8_t* data, size_t size) { return {reinterpret_cast<const char*>(data), size}; }

// Aborts with `what` on stderr: a harness's own property check failed (as a
// sanitizer would report it, so libFuzzer saves the input).
[[noreturn]] void Fail(std::string_view what);

}  // namespace strata::fuzz

// Each target defines it (libFuzzer's entry point).
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
