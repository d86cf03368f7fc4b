// Fuzzes the WebDataset tar source of `strata ingest` (libarchive underneath,
// gzip included: the filter is picked from the bytes, not the name). Input:
// the archive. Property: Open and every Next end in a Status; nothing else.
#include <string>

#include "client/ingest/sample_source.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  const std::string path = fuzz::WriteScratchFile("input.tar", fuzz::AsView(data, size));
  auto source = SampleSource::Open(path);
  if (!source.ok()) return 0;
  Sample sample;
  for (int i = 0; i < 4096; ++i) {
    if (!(*source)->Next(&sample).ok()) break;
  }
  (void)(*source)->bytes_read();
  return 0;
}
