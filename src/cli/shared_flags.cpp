#include "cli/shared_flags.hpp"

#include "cli/flag_checks.hpp"

namespace sb::cli {

namespace {

std::string threads_help(const std::string& whose, bool list) {
    return std::string("CPU threads") + (whose.empty() ? "" : " " + whose) +
           (list ? ", comma list" : "") + " (0 = one per physical core that does math)";
}

}  // namespace

CLI::Option* add_threads_flag(CLI::App* cmd, int& threads, const std::string& whose) {
    return cmd->add_option("-t,--threads", threads, threads_help(whose, false))
        ->check(threads_check())
        ->capture_default_str();
}

CLI::Option* add_threads_flag(CLI::App* cmd, std::vector<int>& threads) {
    return cmd->add_option("-t,--threads", threads, threads_help("", true))
        ->check(threads_check())
        ->delimiter(',')
        ->capture_default_str();
}

}  // namespace sb::cli
