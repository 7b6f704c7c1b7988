#include "scenario/sustained.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>

#include <fmt/format.h>

#include "analysis/sustained_summary.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/json_util.hpp"
#include "core/last_word.hpp"
#include "core/parse.hpp"
#include "core/sysinfo.hpp"
#include "engine/backends.hpp"
#include "engine/llama_engine.hpp"
#include "profile/traced_pass.hpp"
#include "scenario/background_load.hpp"
#include "scenario/run_command.hpp"
#include "scenario/run_context.hpp"
#include "scenario/stage_sweep.hpp"
#include "telemetry/telemetry_json.hpp"

namespace sb {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Fills a round's temperature and frequency figures from its telemetry record.
void round_telemetry(const StageTelemetry& st, SustainedRound& r) {
    double cpu_sum = 0;
    int cpu_n = 0;
    for (const auto& g : st.gauges) {
        if (g.quantity == Quantity::temperature) {
            auto hotter = [](std::optional<double>& dst, const std::optional<double>& mc) {
                if (mc && (!dst || *mc / 1000.0 > *dst))
                    dst = *mc / 1000.0;
            };
            hotter(r.temp_start_c, g.start);
            hotter(r.temp_end_c, g.end);
            hotter(r.temp_max_c, g.max);
        } else if (g.quantity == Quantity::frequency && ends_with(g.metric, ".cur_freq_khz")) {
            r.freq[g.metric] = FreqStat{g.mean, g.min};
            if (g.metric.rfind("cpufreq.", 0) == 0 && g.mean) {
                cpu_sum += *g.mean;
                ++cpu_n;
            }
        }
    }
    if (cpu_n > 0)
        r.cpu_freq_mean_khz = cpu_sum / cpu_n;
}

std::optional<double> hottest_now(const Sampler& tel) {
    std::optional<double> hottest;
    for (const auto& s : tel.record().series) {
        if (s.metric.quantity != Quantity::temperature || s.values.empty())
            continue;
        for (auto it = s.values.rbegin(); it != s.values.rend(); ++it)
            if (*it) {
                if (!hottest || **it / 1000.0 > *hottest)
                    hottest = **it / 1000.0;
                break;
            }
    }
    return hottest;
}

double wait_cooldown(const CooldownPolicy& p, Sampler* tel, Progress& progress) {
    const int64_t t0 = now_ns();
    auto elapsed = [&] { return (now_ns() - t0) * 1e-9; };
    if (p.kind == CooldownPolicy::Kind::fixed) {
        while (elapsed() < p.seconds && !interrupt_requested())
            std::this_thread::sleep_for(std::chrono::milliseconds(
                std::min<int64_t>(100, static_cast<int64_t>((p.seconds - elapsed()) * 1000) + 1)));
    } else if (p.kind == CooldownPolicy::Kind::until_temp && tel) {
        while (!interrupt_requested() && elapsed() < p.timeout_s) {
            auto t = hottest_now(*tel);
            if (t && *t <= p.target_c)
                break;
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
        if (elapsed() >= p.timeout_s)
            progress.note("cool-down to " + fmt::format("{:.1f}", p.target_c) +
                          " C timed out after " + fmt::format("{:.0f}", p.timeout_s) + " s");
    }
    return elapsed();
}

}  // namespace

CooldownPolicy parse_cooldown(const std::string& text) {
    CooldownPolicy p;
    auto bad = [&] {
        return usage_error("--cooldown '" + text + "': expected 0, 10s, 500ms or until-temp:45C");
    };
    if (text == "0" || text == "none" || text.empty())
        return p;
    if (text.rfind("until-temp:", 0) == 0) {
        std::string v = text.substr(11);
        if (!v.empty() && (v.back() == 'C' || v.back() == 'c'))
            v.pop_back();
        const auto c = parse_decimal(v);  // decimal only: not 0x2D
        if (!c || *c <= 0 || *c > 150)
            throw bad();
        p.target_c = *c;
        p.kind = CooldownPolicy::Kind::until_temp;
        return p;
    }
    // A day at most: a longer pause is a typo.
    const auto ns = parse_duration(text);
    if (!ns || *ns > 86'400'000'000'000)
        throw bad();
    p.seconds = *ns / 1e9;
    p.kind = p.seconds > 0 ? CooldownPolicy::Kind::fixed : CooldownPolicy::Kind::none;
    return p;
}

std::set<int> parse_trace_ops_rounds(const std::string& text, int rounds) {
    std::set<int> out;
    if (text.empty() || text == "none")
        return out;
    auto bad = [&](const std::string& why) {
        return usage_error("--trace-ops-rounds '" + text + "': " + why +
                           " (expected round numbers and 'last', e.g. 1,20 or 1,last)");
    };
    for (const std::string& item : split_list(text)) {
        if (item == "last") {
            out.insert(rounds);
        } else {
            if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos ||
                item.size() > 9)
                throw bad("'" + item + "' is not a round number");
            const int r = std::stoi(item);
            if (r < 1 || r > rounds)
                throw bad("round " + item + " is not in 1.." + std::to_string(rounds));
            out.insert(r);
        }
    }
    return out;
}

