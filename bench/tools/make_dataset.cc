// strata-make-dataset: writes a synthetic labelled dataset in the source
// formats `strata ingest` reads, for the quick start and the benchmarks.
//
// Class sizes follow a Zipf law (class c gets weight 1/(c+1)^s), so the last
// classes are rare. A sample's bytes are drawn from a class-specific
// distribution, so a small model can learn the label from the payload.
// The same --seed gives the same files.
#include <archive.h>
#include <archive_entry.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "common/input_limits.h"
#include "common/units.h"

namespace fs = std::filesystem;

namespace {

struct Options {
  std::string out;
  std::string format = "folder";
  uint64_t samples = 10000;
  std::string size = "1KiB";
  uint32_t classes = 10;
  double zipf = 1.0;
  uint64_t seed = 1;
  uint64_t samples_per_tar = 10000;
};

std::string ClassName(uint32_t c) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "class%02u", c);
  return buf;
}

// Class of sample i: deterministic, proportional to the Zipf weights.
std::vector<uint32_t> AssignClasses(const Options& o, std::mt19937_64& rng) {
  std::vector<double> w(o.classes);
  for (uint32_t c = 0; c < o.classes; ++c) w[c] = 1.0 / std::pow(c + 1.0, o.zipf);
  std::discrete_distribution<uint32_t> pick(w.begin(), w.end());
  std::vector<uint32_t> out(o.samples);
  for (auto& c : out) c = pick(rng);
  return out;
}

// Bytes centred on a class-specific value: a learnable signal plus noise.
std::string Payload(uint32_t cls, uint64_t size, std::mt19937_64& rng) {
  std::string s(size, '\0');
  std::normal_distribution<double> noise(0.0, 24.0);
  const double centre = 16.0 + 224.0 * (cls % 16) / 15.0;
  for (auto& ch : s) {
    const double v = std::clamp(centre + noise(rng), 0.0, 255.0);
    ch = static_cast<char>(static_cast<uint8_t>(v));
  }
  return s;
}

void WriteFile(const fs::path& p, const std::string& data) {
  fs::create_directories(p.parent_path());
  std::ofstream f(p, std::ios::binary);
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!f) throw std::runtime_error("cannot write " + p.string());
}

void TarAdd(archive* a, const std::string& name, const std::string& data) {
  archive_entry* e = archive_entry_new();
  archive_entry_set_pathname(e, name.c_str());
  archive_entry_set_size(e, static_cast<la_int64_t>(data.size()));
  archive_entry_set_filetype(e, AE_IFREG);
  archive_entry_set_perm(e, 0644);
  if (archive_write_header(a, e) != ARCHIVE_OK) throw std::runtime_error(archive_error_string(a));
  if (archive_write_data(a, data.data(), data.size()) < 0) throw std::runtime_error(archive_error_string(a));
  archive_entry_free(e);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"strata-make-dataset: write a synthetic labelled dataset (Zipf class sizes, learnable payloads)."};
  app.add_option("--out", o.out, "output directory")->required();
  app.add_option("--format", o.format,
                 "folder (label sub-folders), files (one flat file per sample + labels.csv), csv (manifest), "
                 "jsonl (manifest), tar (WebDataset shards)")
      ->check(CLI::IsMember({"folder", "files", "csv", "jsonl", "tar"}));
  app.add_option("--samples", o.samples, "number of samples")->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  app.add_option("--size", o.size, "bytes per sample, e.g. 1KiB or 1MiB");
  app.add_option("--classes", o.classes, "number of classes")->check(CLI::Range(1u, 100000u));
  app.add_option("--zipf", o.zipf, "Zipf exponent of class sizes (0: balanced)")->check(CLI::Range(0.0, 10.0));
  app.add_option("--seed", o.seed, "random seed");
  app.add_option("--samples-per-tar", o.samples_per_tar, "samples per WebDataset shard")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 32));
  CLI11_PARSE(app, argc, argv);
  auto size = strata::ParseByteSize(o.size);
  if (!size.ok()) {
    std::cerr << "error: " << size.status().message() << "\n";
    return 2;
  }
  // A larger sample could not be ingested (InputLimits::kMaxSampleBytes).
  if (size.value() > strata::InputLimits::kMaxSampleBytes) {
    std::cerr << "error: --size " << o.size << " is above a sample's limit, "
              << (strata::InputLimits::kMaxSampleBytes >> 20) << " MiB\n";
    return 2;
  }
  if (!std::isfinite(o.zipf)) {  // CLI::Range lets nan through
    std::cerr << "error: --zipf must be a number from 0 to 10\n";
    return 2;
  }
  try {
    std::mt19937_64 rng(o.seed);
    const std::vector<uint32_t> cls = AssignClasses(o, rng);
    const fs::path out(o.out);
    fs::create_directories(out);
    std::ofstream manifest;
    if (o.format == "csv") {
      manifest.open(out / "manifest.csv");
      manifest << "path,label,source,ts\n";
    } else if (o.format == "jsonl") {
      manifest.open(out / "manifest.jsonl");
    } else if (o.format == "files") {
      manifest.open(out / "labels.csv");
      manifest << "path,label\n";
    }
    archive* tar = nullptr;
    uint64_t tar_index = 0;
    for (uint64_t i = 0; i < o.samples; ++i) {
      const std::string label = ClassName(cls[i]);
      const std::string data = Payload(cls[i], size.value(), rng);
      char key[32];
      std::snprintf(key, sizeof(key), "%09llu", static_cast<unsigned long long>(i));
      const std::string source = (i % 10 == 0) ? "web" : "camera";
      const uint64_t ts = 1700000000 + i * 60;
      if (o.format == "folder") {
        WriteFile(out / label / (std::string(key) + ".bin"), data);
      } else if (o.format == "files" || o.format == "csv" || o.format == "jsonl") {
        const std::string rel = std::string("data/") + key + ".bin";
        WriteFile(out / rel, data);
        if (o.format == "files") manifest << rel << "," << label << "\n";
        if (o.format == "csv") manifest << rel << "," << label << "," << source << "," << ts << "\n";
        if (o.format == "jsonl") {
          manifest << "{\"path\":\"" << rel << "\",\"label\":\"" << label << "\",\"source\":\"" << source
                   << "\",\"ts\":" << ts << "}\n";
        }
      } else {  // tar
        if (i % o.samples_per_tar == 0) {
          if (tar) {
            archive_write_close(tar);
            archive_write_free(tar);
          }
          char name[32];
          std::snprintf(name, sizeof(name), "shard-%06llu.tar", static_cast<unsigned long long>(tar_index++));
          tar = archive_write_new();
          archive_write_set_format_pax_restricted(tar);
          if (archive_write_open_filename(tar, (out / name).c_str()) != ARCHIVE_OK) {
            throw std::runtime_error(archive_error_string(tar));
          }
        }
        TarAdd(tar, std::string(key) + ".bin", data);
        TarAdd(tar, std::string(key) + ".cls", label);
      }
      if ((i + 1) % 100000 == 0) std::cerr << "  " << (i + 1) << " / " << o.samples << " samples\n";
    }
    if (tar) {
      archive_write_close(tar);
      archive_write_free(tar);
    }
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  std::cout << "wrote " << o.samples << " samples (" << o.format << ", " << strata::FormatBytes(size.value())
            << " each, " << o.classes << " classes, zipf " << o.zipf << ") to " << o.out << "\n";
  return 0;
}
