// `strata stream --report`: streams every rank of --world, one stream per rank
// at once, joins the ranks' batches into the global batches, and prints the
// balance report (client/cli/balance_report.h) and, with --plot, draws it.
#pragma once

#include "client/cli/stream_options.h"

namespace strata::cli {

// Exit status: 0, 1 on an error (printed), 2 on a usage error.
int RunStreamReport(const StreamArgs& args, const SamplerSpec& spec);

}  // namespace strata::cli
