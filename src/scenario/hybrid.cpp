#include "scenario/hybrid.hpp"

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/sysinfo.hpp"
#include "engine/backends.hpp"
#include "scenario/run_context.hpp"
#include "scenario/stage_sweep.hpp"

namespace sb {
namespace {

// The configuration every mode shares; the caller sets devices and lengths.
TestConfig base_config(const HybridOptions& o) {
    TestConfig c;
    static_cast<Workload&>(c) = o.workload;
    c.n_threads = threads_or_default(c.n_threads);
    c.reps = c.max_reps = o.reps;
    c.warmup = o.warmup;
    c.seed = o.seed;
    return c;
}

void validate(const HybridOptions& o) {
    const Placement& pl = o.placement;
    if (o.workload.model_path.empty())
        throw usage_error("hybrid needs a model (-m FILE)");
    if (pl.decode.empty())
        throw usage_error("hybrid needs --decode-device (e.g. RPC0)");
    if (pl.prefill.empty())
        throw usage_error("hybrid needs --prefill-device (e.g. CPU)");
    if (pl.prefill == pl.decode)
        throw usage_error("--prefill-device and --decode-device are both '" + pl.prefill.str() +
                          "': a hybrid needs two different device sets");
    if (o.n_prompt.empty() || o.n_gen.empty())
        throw usage_error("hybrid needs at least one -p and one -n value");
    for (int p : o.n_prompt)
        if (p <= 0)
            throw usage_error("-p must be positive for a hybrid run (prefill is its first stage)");
    for (int n : o.n_gen)
        if (n <= 0)
            throw usage_error("-n must be positive for a hybrid run (decode is its second stage)");
    if (o.reps < 1)
        throw usage_error("-r must be at least 1");
    if (o.format != OutputFormat::md && o.format != OutputFormat::json)
        throw usage_error("-o must be md or json for hybrid, not '" + to_string(o.format) + "'");
}

// The two engines, each loaded once with a context for the longest point. Both hold the model
// at once; that is the memory cost of the hybrid, returned. llama.cpp gives a context every
// accelerator loaded when it is created, so an engine that names none (CPU) is created before
// one that names one (BLAS): each then runs on its own set.
HybridMemory load_engines(RunContext& run, const HybridOptions& o, Engine& a, Engine& b) {
    const Placement& pl = o.placement;
    const bool decode_first = !named_accelerators(split_device_set(pl.prefill.str())).empty() &&
                              named_accelerators(split_device_set(pl.decode.str())).empty();
    TestConfig longest = base_config(o);
    longest.n_prompt = *std::max_element(o.n_prompt.begin(), o.n_prompt.end());
    longest.n_gen = *std::max_element(o.n_gen.begin(), o.n_gen.end());
    HybridMemory memory;
    memory.rss_before_bytes = process_rss_bytes();
    memory.load_order = decode_first ? std::vector<std::string>{"decode", "prefill"}
                                     : std::vector<std::string>{"prefill", "decode"};
    auto load = [&](Engine& e, const DeviceSet& devices, std::optional<int64_t>& growth,
                    const char* role) {
        run.note("loading the model for " + devices.str() + " (" + role + ")");
        const auto before = process_rss_bytes();
        TestConfig c = longest;
        c.devices = devices;
        e.load(load_spec_for(c));
        const auto after = process_rss_bytes();
        if (before && after)
            growth = *after - *before;
    };
    for (const auto& role : memory.load_order) {
        if (role == "decode")
            load(b, pl.decode, memory.rss_growth_decode_engine_bytes, "decode");
        else
            load(a, pl.prefill, memory.rss_growth_prefill_engine_bytes, "prefill");
    }
    memory.weight_bytes_prefill_engine = a.weight_bytes();
    memory.weight_bytes_decode_engine = b.weight_bytes();
    memory.note =
        "process RSS counts host memory only: weights on a GPU or behind an RPC server live in "
        "that device's memory";
    return memory;
}

// Every mode's test of the point (n_prompt p, n_gen n), begun, measured interleaved and ended
// through the run context; the point joins the section. Returns whether it was interrupted.
bool measure_point(RunContext& run, const HybridOptions& o, Engine& a, Engine& b,
                   const RunFidelity& fidelity, int p, int n) {
    const Placement& pl = o.placement;
    // Each mode's test begins with the run context: its stages marked under the test's own
    // prefix, its progress line; a stop inside llama.cpp records the modes with what they
    // measured so far.
    std::vector<HybridMode>* modes_now = nullptr;
    auto hooks_for = [&](size_t i, const TestConfig& c) {
        RunningTest running;
        running.devices = pl.all();
        running.so_far = [&modes_now, i] { return (*modes_now)[i].runner->result(); };
        return run.begin_test(c, std::move(running));
    };
    std::vector<HybridMode> modes = make_hybrid_modes(a, b, o, p, n, hooks_for, run.clock());
    modes_now = &modes;
    run.name_running(fmt::format("hybrid point pp{}+tg{}", p, n));
    modes.front().runner->add_note("prefill on " + pl.prefill.str() +
                                   ", sequence state moved, decode on " + pl.decode.str() +
                                   "; TTFT includes the state transfer");
    const bool interrupted = run_interleaved(
        modes, [&run] { return run.should_stop(); }, nullptr);
    HybridPoint point = hybrid_point(p, n, modes);
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
        point.tests[mode] = static_cast<int>(run.doc().tests.size());
        run.end_test(std::move(r));
    }
    modes_now = nullptr;
    if (error)
        run.note(fmt::format("pp{}+tg{} failed: {}", p, n, *error));
    run.update([&](ResultDocument& doc) {
        HybridSection& h = *doc.hybrid;
        h.points.push_back(std::move(point));
        h.crossover = crossovers(h.points);
    });
    return interrupted;
}

}  // namespace

