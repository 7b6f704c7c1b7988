#include "report/stage_fields.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <set>

namespace sb {
namespace {

using Row = StageRow;

FieldValue field_real(const std::optional<double>& v) {
    return v ? FieldValue(*v) : FieldValue();
}

FieldValue integer(int64_t v) {
    return v;
}

std::string field_num(const std::optional<double>& v, const char* f = "{:.2f}") {
    return v ? fmt::format(fmt::runtime(f), *v) : std::string("-");
}

// The model as the run table names it: its general.name (or file name), marked synthetic.
std::string model_name(const ResultDocument& doc, const std::string& path) {
    if (const auto m = model_of(doc, path)) {
        // A GGUF without general.name (null in the document) is shown by its file name.
        std::string n = m->name.value_or(std::filesystem::path(path).filename().string());
        if (m->synthetic && n.find("synthetic") == std::string::npos)
            n += " (synthetic)";
        return n;
    }
    return path;
}

std::string human_bytes(double b) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    while (b >= 1024 && i < 4) {
        b /= 1024;
        ++i;
    }
    return fmt::format("{:.2f} {}", b, units[i]);
}

// "pp512", "tg128 @ d512": the stage's own workload; the test's name for a row of no stage.
std::string stage_test(const Row& r) {
    const TestConfig& c = r.test->config;
    const bool decode = std::string(r.stage) == "decode";
    if (!r.result)
        return c.test_name();
    std::string s = decode ? "tg" + std::to_string(c.n_gen) : "pp" + std::to_string(c.n_prompt);
    int depth = decode ? c.n_depth + c.n_prompt : c.n_depth;
    // An imported llama-bench tg test decoded from the depth it names, not after the prompt.
    if (decode && r.test->imported && r.test->decode)
        depth = r.test->decode->kv_depth_start;
    if (depth > 0)
        s += " @ d" + std::to_string(depth);
    return s;
}

// The stage's stall count: slow repetitions of prefill, stalled tokens of decode.
std::string field_stalls_text(const Row& r) {
    const bool decode = r.token_stalls != nullptr;
    const Stalls& st = decode ? *r.token_stalls : r.result->stalls;
    return fmt::format("{}/{} {}", st.count(), st.n, decode ? "tokens" : "reps");
}

// A field of the stage's result (absent for a row of no stage).
template <class F>
std::function<FieldValue(const Row&)> of_stage(F f) {
    return [f](const Row& r) { return r.result ? FieldValue(f(*r.result)) : FieldValue(); };
}

template <class F>
std::function<FieldValue(const Row&)> of_itl(F f) {
    return [f](const Row& r) { return r.itl ? field_real(f(*r.itl)) : FieldValue(); };
}

template <class F>
std::function<FieldValue(const Row&)> of_fidelity(F f) {
    return [f](const Row& r) { return r.fidelity ? FieldValue(f(*r.fidelity)) : FieldValue(); };
}

MarkdownColumn<Row> md(std::string header, bool right, std::function<std::string(const Row&)> f) {
    return {std::move(header), right, std::move(f)};
}

const TestConfig& cfg(const Row& r) {
    return r.test->config;
}

// A KV cache type as the document spells it, its ggml name ("f16", "q8_0") (core/enums.hpp).
template <SpelledEnum E>
std::string kv_name(E type) {
    return to_string(type);
}

FieldTable<Row> make_table() {
    FieldTable<Row> t;
    auto add = [&t](Field<Row> f) { t.push_back(std::move(f)); };

    // Markdown only: what the document says of the model.
    add({"model", [](const Row& r) { return FieldValue(model_name(*r.doc, cfg(r).model_path)); },
         "{}", CsvQuote::as_needed, false,
         md("model", false, [](const Row& r) { return model_name(*r.doc, cfg(r).model_path); })});
    add({"size", [](const Row&) { return FieldValue(); }, "{}", CsvQuote::as_needed, false,
         md("size", true, [](const Row& r) {
             const auto m = model_of(*r.doc, cfg(r).model_path);
             return m && m->file_bytes ? human_bytes(static_cast<double>(*m->file_bytes))
                                       : std::string("-");
         })});
    add({"params", [](const Row&) { return FieldValue(); }, "{}", CsvQuote::as_needed, false,
         md("params", true, [](const Row& r) {
             const auto m = model_of(*r.doc, cfg(r).model_path);
             if (!m || !m->n_params)
                 return std::string("-");
             const double p = static_cast<double>(*m->n_params);
             return p >= 1e9 ? fmt::format("{:.2f} B", p / 1e9) : fmt::format("{:.2f} M", p / 1e6);
         })});

    add({"model_path", [](const Row& r) { return FieldValue(cfg(r).model_path); }, "{}",
         CsvQuote::always});
    add({"devices", [](const Row& r) { return FieldValue(cfg(r).devices.str()); }, "{}",
         CsvQuote::always, true,
         md("devices", false, [](const Row& r) { return cfg(r).devices.str(); })});
    add({"n_threads", [](const Row& r) { return integer(cfg(r).n_threads); }, "{}",
         CsvQuote::as_needed, true, md("threads", true, [](const Row& r) {
             // 0 only for a server stagebench did not start: its threads are its own; or
             // for an imported test whose file did not say.
             return cfg(r).n_threads > 0 ? std::to_string(cfg(r).n_threads)
                    : r.test->imported   ? std::string("-")
                                         : std::string("server's");
         })});
    // A Markdown column only where the run's tests differ in it (markdown_stage_fields). As
    // asked: llama.cpp offloads no layer to a device set without a GPU-like device.
    add({"n_gpu_layers", [](const Row& r) { return integer(cfg(r).n_gpu_layers); }, "{}",
         CsvQuote::as_needed, true,
         md("ngl", true, [](const Row& r) { return std::to_string(cfg(r).n_gpu_layers); })});
    add({"n_batch", [](const Row& r) { return integer(cfg(r).n_batch); }});
    add({"n_ubatch", [](const Row& r) { return integer(cfg(r).n_ubatch); }});
    add({"n_depth", [](const Row& r) { return integer(cfg(r).n_depth); }});
    add({"flash_attn", [](const Row& r) { return FieldValue(to_string(cfg(r).flash_attn)); }});
    add({"type_k", [](const Row& r) { return FieldValue(kv_name(cfg(r).type_k)); }});
    add({"type_v", [](const Row& r) { return FieldValue(kv_name(cfg(r).type_v)); }});
    add({"test", [](const Row& r) { return FieldValue(cfg(r).test_name()); }, "{}",
         CsvQuote::always});
    // Markdown only: the stage's own workload ("pp512", "tg128 @ d512").
    add({"stage_test", [](const Row& r) { return FieldValue(stage_test(r)); }, "{}",
         CsvQuote::as_needed, false, md("test", true, stage_test)});
    add({"stage", [](const Row& r) { return FieldValue(std::string(r.stage)); }});
    add({"n_tokens", [](const Row& r) { return integer(r.result ? r.result->n_tokens : 0); }});
    add({"reps", [](const Row& r) { return integer(r.test->reps_done); }});
    add({"status", [](const Row& r) { return FieldValue(to_string(r.test->status)); }});
    add({"tokens_per_s_mean",
         of_stage([](const StageResult& s) { return field_real(s.throughput.mean); }), "{}",
         CsvQuote::as_needed, true,
         md("t/s", true, [](const Row& r) { return field_num(r.result->throughput.mean); })});
    add({"tokens_per_s_stddev",
         of_stage([](const StageResult& s) { return field_real(s.throughput.stddev); }), "{}",
         CsvQuote::as_needed, true,
         md("± sd", true, [](const Row& r) { return field_num(r.result->throughput.stddev); })});
    add({"tokens_per_s_cv",
         of_stage([](const StageResult& s) { return field_real(s.throughput.cv); }), "{}",
         CsvQuote::as_needed, true, md("CV %", true, [](const Row& r) {
             const auto& cv = r.result->throughput.cv;
             return cv ? fmt::format("{:.2f}", *cv * 100) : std::string("-");
         })});
    add({"tokens_per_s_ci95_lo",
         of_stage([](const StageResult& s) { return field_real(s.throughput.ci95_lo); })});
    add({"tokens_per_s_ci95_hi",
         of_stage([](const StageResult& s) { return field_real(s.throughput.ci95_hi); })});
    // Markdown only: the stall-robust rate with its CI half-width, and the stall count.
    add({"robust", [](const Row&) { return FieldValue(); }, "{}", CsvQuote::as_needed, false,
         md("robust t/s", true, [](const Row& r) {
             const RobustRate& rr = r.result->robust;
             std::string s = field_num(rr.tokens_per_s);
             if (rr.ci95_half_rel)
                 s += fmt::format(" ± {:.1f} %", *rr.ci95_half_rel * 100);
             return s;
         })});
    add({"stalls", [](const Row&) { return FieldValue(); }, "{}", CsvQuote::as_needed, false,
         md("stalls", true, field_stalls_text)});
    add({"duration_ns_median",
         of_stage([](const StageResult& s) { return field_real(s.duration.median); }), "{}",
         CsvQuote::as_needed, true, md("median ms", true, [](const Row& r) {
             const auto& m = r.result->duration.median;
             return m ? fmt::format("{:.2f}", *m * 1e-6) : std::string("-");
         })});
    auto itl_ms = [](const std::optional<double>& v) {
        return v ? fmt::format("{:.3f}", *v * 1e-6) : std::string("-");
    };
    add({"itl_ns_p50", of_itl([](const Summary& s) { return s.median; }), "{}", CsvQuote::as_needed,
         true, md("ITL p50 ms", true, [itl_ms](const Row& r) {
             return itl_ms(r.itl ? r.itl->median : std::nullopt);
         })});
    add({"itl_ns_p90", of_itl([](const Summary& s) { return s.p90; })});
    add({"itl_ns_p99", of_itl([](const Summary& s) { return s.p99; }), "{}", CsvQuote::as_needed,
         true, md("ITL p99 ms", true, [itl_ms](const Row& r) {
             return itl_ms(r.itl ? r.itl->p99 : std::nullopt);
         })});
    add({"robust_tokens_per_s",
         of_stage([](const StageResult& s) { return field_real(s.robust.tokens_per_s); })});
    add({"robust_ci95_lo",
         of_stage([](const StageResult& s) { return field_real(s.robust.ci95_lo); })});
    add({"robust_ci95_hi",
         of_stage([](const StageResult& s) { return field_real(s.robust.ci95_hi); })});
    add({"stalled_reps", of_stage([](const StageResult& s) {
             return FieldValue(static_cast<int64_t>(s.stalls.count()));
         })});
    add({"stalled_reps_excess_ns",
         of_stage([](const StageResult& s) { return FieldValue(s.stalls.excess); })});
    add({"stalled_tokens", [](const Row& r) {
             return r.token_stalls ? integer(static_cast<int64_t>(r.token_stalls->count()))
                                   : FieldValue();
         }});
    add({"stalled_tokens_excess_ns", [](const Row& r) {
             return r.token_stalls ? FieldValue(r.token_stalls->excess) : FieldValue();
         }});
    add({"error", [](const Row& r) { return FieldValue(r.test->error.value_or("")); }, "{}",
         CsvQuote::always});
    // --fidelity: the stage's distance from the reference (empty without).
    add({"kl_mean", of_fidelity([](const StageFidelity& f) { return f.kl_mean; })});
    add({"kl_p99", of_fidelity([](const StageFidelity& f) { return f.kl_p99; })});
    add({"kl_max", of_fidelity([](const StageFidelity& f) { return f.kl_max; })});
    add({"top1_agreement", of_fidelity([](const StageFidelity& f) { return f.top1_agreement; })});
    add({"topk_overlap", of_fidelity([](const StageFidelity& f) { return f.topk_overlap; })});
    add({"max_abs_logit_error", of_fidelity([](const StageFidelity& f) { return f.max_abs; })});
    return t;
}

}  // namespace

