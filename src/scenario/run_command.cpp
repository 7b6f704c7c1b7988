#include "scenario/run_command.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/last_word.hpp"
#include "core/membw.hpp"
#include "core/stats_json.hpp"
#include "core/sysinfo.hpp"
#include "core/utf8.hpp"
#include "core/version.hpp"
#include "engine/backends.hpp"
#include "engine/llama_engine.hpp"
#include "model/inspect.hpp"
#include "report/reporter.hpp"
#include "scenario/telemetry_setup.hpp"
#include "telemetry/telemetry_json.hpp"

namespace sb {

ResultDocument new_document(const std::string& command, const std::vector<std::string>& argv) {
    ResultDocument doc;
    doc.command = command;
    // The command line is bytes: a path or a value given in another encoding must not make
    // the document unwritable.
    for (const auto& a : argv)
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
                                    std::ostream& err) {
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
    if (opts.progress)
        err << "stagebench: measuring memory bandwidth (" << threads << " threads)\n";
    MembwResult m = measure_membw(default_membw_array_bytes(), threads, 5);
    doc.membw = {{"source", "measured"},         {"threads", m.threads},
                 {"array_bytes", m.array_bytes}, {"copy_gbps", m.copy_gbps},
                 {"scale_gbps", m.scale_gbps},   {"add_gbps", m.add_gbps},
                 {"triad_gbps", m.triad_gbps}};
    return m.triad_gbps;
}

}  // namespace

