#pragma once
// The flags many commands share, each declared once here: its names, its help text, its check
// (flag_checks.hpp) and how its default shows in --help (the target's value when the flag is
// added: a command's option struct holds the default). A command adds the ones it takes, into
// its own option struct; the single-valued workload flags go straight into a Workload
// (core/workload.hpp). The comma-list forms (run's test matrix, fidelity's variants) differ
// only by ", comma list" in the help and the ',' delimiter.
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/workload.hpp"

namespace sb::cli {

// -m, --model: the GGUF model file of the workload, required; `note` says what more it is
// in this command (explain: also the server's).
CLI::Option* add_model_flag(CLI::App* cmd, std::string& model_path, const std::string& note = "");
// -m, --model as a comma list of GGUF files, one test or variant each ("GGUF model files,
// comma list[; note]"); required or not as the command says.
CLI::Option* add_model_flag(CLI::App* cmd, std::vector<std::string>& model_paths,
                            const std::string& note);

// -t, --threads: the CPU threads of a workload. 0, every command's default: one per physical
// core that does math (sysinfo.hpp default_thread_count(): llama-bench's count, less the
// efficiency cores); otherwise 1..max_threads(). `whose` names whose threads they are when
// that is not the command's own engine's (e.g. "of the llama-server it starts").
CLI::Option* add_threads_flag(CLI::App* cmd, int& threads, const std::string& whose = "");
CLI::Option* add_threads_flag(CLI::App* cmd, std::vector<int>& threads);

// --device: one device set (llama.cpp's -dev): names joined with '+', e.g. CPU, BLAS, RPC0,
// BLAS+RPC0; checked by device_set_check(), parsed into devices, whose value when added is the
// default. `whose` as for -t.
CLI::Option* add_device_flag(CLI::App* cmd, DeviceSet& devices, const std::string& whose = "");
// --device as a comma list of device sets, one test (run) or variant (fidelity) each; the
// sets stay text until the command turns them into DeviceSets (device_sets_of).
CLI::Option* add_device_flag(CLI::App* cmd, std::vector<std::string>& device_sets);

// -p, --n-prompt: prompt tokens (the prefill stage), 1..kMaxTokens; the command's default.
CLI::Option* add_prompt_flag(CLI::App* cmd, int& n_prompt);
// The comma list (run, hybrid): min..kMaxTokens; run's min is 0, a test of decode alone, as
// llama-bench's tg test.
CLI::Option* add_prompt_flag(CLI::App* cmd, std::vector<int>& n_prompt, int min = 1);
// -n, --n-gen: generated tokens (the decode stage), min..kMaxTokens: 0 where a command can
// measure prefill alone, 2 for explain (decode is the time per token after the first). `note`
// says what more they are in this command (fidelity: the decode positions compared).
CLI::Option* add_gen_flag(CLI::App* cmd, int& n_gen, int min, const std::string& note = "");
CLI::Option* add_gen_flag(CLI::App* cmd, std::vector<int>& n_gen, int min);  // comma list

// --out FILE: "write the <what> (JSON) here[, updated <when>]": the command's document, also
// written to FILE (stdout shows the chosen format); `when` says when it is rewritten, e.g.
// "after every test" (empty: once, at the end). The path is checked by the command
// (check_output_path) before anything is measured.
CLI::Option* add_out_flag(CLI::App* cmd, std::optional<std::string>& path,
                          const std::string& what = "result document",
                          const std::string& when = "");

// --db STORE on the commands that read documents from a results store (db:ID operands,
// --latest, db's subcommands): "the results store[ <use>] (a SQLite file or
// postgresql://user@host:port/dbname)". The measuring commands append their document to one
// with add_db_option (store_hook.hpp), a flag of their own: it is checked for writing.
CLI::Option* add_store_flag(CLI::App* cmd, std::optional<std::string>& path,
                            const std::string& use = "");
CLI::Option* add_store_flag(CLI::App* cmd, std::string& path, const std::string& use = "");

// The engine's load flags, each in a one-value form (into a Workload's field) and a comma-list
// form (run's matrix, fidelity's variants): -b/--batch-size (the logical batch: prefill is
// submitted in chunks of this many tokens) and --ubatch-size (-ub, the physical batch), both
// batch_check(); --n-gpu-layers (-ngl) gpu_layers_check(); --flash-attn (-fa) auto|on|off (1,
// 0); --cache-type-k (-ctk) and --cache-type-v (-ctv) the KV cache types. The one-value enum
// flags are parsed into their enum while the command line is parsed; the list forms keep the
// text, turned into enums by the command (enums_of).
CLI::Option* add_batch_flag(CLI::App* cmd, int& n_batch);
CLI::Option* add_batch_flag(CLI::App* cmd, std::vector<int>& n_batch);
CLI::Option* add_ubatch_flag(CLI::App* cmd, int& n_ubatch);
CLI::Option* add_ubatch_flag(CLI::App* cmd, std::vector<int>& n_ubatch);
CLI::Option* add_gpu_layers_flag(CLI::App* cmd, int& n_gpu_layers);
CLI::Option* add_gpu_layers_flag(CLI::App* cmd, std::vector<int>& n_gpu_layers);
CLI::Option* add_flash_attn_flag(CLI::App* cmd, FlashAttn& flash_attn);
CLI::Option* add_flash_attn_flag(CLI::App* cmd, std::vector<std::string>& flash_attn);
void add_cache_type_flags(CLI::App* cmd, KvType& type_k, KvType& type_v);
void add_cache_type_flags(CLI::App* cmd, std::vector<std::string>& type_k,
                          std::vector<std::string>& type_v);

// All six one-value engine flags above, into w.
void add_engine_flags(CLI::App* cmd, Workload& w);

}  // namespace sb::cli
