#pragma once
// The ranges of every numeric and enumerated flag, in one place. Each check is a CLI11
// validator attached where the option is added, so a bad value is refused while the command
// line is parsed: before a model is read or anything is measured, with one line naming the
// flag and the allowed range (exit 2). Checks of one value against another (-p + -d + -n, -r
// against --max-reps) are functions the commands call first thing in their callback; they
// throw sb::Error(usage).
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "core/enums.hpp"

namespace sb::cli {

// The largest explicit thread count: 4 x the logical CPUs, and never above ggml's cap of 512
// threads per CPU thread pool (GGML_MAX_N_THREADS; more crash its pool). Beyond 4x the CPUs a
// run measures the OS scheduler, and ggml's threads spin at every barrier, so a heavily
// oversubscribed run takes minutes per token.
int max_threads();

// Tokens of one stage or of the KV depth, and of their sum (a test's context): at most 2^24
// (16,777,216), above the longest context any llama.cpp model is trained for (10M), and far
// inside llama.cpp's int32 positions.
inline constexpr int64_t kMaxTokens = int64_t{1} << 24;
// Repetitions of a test (-r, --max-reps, --rounds, ...).
inline constexpr int64_t kMaxReps = 100000;
// Token latencies one test may keep (max_reps x n_gen): 2^27 x 8 bytes = 1 GiB.
inline constexpr int64_t kMaxTokenSamples = int64_t{1} << 27;
// Layers of a model: llama.cpp refuses more than 512 (LLAMA_MAX_LAYERS).
inline constexpr int64_t kMaxLayers = 512;
// Seconds of any wait or duration given on the command line: one day.
inline constexpr double kMaxSeconds = 86400;

// An integer in [lo, hi]; the message names the range as `range` says it (e.g. "1..512").
CLI::Validator int_range(int64_t lo, int64_t hi, std::string range);
// A finite number in the range; lo_open/hi_open exclude the bound itself.
CLI::Validator real_range(double lo, double hi, bool lo_open, bool hi_open, std::string range);

// -t: 0 (the default) or 1..max_threads().
CLI::Validator threads_check();
// -p/-n/-d style token counts: min..kMaxTokens.
CLI::Validator tokens_check(int64_t min);
// -b, --ubatch-size: 1..kMaxTokens.
CLI::Validator batch_check();
// -ngl: -1 (all) or 0..2^31-1 (more than the layers means all).
CLI::Validator gpu_layers_check();
// -r, --rounds, --reps: min..kMaxReps.
CLI::Validator reps_check(int64_t min = 1);
// --layers: 1..kMaxLayers.
CLI::Validator layers_check();
// Seconds: 0..kMaxSeconds (zero allowed when zero_ok), finite.
CLI::Validator seconds_check(bool zero_ok);
// Sampling rate: (0, 1000] Hz.
CLI::Validator hz_check();
// --device: one device set, names joined with '+', each non-empty, printable, no spaces.
CLI::Validator device_set_check();
// -fa: auto, on, off (also 1, 0 as llama-bench spells them).
CLI::Validator flash_attn_check();
// -ctk/-ctv: the KV cache types llama.cpp accepts (f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl,
// q5_0, q5_1).
CLI::Validator cache_type_check();
const std::vector<std::string>& kv_cache_types();

// -o/--output: the output format, one of allowed (spelled as core/enums.hpp spells them), parsed
// into target once while the command line is parsed; another spelling is refused with one line
// naming the allowed ones. target's value when the option is added is the default.
CLI::Option* add_format_option(CLI::App* cmd, OutputFormat& target,
                               const std::vector<OutputFormat>& allowed);

// --target-ci: "2%" or "0.02", finite, strictly between 0 and 100 %; returns the fraction.
// Throws sb::Error(usage).
double parse_target_ci(const std::string& text);
// The same as a validator ("" and "nan" are refused like any other bad value).
CLI::Validator target_ci_check();

// Every option of app and of its subcommands (at any depth) whose value CLI11 converts to a
// number (an integer, an unsigned integer or a floating-point type, alone or in a list) takes
// decimal numbers only: CLI11 would read 0x10 as 16, 010 as 8, -1 as 2^64-1 for an unsigned
// value, 1e999 and nan as numbers. Integers are written back in plain decimal. A transform put
// first on every such option (it runs before the option's own checks, which keep the ranges);
// run_app calls this once the commands are built, so that a number option added later needs
// nothing of its own to be strict.
void check_numbers_strictly(CLI::App& app);

// Refuses, before CLI11 sees them, empty items in the values of the comma-list options of app
// (options with a delimiter): CLI11 drops them, so `--device CPU,,BLAS` would silently run two
// device sets. args as given to the parser (not reversed); the arguments after "--" are another
// command's. Throws sb::Error(usage) "--device 'CPU,,BLAS' has an empty item ...".
void check_list_items(CLI::App& app, const std::vector<std::string>& args);

// Checks a test's token counts together: prompt + depth + gen + 8 (llama.cpp's room) within
// kMaxTokens. Throws sb::Error(usage) naming the flags.
void check_context(int64_t n_prompt, int64_t n_depth, int64_t n_gen);

// Checks that a comma list flag kept at least one value ("-p ," leaves none). Throws
// sb::Error(usage).
[[noreturn]] void throw_empty_list(const char* flag);
template <class T>
void check_not_empty(const std::vector<T>& values, const char* flag) {
    if (values.empty())
        throw_empty_list(flag);
}

}  // namespace sb::cli
