#include "cli/shared_flags.hpp"

#include "cli/flag_checks.hpp"
#include "core/enums.hpp"

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

// list: the comma-list form of a flag declared with help.
template <class T>
CLI::Option* add_counted(CLI::App* cmd, const std::string& names, T& target, std::string help,
                         CLI::Validator check, bool list) {
    CLI::Option* o =
        cmd->add_option(names, target, list ? help + ", comma list" : help)->check(check);
    if (list)
        o->delimiter(',');
    return o->capture_default_str();
}

// A one-value enumerated flag: its text, once it passed check, parsed into target; the default
// shown is target's spelling when the flag is added.
template <SpelledEnum E>
CLI::Option* add_enum_flag(CLI::App* cmd, const std::string& name, E& target,
                           const std::string& help, CLI::Validator check) {
    return cmd
        ->add_option_function<std::string>(
            name, [&target, name](const std::string& s) { target = enum_from_text<E>(s, name); },
            help)
        ->check(std::move(check))
        ->default_str(to_string(target));
}

std::string store_help(const std::string& use) {
    return "the results store" + (use.empty() ? "" : " " + use) +
           " (a SQLite file or postgresql://user@host:port/dbname)";
}

const char* const kBatchHelp = "logical batch size";
const char* const kUbatchHelp = "physical batch size (-ub)";
const char* const kGpuLayersHelp = "layers to offload (-ngl)";
const char* const kFlashAttnHelp = "flash attention auto|on|off (-fa)";
const char* const kTypeKHelp = "K cache type (-ctk)";
const char* const kTypeVHelp = "V cache type (-ctv)";

}  // namespace

CLI::Option* add_model_flag(CLI::App* cmd, std::string& model_path, const std::string& note) {
    return cmd
        ->add_option("-m,--model", model_path,
                     std::string("GGUF model file") + (note.empty() ? "" : " (" + note + ")"))
        ->required();
}

CLI::Option* add_model_flag(CLI::App* cmd, std::vector<std::string>& model_paths,
                            const std::string& note) {
    return cmd
        ->add_option(
            "-m,--model", model_paths,
            std::string("GGUF model files, comma list") + (note.empty() ? "" : "; " + note))
        ->delimiter(',');
}

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

CLI::Option* add_prompt_flag(CLI::App* cmd, std::vector<int>& n_prompt, int min) {
    return cmd
        ->add_option("-p,--n-prompt", n_prompt,
                     min == 0 ? "prompt tokens (prefill stage), comma list; 0: decode alone "
                                "(llama-bench's tg test, at -d)"
                              : "prompt tokens (prefill stage), comma list")
        ->check(tokens_check(min))
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

CLI::Option* add_batch_flag(CLI::App* cmd, int& n_batch) {
    return add_counted(cmd, "-b,--batch-size", n_batch, kBatchHelp, batch_check(), false);
}

CLI::Option* add_batch_flag(CLI::App* cmd, std::vector<int>& n_batch) {
    return add_counted(cmd, "-b,--batch-size", n_batch, kBatchHelp, batch_check(), true);
}

CLI::Option* add_ubatch_flag(CLI::App* cmd, int& n_ubatch) {
    return add_counted(cmd, "--ubatch-size", n_ubatch, kUbatchHelp, batch_check(), false);
}

CLI::Option* add_ubatch_flag(CLI::App* cmd, std::vector<int>& n_ubatch) {
    return add_counted(cmd, "--ubatch-size", n_ubatch, kUbatchHelp, batch_check(), true);
}

CLI::Option* add_gpu_layers_flag(CLI::App* cmd, int& n_gpu_layers) {
    return add_counted(cmd, "--n-gpu-layers", n_gpu_layers, kGpuLayersHelp, gpu_layers_check(),
                       false);
}

CLI::Option* add_gpu_layers_flag(CLI::App* cmd, std::vector<int>& n_gpu_layers) {
    return add_counted(cmd, "--n-gpu-layers", n_gpu_layers, kGpuLayersHelp, gpu_layers_check(),
                       true);
}

CLI::Option* add_flash_attn_flag(CLI::App* cmd, FlashAttn& flash_attn) {
    return add_enum_flag(cmd, "--flash-attn", flash_attn, kFlashAttnHelp, flash_attn_check());
}

CLI::Option* add_flash_attn_flag(CLI::App* cmd, std::vector<std::string>& flash_attn) {
    return add_counted(cmd, "--flash-attn", flash_attn, kFlashAttnHelp, flash_attn_check(), true);
}

void add_cache_type_flags(CLI::App* cmd, KvType& type_k, KvType& type_v) {
    add_enum_flag(cmd, "--cache-type-k", type_k, kTypeKHelp, cache_type_check());
    add_enum_flag(cmd, "--cache-type-v", type_v, kTypeVHelp, cache_type_check());
}

void add_cache_type_flags(CLI::App* cmd, std::vector<std::string>& type_k,
                          std::vector<std::string>& type_v) {
    add_counted(cmd, "--cache-type-k", type_k, kTypeKHelp, cache_type_check(), true);
    add_counted(cmd, "--cache-type-v", type_v, kTypeVHelp, cache_type_check(), true);
}

CLI::Option* add_out_flag(CLI::App* cmd, std::optional<std::string>& path, const std::string& what,
                          const std::string& when) {
    return cmd->add_option(
        "--out", path,
        "write the " + what + " (JSON) here" + (when.empty() ? "" : ", updated " + when));
}

CLI::Option* add_store_flag(CLI::App* cmd, std::optional<std::string>& path,
                            const std::string& use) {
    return cmd->add_option("--db", path, store_help(use));
}

CLI::Option* add_store_flag(CLI::App* cmd, std::string& path, const std::string& use) {
    return cmd->add_option("--db", path, store_help(use));
}

void add_engine_flags(CLI::App* cmd, Workload& w) {
    add_batch_flag(cmd, w.n_batch);
    add_ubatch_flag(cmd, w.n_ubatch);
    add_gpu_layers_flag(cmd, w.n_gpu_layers);
    add_flash_attn_flag(cmd, w.flash_attn);
    add_cache_type_flags(cmd, w.type_k, w.type_v);
}

}  // namespace sb::cli
