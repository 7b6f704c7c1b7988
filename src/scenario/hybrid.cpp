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
#include "model/inspect.hpp"
#include "report/hybrid_report.hpp"
#include "scenario/stage_sweep.hpp"
#include "telemetry/telemetry_json.hpp"

namespace sb {
namespace {

using nlohmann::json;

std::vector<double> as_double(const std::vector<int64_t>& v) {
    return std::vector<double>(v.begin(), v.end());
}

// One mode of one point: which engine prefills, which decodes, and whether the state moves.
struct Mode {
    const char* name;
    Engine* pre = nullptr;
    Engine* dec = nullptr;
    bool transfer = false;
    size_t test = 0;  // index of its TestResult in doc.tests
};

// The samples of one point that the tests' stage results do not hold.
struct PointSamples {
    std::vector<int64_t> start_ns, save_ns, restore_ns, transfer_ns, bytes;
    std::map<std::string, std::vector<int64_t>> e2e_ns;
};

using Marker = std::function<void(const std::string&, bool, std::optional<int64_t>)>;

// One repetition of one mode. Inputs are made by the caller before any clock starts.
void measure(const Mode& m, TestResult& r, const std::vector<int32_t>& prompt,
             const std::vector<int32_t>& gen, std::vector<uint8_t>& buf, PointSamples& ps,
             const Marker& mark) {
    m.pre->reset();
    mark("prefill", true, {});
    const StageTimes st = m.pre->prefill(prompt);
    mark("prefill", false, static_cast<int64_t>(prompt.size()));
    const int64_t prefill_ns = st.end_ns - st.start_ns;
    r.prefill->start_ns.push_back(st.start_ns);
    r.prefill->duration_ns.push_back(prefill_ns);
    r.prefill->tokens_per_s.push_back(prompt.size() * 1e9 / prefill_ns);

    int64_t transfer_ns = 0;
    if (m.transfer) {
        mark("transfer", true, {});
        const int64_t t0 = now_ns();
        const size_t bytes = m.pre->save_state(buf);
        const int64_t t1 = now_ns();
        m.dec->restore_state(buf);
        const int64_t t2 = now_ns();
        mark("transfer", false, {});
        transfer_ns = t2 - t0;
        ps.start_ns.push_back(t0);
        ps.save_ns.push_back(t1 - t0);
        ps.restore_ns.push_back(t2 - t1);
        ps.transfer_ns.push_back(transfer_ns);
        ps.bytes.push_back(static_cast<int64_t>(bytes));
    }

    mark("decode", true, {});
    const int64_t start = now_ns();
    int64_t prev = start;
    const size_t first = r.decode->token_latency_ns.size();
    for (int32_t tok : gen) {
        const int64_t t = m.dec->decode_step(tok);
        r.decode->token_latency_ns.push_back(t - prev);
        prev = t;
    }
    mark("decode", false, static_cast<int64_t>(gen.size()));
    const int64_t decode_ns = prev - start;
    r.decode->start_ns.push_back(start);
    r.decode->duration_ns.push_back(decode_ns);
    r.decode->token_latency_counts.push_back(static_cast<int64_t>(gen.size()));
    r.decode->tokens_per_s.push_back(gen.size() * 1e9 / decode_ns);
    r.ttft_ns.push_back(prefill_ns + transfer_ns + r.decode->token_latency_ns[first]);
    ps.e2e_ns[m.name].push_back(prefill_ns + transfer_ns + decode_ns);
}

void finish(TestResult& r) {
    finish_stage(*r.prefill);
    finish_decode(*r.decode);
    r.ttft = summarize_ns(r.ttft_ns);
    r.finished_ns = now_ns();
}

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
    if (o.format != "md" && o.format != "json")
        throw usage_error("-o must be md or json for hybrid, not '" + o.format + "'");
}

std::string verdict_of(const RatioCi& r) {
    if (r.no_difference)
        return "no difference";
    return r.ratio > 1 ? "hybrid faster" : "hybrid slower";
}

}  // namespace

