#include "strata/resume_token.h"

#include <charconv>
#include <cstdio>
#include <vector>

#include "common/dataset_ref.h"

namespace strata {

namespace {

constexpr std::string_view kPrefix1 = "strata1:";
constexpr std::string_view kPrefix2 = "strata2:";
constexpr size_t kHashDigits = 16;
// Tokens come from files and command lines: bound what a decoder accepts.
constexpr size_t kMaxTokenChars = 64 * 1024;
constexpr char kHex[] = "0123456789abcdef";

// Digits only, all of `text`, no sign, no overflow.
bool ParseNumber(std::string_view text, int base, uint64_t* value) {
  if (text.empty()) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *value, base);
  return ec == std::errc() && ptr == text.data() + text.size();
}

std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    const size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

std::string HexOf(std::string_view bytes) {
  if (bytes.empty()) return "-";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    out += kHex[b >> 4];
    out += kHex[b & 0xF];
  }
  return out;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// Lower-case hex pairs, or "-" for nothing.
bool ParseHex(std::string_view text, std::string* bytes) {
  bytes->clear();
  if (text == "-") return true;
  if (text.empty() || text.size() % 2 != 0) return false;
  for (size_t i = 0; i < text.size(); i += 2) {
    const int hi = HexDigit(text[i]);
    const int lo = HexDigit(text[i + 1]);
    if (hi < 0 || lo < 0) return false;
    bytes->push_back(static_cast<char>(hi << 4 | lo));
  }
  return true;
}

}  // namespace

std::string ResumeToken::Encode() const {
  char hash[kHashDigits + 1];
  std::snprintf(hash, sizeof(hash), "%016llx", static_cast<unsigned long long>(plan_hash));
  std::string out(complete() ? kPrefix2 : kPrefix1);
  out += dataset + "@" + std::to_string(version) + ":" + hash + ":";
  if (complete()) {
    out += std::to_string(global_batch) + ":" + (drop_last ? "drop" : "short") + ":" + HexOf(sampler) + ":";
  }
  out += std::to_string(seed) + ":" + std::to_string(epoch) + ":" + std::to_string(step);
  return out;
}

Result<ResumeToken> ResumeToken::Decode(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument("malformed resume token '" + std::string(text.substr(0, 300)) +
                                   (text.size() > 300 ? "...'" : "'") + ": " + std::string(why));
  };
  if (text.size() > kMaxTokenChars) return bad("longer than " + std::to_string(kMaxTokenChars) + " characters");
  const bool v2 = text.starts_with(kPrefix2);
  if (!v2 && !text.starts_with(kPrefix1)) return bad("it must start with 'strata2:' (or the older 'strata1:')");
  // Dataset names cannot contain ':', so the fields split cleanly.
  const std::vector<std::string_view> fields = Split(text.substr(kPrefix1.size()), ':');
  if (v2 && fields.size() != 8) {
    return bad(
        "expected strata2:<dataset>@<version>:<plan hash>:<global batch>:<short|drop>:<sampler>:<seed>:"
        "<epoch>:<step>");
  }
  if (!v2 && fields.size() != 5) return bad("expected strata1:<dataset>@<version>:<plan hash>:<seed>:<epoch>:<step>");

  auto ref = ParseDatasetRef(fields[0]);
  if (!ref.ok()) return bad(ref.status().message());
  if (!ref->version) return bad("the dataset has no @version");

  ResumeToken token;
  token.dataset = ref->name;
  token.version = *ref->version;
  if (fields[1].size() != kHashDigits || !ParseNumber(fields[1], 16, &token.plan_hash)) {
    return bad("the plan hash must be 16 hex digits");
  }
  // A plan hash of 0 is a token taken before the stream's first part told
  // it; it skips the resume's plan check. A format-2 token carries the plan
  // itself, so that is safe; a format-1 token's plan comes from the options
  // it is resumed with, and would go unchecked.
  if (token.plan_hash == 0 && !v2) return bad("a strata1 token must name its plan hash (it is 0)");
  size_t next = 2;
  if (v2) {
    if (!ParseNumber(fields[2], 10, &token.global_batch) || token.global_batch == 0) {
      return bad("the global batch is not a positive number");
    }
    if (fields[3] != "short" && fields[3] != "drop") return bad("the remainder must be 'short' or 'drop'");
    token.drop_last = fields[3] == "drop";
    if (!ParseHex(fields[4], &token.sampler)) return bad("the sampler must be lower-case hex or '-'");
    next = 5;
  }
  if (!ParseNumber(fields[next], 10, &token.seed)) return bad("the seed is not a number");
  if (!ParseNumber(fields[next + 1], 10, &token.epoch)) return bad("the epoch is not a number");
  if (!ParseNumber(fields[next + 2], 10, &token.step)) return bad("the step is not a number");
  return token;
}

}  // namespace strata
