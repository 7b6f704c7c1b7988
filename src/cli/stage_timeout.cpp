#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "core/watchdog.hpp"

namespace sb::cli {

void add_stage_timeout_option(CLI::App* cmd) {
    cmd->add_option_function<double>(
           "--stage-timeout", [](double s) { set_stage_timeout(s); },
           "seconds an RPC stage may wait before the run ends as failed (a server that stopped "
           "answering); grows to 10x the longest such stage seen [120]")
        ->check(real_range(0, kMaxSeconds, true, false, "more than 0 to 86400 s"));
}

}  // namespace sb::cli
