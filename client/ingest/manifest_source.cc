// CSV and JSONL manifests: one row names one file, which becomes one sample.
#include <csv.h>

#include <cerrno>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "client/ingest/sources_internal.h"

namespace strata::ingest_internal {
namespace {

namespace fs = std::filesystem;

// The deepest nesting a manifest line may hold (an object with a list of
// lists is 3).
constexpr int kMaxJsonDepth = 64;

struct ManifestRow {
  uint64_t line = 0;  // 1-based line where the row starts
  std::string path;   // as written
  std::string label;
  std::vector<std::pair<std::string, std::string>> attributes;
};

std::string Where(const std::string& manifest, uint64_t line) { return manifest + " line " + std::to_string(line); }

bool IsBlank(const std::string& line) { return line.find_first_not_of(" \t\r") == std::string::npos; }

// The lines of a manifest, counted, without a leading UTF-8 byte order mark.
// Lines keep a trailing '\r'.
class LineReader {
 public:
  Status Open(const std::string& path) {
    path_ = path;
    in_.open(path, std::ios::binary);
    if (!in_) return ErrnoStatus(path, errno != 0 ? errno : EIO);
    return Status::OK();
  }

  // False at the end of the file or on a read error; Finish() tells which.
  bool Next(std::string* line) {
    if (!std::getline(in_, *line)) return false;
    if (++line_number_ == 1 && line->starts_with("\xEF\xBB\xBF")) line->erase(0, 3);
    return true;
  }

  Status Finish() const { return in_.bad() ? Status::IOError("reading " + path_ + " failed") : Status::OK(); }

  uint64_t line_number() const { return line_number_; }

 private:
  std::string path_;
  std::ifstream in_;
  uint64_t line_number_ = 0;
};

// The rows of a manifest, one at a time.
class RowReader {
 public:
  virtual ~RowReader() = default;
  // OutOfRange after the last row; InvalidArgument naming the line for a
  // malformed one.
  virtual Status Next(ManifestRow* row) = 0;
};

// libcsv does the quoting; rows are fed to it line by line so that each row
// knows the line it starts on.
class CsvRowReader final : public RowReader {
 public:
  CsvRowReader() { csv_init(&parser_, CSV_STRICT | CSV_STRICT_FINI); }
  ~CsvRowReader() override { csv_free(&parser_); }
  CsvRowReader(const CsvRowReader&) = delete;
  CsvRowReader& operator=(const CsvRowReader&) = delete;

  // Reads the header row.
  Status Open(const std::string& path) {
    path_ = path;
    STRATA_RETURN_IF_ERROR(lines_.Open(path));
    STRATA_RETURN_IF_ERROR(Fill());
    if (rows_.empty()) return Status::InvalidArgument(path + " is empty: expected a header row");
    header_ = std::move(rows_.front().second);
    rows_.pop_front();
    // A set, not a pairwise check: that took seconds on a header of 64k columns.
    std::unordered_set<std::string_view> seen;
    for (size_t i = 0; i < header_.size(); ++i) {
      if (!header_[i].empty() && !seen.insert(header_[i]).second) {
        return Status::InvalidArgument(path + ": duplicate column \"" + header_[i] + "\"");
      }
      if (header_[i] == "path") path_column_ = i;
      if (header_[i] == "label") label_column_ = i;
    }
    if (path_column_ == kNone) {
      return Status::InvalidArgument(path + ": the header has no \"path\" column");
    }
    return Status::OK();
  }

  Status Next(ManifestRow* row) override {
    STRATA_RETURN_IF_ERROR(Fill());
    if (rows_.empty()) return Status::OutOfRange("end of " + path_);
    auto [line, fields] = std::move(rows_.front());
    rows_.pop_front();
    if (fields.size() != header_.size()) {
      return Status::InvalidArgument(Where(path_, line) + ": expected " + std::to_string(header_.size()) +
                                     " columns, found " + std::to_string(fields.size()));
    }
    if (fields[path_column_].empty()) {
      return Status::InvalidArgument(Where(path_, line) + ": empty \"path\"");
    }
    row->line = line;
    row->path = std::move(fields[path_column_]);
    row->label = label_column_ == kNone ? std::string() : std::move(fields[label_column_]);
    row->attributes.clear();
    for (size_t i = 0; i < fields.size(); ++i) {
      if (i == path_column_ || i == label_column_ || header_[i].empty()) continue;
      row->attributes.emplace_back(header_[i], std::move(fields[i]));
    }
    return Status::OK();
  }

