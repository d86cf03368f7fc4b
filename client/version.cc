#include "strata/version.h"

#ifndef STRATA_VERSION
#error "STRATA_VERSION is set by client/CMakeLists.txt from the project's version"
#endif

namespace strata {

const char* Version() { return STRATA_VERSION; }

}  // namespace strata
