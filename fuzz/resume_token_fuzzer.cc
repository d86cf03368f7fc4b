// Fuzzes ResumeToken::Decode (formats "strata1:" and "strata2:"), the text a
// trainer passes back after a restart, and ApplyPlan, which turns a decoded
// token's plan into stream options.
// Properties: a token that decodes encodes to text that decodes to the same
// token.
#include <string>

#include "client/resume_plan.h"
#include "fuzz/fuzz_support.h"
#include "strata/resume_token.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  auto token = ResumeToken::Decode(fuzz::AsView(data, size));
  if (!token.ok()) return 0;
  const std::string text = token->Encode();
  auto again = ResumeToken::Decode(text);
  if (!again.ok()) fuzz::Fail("an encoded token does not decode: " + text);
  if (!(*again == *token)) fuzz::Fail("a token changes through Encode and Decode: " + text);
  StreamOptions options;
  (void)client_internal::ApplyPlan(*token, &options);
  return 0;
}
