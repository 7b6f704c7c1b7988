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

std::string gen_help(int min, const std::string& note, bool list) {
    return std::string("generated tokens (decode stage)") + (list ? ", comma list" : "") +
           (min > 1 ? ", at least " + std::to_string(min) : "") + (note.empty() ? "" : "; " + note);
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

CLI::Option* add_prompt_flag(CLI::App* cmd, int& n_prompt) {
    return cmd->add_option("-p,--n-prompt", n_prompt, "prompt tokens (prefill stage)")
        ->check(tokens_check(1))
        ->capture_default_str();
}

CLI::Option* add_prompt_flag(CLI::App* cmd, std::vector<int>& n_prompt) {
    return cmd->add_option("-p,--n-prompt", n_prompt, "prompt tokens (prefill stage), comma list")
        ->check(tokens_check(1))
        ->delimiter(',')
        ->capture_default_str();
}

CLI::Option* add_gen_flag(CLI::App* cmd, int& n_gen, int min, const std::string& note) {
    return cmd->add_option("-n,--n-gen", n_gen, gen_help(min, note, false))
        ->check(tokens_check(min))
        ->capture_default_str();
}

CLI::Option* add_gen_flag(CLI::App* cmd, std::vector<int>& n_gen, int min) {
    return cmd->add_option("-n,--n-gen", n_gen, gen_help(min, "", true))
        ->check(tokens_check(min))
        ->delimiter(',')
        ->capture_default_str();
}

}  // namespace sb::cli