SustainedRound round_record(const TestResult& r, int round) {
    SustainedRound sr;
    sr.round = round;
    sr.start_ns = r.started_ns;
    sr.end_ns = r.finished_ns;
    sr.status = r.status;
    sr.error = r.error;
    if (r.prefill && !r.prefill->tokens_per_s.empty())
        sr.prefill_tps = r.prefill->tokens_per_s[0];
    if (r.decode && !r.decode->tokens_per_s.empty()) {
        sr.decode_tps = r.decode->tokens_per_s[0];
        if (r.decode->itl.median)
            sr.itl_p50_ms = *r.decode->itl.median * 1e-6;
        if (r.decode->itl.p99)
            sr.itl_p99_ms = *r.decode->itl.p99 * 1e-6;
    }
    if (!r.ttft_ns.empty())
        sr.ttft_ms = r.ttft_ns[0] * 1e-6;
    return sr;
}

PhaseOutcome run_phase_rounds(TestConfig c, int rounds, SustainedPhase& phase,
                              const RoundHooks& hooks) {
    PhaseOutcome out;
    auto interrupted = [&] {
        return hooks.interrupted ? hooks.interrupted() : interrupt_requested();
    };
    for (int round = 1; round <= rounds && !interrupted() && !out.bad_input; ++round) {
        const double cooldown_s = round > 1 && hooks.cooldown ? hooks.cooldown(round) : 0;
        if (interrupted())
            break;
        c.warmup = round == 1;  // one warm-up before each phase, never between rounds
        if (hooks.round_marker)
            hooks.round_marker(round, true);
        TestResult r = hooks.measure(c);
        if (hooks.round_marker)
            hooks.round_marker(round, false);
        SustainedRound sr = round_record(r, round);
        sr.cooldown_s = cooldown_s;
        if (r.status != Status::ok)
            ++out.failed;
        // A model or option the engine refuses will be refused every round: stop here.
        out.bad_input |= r.error_kind == "input" || r.error_kind == "usage";
        if (hooks.round_done)
            hooks.round_done(round, r, sr);
        phase.rounds.push_back(sr);
        phase.across = summarize_rounds(
            phase.rounds, hooks.freq_series ? hooks.freq_series() : std::vector<Series>{});
        if (hooks.after_round)
            hooks.after_round(round);
    }
    return out;
}

