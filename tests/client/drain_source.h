// Reading a SampleSource to its end, for the source tests: what one pass
// yields, its keys, a sample's fields.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "client/ingest/sample_source.h"

namespace strata {

// Everything one pass over a source yields.
struct Drained {
  Status status;  // the first error of Open or Next, other than the end
  std::vector<Sample> samples;
  uint64_t total_bytes = 0;
  uint64_t bytes_read = 0;
  std::string description;
};

inline Drained ReadAll(const std::string& path) {
  Drained d;
  Result<std::unique_ptr<SampleSource>> source = SampleSource::Open(path);
  if (!source.ok()) {
    d.status = source.status();
    return d;
  }
  for (;;) {
    Sample sample;
    Status status = (*source)->Next(&sample);
    if (status.code() == Code::kOutOfRange) break;
    if (!status.ok()) {
      d.status = status;
      break;
    }
    d.samples.push_back(std::move(sample));
  }
  d.total_bytes = (*source)->total_bytes();
  d.bytes_read = (*source)->bytes_read();
  d.description = (*source)->description();
  return d;
}

inline std::vector<std::string> Keys(const Drained& d) {
  std::vector<std::string> keys;
  for (const Sample& s : d.samples) keys.push_back(s.key);
  return keys;
}

inline std::vector<std::pair<std::string, std::string>> Fields(const Sample& s) {
  std::vector<std::pair<std::string, std::string>> fields;
  for (const Field& f : s.fields) fields.emplace_back(f.name, f.data);
  return fields;
}

}  // namespace strata
