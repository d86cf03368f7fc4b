// Fuzzes the CSV and JSONL manifest sources of `strata ingest` (one binary
// each: STRATA_FUZZ_MANIFEST_EXT is ".csv" or ".jsonl"). Input: the manifest.
// It lies in a scratch folder beside two small files, "a.jpg" and
// "b/c.png", so that rows can name files that exist.
// Property: Open and every Next end in a Status; nothing else.
#include <filesystem>
#include <string>

#include "client/ingest/sample_source.h"
#include "fuzz/fuzz_support.h"

#ifndef STRATA_FUZZ_MANIFEST_EXT
#error "STRATA_FUZZ_MANIFEST_EXT must be \".csv\" or \".jsonl\""
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  static const bool files_made = [] {
    std::filesystem::create_directories(fuzz::ScratchDir() + "/b");
    fuzz::WriteScratchFile("a.jpg", "jpeg bytes");
    fuzz::WriteScratchFile("b/c.png", "png bytes");
    return true;
  }();
  (void)files_made;
  const std::string path =
      fuzz::WriteScratchFile(std::string("manifest") + STRATA_FUZZ_MANIFEST_EXT, fuzz::AsView(data, size));
  auto source = SampleSource::Open(path);
  if (!source.ok()) return 0;
  Sample sample;
  for (int i = 0; i < 4096; ++i) {
    if (!(*source)->Next(&sample).ok()) break;
  }
  return 0;
}