int run_sustained(const SustainedOptions& o, ResultDocument& doc, std::ostream& err) {
    if (o.rounds < 1)
        throw usage_error("--rounds must be at least 1");
    if (o.prompt_tokens < 1)
        throw usage_error("--prompt-tokens must be at least 1");
    if (o.max_tokens < 1)
        throw usage_error("--max-tokens must be at least 1");
    if (o.chunk && *o.chunk < 1)
        throw usage_error("--chunk must be at least 1");
    if (o.format != OutputFormat::md && o.format != OutputFormat::json)
        throw usage_error("-o must be md or json");
    const std::set<int> traced_rounds = parse_trace_ops_rounds(o.trace_ops_rounds, o.rounds);
    CooldownPolicy cooldown = parse_cooldown(o.cooldown);
    cooldown.timeout_s = o.cooldown_timeout_s;
    std::optional<BackgroundSpec> bg;
    if (o.background)
        bg = parse_background(*o.background);
    if (o.http.engines.size() != 1)
        throw usage_error("sustained runs one engine: --engine llama or --engine http");
    const bool over_http = o.http.engines[0] == "http";
    if (over_http && !traced_rounds.empty())
        throw usage_error(
            "--trace-ops-rounds needs the in-process engine (--engine llama): a server's ops "
            "cannot be traced");
    const int threads = threads_or_default(o.threads);
    MatrixSpec matrix;
    matrix.models = {o.model};
    matrix.devices = {o.devices};
    matrix.n_prompt = {o.prompt_tokens};
    matrix.n_gen = {o.max_tokens};
    matrix.n_threads = {threads};
    matrix.reps = 1;
    matrix.seed = o.seed;
    std::unique_ptr<HttpRun> http;
    std::vector<TestConfig> http_tests;
    if (over_http) {
        http = std::make_unique<HttpRun>(o.http, matrix, o.rpc_servers);
        http_tests = http->plan(matrix);
    }
    // The run context: the model described, RPC servers added, device names checked,
    // telemetry, warnings, the idle baseline and the document saved as it grows.
    RunSetup setup;
    if (!http || http->needs_gguf())
        setup.models = {o.model};
    setup.rpc_servers = o.rpc_servers;
    if (!over_http)
        setup.device_sets = {o.devices};
    setup.telemetry = o.telemetry;
    setup.out_path = o.out_path;
    setup.progress = o.progress;
    setup.terminal = o.progress && Progress::stderr_is_terminal();
    RunContext run(doc, setup, err, nullptr);
    if (http)
        http->connect(doc, http_tests, err, o.progress);
    run.open(threads);
    Sampler* tel = run.sampler();
    const bool sampling = tel != nullptr;
    if (cooldown.kind == CooldownPolicy::Kind::until_temp) {
        if (!sampling || !hottest_now(*tel)) {
            if (sampling)
                tel->sample_now();
            if (!sampling || !hottest_now(*tel))
                throw input_error("--cooldown " + o.cooldown +
                                  " needs a temperature sensor, and none was found");
        }
    }
    TestConfig c;
    c.model_path = o.model;
    c.devices = o.devices;
    c.n_prompt = o.prompt_tokens;
    c.n_gen = o.max_tokens;
    c.n_threads = threads;
    c.n_batch = o.chunk ? *o.chunk : 2048;
    c.n_ubatch = std::min(c.n_batch, 512);
    c.reps = c.max_reps = 1;
    c.seed = o.seed;

    SustainedResult res;
    res.config = from_json<SustainedConfig>(
        {{"model", o.model},
         {"devices", o.devices},
         {"threads", threads},
         {"rounds", o.rounds},
         {"prompt_tokens", o.prompt_tokens},
         {"max_tokens", o.max_tokens},
         {"chunk", o.chunk ? nlohmann::json(*o.chunk) : nlohmann::json(nullptr)},
         {"cooldown", o.cooldown},
         {"background", o.background ? nlohmann::json(*o.background) : nlohmann::json(nullptr)},
         {"seed", o.seed},
         {"trace_ops_rounds", traced_rounds}});
    auto save = [&] {
        doc.sustained = res;
        doc.finished_at = utc_timestamp();
        run.save();
    };
    save();
    // After a round the document is saved as it goes, but never at a cost that grows into the
    // workload: every save writes the whole document, whose size grows with the rounds, so a
    // save after every round would stretch the pauses between late rounds (cooling the device
    // the test means to heat). A round's save waits until ten times the last save's cost has
    // passed since it ended (saves take at most about a tenth of the run); the last word (a
    // stop inside llama.cpp) and the end of the run always save.
    int64_t last_save_ns = 0, last_save_cost_ns = 0;
    auto save_after_round = [&] {
        const int64_t t = now_ns();
        if (last_save_ns > 0 && t - last_save_ns < 10 * last_save_cost_ns)
            return;
        save();
        last_save_ns = now_ns();
        last_save_cost_ns = last_save_ns - t;
    };
    run.start();

    LlamaEngine engine;
    SweepHooks hooks;
    std::string prefix;
    // llama.cpp may stop the process inside a round (an RPC server that dies): the last word
    // records that round as failed after the ones before it. This thread is then blocked
    // inside llama.cpp, so the document holds still.
    std::atomic<int> running_round{0};  // 0: between rounds
    std::atomic<const char*> activity{""};
    std::atomic<int64_t> round_start_ns{0};
    LastWordScope last_word([&](const std::string& message) -> std::optional<std::string> {
        const int round = running_round.load();
        if (round == 0 || res.phases.empty())
            return std::nullopt;
        TestResult r;
        r.config = c;
        r.config.warmup = round == 1;
        record_failure(r, describe_llama_stop(message, c.devices.str(), activity.load()),
                       std::nullopt);
        r.started_ns = round_start_ns.load();
        r.finished_ns = now_ns();
        r.notes.push_back("sustained " + res.phases.back().name + " round " +
                          std::to_string(round));
        const SustainedRound sr = round_record(r, round);
        doc.tests.push_back(r);
        res.phases.back().rounds.push_back(sr);
        save();
        return res.phases.back().name + " round " + std::to_string(round) + " failed: " + *r.error +
               "; the rounds before it are kept" +
               (o.out_path ? " in " + *o.out_path : std::string());
    });
    // Progress: one line for the device with the phase, the round and the stage, and the time
    // left from the rounds done.
    Progress& progress = run.progress();
    progress.set_total(static_cast<double>(o.rounds) * (bg ? 2 : 1));
    const std::string device = over_http ? o.devices + " (HTTP)" : o.devices;
    ProgressStep step;
    hooks.activity = [&](const char* what) {
        activity.store(what);
        step.stage = what;
        progress.step(device, step);
    };
    if (sampling)
        hooks.stage_marker = [&](const std::string& stage, bool begin,
                                 std::optional<int64_t> tokens) {
            tel->mark(prefix + stage, begin, tokens);
        };
    // When the traced passes ran: their samples are left out of the phases' frequency series.
    std::vector<std::pair<int64_t, int64_t>> pass_windows;
    auto in_pass = [&](int64_t t) {
        for (const auto& [a, b] : pass_windows)
            if (t >= a && t <= b)
                return true;
        return false;
    };
    int failed = 0;
    bool bad_input = false;
    std::vector<std::pair<std::string, std::optional<BackgroundSpec>>> phases{
        {bg ? "baseline" : "rounds", std::nullopt}};
    if (bg)
        phases.push_back({"loaded", bg});
    for (size_t ph = 0; ph < phases.size() && !interrupt_requested() && !bad_input; ++ph) {
        SustainedPhase phase;
        phase.name = phases[ph].first;
        phase.background = phases[ph].second ? phases[ph].second->text : "";
        res.phases.push_back(phase);
        std::unique_ptr<BackgroundLoad> load;
        if (phases[ph].second) {
            load = std::make_unique<BackgroundLoad>(*phases[ph].second);
            load->start();
        }
        const int64_t phase_start = now_ns();
        RoundHooks rh;
        rh.cooldown = [&](int round) {
            step.stage = "cool-down";
            step.rep = round;
            progress.step(device, step);
            return wait_cooldown(cooldown, tel, progress);
        };
        rh.measure = [&](const TestConfig& rc) {
            if (!http)
                return run_test(engine, rc, hooks, std::nullopt);
            TestConfig hc = http_tests.at(0);
            hc.warmup = rc.warmup;
            hc.reps = hc.max_reps = 1;
            hc.n_batch = rc.n_batch;
            hc.n_ubatch = rc.n_ubatch;
            return http->run(hc, hooks);
        };
        rh.round_marker = [&](int round, bool begin) {
            if (begin) {
                prefix = "p" + std::to_string(ph) + "/r" + std::to_string(round) + "/";
                if (sampling)
                    tel->mark(prefix + "round", true);
                activity.store("");
                step = {"sustained " + phase.name, round, o.rounds, "", "round"};
                progress.step(device, step);
                round_start_ns.store(now_ns());
                running_round.store(round);
            } else {
                running_round.store(0);
                if (sampling)
                    tel->mark(prefix + "round", false);
            }
        };
        rh.round_done = [&](int round, TestResult& r, SustainedRound& sr) {
            if (sampling) {
                r.telemetry = test_telemetry(*tel, prefix);
                if (auto st = tel->stage_summary(prefix + "round"))
                    round_telemetry(*st, sr);
                if (auto p = tel->stage_summary(prefix + "prefill")) {
                    sr.prefill_energy_j = p->total_energy_j;
                    sr.prefill_net_energy_j = p->total_net_energy_j;
                }
                if (auto d = tel->stage_summary(prefix + "decode")) {
                    sr.decode_energy_j = d->total_energy_j;
                    sr.decode_j_per_token = d->j_per_token;
                    sr.decode_net_energy_j = d->total_net_energy_j;
                    sr.decode_net_j_per_token = d->net_j_per_token;
                }
            }
            r.notes.push_back("sustained " + phase.name + " round " + std::to_string(round));
            doc.tests.push_back(std::move(r));
            progress.note(phase.name + " round " + std::to_string(round) + "/" +
                          std::to_string(o.rounds) + ": decode " +
                          (sr.decode_tps ? fmt::format("{:.1f}", *sr.decode_tps) : "-") + " tok/s" +
                          (sr.error ? " (" + *sr.error + ")" : ""));
            progress.advance();
        };
        rh.freq_series = [&] {
            std::vector<Series> freq;
            if (sampling)
                for (auto& s : tel->record().series)
                    if (s.metric.quantity == Quantity::frequency) {
                        Series cut = s;
                        cut.t_ns.clear();
                        cut.values.clear();
                        for (size_t i = 0; i < s.t_ns.size(); ++i)
                            if (s.t_ns[i] >= phase_start && !in_pass(s.t_ns[i])) {
                                cut.t_ns.push_back(s.t_ns[i]);
                                cut.values.push_back(s.values[i]);
                            }
                        freq.push_back(std::move(cut));
                    }
            return freq;
        };
        rh.after_round = [&](int round) {
            save_after_round();
            // After the round's record is final, so that tracing overhead reaches none of its
            // numbers; the next round's cool-down starts after the pass.
            if (!traced_rounds.count(round) || interrupt_requested())
                return;
            const std::string label = "traced pass after round " + std::to_string(round);
            step.stage = label;
            progress.step(device, step);
            TracedPass pass = run_traced_pass(c, label, [&](const std::string& m) {
                progress.note(phase.name + " " + label + ": " + m);
            });
            pass_windows.push_back({pass.start_ns, pass.end_ns});
            if (pass.status != "ok") {
                ++failed;
                progress.done(device);  // the status line makes way for a line shown even with -q
                err << "stagebench: " << phase.name << " " << label
                    << " failed: " << pass.error.value_or("?") << "\n";
            }
            res.phases.back().rounds.back().ops = from_json<RoundTracedPass>(to_json(pass));
            save();
        };
        const PhaseOutcome po = run_phase_rounds(c, o.rounds, res.phases.back(), rh);
        failed += po.failed;
        bad_input |= po.bad_input;
    }
    if (res.phases.size() == 2)
        res.slowdown = phase_slowdown(res.phases[0], res.phases[1]);
    progress.done(device);
    engine.unload();
    if (http)
        http->stop();
    doc.sustained = res;
    run.finish();
    const int code = exit_code_for(doc.tests, interrupt_requested());
    return code == 0 && failed > 0 ? 1 : code;
}

}  // namespace sb
