// Reading llama-server and llama-cli logs' timings. Every log here is printed through the
// printers' own format strings, copied below from the pinned llama.cpp tree with the file and
// function each comes from; PinnedPrinters checks at test time that the pinned tree still has
// each of them verbatim, so a changed printer fails here rather than in a user's import.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/result.hpp"
#include "profile/server_log_command.hpp"
#include "profile/server_log_import.hpp"

namespace sb {
namespace {

// tools/server/server-common.h, SLT_INF: the prefix of a slot's lines; __func__ is cut to 12
// characters, so server_slot::print_timings prints "print_timing".
constexpr const char* kSlotPrefix = "slot %12.*s: id %2d | task %d | ";
// tools/server/server-context.cpp, server_slot::print_timings (the pinned tree's, whose eval
// line counts the generated tokens and divides its time by the tokens after the first).
constexpr const char* kServerPrompt =
    "prompt eval time = %10.2f ms / %5d tokens (%8.2f ms per token, %8.2f tokens per second)\n";
constexpr const char* kServerEval =
    "       eval time = %10.2f ms / %5d tokens (%8.2f ms per token, %8.2f tokens per second)\n";
constexpr const char* kServerTotal = "      total time = %10.2f ms / %5d tokens\n";
constexpr const char* kServerGraphs = "   graphs reused = %10d\n";
// src/llama-context.cpp, llama_perf_context_print (LLAMA_LOG_INFO, "%s" = __func__); the same
// lines in common/sampling.cpp, common_perf_print, with its sampling and unaccounted lines.
constexpr const char* kPerfLoad = "%s:        load time = %10.2f ms\n";
constexpr const char* kPerfPrompt =
    "%s: prompt eval time = %10.2f ms / %5d tokens (%8.2f ms per token, %8.2f tokens per "
    "second)\n";
constexpr const char* kPerfEval =
    "%s:        eval time = %10.2f ms / %5d runs   (%8.2f ms per token, %8.2f tokens per "
    "second)\n";
constexpr const char* kPerfTotal = "%s:       total time = %10.2f ms / %5d tokens\n";
constexpr const char* kPerfGraphs = "%s:    graphs reused = %10d\n";
constexpr const char* kCommonSampling = "%s:    sampling time = %10.2f ms\n";
constexpr const char* kCommonSamplers = "%s:    samplers time = %10.2f ms / %5d tokens\n";
constexpr const char* kCommonUnaccounted =
    "%s: unaccounted time = %10.2f ms / %5.1f %%      (total - sampling - prompt eval - eval) / "
    "(total)\n";
// An older llama.cpp's llama_print_timings as the pinned tree's examples/simple/README.md shows
// its output: the total line without a token count.
constexpr const char* kOldTotal = "%s:       total time = %10.2f ms\n";
// common/log.cpp, common_log_entry::print with timestamps and prefixes on (`--log-timestamps
// --log-prefix`): "M.SS.mmm.uuu " then the level letter ("I ").
constexpr const char* kLogTimestamp = "%d.%02d.%03d.%03d%s ";
// tools/server/server-common.h, SRV_INF: the prefix of the server's own lines; tools/server/
// server-context.cpp, load_model's first line.
constexpr const char* kSrvPrefix = "srv  %12.*s: ";
constexpr const char* kLoadingModel = "loading model '%s'\n";
// src/llama-model-loader.cpp, llama_model_loader's first line.
constexpr const char* kLoaderMeta =
    "%s: loaded meta data with %d key-value pairs and %d tensors from %s (version %s)\n";

template <typename... A>
std::string pf(const char* fmt, A... a) {
    char buf[512];
    std::snprintf(buf, sizeof buf, fmt, a...);
    return buf;
}

// One finished request as the pinned server prints it (server_slot_stats' derived figures).
std::string server_request(int slot, int task, double prompt_ms, int prompt_n, double gen_ms,
                           int n_gen, const std::string& before = "") {
    const std::string pre = pf(kSlotPrefix, 12, "print_timings", slot, task);
    const int steps = n_gen > 0 ? n_gen - 1 : 0;
    std::string s =
        before + pre +
        pf(kServerPrompt, prompt_ms, prompt_n, prompt_ms / prompt_n, 1e3 / prompt_ms * prompt_n) +
        before + pre +
        pf(kServerEval, gen_ms, n_gen, steps ? gen_ms / steps : 0.0,
           gen_ms > 0 ? 1e3 / gen_ms * steps : 0.0) +
        before + pre + pf(kServerTotal, prompt_ms + gen_ms, prompt_n + n_gen) + before + pre +
        pf(kServerGraphs, n_gen - 1);
    return s;
}

std::string perf_run(const char* func, double load, double p_ms, int p_n, double e_ms, int runs,
                     double total) {
    return pf(kPerfLoad, func, load) +
           pf(kPerfPrompt, func, p_ms, p_n, p_ms / p_n, 1e3 / p_ms * p_n) +
           pf(kPerfEval, func, e_ms, runs, e_ms / runs, 1e3 / e_ms * runs) +
           pf(kPerfTotal, func, total, p_n + runs) + pf(kPerfGraphs, func, runs - 1);
}

// Other lines the pinned server writes around the timings (tools/server/server-context.cpp,
// server-http.cpp): a slot starting a task, the HTTP log of a request, a slot released.
std::string launch_line(int slot, int task) {
    return pf(kSlotPrefix, 12, "launch_slot_", slot, task) + "processing task, is_child = 0\n";
}
const std::string kHttpLine =
    "srv  log_server_r: done request: POST /v1/completions 127.0.0.1 200\n";

TEST(ServerLogParse, ThePinnedServersRequestsBetweenItsOtherLines) {
    const std::string log =
        pf(kLoaderMeta, "llama_model_loader", 31, 12, "/models/tiny.gguf", "GGUF V3 (latest)") +
        "build: 7200 (80fb11ac7) with cc (Debian 14.2.0) 14.2.0 for x86_64-linux-gnu\n" +
        launch_line(0, 5) + kHttpLine + server_request(0, 5, 12.34, 16, 20.5, 8) +
        launch_line(1, 9) + kHttpLine + server_request(1, 9, 3.5, 64, 140.25, 32);
    const ServerLogParse p = parse_server_log(log);
    EXPECT_TRUE(p.skipped.empty()) << p.skipped[0].reason;
    ASSERT_EQ(p.requests.size(), 2u);
    const ServerLogRequest& a = p.requests[0];
    EXPECT_EQ(a.printer, "print_timings");
    EXPECT_EQ(a.slot, 0);
    EXPECT_EQ(a.task, 5);
    EXPECT_EQ(a.line, 5);
    EXPECT_DOUBLE_EQ(a.prompt_ms, 12.34);
    EXPECT_EQ(a.prompt_n, 16);
    EXPECT_DOUBLE_EQ(a.eval_ms, 20.5);
    EXPECT_EQ(a.eval_n, 8);
    EXPECT_FALSE(a.eval_runs);
    EXPECT_DOUBLE_EQ(*a.total_ms, 32.84);
    EXPECT_EQ(a.total_n, 24);
    EXPECT_FALSE(a.load_ms);
    EXPECT_EQ(p.requests[1].task, 9);
    EXPECT_EQ(p.requests[1].slot, 1);
    EXPECT_DOUBLE_EQ(p.requests[1].eval_ms, 140.25);
    EXPECT_EQ(p.printers, (std::vector<std::string>{"print_timings"}));
    EXPECT_EQ(p.model_path, "/models/tiny.gguf");
    EXPECT_EQ(p.build_number, 7200);
    EXPECT_EQ(p.build_commit, "80fb11ac7");
    EXPECT_EQ(p.n_lines, 14);
}

// At llama-server's default verbosity the loader's line is not shown: its own names the model.
TEST(ServerLogParse, TheServersOwnLineNamesTheModel) {
    const ServerLogParse p =
        parse_server_log(pf(kSrvPrefix, 12, "load_model", "") + pf(kLoadingModel, "/m/a b.gguf") +
                         server_request(0, 0, 1.0, 4, 2.0, 2));
    EXPECT_EQ(p.model_path, "/m/a b.gguf");
    EXPECT_EQ(p.requests.size(), 1u);
}

// Timestamps and level letters (common/log.cpp with --log-timestamps --log-prefix), colour
// escapes (--log-colors), and another slot's line between a request's lines.
TEST(ServerLogParse, PrefixesColoursAndInterleavedLines) {
    const std::string ts = pf(kLogTimestamp, 0, 12, 345, 678, "") + "I ";
    const std::string coloured =
        "\033[34m" + pf(kLogTimestamp, 1, 2, 3, 4, "\033[0m") + "\033[32mI \033[0m";
    std::string req = server_request(3, 41, 100.0, 512, 250.0, 128, ts);
    // Another slot's launch between the prompt and eval lines.
    const std::size_t second = req.find('\n') + 1;
    req.insert(second, ts + launch_line(2, 42));
    const std::string log = req + server_request(2, 42, 1.25, 4, 2.0, 2, coloured);
    const ServerLogParse p = parse_server_log(log);
    EXPECT_TRUE(p.skipped.empty()) << p.skipped[0].reason;
    ASSERT_EQ(p.requests.size(), 2u);
    EXPECT_EQ(p.requests[0].task, 41);
    EXPECT_EQ(p.requests[0].slot, 3);
    EXPECT_EQ(p.requests[0].prompt_n, 512);
    EXPECT_DOUBLE_EQ(p.requests[0].eval_ms, 250.0);
    EXPECT_EQ(p.requests[1].task, 42);
    EXPECT_DOUBLE_EQ(p.requests[1].prompt_ms, 1.25);
    EXPECT_EQ(p.requests[1].eval_n, 2);
}

// A line cut off mid-way is skipped with a warning naming it, and the rest of its request with
// it; the requests around it stand. A cut total line leaves its request (prompt and eval) in.
TEST(ServerLogParse, ALineCutOffIsSkippedAndNamed) {
    const std::string whole = server_request(0, 1, 10.0, 16, 30.0, 8);
    std::string cut = server_request(0, 2, 11.0, 16, 31.0, 8);
    const std::size_t eval_at = cut.find("eval time", cut.find('\n'));
    cut = cut.substr(0, eval_at + 20) + "\n" + cut.substr(cut.find('\n', eval_at) + 1);
    std::string cut_total = server_request(0, 3, 12.0, 16, 32.0, 8);
    const std::size_t total_at = cut_total.find("total time");
    cut_total = cut_total.substr(0, total_at + 22);  // the log ends inside it
    const ServerLogParse p = parse_server_log(whole + cut + cut_total);
    ASSERT_EQ(p.requests.size(), 2u);
    EXPECT_EQ(p.requests[0].task, 1);
    EXPECT_EQ(p.requests[1].task, 3);
    EXPECT_FALSE(p.requests[1].total_ms);
    ASSERT_EQ(p.skipped.size(), 2u);
    EXPECT_EQ(p.skipped[0].line, 6);
    EXPECT_NE(p.skipped[0].reason.find("eval time line cut off or damaged"), std::string::npos)
        << p.skipped[0].reason;
    EXPECT_NE(p.skipped[0].reason.find("id  0 | task 2 |"), std::string::npos);
    EXPECT_EQ(p.skipped[1].line, 11);
    EXPECT_NE(p.skipped[1].reason.find("total time line cut off"), std::string::npos);
}

// A request whose lines stop before its eval line (lost, not cut: the log rotated) is skipped
// once the next request begins.
TEST(ServerLogParse, ARequestWithoutItsEvalLineIsSkipped) {
    std::string first = server_request(0, 1, 10.0, 16, 30.0, 8);
    first = first.substr(0, first.find('\n') + 1);
    const ServerLogParse p = parse_server_log(first + server_request(0, 2, 10.0, 16, 30.0, 8));
    ASSERT_EQ(p.requests.size(), 1u);
    EXPECT_EQ(p.requests[0].task, 2);
    ASSERT_EQ(p.skipped.size(), 1u);
    EXPECT_EQ(p.skipped[0].line, 1);
    EXPECT_EQ(p.skipped[0].reason,
              "print_timings's timings stop before its eval time line (a request's lines cut off "
              "or lost): request skipped");
}

// llama_perf_context_print (llama-completion, llama-simple) and common_perf_print (llama-cli),
// one run each, and the older llama_print_timings without the total's tokens.
TEST(ServerLogParse, PerfPrintersOfEveryVersionInTheTree) {
    std::string log = perf_run("llama_perf_context_print", 250.5, 40.0, 32, 90.0, 15, 400.0);
    log += pf(kCommonSampling, "common_perf_print", 1.5) +
           pf(kCommonSamplers, "common_perf_print", 1.25, 16) +
           perf_run("common_perf_print", 10.0, 20.0, 8, 30.0, 6, 70.0) +
           pf(kCommonUnaccounted, "common_perf_print", 18.5, 26.4);
    // examples/simple/README.md's llama_print_timings: load, sample, prompt eval, eval, total.
    log += pf(kPerfLoad, "llama_print_timings", 579.15) +
           "llama_print_timings:      sample time =       3.58 ms /    28 runs   (    0.13 ms per "
           "token,  7821.23 tokens per second)\n" +
           pf(kPerfPrompt, "llama_print_timings", 655.63, 10, 65.563, 15.25) +
           pf(kPerfEval, "llama_print_timings", 2180.97, 27, 80.78, 12.38) +
           pf(kOldTotal, "llama_print_timings", 2891.13);
    const ServerLogParse p = parse_server_log(log);
    EXPECT_TRUE(p.skipped.empty()) << p.skipped[0].reason;
    ASSERT_EQ(p.requests.size(), 3u);
    EXPECT_EQ(p.requests[0].printer, "llama_perf_context_print");
    EXPECT_DOUBLE_EQ(*p.requests[0].load_ms, 250.5);
    EXPECT_EQ(p.requests[0].eval_n, 15);
    EXPECT_TRUE(p.requests[0].eval_runs);
    EXPECT_EQ(p.requests[0].total_n, 47);
    EXPECT_FALSE(p.requests[0].slot);
    EXPECT_EQ(p.requests[1].printer, "common_perf_print");
    EXPECT_DOUBLE_EQ(p.requests[1].prompt_ms, 20.0);
    EXPECT_EQ(p.requests[2].printer, "llama_print_timings");
    EXPECT_DOUBLE_EQ(p.requests[2].prompt_ms, 655.63);
    EXPECT_EQ(p.requests[2].eval_n, 27);
    EXPECT_DOUBLE_EQ(*p.requests[2].total_ms, 2891.13);
    EXPECT_FALSE(p.requests[2].total_n);
    EXPECT_EQ(p.printers, (std::vector<std::string>{"llama_perf_context_print", "common_perf_print",
                                                    "llama_print_timings"}));
}

// Figures that cannot be true: a total that is not its parts, a time over a day, more tokens
// than 2^24. Each request is skipped and named; an eval line with no prompt line before it
// (the log began mid-request) too.
TEST(ServerLogParse, FiguresThatCannotBeTrueAreSkipped) {
    std::string bad_total = server_request(0, 1, 10.0, 16, 30.0, 8);
    bad_total.replace(bad_total.find("40.00 ms"), 8, "45.00 ms");
    const std::string day = server_request(0, 2, 90'000'000.0, 16, 30.0, 8);
    const std::string many = server_request(0, 3, 10.0, 20'000'000, 30.0, 8);
    std::string orphan = server_request(0, 4, 10.0, 16, 30.0, 8);
    orphan = orphan.substr(orphan.find('\n') + 1);  // no prompt eval line
    const std::string good = server_request(0, 5, 10.0, 16, 30.0, 8);
    const ServerLogParse p = parse_server_log(bad_total + day + many + orphan + good);
    ASSERT_EQ(p.requests.size(), 1u);
    EXPECT_EQ(p.requests[0].task, 5);
    ASSERT_EQ(p.skipped.size(), 5u);
    EXPECT_EQ(p.skipped[0].reason,
              "total time 45.00 ms is not prompt eval 10.00 ms + eval 30.00 ms: request skipped");
    EXPECT_EQ(p.skipped[1].reason,
              "prompt eval time 90000000.00 ms cannot be true (0 to a day): request skipped");
    EXPECT_EQ(p.skipped[2].reason,
              "prompt tokens 20000000 cannot be true (at most 2^24): request skipped");
    EXPECT_EQ(p.skipped[3].reason,
              "an eval time line without its request's prompt eval time line before it");
    EXPECT_EQ(p.skipped[4].reason,
              "a total time line without its request's eval time line before it");
}

TEST(ServerLogParse, TextWithoutTimingsHasNoRequests) {
    const ServerLogParse p =
        parse_server_log("main: server is listening on http://127.0.0.1:8080\nsampling time = 3\n");
    EXPECT_TRUE(p.requests.empty());
    EXPECT_TRUE(p.skipped.empty());
    EXPECT_EQ(p.n_lines, 2);
    EXPECT_TRUE(parse_server_log("").requests.empty());
}

// The format strings above are the pinned tree's, verbatim (as the source spells them).
TEST(PinnedPrinters, TheFormatsAreThePinnedTrees) {
    auto source = [](const std::string& rel) {
        std::ifstream f(std::string(SB_LLAMA_SOURCE_DIR) + "/" + rel);
        EXPECT_TRUE(f) << rel;
        std::stringstream ss;
        ss << f.rdbuf();
        return ss.str();
    };
    // "a\n" as a C literal's source text: "a\\n".
    auto literal = [](std::string s) {
        std::string o;
        for (char c : s)
            o += c == '\n' ? std::string("\\n") : std::string(1, c);
        return o;
    };
    const std::string server = source("tools/server/server-context.cpp");
    for (const char* f : {kServerPrompt, kServerEval, kServerTotal, kServerGraphs})
        EXPECT_NE(server.find(literal(f)), std::string::npos) << f;
    EXPECT_NE(server.find("void print_timings() const"), std::string::npos);
    EXPECT_NE(source("tools/server/server-common.h").find(literal(kSlotPrefix)), std::string::npos);
    EXPECT_NE(source("tools/server/server-common.h").find(literal(kSrvPrefix)), std::string::npos);
    EXPECT_NE(server.find("SRV_INF(\"" + literal(kLoadingModel)), std::string::npos);
    const std::string ctx = source("src/llama-context.cpp");
    const std::string sampling = source("common/sampling.cpp");
    for (const char* f : {kPerfLoad, kPerfPrompt, kPerfEval, kPerfTotal, kPerfGraphs}) {
        EXPECT_NE(ctx.find(literal(f)), std::string::npos) << f;
        EXPECT_NE(sampling.find(literal(f)), std::string::npos) << f;
    }
    for (const char* f : {kCommonSampling, kCommonSamplers, kCommonUnaccounted})
        EXPECT_NE(sampling.find(literal(f)), std::string::npos) << f;
    EXPECT_NE(source("examples/simple/README.md").find("llama_print_timings:       total time =  "),
              std::string::npos);
    EXPECT_NE(source("common/log.cpp").find(literal("%s%d.%02d.%03d.%03d%s ")), std::string::npos);
    EXPECT_NE(source("src/llama-model-loader.cpp")
                  .find(literal("%s: loaded meta data with %d key-value pairs and %d tensors "
                                "from %s (version %s)\n")),
              std::string::npos);
}

// ---- the document ----------------------------------------------------------------------------

struct TempFile {
    explicit TempFile(const std::string& text) {
        path = (std::filesystem::temp_directory_path() /
                ("sb_server_log_" + std::to_string(::getpid()) + "_" + std::to_string(n++)))
                   .string();
        std::ofstream(path, std::ios::binary) << text;
    }
    ~TempFile() { std::filesystem::remove(path); }
    std::string path;
    static inline int n = 0;
};

// Requests of the same counts are one test, each a repetition; the rates are the server's
// figures; each request is an import row and one of the server block's reps.
TEST(ServerLogImport, RequestsBecomeTestsOfTheServersClaims) {
    const TempFile f(pf(kLoaderMeta, "llama_model_loader", 31, 12, "/m/tiny.gguf", "GGUF V3") +
                     server_request(0, 1, 8.0, 16, 14.0, 8) +
                     server_request(0, 2, 4.0, 16, 7.0, 8) +
                     server_request(0, 3, 2.0, 32, 10.0, 4));
    ResultDocument doc;
    std::ostringstream err;
    EXPECT_EQ(run_import_server_log({{f.path}, std::nullopt}, doc, err), 0);
    EXPECT_EQ(err.str(), "");
    ASSERT_EQ(doc.tests.size(), 2u);
    const TestResult& t = doc.tests[0];
    EXPECT_EQ(t.config.engine, EngineKind::http);
    EXPECT_EQ(t.config.model_path, "/m/tiny.gguf");
    EXPECT_EQ(t.config.devices.str(), "auto");
    EXPECT_EQ(t.config.n_prompt, 16);
    EXPECT_EQ(t.config.n_gen, 8);
    EXPECT_EQ(t.reps_done, 2);
    ASSERT_TRUE(t.prefill);
    EXPECT_EQ(t.prefill->n_tokens, 16);
    EXPECT_EQ(t.prefill->duration_ns, (std::vector<int64_t>{8'000'000, 4'000'000}));
    EXPECT_EQ(t.prefill->tokens_per_s, (std::vector<double>{2000.0, 4000.0}));
    ASSERT_TRUE(t.decode);
    EXPECT_EQ(t.decode->n_tokens, 7);  // the tokens after the first
    EXPECT_EQ(t.decode->tokens_per_s, (std::vector<double>{500.0, 1000.0}));
    ASSERT_TRUE(t.server);
    ASSERT_EQ(t.server->reps.size(), 2u);
    EXPECT_EQ(t.server->reps[1].prompt_ns, 4'000'000);
    EXPECT_EQ(t.server->reps[1].predicted_n, 8);
    EXPECT_EQ(t.server->reps[1].source, "llama-server");
    ASSERT_TRUE(t.imported);
    EXPECT_EQ(t.imported->tool, "llama-server-log");
    ASSERT_EQ(t.imported->rows.size(), 2u);
    EXPECT_EQ(t.imported->rows[0].test, "task 1 (slot 0)");
    EXPECT_EQ(t.imported->rows[0].line, 2);
    EXPECT_EQ(t.imported->rows[0].fields["eval_ms"], "14.00");
    EXPECT_EQ(doc.tests[1].config.n_prompt, 32);
    EXPECT_EQ(doc.tests[1].config.n_gen, 4);
    ASSERT_TRUE(doc.imported);
    EXPECT_EQ(doc.imported->tool, "llama-server-log");
    ASSERT_EQ(doc.imported->files.size(), 1u);
    EXPECT_EQ(doc.imported->files[0].rows, 3);
    EXPECT_EQ(doc.imported->files[0].variant, "print_timings");
    EXPECT_NE(doc.imported->method.find("the program's own claim"), std::string::npos);
    EXPECT_TRUE(doc.warnings.empty());
    // A normal result document: it comes back from its JSON as it went.
    const nlohmann::json j = to_json(doc);
    EXPECT_EQ(to_json(from_json<ResultDocument>(j, "test")), j);
}

TEST(ServerLogImport, SkippedLinesAreWarningsAndBadFilesAreOneLineErrors) {
    std::string log =
        server_request(0, 1, 8.0, 16, 14.0, 8) + server_request(0, 2, 8.0, 16, 14.0, 8);
    log = log.substr(0, log.rfind("eval time") + 12);  // cut inside request 2's eval line
    const TempFile f(log);
    ResultDocument doc;
    std::ostringstream err;
    run_import_server_log({{f.path}, std::nullopt}, doc, err);
    EXPECT_EQ(doc.tests.size(), 1u);
    EXPECT_NE(err.str().find("stagebench: warning: " + f.path + " line 6: eval time line cut off"),
              std::string::npos)
        << err.str();
    ASSERT_EQ(doc.warnings.size(), 1u);
    EXPECT_EQ(doc.warnings[0].code, "import_lines_skipped");

    const TempFile none("main: server is listening on http://127.0.0.1:8080\n");
    try {
        run_import_server_log({{none.path}, std::nullopt}, doc, err);
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input);
        EXPECT_EQ(std::string(e.what()),
                  "'" + none.path +
                      "': no complete request timings found (1 lines; looked for llama-server's "
                      "print_timing lines and llama_perf_context_print's)");
    }
    const TempFile binary(std::string("prompt eval time\0", 17));
    EXPECT_THROW(run_import_server_log({{binary.path}, std::nullopt}, doc, err), Error);
    EXPECT_THROW(run_import_server_log({{"/nonexistent/server.log"}, std::nullopt}, doc, err),
                 Error);
}

}  // namespace
}  // namespace sb
