#include "profile/server_log_command.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/stats.hpp"
#include "profile/import_finish.hpp"
#include "profile/server_log_import.hpp"

namespace sb {

namespace {

using nlohmann::json;

constexpr const char* kServerLogTool = "llama-server-log";

struct Request {
    ServerLogRequest r;
    std::string file;
    bool server() const { return r.printer == "print_timings"; }
    // The test's output count: generated tokens (llama-server), decode runs (llama_perf).
    int64_t n_gen() const { return r.eval_n; }
    // Decode steps the eval time spans: llama-server's first token comes from the prompt's
    // last batch (the pinned server_slot_stats::n_gen_steps), llama_perf counts decode calls.
    int64_t decode_steps() const {
        return server() ? std::max<int64_t>(0, r.eval_n - 1) : r.eval_n;
    }
};

int64_t ns_of(double ms) {
    return static_cast<int64_t>(std::llround(ms * 1e6));
}

std::string ms_text(double ms) {
    return fmt::format("{:.2f}", ms);
}

ImportedRow imported_row(const Request& x) {
    ImportedRow o;
    o.file = x.file;
    o.line = x.r.line;
    o.test =
        x.r.task ? fmt::format("task {} (slot {})", *x.r.task, x.r.slot.value_or(-1)) : x.r.printer;
    o.stage = "pp+tg";
    if (x.r.total_ms)
        o.avg_ns = ns_of(*x.r.total_ms);
    json& f = o.fields;
    f["printer"] = x.r.printer;
    if (x.r.slot)
        f["slot"] = std::to_string(*x.r.slot);
    if (x.r.task)
        f["task"] = std::to_string(*x.r.task);
    f["prompt_eval_ms"] = ms_text(x.r.prompt_ms);
    f["prompt_eval_tokens"] = std::to_string(x.r.prompt_n);
    f["eval_ms"] = ms_text(x.r.eval_ms);
    f[x.r.eval_runs ? "eval_runs" : "eval_tokens"] = std::to_string(x.r.eval_n);
    if (x.r.total_ms)
        f["total_ms"] = ms_text(*x.r.total_ms);
    if (x.r.total_n)
        f["total_tokens"] = std::to_string(*x.r.total_n);
    if (x.r.load_ms)
        f["load_ms"] = ms_text(*x.r.load_ms);
    return o;
}

TestResult make_test(const std::vector<const Request*>& reqs, const std::string& model) {
    const Request& first = *reqs.front();
    TestResult t;
    t.status = Status::ok;
    t.stopped_by = StopReason::reps;
    t.config.model_path = model;
    t.config.engine = first.server() ? EngineKind::http : EngineKind::llama;
    t.config.n_prompt = static_cast<int>(first.r.prompt_n);
    t.config.n_gen = static_cast<int>(first.n_gen());
    t.config.n_threads = 0;
    t.config.devices = "auto";  // the log does not say which devices: llama.cpp's choice
    t.config.reps = t.config.max_reps = static_cast<int>(reqs.size());
    t.reps_done = static_cast<int>(reqs.size());
    t.imported = TestImport{kServerLogTool, {}};
    StageResult pre;
    pre.n_tokens = t.config.n_prompt;
    DecodeResult dec;
    dec.n_tokens = static_cast<int>(first.decode_steps());
    dec.kv_depth_start = t.config.n_prompt + (first.server() ? 1 : 0);
    std::vector<double> server_pre, server_dec;
    for (const Request* x : reqs) {
        t.imported->rows.push_back(imported_row(*x));
        const int64_t p_ns = ns_of(x->r.prompt_ms), e_ns = ns_of(x->r.eval_ms);
        if (x->r.prompt_n > 0 && p_ns > 0) {
            pre.duration_ns.push_back(p_ns);
            pre.tokens_per_s.push_back(static_cast<double>(x->r.prompt_n) * 1e9 /
                                       static_cast<double>(p_ns));
        }
        if (x->decode_steps() > 0 && e_ns > 0) {
            dec.duration_ns.push_back(e_ns);
            dec.tokens_per_s.push_back(static_cast<double>(x->decode_steps()) * 1e9 /
                                       static_cast<double>(e_ns));
        }
        if (!x->server())
            continue;
        if (!t.server)
            t.server.emplace();
        ServerTimings s;
        s.source = "llama-server";
        s.prompt_n = x->r.prompt_n;
        s.predicted_n = x->r.eval_n;
        s.prompt_ns = p_ns;
        s.predicted_ns = e_ns;
        t.server->reps.push_back(s);
        // As `run --engine http` reads the server's timings (scenario/repetition.cpp).
        if (p_ns > 0)
            server_pre.push_back(static_cast<double>(x->r.prompt_n) * 1e9 / p_ns);
        if (e_ns > 0)
            server_dec.push_back(static_cast<double>(x->r.eval_n) * 1e9 / e_ns);
    }
    if (!pre.duration_ns.empty()) {
        pre.duration = summarize_ns(pre.duration_ns);
        pre.throughput = summarize(pre.tokens_per_s);
        t.prefill = pre;
    }
    if (!dec.duration_ns.empty()) {
        dec.duration = summarize_ns(dec.duration_ns);
        dec.throughput = summarize(dec.tokens_per_s);
        t.decode = dec;
    }
    if (t.server) {
        t.server->prefill_tokens_per_s = summarize(server_pre);
        t.server->decode_tokens_per_s = summarize(server_dec);
    }
    std::string lines;
    for (std::size_t i = 0; i < reqs.size() && i < 3; ++i)
        lines += fmt::format("{}{} line {}", i ? ", " : "", reqs[i]->file, reqs[i]->r.line);
    if (reqs.size() > 3)
        lines += fmt::format(" and {} more", reqs.size() - 3);
    t.notes.push_back(
        first.server()
            ? fmt::format("llama-server's own timings of {} request(s) from its log ({}), its "
                          "claims, not a client's measurement: prefill = prompt tokens processed "
                          "/ prompt eval time, decode = the tokens after the first / eval time",
                          reqs.size(), lines)
            : fmt::format("{}'s timings of {} run(s) from a log ({}), the program's claims: "
                          "prefill = prompt tokens / prompt eval time, decode = eval runs (one "
                          "token each) / eval time",
                          first.r.printer, reqs.size(), lines));
    if (!pre.duration_ns.empty() && pre.duration_ns.size() < reqs.size())
        t.notes.push_back("a request with no prompt tokens or no prompt time has no prefill");
    return t;
}

std::string read_log_checked(const std::string& path) {
    require_regular_file(path, "llama-server log");
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (!ec && size > static_cast<uintmax_t>(kServerLogMaxBytes))
        throw input_error(
            fmt::format("'{}': {} bytes, more than a log read here can be ({} MiB "
                        "at most)",
                        path, size, kServerLogMaxBytes >> 20));
    std::string text = read_input_file(path, "llama-server log");
    if (text.size() > static_cast<std::size_t>(kServerLogMaxBytes))
        throw input_error(fmt::format("'{}': more than {} MiB, more than a log read here can be",
                                      path, kServerLogMaxBytes >> 20));
    if (const std::size_t nul = text.find('\0'); nul != std::string::npos)
        throw input_error(fmt::format(
            "'{}' is binary (a NUL byte at offset {}), not a llama-server log", path, nul));
    return text;
}

}  // namespace

int run_import_server_log(const ServerLogImportOptions& o, ResultDocument& doc, std::ostream& err) {
    if (o.files.empty())
        throw usage_error("import llama-server-log: give one FILE or more");
    ImportSection section;
    section.tool = kServerLogTool;
    std::vector<Request> reqs;
    std::vector<std::string> skipped, warnings;
    std::optional<std::string> model;
    std::optional<int64_t> build_number;
    std::optional<std::string> build_commit;
    for (const auto& path : o.files) {
        const std::string text = read_log_checked(path);
        ServerLogParse p = parse_server_log(text);
        if (p.requests.empty())
            throw input_error(fmt::format(
                "'{}': no complete request timings found ({} lines; looked for llama-server's "
                "print_timing lines and llama_perf_context_print's{})",
                path, p.n_lines,
                p.skipped.empty()
                    ? std::string()
                    : fmt::format("; line {}: {}", p.skipped[0].line, p.skipped[0].reason)));
        std::string variant;
        for (const auto& pr : p.printers)
            variant += (variant.empty() ? "" : ", ") + pr;
        section.files.push_back({path, "log", variant, static_cast<int>(p.requests.size()),
                                 static_cast<int>(p.skipped.size())});
        for (auto& r : p.requests)
            reqs.push_back({std::move(r), path});
        for (const auto& s : p.skipped) {
            skipped.push_back(fmt::format("{} line {}: {}", path, s.line, s.reason));
            warnings.push_back(
                fmt::format("stagebench: warning: {} line {}: {}\n", path, s.line, s.reason));
        }
        if (!model && p.model_path)
            model = p.model_path;
        if (!build_number && p.build_number) {
            build_number = p.build_number;
            build_commit = p.build_commit;
        }
    }
    // Only once every file was read: a file that fails is one error line, no warnings before it.
    for (const auto& w : warnings)
        err << w;

    // Tests: requests of one printer kind, prompt and output count together, in log order.
    using Key = std::tuple<bool, int64_t, int64_t>;
    std::vector<Key> order;
    std::map<Key, std::vector<const Request*>> groups;
    for (const auto& x : reqs) {
        const Key k{x.server(), x.r.prompt_n, x.n_gen()};
        if (!groups.count(k))
            order.push_back(k);
        groups[k].push_back(&x);
    }
    const std::string model_path = model.value_or("?");
    doc.tests.clear();
    for (const auto& k : order)
        doc.tests.push_back(make_test(groups[k], model_path));

    doc.models = {json{{"path", model_path}}};
    doc.system = json{{"source", kServerLogTool}};
    json llama{{"tag", nullptr}, {"source", kServerLogTool}};
    if (build_commit)
        llama["commit"] = *build_commit;
    if (build_number)
        llama["build_number"] = *build_number;
    doc.llama = llama;
    doc.warnings.clear();
    doc.telemetry.reset();
    doc.membw = nullptr;
    section.method =
        "Imported from the timings llama.cpp's programs print to their logs (llama-server's "
        "print_timings per finished request; llama_perf_context_print per llama-cli run): every "
        "time is the program's own claim, from its own clock, not a measurement of stagebench's. "
        "Requests with the same prompt and output counts are one test, each request a "
        "repetition; prefill = prompt tokens processed / prompt eval time, decode = decode steps "
        "/ eval time (llama-server: the tokens after the first; llama_perf: its runs).";
    section.notes.push_back(
        "the system section describes no machine: a log does not say which one ran it");
    finish_import(doc, std::move(section), skipped,
                  {"import_lines_skipped", "line(s) or request(s) of the log",
                   "a timing line cut off or damaged (a log truncated or written over), a request "
                   "whose lines are incomplete, or figures that cannot be true; the other requests "
                   "are imported"},
                  o.out_path);
    return 0;
}

}  // namespace sb
