#include "scenario/hybrid.hpp"

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <set>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/json_util.hpp"
#include "core/last_word.hpp"
#include "core/stats_json.hpp"
#include "core/sysinfo.hpp"
#include "engine/backends.hpp"
#include "engine/llama_engine.hpp"
#include "scenario/run_context.hpp"
#include "scenario/stage_sweep.hpp"
#include "telemetry/telemetry_json.hpp"

namespace sb {
namespace {

using nlohmann::json;

json summary_of(const std::vector<int64_t>& v) {
    return to_json(summarize_ns(v));
}

// The configuration every mode shares; the caller sets devices and lengths.
TestConfig base_config(const HybridOptions& o) {
    TestConfig c = o.base;
    c.n_threads = threads_or_default(c.n_threads);
    c.max_reps = c.reps;
    c.target_ci.reset();
    return c;
}

// One context for every point: long enough for the longest prompt and generation.
LoadSpec spec_for(const HybridOptions& o, const std::string& devices, int max_p, int max_n) {
    TestConfig c = base_config(o);
    c.devices = devices;
    c.n_prompt = max_p;
    c.n_gen = max_n;
    return load_spec_for(c);
}

void validate(const HybridOptions& o) {
    if (o.base.model_path.empty())
        throw usage_error("hybrid needs a model (-m FILE)");
    if (o.decode_device.empty())
        throw usage_error("hybrid needs --decode-device (e.g. RPC0)");
    if (o.prefill_device.empty())
        throw usage_error("hybrid needs --prefill-device (e.g. CPU)");
    if (o.prefill_device == o.decode_device)
        throw usage_error("--prefill-device and --decode-device are both '" + o.prefill_device +
                          "': a hybrid needs two different device sets");
    if (o.n_prompt.empty() || o.n_gen.empty())
        throw usage_error("hybrid needs at least one -p and one -n value");
    for (int p : o.n_prompt)
        if (p <= 0)
            throw usage_error("-p must be positive for a hybrid run (prefill is its first stage)");
    for (int n : o.n_gen)
        if (n <= 0)
            throw usage_error("-n must be positive for a hybrid run (decode is its second stage)");
    if (o.base.reps < 1)
        throw usage_error("-r must be at least 1");
    if (o.format != OutputFormat::md && o.format != OutputFormat::json)
        throw usage_error("-o must be md or json for hybrid, not '" + to_string(o.format) + "'");
}

}  // namespace

std::vector<HybridMode> make_hybrid_modes(Engine& a, Engine& b, const HybridOptions& o, int p,
                                          int n, const std::function<SweepHooks(size_t)>& hooks_for,
                                          const Clock& clock) {
    struct Plan {
        const char* name;
        Engine* pre;
        Engine* dec;
        std::string devices;
    };
    std::vector<Plan> plans{{kHybridMode, &a, &b, o.prefill_device + ">" + o.decode_device}};
    if (o.baselines) {
        plans.push_back({kPrefillAloneMode, &a, &a, o.prefill_device});
        plans.push_back({kDecodeAloneMode, &b, &b, o.decode_device});
    }
    std::vector<HybridMode> modes;
    for (size_t i = 0; i < plans.size(); ++i) {
        TestConfig c = base_config(o);
        c.devices = plans[i].devices;
        c.n_prompt = p;
        c.n_gen = n;
        c.n_depth = 0;  // every mode starts its prompt at position 0
        RepetitionOptions ro;
        ro.decode_engine = plans[i].dec == plans[i].pre ? nullptr : plans[i].dec;
        ro.load = false;  // both engines hold one context for every point
        ro.roofline = false;
        ro.clock = clock;
        ro.interrupted = [] { return false; };  // run_interleaved polls for every mode at once
        modes.push_back({plans[i].name, std::make_unique<RepetitionRunner>(
                                            *plans[i].pre, c, hooks_for(i), std::move(ro))});
    }
    return modes;
}

bool run_interleaved(std::vector<HybridMode>& modes, const std::function<bool()>& interrupted,
                     const std::function<void(const std::string&)>& progress) {
    if (modes.empty())
        return false;
    const TestConfig& c = modes.front().runner->result().config;
    const std::string name = c.test_name();
    auto say = [&](const std::string& s) {
        if (progress)
            progress(s);
    };
    // A failure of one mode is a failure of the point: every mode gets its error.
    auto failed = [&](const HybridMode& m) {
        const TestResult& r = m.runner->result();
        if (r.status != Status::failed)
            return false;
        for (auto& other : modes)
            if (&other != &m && other.runner->result().status != Status::failed)
                other.runner->fail(r.error.value_or(""), m.runner->error_kind());
        return true;
    };
    if (c.warmup)
        say(name + ": warmup");
    for (auto& m : modes) {
        m.runner->prepare();
        if (failed(m))
            return false;
    }
    for (int rep = 0; modes.front().runner->has_repeats_remaining(); ++rep) {
        if (interrupted && interrupted()) {
            for (auto& m : modes)
                m.runner->interrupt();
            return true;
        }
        say(name + ": repetition " + std::to_string(rep + 1) + "/" + std::to_string(c.max_reps));
        for (size_t k = 0; k < modes.size(); ++k) {
            HybridMode& m = modes[(k + static_cast<size_t>(rep)) % modes.size()];
            m.runner->do_one_repetition();
            if (failed(m))
                return false;
        }
    }
    return false;
}

json hybrid_point_json(int p, int n, const std::vector<HybridMode>& modes) {
    json pt = {{"n_prompt", p}, {"n_gen", n}};
    TransferSamples ts;
    std::map<std::string, std::vector<int64_t>> e2e_ns;
    for (const auto& m : modes) {
        if (std::string(m.name) == kHybridMode)
            ts = m.runner->transfer();
        if (!m.runner->e2e_ns().empty())
            e2e_ns[m.name] = m.runner->e2e_ns();
    }
    pt["transfer"] = {{"start_ns", ts.start_ns},
                      {"duration_ns", ts.transfer_ns},
                      {"save_ns", ts.save_ns},
                      {"restore_ns", ts.restore_ns},
                      {"bytes", ts.bytes},
                      {"duration", summary_of(ts.transfer_ns)},
                      {"save", summary_of(ts.save_ns)},
                      {"restore", summary_of(ts.restore_ns)}};
    if (!ts.bytes.empty() && !ts.transfer_ns.empty()) {
        const auto d = summarize_ns(ts.transfer_ns);
        pt["transfer"]["bytes_per_token"] = static_cast<double>(ts.bytes.back()) / p;
        if (d.median && *d.median > 0)
            pt["transfer"]["gbps"] = ts.bytes.back() / *d.median;
    }
    json e2e = json::object();
    for (const auto& [mode, v] : e2e_ns)
        e2e[mode] = {{"samples_ns", v}, {"summary", summary_of(v)}};
    pt["e2e"] = e2e;
    // The comparison is typed (analysis/hybrid_compare.hpp); this section is still JSON here.
    HybridPoint compared;
    compared.comparison =
        compare_modes(e2e_ns[kHybridMode], e2e_ns[kPrefillAloneMode], e2e_ns[kDecodeAloneMode]);
    pt["comparison"] = to_json(compared)["comparison"];
    return pt;
}

int run_hybrid(const HybridOptions& o, ResultDocument& doc, std::ostream& err) {
    validate(o);
    // The run context: the model described, RPC servers added, both device sets checked,
    // telemetry, warnings and the document saved as it grows.
    RunSetup setup;
    setup.models = {o.base.model_path};
    setup.rpc_servers = o.rpc_servers;
    setup.device_sets = {o.prefill_device, o.decode_device};
    setup.telemetry = o.telemetry;
    setup.out_path = o.out_path;
    setup.progress = o.progress;
    RunContext run(doc, setup, err, nullptr);
    run.open(threads_or_default(o.base.n_threads));
    Sampler* tel = run.sampler();
    const bool sampling = tel != nullptr;
    std::atomic<const char*> activity{""};
    auto progress = [&run](const std::string& s) { run.progress().note(s); };

    const int max_p = *std::max_element(o.n_prompt.begin(), o.n_prompt.end());
    const int max_n = *std::max_element(o.n_gen.begin(), o.n_gen.end());

    // Both engines hold the model at once; that is the memory cost of the hybrid. llama.cpp
    // gives a context every accelerator loaded when it is created, so an engine that names
    // none (CPU) is created before one that names one (BLAS): each then runs on its own set.
    const bool decode_first = !named_accelerators(split_device_set(o.prefill_device)).empty() &&
                              named_accelerators(split_device_set(o.decode_device)).empty();
    // The fidelity references before the engines load: one model in memory at a time.
    RunFidelity fidelity(o.fidelity);
    if (fidelity.enabled()) {
        std::vector<TestConfig> points;
        for (int p : o.n_prompt)
            for (int n : o.n_gen) {
                TestConfig c = base_config(o);
                c.n_prompt = p;
                c.n_gen = n;
                points.push_back(c);
            }
        fidelity.prepare(points, err, o.progress);
    }
    LlamaEngine a, b;
    json memory = {
        {"rss_before_bytes", opt(process_rss_bytes())},
        {"load_order", decode_first ? json({"decode", "prefill"}) : json({"prefill", "decode"})}};
    auto load = [&](LlamaEngine& e, const std::string& devices, const char* role) {
        progress("loading the model for " + devices + " (" + role + ")");
        const auto before = process_rss_bytes();
        e.load(spec_for(o, devices, max_p, max_n));
        const auto after = process_rss_bytes();
        memory[std::string("rss_growth_") + role + "_engine_bytes"] =
            before && after ? json(*after - *before) : json(nullptr);
    };
    if (decode_first) {
        load(b, o.decode_device, "decode");
        load(a, o.prefill_device, "prefill");
    } else {
        load(a, o.prefill_device, "prefill");
        load(b, o.decode_device, "decode");
    }
    memory["weight_bytes_prefill_engine"] = opt(a.weight_bytes());
    memory["weight_bytes_decode_engine"] = opt(b.weight_bytes());
    memory["note"] =
        "process RSS counts host memory only: weights on a GPU or behind an RPC server live in "
        "that device's memory";

    // The idle baseline comes after both loads here: it is the machine holding both models.
    run.start();

    json section = {{"prefill_device", o.prefill_device},
                    {"decode_device", o.decode_device},
                    {"baselines", o.baselines},
                    {"memory", memory},
                    {"points", json::array()}};
    doc.hybrid = from_json<HybridSection>(section);

    // llama.cpp may stop the process inside a point (an RPC server that dies): the last word
    // records the point's tests as failed, with what they measured so far. This thread is then
    // blocked inside llama.cpp, so the runners hold still.
    std::vector<HybridMode>* running = nullptr;
    std::atomic<bool> in_point{false};
    LastWordScope last_word([&](const std::string& message) -> std::optional<std::string> {
        if (!in_point.load() || !running || running->empty())
            return std::nullopt;
        const std::string error =
            describe_llama_stop(message, o.prefill_device + "+" + o.decode_device, activity.load());
        const size_t first = doc.tests.size();
        for (const auto& m : *running) {
            TestResult r = m.runner->result();
            record_failure(r, error, std::nullopt);
            finish_result(r);
            r.finished_ns = now_ns();
            doc.tests.push_back(std::move(r));
        }
        doc.finished_at = utc_timestamp();
        run.save();
        const TestResult& r = doc.tests[first];
        return "hybrid point pp" + std::to_string(r.config.n_prompt) + "+tg" +
               std::to_string(r.config.n_gen) + " failed: " + error + "; " + std::to_string(first) +
               " earlier test(s) kept" + (o.out_path ? " in " + *o.out_path : std::string());
    });
    bool interrupted = false;
    for (int p : o.n_prompt) {
        for (int n : o.n_gen) {
            if (interrupted || interrupt_requested()) {
                interrupted = true;
                break;
            }
            // Each mode's stages are marked under its own test's prefix, as `run` marks a test.
            const size_t first_test = doc.tests.size();
            auto hooks_for = [&](size_t i) {
                SweepHooks h;
                h.activity = [&](const char* what) { activity.store(what); };
                if (sampling) {
                    const std::string prefix = "test" + std::to_string(first_test + i) + "/";
                    h.stage_marker = [tel, prefix](const std::string& stage, bool begin,
                                                   std::optional<int64_t> tokens) {
                        tel->mark(prefix + stage, begin, tokens);
                    };
                }
                return h;
            };
            std::vector<HybridMode> modes = make_hybrid_modes(a, b, o, p, n, hooks_for);
            for (auto& m : modes)
                if (std::string(m.name) == kHybridMode)
                    m.runner->add_note("prefill on " + o.prefill_device +
                                       ", sequence state moved, decode on " + o.decode_device +
                                       "; TTFT includes the state transfer");
            activity.store("");
            running = &modes;
            in_point.store(true);
            interrupted = run_interleaved(modes, interrupt_requested, progress);
            in_point.store(false);
            running = nullptr;
            json pt = hybrid_point_json(p, n, modes);
            pt["tests"] = json::object();
            std::optional<std::string> error;
            for (size_t i = 0; i < modes.size(); ++i) {
                TestResult r = modes[i].runner->results();
                // Untimed, after the point: the hybrid's sequence split as it ran.
                const std::string mode = modes[i].name;
                if (mode == kHybridMode)
                    fidelity.check_transferred(a, b, r);
                else
                    fidelity.check(mode == kPrefillAloneMode ? a : b, r);
                if (r.status == Status::failed)
                    error = r.error;
                if (auto w = stall_warning(r))
                    doc.warnings.push_back(*w);
                if (sampling)
                    r.telemetry =
                        test_telemetry(*tel, "test" + std::to_string(first_test + i) + "/");
                pt["tests"][modes[i].name] = first_test + i;
                doc.tests.push_back(std::move(r));
            }
            if (error)
                progress("pp" + std::to_string(p) + "+tg" + std::to_string(n) +
                         " failed: " + *error);
            section["points"].push_back(pt);
            section["crossover"] = to_json(crossovers(
                from_json<std::vector<HybridPoint>>(section["points"], "the hybrid points")));
            doc.hybrid = from_json<HybridSection>(section);
            doc.finished_at = utc_timestamp();
            run.save();
        }
        if (interrupted)
            break;
    }
    a.unload();
    b.unload();
    run.finish();
    return exit_code_for(doc.tests, interrupted);
}

}  // namespace sb
