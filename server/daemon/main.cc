#include "strata/allocator.h"
#include "server/daemon/server.h"

int main(int argc, char** argv) {
  strata::TuneAllocatorForStreaming();  // strata/allocator.h
  return strata::RunStratad(argc, argv);
}
