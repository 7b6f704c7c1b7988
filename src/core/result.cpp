#include "core/result.hpp"

#include <cstdio>
#include <ctime>
#include <fstream>

#include "core/document.hpp"
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
                {"devices", c.devices.str()},
                {"test", c.test_name()},
                {"n_prompt", c.n_prompt},
                {"n_gen", c.n_gen},
                {"n_depth", c.n_depth},
                {"n_threads", c.n_threads},
                {"n_batch", c.n_batch},
                {"n_ubatch", c.n_ubatch},
                {"n_gpu_layers", c.n_gpu_layers},
                {"flash_attn", to_string(c.flash_attn)},
                {"type_k", to_string(c.type_k)},
                {"type_v", to_string(c.type_v)},
                {"reps", c.reps},
                {"target_ci", opt(c.target_ci)},
                {"max_reps", c.max_reps},
                {"warmup", c.warmup},
                {"seed", c.seed},
                {"engine", to_string(c.engine)}};
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

json to_json(const ClientTimings& c) {
    json fc = json::array();
    for (const auto& v : c.first_content_ns)
        fc.push_back(opt(v));
    json claimed = json::array();
    for (const auto& v : c.claimed_output_tokens)
        claimed.push_back(opt(v));
    return json{{"e2e_ns", c.e2e_ns},
                {"e2e", to_json(c.e2e)},
                {"tpot_ns", c.tpot_ns},
                {"tpot", to_json(c.tpot)},
                {"first_content_ns", fc},
                {"first_content", to_json(c.first_content)},
                {"prompt_tokens", c.prompt_tokens},
                {"output_tokens", c.output_tokens},
                {"streamed_tokens", c.streamed_tokens},
                {"claimed_output_tokens", claimed},
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

json to_json(const BufferMemory& m) {
    return {{"buffer", m.buffer},
            {"model_bytes", m.model_bytes},
            {"context_bytes", m.context_bytes},
            {"compute_bytes", m.compute_bytes}};
}

json to_json(const TestResult& t) {
    json memory = json::array();
    for (const auto& m : t.memory)
        memory.push_back(to_json(m));
    json j{{"config", to_json(t.config)},
           {"status", to_string(t.status)},
           {"error", opt(t.error)},
           {"error_kind", t.error_kind ? json(to_string(*t.error_kind)) : json(nullptr)},
           {"backends", t.backends},
           {"memory", memory},
           {"notes", t.notes},
           {"reps_done", t.reps_done},
           {"stopped_by", t.stopped_by ? to_string(*t.stopped_by) : std::string()},
           {"prefill", t.prefill ? to_json(*t.prefill) : json(nullptr)},
           {"decode", t.decode ? to_json(*t.decode) : json(nullptr)},
           {"ttft_ns", t.ttft_ns},
           {"ttft", to_json(t.ttft)},
           {"roofline",
            {{"decode_bytes_per_token", opt(t.roofline.decode_bytes_per_token)},
             {"decode_bandwidth_gbps", opt(t.roofline.decode_bandwidth_gbps)},
             {"decode_bandwidth_fraction", opt(t.roofline.decode_bandwidth_fraction)},
             {"prefill_gflops", opt(t.roofline.prefill_gflops)}}},
           {"telemetry", t.telemetry ? to_json(*t.telemetry) : json(nullptr)},
           {"started_ns", t.started_ns},
           {"finished_ns", t.finished_ns},
           {"client", t.client ? to_json(*t.client) : json(nullptr)},
           {"server", t.server ? to_json(*t.server) : json(nullptr)}};
    if (t.fidelity)
        j["fidelity"] = to_json(*t.fidelity);
    if (t.imported)
        j["import"] = to_json(*t.imported);
    return j;
}

json to_json(const ResultDocument& d) {
    json tests = json::array();
    for (const auto& t : d.tests)
        tests.push_back(to_json(t));
    json warnings = json::array();
    for (const auto& w : d.warnings)
        warnings.push_back(to_json(w));
    json j{{"schema", kResultSchema},
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
           {"telemetry", d.telemetry ? to_json(*d.telemetry) : json(nullptr)},
           {"engines", d.engines}};
    if (d.fleet.is_object())
        j["fleet"] = d.fleet;
    if (d.sustained)
        j["sustained"] = to_json(*d.sustained);
    if (d.hybrid)
        j["hybrid"] = to_json(*d.hybrid);
    if (d.ops)
        j["ops"] = to_json(*d.ops);
    if (d.modes)
        j["modes"] = to_json(*d.modes);
    if (d.serve)
        j["serve"] = to_json(*d.serve);
    if (d.fidelity)
        j["fidelity"] = to_json(*d.fidelity);
    if (d.explain)
        j["explain"] = to_json(*d.explain);
    if (d.imported)
        j["import"] = to_json(*d.imported);
    for (const auto& [k, v] : d.extra.items())
        j[k] = v;
    // Members this build did not know or could not read, each where it was (when its parent is
    // still there).
    for (const auto& [pointer, v] : d.unknown) {
        const json::json_pointer p(pointer);
        if (p.empty())
            continue;
        const json::json_pointer parent = p.parent_pointer();
        // A member this build wrote itself stays, unless it wrote null in the place of one it
        // could not read (a telemetry section, see ObjectIn::lenient).
        if (!j.contains(parent) || !j[parent].is_object() || (j.contains(p) && !j[p].is_null()))
            continue;
        j[p] = v;
    }
    return j;
}

std::string error_kind_name(ErrorKind kind) {
    return to_string(kind);
}

void record_failure(TestResult& r, const std::exception& e) {
    const auto* se = dynamic_cast<const Error*>(&e);
    record_failure(r, e.what(), se ? se->kind() : ErrorKind::runtime);
}

void record_failure(TestResult& r, const std::string& error, std::optional<ErrorKind> kind) {
    r.status = Status::failed;
    r.error = error;
    r.stopped_by = StopReason::error;
    r.error_kind = kind;
}

void record_interrupted(TestResult& r, std::optional<std::string> error) {
    r.status = Status::interrupted;
    r.stopped_by = StopReason::interrupt;
    if (error)
        r.error = std::move(error);
}

void record_stopped_at_reps(TestResult& r) {
    r.stopped_by = StopReason::reps;
}

void record_stopped_at_target_ci(TestResult& r) {
    r.stopped_by = StopReason::target_ci;
}

void record_stopped_at_max_reps(TestResult& r) {
    r.stopped_by = StopReason::max_reps;
}

bool failed_on_bad_input(const TestResult& t) {
    return t.status == Status::failed &&
           (t.error_kind == ErrorKind::input || t.error_kind == ErrorKind::usage);
}

Outcome outcome_of(const std::vector<TestResult>& tests, bool interrupted) {
    Outcome o = interrupted ? Outcome::interrupted : Outcome::ok;
    for (const auto& t : tests) {
        if (failed_on_bad_input(t))
            return Outcome::bad_input;
        if (t.status == Status::interrupted)
            o = worse(o, Outcome::interrupted);
        else if (t.status != Status::ok)
            o = worse(o, Outcome::failed);
    }
    return o;
}

int exit_code_of(Outcome o) {
    switch (o) {
        case Outcome::ok:
            return 0;
        case Outcome::failed:
        case Outcome::interrupted:
            return 1;
        case Outcome::bad_input:
            break;
    }
    return 2;
}

int exit_code_for(const std::vector<TestResult>& tests, bool interrupted) {
    return exit_code_of(outcome_of(tests, interrupted));
}

void read(const JsonIn& in, Stalls& s) {
    ObjectIn{in}
        .check<std::string>("rule")
        .check<std::size_t>("count")("k", s.k)("n", s.n)("indices", s.indices)("time_ns", s.time)(
            "excess_ns", s.excess)("median_ns", s.median)("threshold_ns", s.threshold)
        .non_negative({"k", "time_ns", "excess_ns", "median_ns", "threshold_ns"});
}

void read(const JsonIn& in, RobustRate& r) {
    ObjectIn{in}("tokens_per_s", r.tokens_per_s)("ci95_lo", r.ci95_lo)("ci95_hi", r.ci95_hi)(
        "ci95_half_rel", r.ci95_half_rel)
        .check<std::string>("estimator")
        .check<std::string>("ci")
        .non_negative({"tokens_per_s", "ci95_lo", "ci95_hi", "ci95_half_rel"});
}

void read(const JsonIn& in, TestConfig& c) {
    ObjectIn{in}("model_path", c.model_path)("devices", c.devices)
        .check<std::string>("test")("n_prompt", c.n_prompt)("n_gen", c.n_gen)("n_depth", c.n_depth)(
            "n_threads", c.n_threads)("n_batch", c.n_batch)("n_ubatch", c.n_ubatch)(
            "n_gpu_layers", c.n_gpu_layers)("flash_attn", c.flash_attn)("type_k", c.type_k)(
            "type_v", c.type_v)("reps", c.reps)("target_ci", c.target_ci)("max_reps", c.max_reps)(
            "warmup", c.warmup)("seed", c.seed)("engine", c.engine)
        .non_negative({"n_prompt", "n_gen", "n_depth", "n_threads", "n_batch", "n_ubatch", "reps",
                       "target_ci", "max_reps"});
}

namespace {

// The members StageResult and DecodeResult share.
void read_stage(ObjectIn& o, StageResult& s) {
    o("n_tokens", s.n_tokens)("duration_ns", s.duration_ns)("duration", s.duration)(
        "tokens_per_s", s.tokens_per_s)("throughput", s.throughput)("robust", s.robust)("start_ns",
                                                                                        s.start_ns);
    // A mean's Student-t interval (Summary::ci95_lo) may reach below 0; nothing else may.
    o.non_negative({"n_tokens", "duration_ns", "duration", "tokens_per_s", "throughput"},
                   {"ci95_lo"});
}

}  // namespace

void read(const JsonIn& in, StageResult& s) {
    ObjectIn o(in);
    read_stage(o, s);
    if (o.has("stalls"))
        ObjectIn{o.at("stalls")}("repetitions", s.stalls);
}

void read(const JsonIn& in, DecodeResult& d) {
    ObjectIn o(in);
    read_stage(o, d);
    o("token_latency_ns", d.token_latency_ns)("token_latency_counts", d.token_latency_counts)(
        "itl", d.itl)("kv_depth_start", d.kv_depth_start);
    o.non_negative({"token_latency_ns", "token_latency_counts", "itl", "kv_depth_start"},
                   {"ci95_lo"});
    if (o.has("stalls"))
        ObjectIn{o.at("stalls")}("repetitions", d.stalls)("tokens", d.token_stalls);
}

void read(const JsonIn& in, ClientTimings& c) {
    ObjectIn{in}("e2e_ns", c.e2e_ns)("e2e", c.e2e)("tpot_ns", c.tpot_ns)("tpot", c.tpot)(
        "first_content_ns", c.first_content_ns)("first_content", c.first_content)(
        "prompt_tokens", c.prompt_tokens)("output_tokens", c.output_tokens)(
        "streamed_tokens", c.streamed_tokens)("claimed_output_tokens", c.claimed_output_tokens)(
        "chunks", c.chunks)
        .non_negative({"e2e_ns", "e2e", "tpot_ns", "tpot", "first_content_ns", "first_content",
                       "prompt_tokens", "output_tokens", "streamed_tokens", "claimed_output_tokens",
                       "chunks"},
                      {"ci95_lo"});
}

void read(const JsonIn& in, ServerSide& s) {
    ObjectIn o(in);
    o("reps", s.reps)("prefill_tokens_per_s", s.prefill_tokens_per_s)("decode_tokens_per_s",
                                                                      s.decode_tokens_per_s);
    // The client-minus-server differences may be negative (two clocks); the rates may not.
    o.non_negative({"prefill_tokens_per_s", "decode_tokens_per_s"}, {"ci95_lo"});
    if (o.has("client_minus_server"))
        ObjectIn{o.at("client_minus_server")}("ttft_minus_prompt_ns", s.ttft_minus_prompt_ns)(
            "ttft_minus_prompt", s.ttft_minus_prompt)("e2e_minus_total_ns", s.e2e_minus_total_ns)(
            "e2e_minus_total", s.e2e_minus_total);
}

void read(const JsonIn& in, Roofline& r) {
    ObjectIn{in}("decode_bytes_per_token", r.decode_bytes_per_token)("decode_bandwidth_gbps",
                                                                     r.decode_bandwidth_gbps)(
        "decode_bandwidth_fraction", r.decode_bandwidth_fraction)("prefill_gflops",
                                                                  r.prefill_gflops)
        .non_negative({"decode_bytes_per_token", "decode_bandwidth_gbps",
                       "decode_bandwidth_fraction", "prefill_gflops"});
}

void read(const JsonIn& in, BufferMemory& m) {
    ObjectIn{in}("buffer", m.buffer)("model_bytes", m.model_bytes)(
        "context_bytes", m.context_bytes)("compute_bytes", m.compute_bytes);
}

void read(const JsonIn& in, TestResult& t) {
    ObjectIn o(in);
    o("config", t.config)("status", t.status)("error", t.error)("error_kind", t.error_kind)(
        "backends", t.backends)("memory", t.memory)("notes", t.notes)("reps_done", t.reps_done)(
        "prefill", t.prefill)("decode", t.decode)("ttft_ns", t.ttft_ns)("ttft", t.ttft)(
        "roofline", t.roofline)("started_ns", t.started_ns)("finished_ns", t.finished_ns)(
        "client", t.client)("server", t.server)("fidelity", t.fidelity)("import", t.imported)
        .lenient("telemetry", t.telemetry)
        .non_negative({"reps_done", "ttft_ns", "ttft"}, {"ci95_lo"});
    // "" while the test runs (and in documents saved meanwhile).
    const JsonIn stopped = o.at("stopped_by");
    if (stopped.raw().is_string() && stopped.raw().get_ref<const std::string&>().empty())
        t.stopped_by.reset();
    else if (o.has("stopped_by"))
        read(stopped, t.stopped_by.emplace());
}

namespace {

// A models[] entry: ModelInfo's fields (model/inspect.hpp) or a server's model, each of its
// type where present; other members are the entry's own (the entry is kept whole).
void check_model(const JsonIn& in) {
    ObjectIn o(in);
    o.check<std::string>("path")
        .check<std::string>("arch")
        .check<std::optional<std::string>>("name")
        .check<int64_t>("gguf_version")
        .check<int64_t>("file_bytes")
        .check<int64_t>("n_params")
        .check<int64_t>("n_tensors")
        .check<std::optional<int64_t>>("file_type_id")
        .check<std::optional<std::string>>("file_type")
        .check<std::string>("dominant_type")
        .check<bool>("synthetic")
        .check<std::optional<std::string>>("synthetic_preset")
        .check<std::optional<uint64_t>>("synthetic_seed")
        .check<std::optional<std::string>>("generator")
        .check<std::optional<std::string>>("tokenizer")
        .check<std::optional<std::string>>("engine")
        .check<std::optional<std::string>>("server")
        .check<std::optional<std::string>>("url");
    for (const char* k :
         {"n_layers", "n_embd", "n_head", "n_head_kv", "n_ff", "n_ctx_train", "n_vocab"})
        o.check<std::optional<int64_t>>(k);
    if (o.has("tensor_types") && !o.at("tensor_types").raw().is_object())
        o.at("tensor_types").fail_type("an object");
    for (const auto& [key, value] : in.raw().items())
        o.at(key.c_str());  // the rest is the entry's own
}

// A point of the hybrid section refers to its tests by index: each must be in tests. (A point
// with a test index exists only where the document has hybrid.points[i].tests.)
void check_hybrid_tests(const JsonIn& doc, const ResultDocument& d) {
    if (!d.hybrid)
        return;
    for (std::size_t i = 0; i < d.hybrid->points.size(); ++i)
        for (const auto& [mode, index] : d.hybrid->points[i].tests) {
            if (index >= 0 && static_cast<std::size_t>(index) < d.tests.size())
                continue;
            const JsonIn hybrid = doc.member("hybrid", doc.raw().at("hybrid"));
            const JsonIn points = hybrid.member("points", hybrid.raw().at("points"));
            const JsonIn point = points.element(i);
            const JsonIn tests = point.member("tests", point.raw().at("tests"));
            tests.member(mode, tests.raw().at(mode))
                .fail("test " + std::to_string(index) + " is not in tests (" +
                      std::to_string(d.tests.size()) + " tests)");
        }
}

}  // namespace

void read(const JsonIn& given, ResultDocument& d) {
    d.unknown.clear();
    const JsonIn in(given.raw(), given.source(), &d.unknown);
    if (!in.raw().is_object())
        in.fail_type("a JSON object");
    check_version_field(in, "schema_version");
    {
        ObjectIn o(in);
        const JsonIn schema = o.at("schema");
        if (!o.has("schema"))
            throw input_error(in.source() +
                              " is not a stagebench result document (no \"schema\": \"" +
                              kResultSchema + "\")");
        if (!schema.raw().is_string())
            schema.fail_type("a string");
        if (schema.raw() != kResultSchema)
            throw input_error(in.source() + " is not a stagebench result document (\"schema\": " +
                              schema.raw().dump() + ", not \"" + kResultSchema + "\")");
        o.at("schema_version");
        o("command", d.command)("argv", d.argv);
        if (o.has("tool"))
            ObjectIn{o.at("tool")}.check<std::string>("name")("version", d.tool_version)(
                "build_type", d.build_type);
        read_object_or_null(o.at("llama"), d.llama);
        read_object_or_null(o.at("system"), d.system);
        if (o.has("fleet"))
            read_object_or_null(o.at("fleet"), d.fleet);
        o("models", d.models);
        if (o.has("models"))
            for (std::size_t i = 0; i < d.models.size(); ++i)
                check_model(o.at("models").element(i));
        read_object_or_null(o.at("membw"), d.membw);
        o("started_at", d.started_at)("finished_at", d.finished_at)("tests", d.tests)(
            "warnings", d.warnings)("sustained", d.sustained)("hybrid", d.hybrid)("ops", d.ops)(
            "modes", d.modes)("serve", d.serve)("fidelity", d.fidelity)("explain", d.explain)(
            "import", d.imported)
            .lenient("telemetry", d.telemetry);
        if (o.has("engines")) {
            const JsonIn engines = o.at("engines");
            if (!engines.raw().is_object())
                engines.fail_type("an object");
            d.engines = engines.raw();
        }
    }
    check_hybrid_tests(in, d);
    // Top-level members this build does not know are the document's extra sections.
    d.extra = json::object();
    for (auto it = d.unknown.begin(); it != d.unknown.end();) {
        const json::json_pointer p(it->first);
        if (p.parent_pointer().empty()) {
            d.extra[p.back()] = std::move(it->second);
            it = d.unknown.erase(it);
        } else {
            ++it;
        }
    }
}

ModelView model_view(const json& entry) {
    ModelView m;
    auto str = [&](const char* key) -> std::optional<std::string> {
        const json& v = json_field(entry, key);
        return v.is_string() ? std::optional<std::string>(v.get<std::string>()) : std::nullopt;
    };
    auto count = [&](const char* key) -> std::optional<uint64_t> {
        const json& v = json_field(entry, key);
        return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0)
                   ? std::optional<uint64_t>(v.get<uint64_t>())
                   : std::nullopt;
    };
    m.path = str("path").value_or("");
    m.name = str("name");
    m.arch = str("arch");
    m.file_type = str("file_type");
    m.dominant_type = str("dominant_type");
    m.file_bytes = count("file_bytes");
    m.n_params = count("n_params");
    m.synthetic = json_field(entry, "synthetic") == true;
    m.synthetic_preset = str("synthetic_preset");
    m.engine = str("engine");
    m.server = str("server");
    m.url = str("url");
    return m;
}

MachineView machine_view(const ResultDocument& doc) {
    auto str = [](const json& j, const char* key) -> std::optional<std::string> {
        const json& v = json_field(j, key);
        if (!v.is_string() || v.get_ref<const std::string&>().empty())
            return std::nullopt;
        return v.get<std::string>();
    };
    MachineView m;
    m.hostname = str(doc.system, "hostname");
    m.os = str(doc.system, "os");
    m.cpu_model = str(doc.system, "cpu_model");
    m.llama_tag = str(doc.llama, "tag");
    m.fleet = str(doc.fleet, "fleet");
    m.device = str(doc.fleet, "device");
    return m;
}

std::optional<ModelView> model_of(const ResultDocument& doc, const std::string& path) {
    for (const auto& m : doc.models) {
        ModelView v = model_view(m);
        if (v.path == path)
            return v;
    }
    return std::nullopt;
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