 private:
  static constexpr size_t kNone = SIZE_MAX;

  // Parses lines until a whole row is queued or the input ends.
  Status Fill() {
    std::string line;
    while (rows_.empty() && !at_end_) {
      if (!lines_.Next(&line)) {
        STRATA_RETURN_IF_ERROR(lines_.Finish());
        at_end_ = true;
        if (csv_fini(&parser_, OnField, OnRowEnd, this) != 0) return ParseError();
        break;
      }
      if (!in_row_ && !IsBlank(line)) {
        in_row_ = true;
        row_line_ = lines_.line_number();
      }
      line.push_back('\n');
      if (csv_parse(&parser_, line.data(), line.size(), OnField, OnRowEnd, this) != line.size()) {
        return ParseError();
      }
    }
    return Status::OK();
  }

  Status ParseError() {
    return Status::InvalidArgument(Where(path_, lines_.line_number()) + ": malformed CSV (" +
                                   csv_strerror(csv_error(&parser_)) + ")");
  }

  static void OnField(void* data, size_t size, void* self) {
    auto* reader = static_cast<CsvRowReader*>(self);
    reader->fields_.emplace_back(static_cast<const char*>(data), size);
  }

  static void OnRowEnd(int /*terminator*/, void* self) {
    auto* reader = static_cast<CsvRowReader*>(self);
    reader->rows_.emplace_back(reader->row_line_, std::move(reader->fields_));
    reader->fields_.clear();
    reader->in_row_ = false;
  }

  std::string path_;
  LineReader lines_;
  csv_parser parser_{};
  bool at_end_ = false;
  bool in_row_ = false;                                             // a row has started and not yet ended
  uint64_t row_line_ = 0;                                           // where the current row started
  std::vector<std::string> fields_;                                 // of the current row
  std::deque<std::pair<uint64_t, std::vector<std::string>>> rows_;  // parsed, not yet returned
  std::vector<std::string> header_;
  size_t path_column_ = kNone;
  size_t label_column_ = kNone;
};

class JsonlRowReader final : public RowReader {
 public:
  Status Open(const std::string& path) {
    path_ = path;
    return lines_.Open(path);
  }

  Status Next(ManifestRow* row) override {
    std::string line;
    while (lines_.Next(&line)) {
      if (IsBlank(line)) continue;
      const std::string where = Where(path_, lines_.line_number());
      // Attributes nested deeper than anyone labels data are refused: turning
      // one back into text recurses once per level.
      bool too_deep = false;
      const auto depth_limit = [&too_deep](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
        too_deep = too_deep || depth > kMaxJsonDepth;
        return true;
      };
      nlohmann::json object = nlohmann::json::parse(line, depth_limit, /*allow_exceptions=*/false);
      if (object.is_discarded()) return Status::InvalidArgument(where + ": malformed JSON");
      if (too_deep) {
        return Status::InvalidArgument(where + ": JSON nested more than " + std::to_string(kMaxJsonDepth) +
                                       " levels deep");
      }
      if (!object.is_object()) return Status::InvalidArgument(where + ": expected a JSON object");
      row->line = lines_.line_number();
      row->path.clear();
      row->label.clear();
      row->attributes.clear();
      for (auto& [key, value] : object.items()) {
        if (key == "path") {
          if (!value.is_string()) {
            return Status::InvalidArgument(where + ": \"path\" is not a string");
          }
          row->path = value.get<std::string>();
        } else if (key == "label") {
          if (!value.is_string() && !value.is_number() && !value.is_null()) {
            return Status::InvalidArgument(where + ": \"label\" is not a string or a number");
          }
          if (!value.is_null()) row->label = JsonAttributeText(value);
        } else {
          row->attributes.emplace_back(key, JsonAttributeText(value));
        }
      }
      if (row->path.empty()) return Status::InvalidArgument(where + ": no \"path\"");
      return Status::OK();
    }
    STRATA_RETURN_IF_ERROR(lines_.Finish());
    return Status::OutOfRange("end of " + path_);
  }