TestConfig hybrid_test_config(const HybridOptions& o, const DeviceSet& devices, int p, int n) {
    TestConfig c = base_config(o);
    c.devices = devices;
    c.n_prompt = p;
    c.n_gen = n;
    c.n_depth = 0;  // every mode starts its prompt at position 0
    return c;
}

std::vector<HybridMode> make_hybrid_modes(Engine& a, Engine& b, const HybridOptions& o, int p,
                                          int n, const HooksFor& hooks_for, const Clock& clock) {
    struct Plan {
        const char* name;
        Engine* pre;
        Engine* dec;
        DeviceSet devices;
    };
    std::vector<Plan> plans{{kHybridMode, &a, &b, DeviceSet(o.placement.str())}};
    if (o.baselines) {
        plans.push_back({kPrefillAloneMode, &a, &a, o.placement.prefill});
        plans.push_back({kDecodeAloneMode, &b, &b, o.placement.decode});
    }
    std::vector<HybridMode> modes;
    for (size_t i = 0; i < plans.size(); ++i) {
        RepetitionOptions ro;
        ro.decode_engine = plans[i].dec == plans[i].pre ? nullptr : plans[i].dec;
        ro.load = false;  // both engines hold one context for every point
        ro.roofline = false;
        ro.clock = clock;
        ro.interrupted = [] { return false; };  // run_interleaved polls for every mode at once
        const TestConfig c = hybrid_test_config(o, plans[i].devices, p, n);
        modes.push_back({plans[i].name, std::make_unique<RepetitionRunner>(
                                            *plans[i].pre, c, hooks_for(i, c), std::move(ro))});
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

HybridPoint hybrid_point(int p, int n, const std::vector<HybridMode>& modes) {
    HybridPoint pt;
    pt.n_prompt = p;
    pt.n_gen = n;
    TransferSamples ts;
    std::map<std::string, std::vector<int64_t>> e2e_ns;
    for (const auto& m : modes) {
        if (std::string(m.name) == kHybridMode)
            ts = m.runner->transfer();
        if (!m.runner->e2e_ns().empty())
            e2e_ns[m.name] = m.runner->e2e_ns();
    }
    HybridTransfer& t = pt.transfer;
    t.start_ns = ts.start_ns;
    t.duration_ns = ts.transfer_ns;
    t.save_ns = ts.save_ns;
    t.restore_ns = ts.restore_ns;
    t.bytes = ts.bytes;
    t.duration = summarize_ns(ts.transfer_ns);
    t.save = summarize_ns(ts.save_ns);
    t.restore = summarize_ns(ts.restore_ns);
    if (!ts.bytes.empty() && !ts.transfer_ns.empty()) {
        t.bytes_per_token = static_cast<double>(ts.bytes.back()) / p;
        if (t.duration.median && *t.duration.median > 0)
            t.gbps = static_cast<double>(ts.bytes.back()) / *t.duration.median;
    }
    for (const auto& [mode, v] : e2e_ns)
        pt.e2e[mode] = HybridModeSamples{v, summarize_ns(v)};
    pt.comparison =
        compare_modes(e2e_ns[kHybridMode], e2e_ns[kPrefillAloneMode], e2e_ns[kDecodeAloneMode]);
    return pt;
}

RunResult run_hybrid(const HybridOptions& o, RunEnv env) {
    validate(o);
    // The run context: the model described, RPC servers added, both device sets checked,
    // telemetry, warnings and the document saved as it grows.
    RunSetup setup;
    setup.take(env);
    setup.models = {o.workload.model_path};
    setup.rpc_servers = o.rpc_servers;
    setup.device_sets = {o.placement.prefill, o.placement.decode};
    setup.telemetry = o.telemetry;
    setup.out_path = o.out_path;
    setup.progress = o.progress;
    setup.terminal = o.progress && Progress::stderr_is_terminal();
    RunContext run(env.doc, setup, env.err, env.listener);
    run.open(threads_or_default(o.workload.n_threads));

    // The fidelity references before the engines load: one model in memory at a time.
    RunFidelity fidelity(o.fidelity);
    if (fidelity.enabled()) {
        std::vector<TestConfig> points;
        for (int p : o.n_prompt)
            for (int n : o.n_gen)
                points.push_back(hybrid_test_config(o, o.placement.prefill, p, n));
        fidelity.prepare(points, run.engines(), run.progress());
    }
    std::unique_ptr<Engine> a = run.engines().make(EngineKind::llama);
    std::unique_ptr<Engine> b = run.engines().make(EngineKind::llama);
    HybridSection section;
    section.prefill_device = o.placement.prefill;
    section.decode_device = o.placement.decode;
    section.baselines = o.baselines;
    section.memory = load_engines(run, o, *a, *b);
    // The idle baseline comes after both loads here: it is the machine holding both models.
    run.start();
    run.plan(o.n_prompt.size() * o.n_gen.size() * (o.baselines ? 3 : 1));
    run.update([&](ResultDocument& doc) { doc.hybrid = section; });
    for (int p : o.n_prompt)
        for (int n : o.n_gen) {
            if (run.should_stop())
                break;
            if (measure_point(run, o, *a, *b, fidelity, p, n))
                break;
        }
    a.reset();
    b.reset();
    return run.finish();
}

}  // namespace sb
