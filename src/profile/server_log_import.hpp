#pragma once
// Reading the timings llama.cpp's programs print to their logs, one record per request:
//  - llama-server's `print_timings` of each finished request (tools/server/server-context.cpp,
//    server_slot::print_timings), behind the slot prefix of SLT_INF (tools/server/
//    server-common.h: "slot print_timing: id  0 | task 12 | ", the function name cut to 12
//    characters): "prompt eval time = X ms / N tokens (...)", "eval time = X ms / N tokens
//    (...)", "total time = X ms / N tokens";
//  - llama_perf_context_print (src/llama-context.cpp) and common_perf_print
//    (common/sampling.cpp) of llama-cli / llama-completion style programs, one per run: "load
//    time", "prompt eval time = X ms / N tokens (...)", "eval time = X ms / N runs (...)",
//    "total time = X ms / N tokens", and the older spelling llama_print_timings whose total
//    line has no token count (as the pinned tree's examples/simple/README.md shows it).
// Lines may carry any prefix before the printer's name (common/log.cpp's timestamps and level
// letters, colour escapes, a logcat or journal prefix) and other lines may come between a
// request's timing lines (other slots' and the HTTP server's). Times are the milliseconds the
// log printed (two decimals); the derived figures in parentheses are not read.
//
// Every number is the program's claim: bounded where it enters. A timing line cut off mid-way
// or damaged, a line without the rest of its request, and a request whose figures cannot be
// true (a count over 2^24 tokens, a time over a day, a total that is not its parts) are
// skipped and named (ServerLogSkip), never imported, never fatal here.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sb {

// One request's timings as the log printed them.
struct ServerLogRequest {
    int64_t line = 0;                // 1-based line of its first timing line
    std::string printer;             // "print_timings" (llama-server), "llama_perf_context_print",
                                     // "common_perf_print", "llama_print_timings"
    std::optional<int> slot;         // llama-server's slot id
    std::optional<int64_t> task;     // llama-server's task id
    double prompt_ms = 0;            // prompt processing
    int64_t prompt_n = 0;            // prompt tokens processed (a cached prefix excluded)
    double eval_ms = 0;              // generation (llama-server: after the first token)
    int64_t eval_n = 0;              // generated tokens, or decode calls when eval_runs
    bool eval_runs = false;          // "N runs" (llama_perf_*): eval_n counts decode calls
    std::optional<double> total_ms;  // the total line (llama_perf_*: the context's whole life)
    std::optional<int64_t> total_n;  // its token count, when it printed one
    std::optional<double> load_ms;   // llama_perf_*: the model's load time
};

struct ServerLogSkip {
    int64_t line = 0;
    std::string reason;
};

struct ServerLogParse {
    std::vector<ServerLogRequest> requests;  // in the order the log finished them
    std::vector<ServerLogSkip> skipped;      // in line order
    int64_t n_lines = 0;
    std::vector<std::string> printers;  // those found, in order of first appearance
    // What the log says of the model and the build, when it says it: llama-server's
    // "load_model: loading model 'PATH'" or llama_model_loader's "loaded meta data ... from PATH
    // (version ...)", common's "build: N (COMMIT)".
    std::optional<std::string> model_path;
    std::optional<int64_t> build_number;
    std::optional<std::string> build_commit;
};

// The largest log read (bytes); the caller refuses a bigger one before reading it.
inline constexpr int64_t kServerLogMaxBytes = 1ll << 30;

// Parses text as a llama-server (or llama-cli) log. Never throws: text without timing lines
// gives no requests.
ServerLogParse parse_server_log(std::string_view text);

}  // namespace sb