int run_benchmark(const RunOptions& opts, ResultDocument& doc, std::ostream& out,
                  std::ostream& err) {
    // Everything the user gave is checked before the first measurement: bad input is an
    // error of the command, not a failed test.
    HttpRun http(opts.http, opts.matrix, opts.rpc_servers);
    auto tests = http.plan(opts.matrix);
    // A model that cannot be used fails its own tests, and the sweep goes on with the others;
    // when no model can be used, the command fails before anything runs.
    std::map<std::string, Error> unusable;
    if (http.needs_gguf()) {
        std::optional<Error> first;
        for (const auto& path : opts.matrix.models) {
            try {
                doc.models.push_back(to_json(inspect_model(path)));
            } catch (const Error& e) {
                if (e.kind() == ErrorKind::runtime)
                    throw;
                unusable.emplace(path, e);
                if (!first)
                    first = e;
            }
        }
        if (first && doc.models.empty())
            throw *first;
    }
    for (const auto& ep : opts.rpc_servers)
        add_rpc_server(ep);
    if (http.uses_llama()) {
        std::vector<std::string> names;
        for (const auto& d : opts.matrix.devices)
            for (auto& n : split_device_set(d))
                names.push_back(std::move(n));
        check_device_names(names);
    }
    http.connect(doc, tests, err, opts.progress);
    auto reporter = make_reporter(opts.format, out);
    auto tel = open_telemetry(
        TelemetryChoice{opts.telemetry, opts.sysfs_root, opts.telemetry_hz, opts.idle_s}, err,
        opts.progress);
    const bool sampling = tel && has_sources(*tel);
    const auto membw = http.uses_llama() ? resolve_membw(opts, doc, err) : std::optional<double>();
    int max_threads = 0;
    for (const auto& t : tests)
        max_threads = std::max(max_threads, t.n_threads);
    SystemInfo si = read_system_info();
    for (auto& w : system_warnings(si, max_threads))
        doc.warnings.push_back(w);
    for (auto& w : model_warnings(doc.models))
        doc.warnings.push_back(w);

    auto save = [&](DocumentSave how = DocumentSave::progress) {
        if (opts.out_path)
            write_document(doc, *opts.out_path, how);
    };
    // llama.cpp may stop the process inside a test (an RPC server that dies): the last word
    // records that test as failed next to the ones before it. doc_mu keeps it from reading the
    // document while this thread changes it between tests.
    std::timed_mutex doc_mu;
    std::atomic<int> running{-1};
    std::atomic<const char*> activity{""};
    std::atomic<int64_t> running_since_ns{0};
    LastWordScope last_word([&](const std::string& message) -> std::optional<std::string> {
        const int i = running.load();
        std::unique_lock<std::timed_mutex> lock(doc_mu, std::chrono::seconds(5));
        if (i < 0 || !lock.owns_lock())
            return std::nullopt;
        TestResult r;
        r.config = tests[i];
        r.status = Status::failed;
        r.stopped_by = StopReason::error;
        r.error = describe_llama_stop(message, tests[i].devices.str(), activity.load());
        r.started_ns = running_since_ns.load();
        r.finished_ns = now_ns();
        doc.tests.push_back(r);
        doc.finished_at = utc_timestamp();
        save();
        return "test " + r.config.test_name() + " on " + r.config.devices.str() +
               " failed: " + *r.error + "; " + std::to_string(doc.tests.size() - 1) +
               " earlier test(s) kept" + (opts.out_path ? " in " + *opts.out_path : std::string());
    });
    save();
    if (sampling) {
        // The idle baseline comes before any model is loaded: net energy is what inference adds.
        if (opts.idle_s > 0) {
            if (opts.progress)
                err << "stagebench: measuring the idle baseline (" << opts.idle_s << " s)\n";
            tel->measure_idle(static_cast<int64_t>(opts.idle_s * 1e9));
        }
        tel->start();
    }
    reporter->begin(doc);
    LlamaEngine engine;
    SweepHooks hooks;
    std::string stage_prefix;
    if (sampling)
        hooks.stage_marker = [&](const std::string& stage, bool begin,
                                 std::optional<int64_t> tokens) {
            tel->mark(stage_prefix + stage, begin, tokens);
        };
    if (opts.progress)
        hooks.progress = [&](const std::string& s) { err << "stagebench: " << s << "\n"; };
    hooks.activity = [&](const char* what) { activity.store(what); };
    for (size_t i = 0; i < tests.size(); ++i) {
        if (interrupt_requested())
            break;
        stage_prefix = "test" + std::to_string(i) + "/";
        activity.store("");
        running_since_ns.store(now_ns());
        running.store(static_cast<int>(i));
        TestResult r;
        if (auto bad = unusable.find(tests[i].model_path);
            bad != unusable.end() && (tests[i].engine != EngineKind::http || !opts.http.url)) {
            r.config = tests[i];
            r.started_ns = r.finished_ns = now_ns();
            record_failure(r, bad->second);
        } else {
            r = tests[i].engine == EngineKind::http ? http.run(tests[i], hooks)
                                                    : run_test(engine, tests[i], hooks, membw);
        }
        std::lock_guard<std::timed_mutex> lock(doc_mu);
        running.store(-1);
        if (sampling)
            r.telemetry = test_telemetry(*tel, stage_prefix);
        if (auto w = stall_warning(r))
            doc.warnings.push_back(*w);
        if (r.status == Status::failed && opts.progress)
            err << "stagebench: test " << r.config.test_name() << " on " << r.config.devices.str()
                << " failed: " << r.error.value_or("") << "\n";
        doc.tests.push_back(std::move(r));
        doc.finished_at = utc_timestamp();
        save();
        reporter->test_done(doc, doc.tests.back());
    }
    engine.unload();
    http.stop();
    finish_telemetry(tel.get(), doc);
    doc.finished_at = utc_timestamp();
    reporter->end(doc);
    // After the report: an output that fails now (a FIFO nobody reads) costs no result.
    save(DocumentSave::final);
    if (interrupt_requested())
        err << "stagebench: interrupted; " << doc.tests.size() << " test(s) kept"
            << (opts.out_path ? " in " + *opts.out_path : std::string()) << "\n";
    return exit_code_for(doc.tests, interrupt_requested());
}

}  // namespace sb
