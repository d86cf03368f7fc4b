# What makes a build from nothing faster on a small machine (docs/development.md,
# "Build time"). Neither changes the code that is built.
#
# Unity builds: each library compiles its sources in batches of eight, one
# compiler run per batch, so the gRPC, protobuf and RocksDB headers that every
# source includes are parsed once a batch instead of once a source: the
# server's libraries compiled in 248 s instead of 634 s with gcc. The cost: an
# edit recompiles its whole batch, and file-local names must differ between
# the sources of one library (a clash is a compile error). Turn it off for
# short edit-compile loops with -DSTRATA_UNITY_BUILD=OFF. Generated protobuf
# sources are never batched (proto/CMakeLists.txt).
option(STRATA_UNITY_BUILD "Compile each library's sources in batches (faster builds from nothing)" ON)
set(CMAKE_UNITY_BUILD_BATCH_SIZE 8)

# Programs link with lld when the compiler can use it: GNU ld took 3.2 s to
# link one test program and lld 0.8 s, and the tree links over a hundred.
# Shared libraries keep the default linker: the Python module is built with
# gcc's link-time optimisation, which lld cannot read.
include(CheckLinkerFlag)
check_linker_flag(CXX "-fuse-ld=lld" STRATA_HAVE_LLD)
if(STRATA_HAVE_LLD)
  string(APPEND CMAKE_EXE_LINKER_FLAGS " -fuse-ld=lld")
endif()
