// libstrata.so's own translation unit, empty: the library is strata_client
// linked whole (client/CMakeLists.txt), and CMake wants a source per target.
