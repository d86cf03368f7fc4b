// The version of libstrata, as the project numbers it ("0.1.0"): the same for
// the library, the strata CLI (`strata --version`), stratad, the Python
// package (strata.__version__) and its wheel.
#pragma once

namespace strata {

// A static string; never null.
const char* Version();

}  // namespace strata
