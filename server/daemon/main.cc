#include "server/daemon/server.h"
#include "strata/allocator.h"

int main(int argc, char** argv) {
  strata::TuneAllocatorForStreaming();  // strata/allocator.h
  return strata::RunStratad(argc, argv);
}
