#include "server/server.h"

int main(int argc, char** argv) { return strata::RunStratad(argc, argv); }