json compare_modes(const std::vector<int64_t>& hybrid_e2e,
                   const std::vector<int64_t>& prefill_alone_e2e,
                   const std::vector<int64_t>& decode_alone_e2e) {
    json out = json::object();
    if (hybrid_e2e.empty())
        return out;
    const auto h = as_double(hybrid_e2e);
    auto add = [&](const char* key, const std::vector<int64_t>& alone) {
        if (alone.empty())
            return;
        const auto a = as_double(alone);
        const RatioCi r = ratio_of_medians(a, h);
        out[key] = {
            {"speedup", r.ratio}, {"ci95_lo", r.lo}, {"ci95_hi", r.hi}, {"verdict", verdict_of(r)}};
    };
    add(kPrefillAloneMode, prefill_alone_e2e);
    add(kDecodeAloneMode, decode_alone_e2e);
    return out;
}

json crossovers(const json& points) {
    // wins[(p, n)]: the hybrid is faster than both modes alone, with CIs that exclude 1.
    std::map<std::pair<int, int>, bool> wins;
    std::set<int> ps, ns;
    for (const auto& pt : points) {
        const auto& cmp = pt.value("comparison", json::object());
        if (!cmp.contains(kPrefillAloneMode) || !cmp.contains(kDecodeAloneMode))
            continue;
        const int p = pt.at("n_prompt").get<int>(), n = pt.at("n_gen").get<int>();
        wins[{p, n}] = cmp[kPrefillAloneMode]["verdict"] == "hybrid faster" &&
                       cmp[kDecodeAloneMode]["verdict"] == "hybrid faster";
        ps.insert(p);
        ns.insert(n);
    }
    // From which length on the hybrid keeps winning, along one axis with the other fixed.
    auto scan = [&](const std::set<int>& along, auto at) -> json {
        std::optional<int> from;
        for (auto it = along.rbegin(); it != along.rend(); ++it) {
            auto w = at(*it);
            if (!w)
                continue;
            if (!*w)
                break;
            from = *it;
        }
        return from ? json(*from) : json(nullptr);
    };
    json by_gen = json::array(), by_prompt = json::array();
    for (int n : ns)
        by_gen.push_back({{"n_gen", n}, {"hybrid_wins_from_n_prompt", scan(ps, [&](int p) {
                                             auto it = wins.find({p, n});
                                             return it == wins.end() ? std::optional<bool>()
                                                                     : it->second;
                                         })}});
    for (int p : ps)
        by_prompt.push_back({{"n_prompt", p}, {"hybrid_wins_from_n_gen", scan(ns, [&](int n) {
                                                   auto it = wins.find({p, n});
                                                   return it == wins.end() ? std::optional<bool>()
                                                                           : it->second;
                                               })}});
    return {{"by_n_gen", by_gen}, {"by_n_prompt", by_prompt}};
}

