#pragma once
// `stagebench import llama-server-log FILE...`: the per-request timings a llama-server log
// printed (profile/server_log_import.hpp), or the llama_perf lines of a llama-cli style log, as
// one result document, a run document like any other, so that compare, report and db import
// take it. Every time in it is the program's own claim, read from its log, not a measurement
// of stagebench's: the top-level "import" section says so and names the files.
//  - Requests with the same prompt and output counts make one test, each request one
//    repetition, in the order the logs finished them. llama-server's requests are tests of
//    engine "http" (config.n_gen its generated tokens): prefill = the prompt tokens it
//    processed / its prompt eval time, decode = the tokens after the first / its eval time
//    (decode.n_tokens = n_gen - 1, as `run --engine http` counts them); each request's
//    timings are also one of the test's `server.reps` (ServerTimings, source "llama-server").
//  - A llama_perf block (llama-cli, llama-completion) is a test of engine "llama": prefill as
//    above, decode = its eval runs (one token each) / its eval time, n_gen = the runs.
//  - Each test's "import" rows keep every request as the log printed it: file, line, slot and
//    task, every figure.
// The model is the path the log's loader line names ("?" when none), the llama section the
// build the log names.
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace sb {

struct ServerLogImportOptions {
    std::vector<std::string> files;
    std::optional<std::string> out_path;
};

// Fills doc (from new_document("import", argv)) with the files' requests and writes it with
// out_path. A line or request that cannot be imported (cut off, damaged, figures that cannot
// be true) is skipped with one line on err naming the file, its line and why ("stagebench:
// warning: ...") and the document warning "import_lines_skipped". A file that cannot be read,
// is larger than kServerLogMaxBytes, is binary, or holds no complete request's timings is bad
// input (sb::Error(input), one line); nothing is written then. Returns the exit code (0).
int run_import_server_log(const ServerLogImportOptions& o, ResultDocument& doc, std::ostream& err);

}  // namespace sb
