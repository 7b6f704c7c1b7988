#include "core/result.hpp"

#include <cstdio>
#include <ctime>
#include <fstream>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/json_util.hpp"
#include "core/stats_json.hpp"

namespace sb {

using nlohmann::json;

std::string TestConfig::test_name() const {
    std::string s;
    if (n_prompt > 0)
        s += "pp" + std::to_string(n_prompt);
    if (n_gen > 0) {
        if (!s.empty())
            s += '+';
        s += "tg" + std::to_string(n_gen);
    }
    if (n_depth > 0)
        s += " @ d" + std::to_string(n_depth);
    return s;
}

json to_json(const TestConfig& c) {
    return json{{"model_path", c.model_path},
                {"devices", c.devices},
                {"test", c.test_name()},
                {"n_prompt", c.n_prompt},
                {"n_gen", c.n_gen},
                {"n_depth", c.n_depth},
                {"n_threads", c.n_threads},
                {"n_batch", c.n_batch},
                {"n_ubatch", c.n_ubatch},
                {"n_gpu_layers", c.n_gpu_layers},
                {"flash_attn", c.flash_attn},
                {"type_k", c.type_k},
                {"type_v", c.type_v},
                {"reps", c.reps},
                {"target_ci", opt(c.target_ci)},
                {"max_reps", c.max_reps},
                {"warmup", c.warmup},
                {"seed", c.seed},
                {"engine", c.engine}};
}

namespace {

constexpr const char* kRobustCi =
    "percentile bootstrap of the median resampling whole repetitions (1000 resamples, seed 42)";

json robust_json(const RobustRate& r, const char* estimator) {
    return json{{"tokens_per_s", opt(r.tokens_per_s)},
                {"ci95_lo", opt(r.ci95_lo)},
                {"ci95_hi", opt(r.ci95_hi)},
                {"ci95_half_rel", opt(r.ci95_half_rel)},
                {"estimator", estimator},
                {"ci", kRobustCi}};
}

}  // namespace

json to_json(const Stalls& s) {
    return json{{"rule",
                 "modified z-score above k, one-sided: z = 0.6745 (x - median) / MAD, or "
                 "(x - median) / (1.253314 MeanAD) when MAD is 0"},
                {"k", s.k},
                {"n", s.n},
                {"count", s.count()},
                {"indices", s.indices},
                {"time_ns", s.time},
                {"excess_ns", s.excess},
                {"median_ns", opt(s.median)},
                {"threshold_ns", opt(s.threshold)}};
}

json to_json(const StageResult& s) {
    return json{{"n_tokens", s.n_tokens},
                {"duration_ns", s.duration_ns},
                {"duration", to_json(s.duration)},
                {"tokens_per_s", s.tokens_per_s},
                {"throughput", to_json(s.throughput)},
                {"robust", robust_json(s.robust, "n_tokens / median repetition duration")},
                {"stalls", {{"repetitions", to_json(s.stalls)}}},
                {"start_ns", s.start_ns}};
}

json to_json(const DecodeResult& d) {
    json j = to_json(static_cast<const StageResult&>(d));
    j["token_latency_ns"] = d.token_latency_ns;
    j["token_latency_counts"] = d.token_latency_counts;
    j["itl"] = to_json(d.itl);
    j["kv_depth_start"] = d.kv_depth_start;
    j["robust"] = robust_json(d.robust, "1e9 / median inter-token latency");
    j["stalls"]["tokens"] = to_json(d.token_stalls);
    return j;
}

json to_json(const ServerTimings& s) {
    return json{{"source", s.source},
                {"prompt_n", opt(s.prompt_n)},
                {"cache_n", opt(s.cache_n)},
                {"predicted_n", opt(s.predicted_n)},
                {"prompt_ns", opt(s.prompt_ns)},
                {"predicted_ns", opt(s.predicted_ns)},
                {"queue_ns", opt(s.queue_ns)},
                {"load_ns", opt(s.load_ns)}};
}

json to_json(const ClientTimings& c) {
    json fc = json::array();
    for (const auto& v : c.first_content_ns)
        fc.push_back(opt(v));
    return json{{"e2e_ns", c.e2e_ns},
                {"e2e", to_json(c.e2e)},
                {"tpot_ns", c.tpot_ns},
                {"tpot", to_json(c.tpot)},
                {"first_content_ns", fc},
                {"first_content", to_json(c.first_content)},
                {"prompt_tokens", c.prompt_tokens},
                {"output_tokens", c.output_tokens},
                {"streamed_tokens", c.streamed_tokens},
                {"chunks", c.chunks}};
}

json to_json(const ServerSide& s) {
    json reps = json::array();
    for (const auto& r : s.reps)
        reps.push_back(to_json(r));
    return json{{"reps", reps},
                {"prefill_tokens_per_s", to_json(s.prefill_tokens_per_s)},
                {"decode_tokens_per_s", to_json(s.decode_tokens_per_s)},
                {"client_minus_server",
                 {{"ttft_minus_prompt_ns", s.ttft_minus_prompt_ns},
                  {"ttft_minus_prompt", to_json(s.ttft_minus_prompt)},
                  {"e2e_minus_total_ns", s.e2e_minus_total_ns},
                  {"e2e_minus_total", to_json(s.e2e_minus_total)}}}};
}

json to_json(const TestResult& t) {
    json j{{"config", to_json(t.config)},
           {"status", t.status},
           {"error", opt(t.error)},
           {"error_kind", opt(t.error_kind)},
           {"backends", t.backends},
           {"notes", t.notes},
           {"reps_done", t.reps_done},
           {"stopped_by", t.stopped_by},
           {"prefill", t.prefill ? to_json(*t.prefill) : json(nullptr)},
           {"decode", t.decode ? to_json(*t.decode) : json(nullptr)},
           {"ttft_ns", t.ttft_ns},
           {"ttft", to_json(t.ttft)},
           {"roofline",
            {{"decode_bytes_per_token", opt(t.roofline.decode_bytes_per_token)},
             {"decode_bandwidth_gbps", opt(t.roofline.decode_bandwidth_gbps)},
             {"decode_bandwidth_fraction", opt(t.roofline.decode_bandwidth_fraction)},
             {"prefill_gflops", opt(t.roofline.prefill_gflops)}}},
           {"telemetry", t.telemetry},
           {"started_ns", t.started_ns},
           {"finished_ns", t.finished_ns},
           {"client", t.client ? to_json(*t.client) : json(nullptr)},
           {"server", t.server ? to_json(*t.server) : json(nullptr)}};
    return j;
}

json to_json(const ResultDocument& d) {
    json tests = json::array();
    for (const auto& t : d.tests)
        tests.push_back(to_json(t));
    json warnings = json::array();
    for (const auto& w : d.warnings)
        warnings.push_back(to_json(w));
    json j{{"schema", "stagebench.result"},
           {"schema_version", kResultSchemaVersion},
           {"command", d.command},
           {"argv", d.argv},
           {"tool",
            {{"name", "stagebench"}, {"version", d.tool_version}, {"build_type", d.build_type}}},
           {"llama", d.llama},
           {"system", d.system},
           {"models", d.models},
           {"membw", d.membw},
           {"started_at", d.started_at},
           {"finished_at", d.finished_at},
           {"tests", tests},
           {"warnings", warnings},
           {"telemetry", d.telemetry},
           {"engines", d.engines}};
    for (const auto& [k, v] : d.extra.items())
        j[k] = v;
    return j;
}

std::string error_kind_name(ErrorKind kind) {
    switch (kind) {
        case ErrorKind::usage:
            return "usage";
        case ErrorKind::input:
            return "input";
        case ErrorKind::runtime:
            break;
    }
    return "runtime";
}

void record_failure(TestResult& r, const std::exception& e) {
    const auto* se = dynamic_cast<const Error*>(&e);
    record_failure(r, e.what(), se ? se->kind() : ErrorKind::runtime);
}

void record_failure(TestResult& r, const std::string& error, std::optional<ErrorKind> kind) {
    r.status = "failed";
    r.error = error;
    r.stopped_by = "error";
    r.error_kind.reset();
    if (kind)
        r.error_kind = error_kind_name(*kind);
}

void record_interrupted(TestResult& r, std::optional<std::string> error) {
    r.status = "interrupted";
    r.stopped_by = "interrupt";
    if (error)
        r.error = std::move(error);
}

void record_stopped_at_reps(TestResult& r) {
    r.stopped_by = "reps";
}

void record_stopped_at_target_ci(TestResult& r) {
    r.stopped_by = "target_ci";
}

void record_stopped_at_max_reps(TestResult& r) {
    r.stopped_by = "max_reps";
}

int exit_code_for(const std::vector<TestResult>& tests, bool interrupted) {
    bool failed = interrupted;
    for (const auto& t : tests) {
        if (t.status == "failed" && (t.error_kind == "input" || t.error_kind == "usage"))
            return 2;
        failed |= t.status != "ok";
    }
    return failed ? 1 : 0;
}

std::string utc_timestamp() {
    std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

void write_document(const ResultDocument& doc, const std::string& path, DocumentSave save) {
    constexpr const char* what = "the result file (--out)";
    if (save == DocumentSave::progress && !output_is_replaced(path)) {
        check_output_path(path, what);
        return;
    }
    write_output_file(path, dump_json(to_json(doc), 2) + "\n", what);
}

}  // namespace sb
