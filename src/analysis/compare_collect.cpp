#include <algorithm>

#include "analysis/compare_steps.hpp"
#include "core/error.hpp"
#include "core/json_util.hpp"
#include "core/result.hpp"
#include "telemetry/battery_drain.hpp"

namespace sb {

const std::vector<CompareKeyField> kCompareKeyFields = {
    {"model", "m"},          {"n_prompt", "p"},  {"n_gen", "n"},     {"n_depth", "d"},
    {"n_batch", "b"},        {"n_ubatch", "ub"}, {"type_k", "ctk"},  {"type_v", "ctv"},
    {"flash_attn", "fa"},    {"engine", ""},     {"devices", "dev"}, {"n_threads", "t"},
    {"n_gpu_layers", "ngl"}, {"model_path", ""}};

namespace {

// The configuration fields of kCompareKeyFields (but "model") as the document spells them.
std::map<std::string, CompareValue> config_fields(const TestConfig& c) {
    auto num = [](int v) { return CompareValue(int64_t{v}); };
    return {{"model_path", c.model_path},
            {"n_prompt", num(c.n_prompt)},
            {"n_gen", num(c.n_gen)},
            {"n_depth", num(c.n_depth)},
            {"n_batch", num(c.n_batch)},
            {"n_ubatch", num(c.n_ubatch)},
            {"type_k", to_string(c.type_k)},
            {"type_v", to_string(c.type_v)},
            {"flash_attn", to_string(c.flash_attn)},
            {"engine", to_string(c.engine)},
            {"devices", c.devices.str()},
            {"n_threads", num(c.n_threads)},
            {"n_gpu_layers", num(c.n_gpu_layers)}};
}

// The whole-system readings of a stage's windows (the "total" of each).
std::vector<CompareWindow> windows(const std::vector<StageWindow>& ws) {
    std::vector<CompareWindow> v;
    for (const auto& w : ws)
        v.push_back({static_cast<double>(w.duration_ns), w.total.energy_j, w.total.j_per_token,
                     w.total.net_j_per_token, w.total.metric});
    return v;
}

// The battery's drain per repetition (repetition k: its prefill and decode windows), each from
// the source the test's own drain used, so that the samples are alike.
void add_drains(const TestTelemetry& t, CompareTest& c) {
    if (!t.battery)
        return;
    c.drain_from = t.battery->from;
    for (std::size_t k = 0; k < std::max(t.prefill.size(), t.decode.size()); ++k) {
        std::vector<const StageWindow*> ws;
        if (k < t.prefill.size())
            ws.push_back(&t.prefill[k]);
        if (k < t.decode.size())
            ws.push_back(&t.decode[k]);
        if (ws.size() == 2 && ws[1]->begin_ns < ws[0]->begin_ns)
            std::swap(ws[0], ws[1]);
        const auto d = battery_drain(ws);
        if (!d || d->from != t.battery->from || !d->drain_pct_per_h)
            continue;
        c.drain_pct.push_back(*d->drain_pct);
        c.drain_pct_per_h.push_back(*d->drain_pct_per_h);
    }
}

CompareRobust robust_of(const StageResult& s, const Stalls& stalls, const char* unit) {
    return {s.robust.tokens_per_s, s.robust.ci95_lo, s.robust.ci95_hi,
            stalls.count(),        stalls.n,         unit};
}

CompareTest test_of(const TestResult& t) {
    CompareTest c;
    c.name = t.config.test_name();
    c.config = config_fields(t.config);
    c.status = to_string(t.status);
    c.error = t.error;
    if (t.prefill) {
        c.prefill_tps = t.prefill->tokens_per_s;
        c.prefill_robust = robust_of(*t.prefill, t.prefill->stalls, "reps");
    }
    if (t.decode) {
        c.decode_tps = t.decode->tokens_per_s;
        c.decode_robust = robust_of(*t.decode, t.decode->token_stalls, "tokens");
    }
    c.ttft_ns.assign(t.ttft_ns.begin(), t.ttft_ns.end());
    if (t.telemetry) {
        c.prefill_windows = windows(t.telemetry->prefill);
        c.decode_windows = windows(t.telemetry->decode);
        add_drains(*t.telemetry, c);
    }
    return c;
}

// A sustained document compares as one test: the rounds of its unloaded phase are the samples,
// so a side's CV is its variation across rounds (the loaded phase's background differs from
// device to device and is left out). Each round is also a test of the document, in the order of
// the phases and rounds; their per-stage telemetry is pooled the same way. Throws
// sb::Error(input) when no round completed.
CompareTest pooled_rounds(const ResultDocument& d, const std::string& who,
                          std::vector<std::string>& notes) {
    // The phase without background load ("rounds", or "baseline" beside a "loaded" one), and
    // the index of its first round's test.
    const SustainedPhase* phase = nullptr;
    std::size_t first_test = 0;
    if (d.sustained)
        for (const auto& ph : d.sustained->phases) {
            if (phase)
                break;
            if (ph.background.empty())
                phase = &ph;
            else
                first_test += ph.rounds.size();
        }
    if (!phase || d.tests.empty())
        throw input_error(who + ": the `sustained` document has no baseline rounds to compare");
    CompareTest out;
    out.name = d.tests[0].config.test_name() + " rounds";
    out.config = config_fields(d.tests[0].config);
    out.status = "ok";
    // Round k's test is tests[first_test + k] when the document holds a test per round.
    const bool tests_per_round = d.tests.size() >= first_test + phase->rounds.size();
    std::size_t k = 0;
    for (const auto& r : phase->rounds) {
        const std::size_t index = first_test + k++;
        if (r.status != Status::ok)
            continue;
        if (r.prefill_tps)
            out.prefill_tps.push_back(*r.prefill_tps);
        if (r.decode_tps)
            out.decode_tps.push_back(*r.decode_tps);
        if (r.ttft_ms)
            out.ttft_ns.push_back(*r.ttft_ms * 1e6);
        if (r.e2e_s)
            out.e2e_s.push_back(*r.e2e_s);
        if (r.combined_tps)
            out.combined_tps.push_back(*r.combined_tps);
        // The drain of each round's request, from the first round's source.
        if (r.battery && r.battery->drain_pct_per_h &&
            out.drain_from.value_or(r.battery->from) == r.battery->from) {
            out.drain_from = r.battery->from;
            out.drain_pct.push_back(*r.battery->drain_pct);
            out.drain_pct_per_h.push_back(*r.battery->drain_pct_per_h);
        }
        if (tests_per_round && d.tests[index].telemetry) {
            for (auto& w : windows(d.tests[index].telemetry->prefill))
                out.prefill_windows.push_back(w);
            for (auto& w : windows(d.tests[index].telemetry->decode))
                out.decode_windows.push_back(w);
        }
    }
    if (out.decode_tps.empty() && out.prefill_tps.empty())
        throw input_error(who + ": the `sustained` document has no completed baseline round");
    notes.push_back(who + " is a sustained run: its " + std::to_string(out.decode_tps.size()) +
                    " rounds without background load are the samples, so its CV is the "
                    "variation across rounds");
    return out;
}

// A fidelity document compares variant by variant: each that ran is a test of its workload on
// its device set (its speed pass's repetitions the samples) carrying its distance from the
// document's reference.
void fidelity_tests(const FidelitySection& f, std::vector<CompareTest>& out) {
    for (const auto& v : f.variants) {
        if (v.error)
            continue;
        TestConfig c;
        c.model_path = v.model;
        c.devices = DeviceSet(v.devices);
        c.n_prompt = f.n_prompt;
        c.n_gen = f.n_gen;
        c.n_threads = 0;
        c.type_k = v.type_k;
        c.type_v = v.type_v;
        CompareTest t;
        t.name = "fidelity " + c.test_name();
        t.config = config_fields(c);
        t.status = "ok";
        t.prefill_tps = v.prefill_tps_reps;
        t.decode_tps = v.decode_tps_reps;
        // A document of the first slice kept only the medians.
        if (t.prefill_tps.empty() && v.prefill_tps)
            t.prefill_tps = {*v.prefill_tps};
        if (t.decode_tps.empty() && v.decode_tps)
            t.decode_tps = {*v.decode_tps};
        t.fidelity_prefill = v.prefill;
        t.fidelity_decode = v.decode;
        t.fidelity_reference = f.reference;
        out.push_back(std::move(t));
    }
}

CompareDoc doc_of(const CompareInput& in, std::vector<std::string>& notes) {
    const std::string who = in.label + " (" + in.source + ")";
    const ResultDocument& d = in.doc;
    CompareDoc c;
    if (d.command == "sustained") {
        c.tests.push_back(pooled_rounds(d, who, notes));
    } else if (d.fidelity && d.tests.empty()) {
        fidelity_tests(*d.fidelity, c.tests);
        if (c.tests.empty())
            throw input_error(who + ": the `fidelity` document has no variant that ran (" +
                              std::to_string(d.fidelity->variants.size()) +
                              " failed); there is nothing to compare");
    } else {
        for (const auto& t : d.tests)
            c.tests.push_back(test_of(t));
    }
    if (c.tests.empty())
        throw input_error(who + ": the `" + (d.command.empty() ? "?" : d.command) +
                          "` document has no tests to compare; compare reads run, demo, "
                          "sustained, fidelity and serve documents (and ops documents against "
                          "each other, the baseline being one)");
    c.info = compare_input_info(in);
    if (d.imported)
        notes.push_back(
            who + " is imported from " + d.imported->tool + "'s output: measured elsewhere, by " +
            d.imported->tool +
            "'s method (its tg test decodes from the depth it names, not after the prompt); "
            "where the file held no samples, the mean it printed is the one value (n 1)");
    // The engines are a free-form section of the document (ResultDocument::engines): the http
    // engine's server is read by name here, and only here.
    const auto& server = json_field(json_field(d.engines, "http"), "server");
    if (server.is_string())
        c.http_server = server.get<std::string>();
    return c;
}

}  // namespace

CompareInputInfo compare_input_info(const CompareInput& in) {
    const ResultDocument& d = in.doc;
    const MachineView m = machine_view(d);
    auto nonempty = [](const std::string& s) {
        return s.empty() ? std::nullopt : std::optional<std::string>(s);
    };
    // An imported document says what it came from ("import llama-bench"): another tool
    // measured it, elsewhere.
    std::optional<std::string> command = nonempty(d.command);
    if (d.imported && command)
        *command += " " + d.imported->tool;
    return {in.label, in.source, command, m.hostname, m.cpu_model, nonempty(d.started_at)};
}

std::vector<CompareDoc> collect_compare_docs(const std::vector<CompareInput>& inputs,
                                             std::vector<std::string>& notes) {
    std::vector<CompareDoc> docs;
    for (const auto& in : inputs)
        docs.push_back(doc_of(in, notes));
    return docs;
}

}  // namespace sb
