#include "cli/shared_flags.hpp"

#include "cli/flag_checks.hpp"

namespace sb::cli {

namespace {

std::string threads_help(const std::string& whose, bool list) {
    return std::string("CPU threads") + (whose.empty() ? "" : " " + whose) +
           (list ? ", comma list" : "") + " (0 = one per physical core that does math)";
}

std::string device_help(const std::string& whose) {
    return std::string("device set") + (whose.empty() ? "" : " " + whose) +
           " (-dev): CPU, BLAS, RPC0, ...; join with + to combine";
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

CLI::Option* add_device_flag(CLI::App* cmd, DeviceSet& devices, const std::string& whose) {
    return cmd
        ->add_option_function<std::string>(
            "--device", [&devices](const std::string& s) { devices = DeviceSet(s); },
            device_help(whose))
        ->check(device_set_check())
        ->default_str(devices.str());
}

CLI::Option* add_device_flag(CLI::App* cmd, std::vector<std::string>& device_sets) {
    return cmd
        ->add_option("--device", device_sets,
                     "device sets (-dev), comma list; join with + to combine, e.g. CPU,BLAS,RPC0 "
                     "or BLAS+RPC0")
        ->check(device_set_check())
        ->delimiter(',')
        ->capture_default_str();
}

}  // namespace sb::cli
