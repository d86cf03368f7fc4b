#include "strata/resume_token.h"

#include <charconv>
#include <cstdio>
#include <vector>

#include "common/dataset_ref.h"

namespace strata {

namespace {

constexpr std::string_view kPrefix = "strata1:";
constexpr size_t kHashDigits = 16;

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

}  // namespace

std::string ResumeToken::Encode() const {
  char hash[kHashDigits + 1];
  std::snprintf(hash, sizeof(hash), "%016llx", static_cast<unsigned long long>(plan_hash));
  std::string out(kPrefix);
  out += dataset + "@" + std::to_string(version) + ":" + hash + ":" + std::to_string(seed) + ":" +
         std::to_string(epoch) + ":" + std::to_string(step);
  return out;
}

Result<ResumeToken> ResumeToken::Decode(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument("malformed resume token '" + std::string(text.substr(0, 300)) +
                                   "': " + std::string(why));
  };
  if (!text.starts_with(kPrefix)) return bad("it must start with 'strata1:'");
  // Dataset names cannot contain ':', so the fields split cleanly.
  const std::vector<std::string_view> fields = Split(text.substr(kPrefix.size()), ':');
  if (fields.size() != 5) return bad("expected strata1:<dataset>@<version>:<plan hash>:<seed>:<epoch>:<step>");

  auto ref = ParseDatasetRef(fields[0]);
  if (!ref.ok()) return bad(ref.status().message());
  if (!ref->version) return bad("the dataset has no @version");

  ResumeToken token;
  token.dataset = ref->name;
  token.version = *ref->version;
  if (fields[1].size() != kHashDigits || !ParseNumber(fields[1], 16, &token.plan_hash)) {
    return bad("the plan hash must be 16 hex digits");
  }
  if (!ParseNumber(fields[2], 10, &token.seed)) return bad("the seed is not a number");
  if (!ParseNumber(fields[3], 10, &token.epoch)) return bad("the epoch is not a number");
  if (!ParseNumber(fields[4], 10, &token.step)) return bad("the step is not a number");
  return token;
}

}  // namespace strata