 private:
  std::string path_;
  LineReader lines_;
};

Result<std::unique_ptr<RowReader>> OpenRowReader(const std::string& path, ManifestFormat format) {
  if (format == ManifestFormat::kCsv) {
    auto reader = std::make_unique<CsvRowReader>();
    STRATA_RETURN_IF_ERROR(reader->Open(path));
    return std::unique_ptr<RowReader>(std::move(reader));
  }
  auto reader = std::make_unique<JsonlRowReader>();
  STRATA_RETURN_IF_ERROR(reader->Open(path));
  return std::unique_ptr<RowReader>(std::move(reader));
}

class ManifestSource final : public SampleSource {
 public:
  ManifestSource(std::string path, std::unique_ptr<RowReader> rows, uint64_t total_bytes)
      : path_(std::move(path)),
        dir_(fs::path(path_).parent_path()),
        source_name_(SourceName(path_)),
        rows_(std::move(rows)),
        total_bytes_(total_bytes) {}

  // Relative paths resolve against the manifest's folder.
  static std::string Resolve(const fs::path& dir, const std::string& path) {
    const fs::path p(path);
    return (p.is_absolute() ? p : dir / p).string();
  }

  Status Next(Sample* sample) override {
    ManifestRow row;
    STRATA_RETURN_IF_ERROR(rows_->Next(&row));
    *sample = Sample();
    Field& field = sample->fields.emplace_back();
    field.name = FieldNameFor(row.path);
    STRATA_RETURN_IF_ERROR(ReadWholeFile(Resolve(dir_, row.path), &field.data).WithContext(Where(path_, row.line)));
    bytes_read_ += field.data.size();
    sample->key = std::move(row.path);
    sample->label = std::move(row.label);
    auto& attributes = sample->attributes;
    for (auto& [name, value] : row.attributes) attributes[name] = std::move(value);
    AddSourceAttribute(source_name_, sample);
    return Status::OK();
  }

  uint64_t total_bytes() const override { return total_bytes_; }
  uint64_t bytes_read() const override { return bytes_read_; }
  std::string description() const override { return "manifest " + path_; }

 private:
  const std::string path_;
  const fs::path dir_;
  const std::string source_name_;
  std::unique_ptr<RowReader> rows_;
  const uint64_t total_bytes_;
  uint64_t bytes_read_ = 0;
};

// The size of a file a manifest row names; NotFound and friends name the row.
Status StatReferencedFile(const std::string& manifest, const ManifestRow& row, uint64_t* size) {
  const std::string file = ManifestSource::Resolve(fs::path(manifest).parent_path(), row.path);
  std::error_code ec;
  const fs::file_status st = fs::status(file, ec);
  Status status;
  if (st.type() == fs::file_type::not_found) {
    status = ErrnoStatus(file, ENOENT);
  } else if (ec) {
    status = ErrnoStatus(file, ec.value());
  } else if (fs::is_directory(st)) {
    status = Status::IOError(file + " is a directory");
  } else if (!fs::is_regular_file(st)) {
    status = Status::IOError(file + " is not a regular file");
  } else {
    *size = fs::file_size(file, ec);
    if (ec) status = ErrnoStatus(file, ec.value());
  }
  return status.WithContext(Where(manifest, row.line));
}

}  // namespace

Result<std::unique_ptr<SampleSource>> OpenManifestSource(const std::string& path, ManifestFormat format) {
  // A first pass validates every row and sums the file sizes without holding
  // the manifest in memory; the second pass, in Next, streams it again.
  Result<std::unique_ptr<RowReader>> check = OpenRowReader(path, format);
  if (!check.ok()) return check.status();
  uint64_t total = 0;
  ManifestRow row;
  for (;;) {
    const Status status = (*check)->Next(&row);
    if (status.code() == Code::kOutOfRange) break;
    STRATA_RETURN_IF_ERROR(status);
    uint64_t size = 0;
    STRATA_RETURN_IF_ERROR(StatReferencedFile(path, row, &size));
    total += size;
  }
  Result<std::unique_ptr<RowReader>> rows = OpenRowReader(path, format);
  if (!rows.ok()) return rows.status();
  return std::unique_ptr<SampleSource>(std::make_unique<ManifestSource>(path, std::move(*rows), total));
}

}  // namespace strata::ingest_internal
