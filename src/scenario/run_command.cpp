#include "scenario/run_command.hpp"

#include <algorithm>
#include <thread>

#include "core/backend_env.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/membw.hpp"
#include "core/sysinfo.hpp"
#include "core/utf8.hpp"
#include "core/version.hpp"
#include "engine/backends.hpp"
#include "scenario/explain_settings.hpp"
#include "scenario/run_context.hpp"

namespace sb {

ResultDocument new_document(const std::string& command, const std::vector<std::string>& argv) {
    ResultDocument doc;
    doc.command = command;
    // The command line is bytes: a path or a value given in another encoding must not make
    // the document unwritable. An API key in it (--server-args) is never kept.
    for (const auto& a : redact_command_line(argv))
        doc.argv.push_back(valid_utf8(a));
    doc.tool_version = tool_version();
#ifdef NDEBUG
    doc.build_type = "release";
#else
    doc.build_type = "debug";
#endif
    BuildInfo b = build_info();
    doc.llama = {{"tag", b.llama_tag},
                 {"commit", b.llama_commit},
                 {"dynamic_backends", b.dynamic_backends},
                 {"backends", b.backends_available},
                 {"system_info", b.system_info}};
    SystemInfo si = read_system_info();
    doc.system = to_json(si);
    // The CPU kernels this run used: the variant ggml chose (GGML_CPU_ALL_VARIANTS builds) and
    // the CPU features it chose by; null where not known.
    doc.system["cpu_variant"] = b.cpu_variant ? nlohmann::json(*b.cpu_variant) : nullptr;
    doc.system["cpu_features"] = b.cpu_features ? nlohmann::json(*b.cpu_features) : nullptr;
    // The backend knobs this process started with (core/backend_env.hpp).
    doc.system["backend_env"] = backend_env();
#ifdef NDEBUG
    const bool debug = false;
#else
    const bool debug = true;
#endif
    for (auto& w : build_warnings(debug, false))
        doc.warnings.push_back(w);
    doc.started_at = utc_timestamp();
    return doc;
}

namespace {

std::optional<double> resolve_membw(const RunOptions& opts, ResultDocument& doc,
                                    Progress& progress) {
    if (opts.membw == "off")
        return std::nullopt;
    if (opts.membw != "auto") {
        try {
            size_t used = 0;
            double v = std::stod(opts.membw, &used);
            if (used != opts.membw.size() || v <= 0)
                throw std::invalid_argument("");
            doc.membw = {{"source", "user"}, {"triad_gbps", v}};
            return v;
        } catch (const std::exception&) {
            throw usage_error("--membw must be auto, off or GB/s, not '" + opts.membw + "'");
        }
    }
    int threads = 0;
    for (int t : opts.matrix.n_threads)
        threads = std::max(threads, t);
    if (threads <= 0)
        threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    progress.note("measuring memory bandwidth (" + std::to_string(threads) + " threads)");
    MembwResult m;
    try {
        m = measure_membw(default_membw_array_bytes(), threads, 5,
                          [] { return interrupt_requested(); });
    } catch (const Error&) {
        // Ctrl-C during the probe: no bandwidth, and the sweep stops before its first test.
        if (interrupt_requested())
            return std::nullopt;
        throw;
    }
    doc.membw = {{"source", "measured"},         {"threads", m.threads},
                 {"array_bytes", m.array_bytes}, {"copy_gbps", m.copy_gbps},
                 {"scale_gbps", m.scale_gbps},   {"add_gbps", m.add_gbps},
                 {"triad_gbps", m.triad_gbps}};
    return m.triad_gbps;
}

}  // namespace

RunResult run_benchmark(const RunOptions& opts, RunEnv env) {
    // Everything the user gave is checked before the first measurement: bad input is an
    // error of the command, not a failed test.
    const auto& kinds = opts.http.engines;
    if (opts.fidelity.enabled &&
        std::find(kinds.begin(), kinds.end(), EngineKind::llama) == kinds.end())
        throw usage_error(
            "--fidelity compares the in-process engine's logits (--engine llama); a server "
            "does not return them");
    if (opts.fidelity.enabled &&
        std::ranges::find(opts.matrix.n_prompt, 0) != opts.matrix.n_prompt.end())
        throw usage_error(
            "--fidelity compares the logits after the prompt and of each decoded token: -p 0 "
            "(decode alone) has none to start from");
    HttpRun http(opts.http, opts.matrix, opts.rpc_servers);
    auto tests = http.plan(opts.matrix);
    RunSetup setup;
    setup.take(env);
    // A model that cannot be used fails its own tests, and the sweep goes on with the others.
    if (http.needs_gguf())
        setup.models = opts.matrix.models;
    setup.keep_unusable_models = true;
    setup.rpc_servers = opts.rpc_servers;
    if (http.uses_llama())
        setup.device_sets = opts.matrix.devices;
    setup.telemetry = opts.telemetry;
    setup.out_path = opts.out_path;
    setup.progress = opts.progress;
    setup.terminal = opts.progress && Progress::stderr_is_terminal();
    if (env.listener)
        env.listener->plan(tests);
    RunContext run(env.doc, setup, env.err, env.listener);
    // The fidelity references before any test (of the models that can be used): one that
    // cannot run is bad input, found before a measurement.
    RunFidelity fidelity(opts.fidelity);
    if (fidelity.enabled()) {
        std::vector<TestConfig> usable;
        for (const auto& t : tests)
            if (!run.unusable_model(t.model_path))
                usable.push_back(t);
        fidelity.prepare(usable, run.engines(), run.progress());
    }
    http.connect(run, tests);
    const auto membw = http.uses_llama() ? resolve_membw(opts, run.doc(), run.progress())
                                         : std::optional<double>();
    int max_threads = 0;
    for (const auto& t : tests)
        max_threads = std::max(max_threads, t.n_threads);
    run.open(max_threads);
    run.start();
    run.plan(tests.size());
    for (const auto& config : tests) {
        if (run.should_stop())
            break;
        SweepHooks hooks = run.begin_test(config);
        TestResult r;
        if (const Error* bad = run.unusable_model(config.model_path);
            bad && http.reads_gguf(config)) {
            r.config = config;
            r.started_ns = r.finished_ns = run.clock()();
            record_failure(r, *bad);
        } else {
            // On the engine the config names; fidelity's check (in-process tests only) after
            // the timed repetitions, untimed.
            r = http.measure(config, hooks, run.clock(), membw,
                             [&](Engine& e, TestResult& t) { fidelity.check(e, t); });
        }
        run.end_test(std::move(r));
    }
    http.stop();
    return run.finish();
}

}  // namespace sb
