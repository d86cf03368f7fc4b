// 128-bit integers for exact products of 64-bit quantities in the epoch plan.
// A GCC/Clang extension; __extension__ keeps -Wpedantic quiet about it.
#pragma once

namespace strata {

__extension__ typedef unsigned __int128 u128;
__extension__ typedef __int128 i128;

}  // namespace strata
