#pragma once
// The settings on which llama-bench's way of running a model (stagebench's graph level) and a
// llama-server may differ, read from what the server says and what it was told
// (`stagebench explain`, scenario/explain.hpp). Each setting's server value comes from, in this
// order of trust: the server's startup log (what llama.cpp really used), its /props (what it
// reports), the arguments it was started with (--server-args: what it was told), else
// llama-server's documented default. Every one is a claim, recorded with its source. Pure
// functions over text and JSON: tests give them fixtures.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/doc/explain_section.hpp"
#include "engine/engine.hpp"
#include "engine/text_generation.hpp"

namespace sb {

// Splits --server-args into words as a POSIX shell would (blanks separate words; '...' and
// "..." quote; a backslash escapes the next character outside single quotes). Throws
// sb::Error(usage), one line, for an unterminated quote or a trailing backslash.
std::vector<std::string> split_server_args(const std::string& text);

// args as a document or a message may show them: the value of llama-server's --api-key (as the
// next word or after '=') replaced by "***", so that a key never reaches a document, a store
// or a log line. --api-key-file names a file, which stays.
std::vector<std::string> redact_server_args(std::vector<std::string> args);

// A command line as a document may keep it (ResultDocument::argv): redact_server_args over its
// words, and inside any word that holds server flags (serve --server-args "-ngl 99 --api-key K",
// or "--server-args=--api-key K") the value after --api-key (a blank or '=' before it, quoted
// or up to the next blank) replaced by "***".
std::vector<std::string> redact_command_line(std::vector<std::string> argv);

// The values of the server flags stagebench reads (explain measures the graph level with them;
// serve and explain pass them on), checked before anything is measured: threads (-t, -tb)
// 1..max_threads, batch and micro-batch (-b, -ub) 1..max_tokens, context (-c) 0..max_tokens,
// slots (-np) -1 (llama-server's auto) or 1..256. The last of a flag counts, as in
// llama-server's parser. Throws sb::Error(usage) "--server-args: -t 999999: ..." for the first
// that is not.
void check_server_args(const std::vector<std::string>& args, int max_threads, int64_t max_tokens);

// text (a line of llama-server's log, an error quoting it) with every --api-key value of args
// replaced by "***": llama-server quotes a flag it refuses ("invalid argument: --api-key=K").
std::string redact_api_keys(std::string text, const std::vector<std::string>& args);

// The value of the last of these flags in args ("-ub 32" or "--ubatch-size=32"; llama.cpp's
// parser lets a later flag override an earlier one), or nullopt.
std::optional<std::string> arg_value(const std::vector<std::string>& args,
                                     const std::vector<std::string>& names);
// Whether any of these flags (without a value) is in args.
bool has_flag(const std::vector<std::string>& args, const std::vector<std::string>& names);

// What llama-server's startup log says, by key: threads, threads_batch, n_ctx (the context's
// cells), n_ctx_slot, slots, n_batch, n_ubatch, flash_attn, type_k, type_v, mmap ("on"/"off"),
// warmup ("on"), prompt_cache ("on"). Keys the log does not have are absent (llama.cpp's
// context lines need `-lv 4`; the threads and slots lines are there at the default verbosity).
std::map<std::string, std::string> parse_startup_log(const std::string& log);

// The bench's side: what the graph level runs with.
struct BenchSettings {
    std::string devices = "CPU";  // '+'-joined, as `run --device`
    int n_threads = 0;            // resolved
    int n_batch = 2048, n_ubatch = 512;
    int n_ctx = 0;
    std::string flash_attn = "auto";
    std::string type_k = "f16", type_v = "f16";
};

// What is known of the server.
struct ServerFacts {
    // Its settings can be read: its kind reports them (ServerKind::reports_settings, as
    // llama-server does).
    bool settings_readable = false;
    std::vector<std::string> args;  // what it was started with (ours, or --server-args)
    std::string log;                // its startup log ("" when none)
    nlohmann::json props;           // its /props (null when none)
    std::string default_devices;    // llama.cpp's default device set here ("CPU+BLAS")
    // The accelerators (BLAS) every llama.cpp context uses whatever -dev says, '+'-joined.
    std::string accel_devices;
};

// Every setting, the bench's value beside the server's with its source, whether they differ,
// and for those that differ and can be set on the in-process engine (devices, threads, n_batch,
// n_ubatch, n_ctx, flash_attn, type_k, type_v) the measure that runs the graph level with it
// ("graph+NAME"); the others say how they are accounted for. sampler is level 3's chain.
// A server that is not llama-server: every server value is null (could not be read), nothing
// is measured alone.
std::vector<ExplainSetting> compare_settings(const BenchSettings& bench, const ServerFacts& f,
                                             const SamplerSettings& sampler);

// spec with one measured setting as the server has it (s.measure set), or every one of them
// (all); the setting's server value must parse (else sb::Error(input)).
void apply_setting(LoadSpec& spec, const ExplainSetting& s);

// The sampler chain llama-server runs by default, from /props default_generation_settings
// .params (top_k, top_p, min_p, temperature); llama.cpp's defaults for what it does not say.
// notes gets a line for each sampler the server runs that level 3 does not (penalties, DRY,
// typical-p, XTC, top-n-sigma, mirostat at non-neutral values).
SamplerSettings sampler_from_props(const nlohmann::json& props, std::vector<std::string>& notes);

}  // namespace sb