std::vector<StageRow> stage_rows(const ResultDocument& doc, const TestResult& t) {
    std::vector<StageRow> rows;
    auto fidelity = [&](const std::optional<StageFidelity> TestFidelity::*stage) {
        return t.fidelity && (*t.fidelity.*stage) ? &*(*t.fidelity.*stage) : nullptr;
    };
    if (t.prefill)
        rows.push_back(
            {&doc, &t, "prefill", &*t.prefill, nullptr, nullptr, fidelity(&TestFidelity::prefill)});
    if (t.decode)
        rows.push_back({&doc, &t, "decode", &*t.decode, &t.decode->itl, &t.decode->token_stalls,
                        fidelity(&TestFidelity::decode)});
    if (rows.empty())
        rows.push_back({&doc, &t, "none"});
    return rows;
}

const FieldTable<StageRow>& stage_fields() {
    static const FieldTable<StageRow> table = make_table();
    return table;
}

FieldTable<StageRow> markdown_stage_fields(const std::vector<TestConfig>& tests) {
    FieldTable<StageRow> t = stage_fields();
    std::set<int> ngl;
    for (const auto& c : tests)
        ngl.insert(c.n_gpu_layers);
    if (ngl.size() < 2)
        for (auto& f : t)
            if (f.name == "n_gpu_layers")
                f.markdown.reset();
    return t;
}

nlohmann::json stage_fields_json(const ResultDocument& doc) {
    if (doc.tests.empty())
        return nullptr;
    std::vector<StageRow> rows;
    for (const auto& t : doc.tests)
        for (const auto& r : stage_rows(doc, t))
            rows.push_back(r);
    return fields_json(stage_fields(), rows);
}

}  // namespace sb
