// UTF-8 validity. Keys, labels and attributes travel in protobuf string fields,
// which must hold valid UTF-8; checking at the edge turns a file name in
// another encoding into a clear error instead of an unparseable message.
#pragma once

#include <string_view>

namespace strata {

// True if `s` is well-formed UTF-8 (no overlong forms, surrogates, or code
// points above U+10FFFF).
bool IsValidUtf8(std::string_view s);

}  // namespace strata