int run_hybrid(const HybridOptions& o, ResultDocument& doc, std::ostream& out, std::ostream& err) {
    validate(o);
    doc.models.push_back(to_json(inspect_model(o.base.model_path)));
    for (const auto& ep : o.rpc_servers)
        add_rpc_server(ep);
    {
        auto names = split_device_set(o.prefill_device);
        for (auto& n : split_device_set(o.decode_device))
            names.push_back(std::move(n));
        check_device_names(names);
    }
    auto tel = open_telemetry(o.telemetry, err, o.progress);
    const bool sampling = tel && has_sources(*tel);
    SystemInfo si = read_system_info();
    for (auto& w : system_warnings(si, threads_or_default(o.base.n_threads)))
        doc.warnings.push_back(w);
    for (auto& w : model_warnings(doc.models))
        doc.warnings.push_back(w);
    auto save = [&](DocumentSave how = DocumentSave::progress) {
        if (o.out_path)
            write_document(doc, *o.out_path, how);
    };
    save();
    // llama.cpp may stop the process inside a point (an RPC server that dies): the last word
    // records the point's tests as failed, with what they measured so far. This thread is then
    // blocked inside llama.cpp, so the document holds still.
    std::vector<size_t> point_tests;
    std::atomic<bool> in_point{false};
    std::atomic<const char*> activity{""};
    LastWordScope last_word([&](const std::string& message) -> std::optional<std::string> {
        if (!in_point.load() || point_tests.empty())
            return std::nullopt;
        const std::string error =
            describe_llama_stop(message, o.prefill_device + "+" + o.decode_device, activity.load());
        for (size_t t : point_tests) {
            TestResult& r = doc.tests[t];
            r.status = Status::failed;
            r.error = error;
            r.stopped_by = StopReason::error;
            finish(r);
        }
        doc.finished_at = utc_timestamp();
        save();
        const TestResult& first = doc.tests[point_tests.front()];
        return "hybrid point pp" + std::to_string(first.config.n_prompt) + "+tg" +
               std::to_string(first.config.n_gen) + " failed: " + error + "; " +
               std::to_string(point_tests.front()) + " earlier test(s) kept" +
               (o.out_path ? " in " + *o.out_path : std::string());
    });
    auto progress = [&](const std::string& s) {
        if (o.progress)
            err << "stagebench: " << s << "\n";
    };

    const int max_p = *std::max_element(o.n_prompt.begin(), o.n_prompt.end());
    const int max_n = *std::max_element(o.n_gen.begin(), o.n_gen.end());

    // Both engines hold the model at once; that is the memory cost of the hybrid. llama.cpp
    // gives a context every accelerator loaded when it is created, so an engine that names
    // none (CPU) is created before one that names one (BLAS): each then runs on its own set.
    const bool decode_first = !named_accelerators(split_device_set(o.prefill_device)).empty() &&
                              named_accelerators(split_device_set(o.decode_device)).empty();
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

    if (sampling) {
        if (o.telemetry.idle_s > 0) {
            progress("measuring the idle baseline");
            tel->measure_idle(static_cast<int64_t>(o.telemetry.idle_s * 1e9));
        }
        tel->start();
    }

    json section = {{"prefill_device", o.prefill_device},
                    {"decode_device", o.decode_device},
                    {"baselines", o.baselines},
                    {"memory", memory},
                    {"points", json::array()}};
    doc.hybrid = from_json<HybridSection>(section);

    const auto bos = a.bos_token();
    const int32_t n_vocab = a.n_vocab();
    std::vector<uint8_t> buf;
    std::string stage_prefix;
    Marker mark = [&](const std::string& stage, bool begin, std::optional<int64_t> tokens) {
        if (begin)
            activity.store(stage == "prefill"    ? "prefill"
                           : stage == "transfer" ? "the state transfer"
                                                 : "decode");
        if (sampling)
            tel->mark(stage_prefix + stage, begin, tokens);
    };
    bool interrupted = false;
    for (int p : o.n_prompt) {
        for (int n : o.n_gen) {
            if (interrupted || interrupt_requested()) {
                interrupted = true;
                break;
            }
            std::vector<Mode> modes{{kHybridMode, &a, &b, true, 0}};
            if (o.baselines) {
                modes.push_back({kPrefillAloneMode, &a, &a, false, 0});
                modes.push_back({kDecodeAloneMode, &b, &b, false, 0});
            }
            const std::map<std::string, std::string> devices_of = {
                {kHybridMode, o.prefill_device + ">" + o.decode_device},
                {kPrefillAloneMode, o.prefill_device},
                {kDecodeAloneMode, o.decode_device}};
            for (auto& m : modes) {
                TestResult r;
                r.config = base_config(o);
                r.config.devices = devices_of.at(m.name);
                r.config.n_prompt = p;
                r.config.n_gen = n;
                r.prefill.emplace().n_tokens = p;
                r.decode.emplace().n_tokens = n;
                r.decode->kv_depth_start = p;
                r.decode->token_latency_ns.reserve(static_cast<size_t>(n) * o.base.reps);
                auto bk = m.pre->active_backends();
                for (auto& x : m.dec->active_backends())
                    if (std::find(bk.begin(), bk.end(), x) == bk.end())
                        bk.push_back(x);
                r.backends = bk;
                if (m.transfer)
                    r.notes.push_back("prefill on " + o.prefill_device +
                                      ", sequence state moved, " + "decode on " + o.decode_device +
                                      "; TTFT includes the state transfer");
                r.started_ns = now_ns();
                m.test = doc.tests.size();
                doc.tests.push_back(std::move(r));
            }
            point_tests.clear();
            for (const auto& m : modes)
                point_tests.push_back(m.test);
            activity.store("");
            in_point.store(true);
            PointSamples ps;
            const std::string name = "pp" + std::to_string(p) + "+tg" + std::to_string(n);
            std::string error;
            ErrorKind error_kind = ErrorKind::runtime;
            try {
                if (o.base.warmup) {
                    progress(name + ": warmup");
                    activity.store("warmup");
                    PointSamples scratch;
                    TestResult w;
                    w.prefill.emplace();
                    w.decode.emplace();
                    const auto prompt = random_tokens(p, n_vocab, o.base.seed * 1000003 + 999);
                    const auto gen = random_tokens(1, n_vocab, o.base.seed * 7919 + 999);
                    stage_prefix = "warmup/";
                    for (const auto& m : modes)
                        measure(m, w, prompt, gen, buf, scratch, [](auto&&...) {});
                }
                for (int rep = 0; rep < o.base.reps; ++rep) {
                    if (interrupt_requested()) {
                        interrupted = true;
                        break;
                    }
                    progress(name + ": repetition " + std::to_string(rep + 1) + "/" +
                             std::to_string(o.base.reps));
                    auto prompt = random_tokens(p, n_vocab, o.base.seed * 1000003 + rep);
                    if (bos && !prompt.empty())
                        prompt[0] = *bos;
                    const auto gen = random_tokens(n, n_vocab, o.base.seed * 7919 + rep);
                    // Interleaved, and the order rotated every repetition, so that drift
                    // (heat, other load) does not favour one mode.
                    for (size_t k = 0; k < modes.size(); ++k) {
                        const Mode& m = modes[(k + rep) % modes.size()];
                        TestResult& r = doc.tests[m.test];
                        stage_prefix = "test" + std::to_string(m.test) + "/";
                        measure(m, r, prompt, gen, buf, ps, mark);
                        r.reps_done = rep + 1;
                    }
                }
            } catch (const Error& e) {
                error = e.what();
                error_kind = e.kind();
            } catch (const std::exception& e) {
                error = e.what();
            }
            in_point.store(false);
            json pt = {{"n_prompt", p}, {"n_gen", n}, {"tests", json::object()}};
            for (auto& m : modes) {
                TestResult& r = doc.tests[m.test];
                r.stopped_by = interrupted ? StopReason::interrupt : StopReason::reps;
                if (!error.empty()) {
                    r.status = Status::failed;
                    r.error = error;
                    r.error_kind = error_kind_name(error_kind);
                    r.stopped_by = StopReason::error;
                } else if (interrupted) {
                    r.status = Status::interrupted;
                }
                finish(r);
                if (auto w = stall_warning(r))
                    doc.warnings.push_back(*w);
                if (sampling)
                    r.telemetry = test_telemetry(*tel, "test" + std::to_string(m.test) + "/");
                pt["tests"][m.name] = m.test;
            }
            pt["transfer"] = {{"start_ns", ps.start_ns},
                              {"duration_ns", ps.transfer_ns},
                              {"save_ns", ps.save_ns},
                              {"restore_ns", ps.restore_ns},
                              {"bytes", ps.bytes},
                              {"duration", summary_of(ps.transfer_ns)},
                              {"save", summary_of(ps.save_ns)},
                              {"restore", summary_of(ps.restore_ns)}};
            if (!ps.bytes.empty() && !ps.transfer_ns.empty()) {
                const auto d = summarize_ns(ps.transfer_ns);
                pt["transfer"]["bytes_per_token"] = static_cast<double>(ps.bytes.back()) / p;
                if (d.median && *d.median > 0)
                    pt["transfer"]["gbps"] = ps.bytes.back() / *d.median;
            }
            json e2e = json::object();
            for (const auto& [mode, v] : ps.e2e_ns)
                e2e[mode] = {{"samples_ns", v}, {"summary", summary_of(v)}};
            pt["e2e"] = e2e;
            pt["comparison"] = compare_modes(ps.e2e_ns[kHybridMode], ps.e2e_ns[kPrefillAloneMode],
                                             ps.e2e_ns[kDecodeAloneMode]);
            if (!error.empty())
                progress(name + " failed: " + error);
            section["points"].push_back(pt);
            section["crossover"] = crossovers(section["points"]);
            doc.hybrid = from_json<HybridSection>(section);
            doc.finished_at = utc_timestamp();
            save();
        }
        if (interrupted)
            break;
    }
    a.unload();
    b.unload();
    finish_telemetry(tel.get(), doc);
    doc.finished_at = utc_timestamp();
    save(DocumentSave::final);
    if (o.format == "json")
        out << dump_json(to_json(doc), 2) << "\n";
    else
        write_hybrid_markdown(doc, out);
    if (interrupted)
        err << "stagebench: interrupted; what was measured is kept"
            << (o.out_path ? " in " + *o.out_path : std::string()) << "\n";
    return exit_code_for(doc.tests, interrupted);
}

}  // namespace sb
