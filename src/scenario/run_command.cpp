#include "scenario/run_command.hpp"

#include <algorithm>
#include <thread>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/membw.hpp"
#include "core/stats_json.hpp"
#include "core/sysinfo.hpp"
#include "engine/backends.hpp"
#include "engine/llama_engine.hpp"
#include "model/inspect.hpp"
#include "report/reporter.hpp"
#include "telemetry/discover.hpp"
#include "telemetry/sampler.hpp"
#include "telemetry/telemetry_json.hpp"

#ifndef SB_VERSION
#define SB_VERSION "0.0.0"
#endif

namespace sb {

ResultDocument new_document(const std::string& command, const std::vector<std::string>& argv) {
    ResultDocument doc;
    doc.command = command;
    doc.argv = argv;
    doc.tool_version = SB_VERSION;
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

// The sampler when telemetry is wanted, with the families found and absent. Null when off.
std::unique_ptr<Sampler> open_telemetry(const RunOptions& opts, std::ostream& err) {
    if (opts.telemetry == "off")
        return nullptr;
    if (opts.telemetry != "auto" && opts.telemetry != "on")
        throw usage_error("--telemetry must be auto, on or off, not '" + opts.telemetry + "'");
    if (opts.idle_s < 0)
        throw usage_error("--idle must be >= 0 seconds");
    Discovery d = discover_sources(discover_options_for_root(opts.sysfs_root));
    if (d.sources.empty() && opts.telemetry == "on")
        throw input_error("--telemetry on: no telemetry sources under " + opts.sysfs_root +
                          " (stagebench sensors lists what is absent and why)");
    SamplerOptions so;
    so.hz = opts.telemetry_hz;
    auto sampler = std::make_unique<Sampler>(std::move(d), so);
    if (opts.progress) {
        const auto rec = sampler->record();
        err << "stagebench: telemetry: " << rec.sources.size() << " source(s)";
        std::string absent;
        for (const auto& c : rec.classes)
            if (c.found == 0)
                absent += (absent.empty() ? "" : ", ") + c.source_class;
        if (!absent.empty())
            err << "; absent: " << absent;
        err << "\n";
    }
    return sampler;
}

// Per-repetition stage telemetry of one test, and medians of what people compare.
nlohmann::json test_telemetry(const Sampler& tel, const std::string& prefix) {
    nlohmann::json j = nlohmann::json::object();
    nlohmann::json summary = nlohmann::json::object();
    for (const char* stage : {"prefill", "decode"}) {
        const auto occ = tel.stage_summaries(prefix + stage);
        if (occ.empty())
            continue;
        nlohmann::json arr = nlohmann::json::array();
        std::vector<double> jpt, net_jpt, energy, power;
        for (const auto& o : occ) {
            arr.push_back(to_json(o));
            if (o.j_per_token)
                jpt.push_back(*o.j_per_token);
            if (o.net_j_per_token)
                net_jpt.push_back(*o.net_j_per_token);
            if (o.total_energy_j) {
                energy.push_back(*o.total_energy_j);
                if (o.duration_ns > 0)
                    power.push_back(*o.total_energy_j / (o.duration_ns * 1e-9) * 1e3);
            }
        }
        j[stage] = arr;
        summary[stage] = {
            {"j_per_token", to_json(summarize(jpt))},
            {"net_j_per_token", to_json(summarize(net_jpt))},
            {"energy_j", to_json(summarize(energy))},
            {"mean_power_mw", to_json(summarize(power))},
            {"total_metric", occ.front().total_metric ? nlohmann::json(*occ.front().total_metric)
                                                      : nlohmann::json(nullptr)}};
    }
    j["summary"] = summary;
    return j;
}

}  // namespace

int run_benchmark(const RunOptions& opts, ResultDocument& doc, std::ostream& out,
                  std::ostream& err) {
    // Everything the user gave is checked before the first measurement: bad input is an
    // error of the command, not a failed test.
    const auto tests = expand_matrix(opts.matrix);
    for (const auto& path : opts.matrix.models)
        doc.models.push_back(to_json(inspect_model(path)));
    for (const auto& ep : opts.rpc_servers)
        add_rpc_server(ep);
    {
        std::vector<std::string> names;
        for (const auto& d : opts.matrix.devices) {
            size_t start = 0;
            while (start <= d.size()) {
                size_t plus = d.find('+', start);
                names.push_back(
                    d.substr(start, plus == std::string::npos ? std::string::npos : plus - start));
                if (plus == std::string::npos)
                    break;
                start = plus + 1;
            }
        }
        check_device_names(names);
    }
    auto reporter = make_reporter(opts.format, out);
    auto tel = open_telemetry(opts, err);
    const bool sampling = tel && !tel->record().sources.empty();
    const auto membw = resolve_membw(opts, doc, err);
    int max_threads = 0;
    for (const auto& t : tests)
        max_threads = std::max(max_threads, t.n_threads);
    SystemInfo si = read_system_info();
    for (auto& w : system_warnings(si, max_threads))
        doc.warnings.push_back(w);
    for (const auto& m : doc.models)
        if (m.value("synthetic", false)) {
            doc.warnings.push_back(
                {"synthetic_model",
                 "model '" + m.value("path", "") +
                     "' is synthetic: random weights, real shapes; speed is representative, "
                     "output text is not",
                 "use a real GGUF for quality-sensitive measurements"});
            break;
        }

    auto save = [&] {
        if (opts.out_path)
            write_document(doc, *opts.out_path);
    };
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
    int failed = 0;
    for (size_t i = 0; i < tests.size(); ++i) {
        if (interrupt_requested())
            break;
        stage_prefix = "test" + std::to_string(i) + "/";
        TestResult r = run_test(engine, tests[i], hooks, membw);
        if (sampling)
            r.telemetry = test_telemetry(*tel, stage_prefix);
        if (r.status != "ok")
            ++failed;
        if (r.status == "failed" && opts.progress)
            err << "stagebench: test " << r.config.test_name() << " on " << r.config.devices
                << " failed: " << r.error.value_or("") << "\n";
        doc.tests.push_back(std::move(r));
        doc.finished_at = utc_timestamp();
        save();
        reporter->test_done(doc, doc.tests.back());
    }
    engine.unload();
    if (tel) {
        tel->stop();
        doc.telemetry = to_json(tel->record());
        for (const auto& w : tel->record().warnings)
            doc.warnings.push_back(w);
    }
    doc.finished_at = utc_timestamp();
    save();
    reporter->end(doc);
    if (interrupt_requested()) {
        err << "stagebench: interrupted; " << doc.tests.size() << " test(s) kept"
            << (opts.out_path ? " in " + *opts.out_path : std::string()) << "\n";
        return 1;
    }
    return failed > 0 ? 1 : 0;
}

}  // namespace sb
