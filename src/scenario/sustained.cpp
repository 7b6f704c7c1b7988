#include "scenario/sustained.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>

#include <fmt/format.h>

#include "analysis/sustained_summary.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/json_util.hpp"
#include "core/parse.hpp"
#include "core/sysinfo.hpp"
#include "scenario/background_load.hpp"
#include "scenario/run_context.hpp"
#include "scenario/stage_sweep.hpp"
#include "scenario/traced_pass.hpp"

namespace sb {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Fills a round's temperature and frequency figures from its telemetry record.
void round_telemetry(const StageWindow& st, SustainedRound& r) {
    double cpu_sum = 0;
    int cpu_n = 0;
    for (const auto& g : st.gauges) {
        if (g.unit == unit_of(Quantity::temperature)) {
            auto hotter = [](std::optional<double>& dst, const std::optional<double>& mc) {
                if (mc && (!dst || *mc / 1000.0 > *dst))
                    dst = *mc / 1000.0;
            };
            hotter(r.temp_start_c, g.start);
            hotter(r.temp_end_c, g.end);
            hotter(r.temp_max_c, g.max);
        } else if (g.unit == unit_of(Quantity::frequency) && ends_with(g.metric, ".cur_freq_khz")) {
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
    for (const auto& s : tel.series_of(Quantity::temperature)) {
        if (s.values.empty())
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

// Waits on the run's clock, in slices so that Ctrl-C ends the wait early.
double wait_cooldown(const CooldownPolicy& p, Sampler* tel, Progress& progress, const Clock& clock,
                     const Pause& pause) {
    const int64_t t0 = clock();
    auto elapsed = [&] { return static_cast<double>(clock() - t0) * 1e-9; };
    if (p.kind == CooldownPolicy::Kind::fixed) {
        const auto want_ns = static_cast<int64_t>(std::llround(p.seconds * 1e9));
        for (int64_t waited = 0; waited < want_ns && !interrupt_requested(); waited = clock() - t0)
            pause(std::min<int64_t>(100'000'000, want_ns - waited));
    } else if (p.kind == CooldownPolicy::Kind::until_temp && tel) {
        while (!interrupt_requested() && elapsed() < p.timeout_s) {
            auto t = hottest_now(*tel);
            if (t && *t <= p.target_c)
                break;
            pause(200'000'000);
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
        if (!r.decode->duration_ns.empty())
            sr.decode_s = static_cast<double>(r.decode->duration_ns[0]) * 1e-9;
        if (r.decode->itl.median)
            sr.itl_p50_ms = *r.decode->itl.median * 1e-6;
        if (r.decode->itl.p99)
            sr.itl_p99_ms = *r.decode->itl.p99 * 1e-6;
    }
    if (!r.ttft_ns.empty())
        sr.ttft_ms = r.ttft_ns[0] * 1e-6;
    add_request_figures(r, sr);
    return sr;
}

PhaseOutcome run_phase_rounds(TestConfig c, int rounds, SustainedPhase& phase,
                              const RoundHooks& hooks) {
    PhaseOutcome out;
    auto interrupted = [&] {
        return hooks.interrupted ? hooks.interrupted() : interrupt_requested();
    };
    const int64_t start_ns = hooks.clock();
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
        out.bad_input |= failed_on_bad_input(r);
        if (hooks.round_done)
            hooks.round_done(round, r, sr);
        phase.rounds.push_back(sr);
        phase.across =
            summarize_rounds(phase.rounds, hooks.freq_series ? hooks.freq_series(start_ns)
                                                             : std::vector<TelemetrySeries>{});
        if (hooks.after_round)
            hooks.after_round(round);
    }
    return out;
}

namespace {

// What the options say once checked: the cool-down, the background load, the traced rounds.
struct SustainedPlan {
    CooldownPolicy cooldown;
    std::optional<BackgroundSpec> background;
    std::set<int> traced_rounds;
    int threads = 0;
};

SustainedPlan plan_of(const SustainedOptions& o) {
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
    SustainedPlan p;
    p.traced_rounds = parse_trace_ops_rounds(o.trace_ops_rounds, o.rounds);
    p.cooldown = parse_cooldown(o.cooldown);
    p.cooldown.timeout_s = o.cooldown_timeout_s;
    if (o.background)
        p.background = parse_background(*o.background);
    if (o.http.engines.size() != 1)
        throw usage_error("sustained runs one engine: --engine llama or --engine http");
    if (o.http.engines[0] == EngineKind::http && !p.traced_rounds.empty())
        throw usage_error(
            "--trace-ops-rounds needs the in-process engine (--engine llama): a server's ops "
            "cannot be traced");
    p.threads = threads_or_default(o.workload.n_threads);
    return p;
}

// The workload of every round as a one-point matrix: the prompt and generation bounded, one
// repetition, the batch chunk's. HttpRun plans its test on the engine --engine names.
MatrixSpec round_matrix(const SustainedOptions& o, int threads) {
    const Workload& w = o.workload;
    MatrixSpec m;
    m.models = {w.model_path};
    m.devices = {w.devices};
    m.n_gpu_layers = {w.n_gpu_layers};
    m.n_prompt = {o.prompt_tokens};
    m.n_gen = {o.max_tokens};
    m.n_threads = {threads};
    m.n_batch = {o.chunk ? *o.chunk : 2048};
    m.n_ubatch = {512};
    m.flash_attn = {w.flash_attn};
    m.type_k = {w.type_k};
    m.type_v = {w.type_v};
    m.reps = 1;
    m.seed = o.seed;
    return m;
}

// A round's test: the planned one with one repetition and the round's batch (a server's test
// is planned with the default batch; --chunk is the round's).
TestConfig round_config(TestConfig planned, const SustainedOptions& o) {
    planned.reps = planned.max_reps = 1;
    planned.n_batch = o.chunk ? *o.chunk : 2048;
    planned.n_ubatch = std::min(planned.n_batch, 512);
    return planned;
}

SustainedConfig section_config(const SustainedOptions& o, const SustainedPlan& p) {
    SustainedConfig c;
    c.model = o.workload.model_path;
    c.devices = o.workload.devices.str();
    c.threads = p.threads;
    c.rounds = o.rounds;
    c.prompt_tokens = o.prompt_tokens;
    c.max_tokens = o.max_tokens;
    c.chunk = o.chunk;
    c.cooldown = o.cooldown;
    c.background = o.background;
    c.seed = o.seed;
    c.trace_ops_rounds.assign(p.traced_rounds.begin(), p.traced_rounds.end());
    return c;
}

// The profiler's traced pass as a round's record.
RoundTracedPass traced_pass_of(const TracedPass& pass) {
    RoundTracedPass r;
    r.label = pass.label;
    r.start_ns = pass.start_ns;
    r.end_ns = pass.end_ns;
    r.status = pass.status == "ok" ? PassStatus::ok : PassStatus::error;
    r.error = pass.error;
    r.devices = pass.profile.devices;
    r.backends = pass.profile.backends;
    r.n_threads = pass.profile.n_threads;
    r.method = pass.profile.method;
    r.stages = pass.profile.stages;
    return r;
}

// The rounds of one invocation on its run context: the phases, each round a test of the
// context, the round records in the document's sustained section.
class SustainedRun {
  public:
    // The rounds measure test (planned by http, connected) on the engine it names, as `run`'s
    // tests do (HttpRun::measure).
    SustainedRun(RunContext& run, const SustainedOptions& o, const SustainedPlan& plan,
                 HttpRun& http, const TestConfig& test)
        : run_(run), o_(o), plan_(plan), http_(http), c_(round_config(test, o)) {
        res_.config = section_config(o, plan);
        device_ = run.device_label(c_);
    }
    void publish() {
        run_.update([this](ResultDocument& doc) { doc.sustained = res_; });
    }
    // One phase: its rounds, with the background load running when given.
    void phase(const std::string& name, const std::optional<BackgroundSpec>& bg);
    void finish_phases() {
        if (res_.phases.size() == 2)
            res_.slowdown = phase_slowdown(res_.phases[0], res_.phases[1]);
        run_.progress().done(device_);
        http_.stop();
        run_.update([this](ResultDocument& doc) {
            MachineLoad load;
            if (const auto& a = json_field(doc.system, "loadavg_1m"); a.is_number())
                load.loadavg_1m = a.get<double>();
            if (const auto& c = json_field(doc.system, "cores_logical"); c.is_number_integer())
                load.cores_logical = c.get<int64_t>();
            name_machine_load(res_, load, doc.warnings);
            doc.sustained = res_;
        });
    }
    int failed() const { return failed_; }
    bool bad_input() const { return bad_input_; }

  private:
    RoundHooks hooks();
    TestResult measure(int round, const TestConfig& c);
    void round_done(int round, TestResult& r, SustainedRound& sr);
    std::vector<TelemetrySeries> freq_series(int64_t since_ns) const;
    void traced_pass(int round);
    Sampler* tel() { return run_.sampler(); }

    RunContext& run_;
    const SustainedOptions& o_;
    const SustainedPlan& plan_;
    HttpRun& http_;
    TestConfig c_;  // every round's test (its warm-up the round's)
    SustainedResult res_;
    std::string device_;
    ProgressStep step_;
    std::string prefix_;  // the running round's telemetry stages' prefix
    size_t phase_index_ = 0;
    // When the traced passes ran: their samples are left out of the phases' frequency series.
    std::vector<std::pair<int64_t, int64_t>> pass_windows_;
    int failed_ = 0;
    bool bad_input_ = false;
};

void SustainedRun::phase(const std::string& name, const std::optional<BackgroundSpec>& bg) {
    phase_index_ = res_.phases.size();
    SustainedPhase phase;
    phase.name = name;
    phase.background = bg ? bg->text : "";
    res_.phases.push_back(phase);
    std::unique_ptr<BackgroundLoad> load;
    if (bg) {
        // Its duty cycle on the run's clock, waited with the run's pause from its own threads
        // (sb::now_ns and sb::sleep_ns in a real run).
        load = std::make_unique<BackgroundLoad>(*bg, run_.clock(),
                                                [this](int64_t ns) { run_.pause(ns); });
        load->start();
    }
    const PhaseOutcome po = run_phase_rounds(c_, o_.rounds, res_.phases.back(), hooks());
    failed_ += po.failed;
    bad_input_ |= po.bad_input;
}

RoundHooks SustainedRun::hooks() {
    RoundHooks rh;
    rh.cooldown = [this](int round) {
        step_.stage = "cool-down";
        step_.rep = round;
        run_.progress().step(device_, step_);
        return wait_cooldown(plan_.cooldown, tel(), run_.progress(), run_.clock(),
                             [this](int64_t ns) { run_.pause(ns); });
    };
    rh.measure = [this](const TestConfig& c) {
        return measure(static_cast<int>(res_.phases.back().rounds.size()) + 1, c);
    };
    rh.round_marker = [this](int round, bool begin) {
        if (begin)
            prefix_ = "p" + std::to_string(phase_index_) + "/r" + std::to_string(round) + "/";
        if (tel())
            tel()->mark(prefix_ + "round", begin);
    };
    rh.round_done = [this](int round, TestResult& r, SustainedRound& sr) {
        round_done(round, r, sr);
    };
    rh.clock = run_.clock();
    rh.freq_series = [this](int64_t since_ns) { return freq_series(since_ns); };
    rh.after_round = [this](int round) {
        publish();
        // After the round's record is final, so that tracing overhead reaches none of its
        // numbers; the next round's cool-down starts after the pass.
        if (plan_.traced_rounds.count(round) && !run_.should_stop())
            traced_pass(round);
    };
    rh.interrupted = [this] { return run_.should_stop(); };
    return rh;
}

TestResult SustainedRun::measure(int round, const TestConfig& tc) {
    const std::string phase = res_.phases.back().name;
    const std::string note = "sustained " + phase + " round " + std::to_string(round);
    step_ = {"sustained " + phase, round, o_.rounds, "", "round"};
    // The round is a test of the run context; should llama.cpp stop the process inside it, the
    // last word records it failed, as a test and as the phase's next round.
    RunningTest running;
    running.stage_prefix = prefix_;
    running.step = step_;
    running.own_report = true;
    running.so_far = [tc, note] {
        TestResult r;
        r.config = tc;
        r.notes.push_back(note);
        return r;
    };
    running.on_failed = [this, round](const TestResult& r, ResultDocument& doc) {
        res_.phases.back().rounds.push_back(round_record(r, round));
        doc.sustained = res_;
    };
    run_.name_running(phase + " round " + std::to_string(round));
    const SweepHooks hooks = run_.begin_test(tc, std::move(running));
    return http_.measure(tc, hooks, run_.clock());
}

void SustainedRun::round_done(int round, TestResult& r, SustainedRound& sr) {
    run_.sync_telemetry_log();  // a log beside the run covers the round before it is read
    if (Sampler* t = tel()) {
        if (auto st = t->stage_summary(prefix_ + "round"))
            round_telemetry(*st, sr);
        if (auto p = t->stage_summary(prefix_ + "prefill")) {
            sr.prefill_energy_j = p->total.energy_j;
            sr.prefill_net_energy_j = p->total.net_energy_j;
        }
        if (auto d = t->stage_summary(prefix_ + "decode")) {
            sr.decode_energy_j = d->total.energy_j;
            sr.decode_j_per_token = d->total.j_per_token;
            sr.decode_net_energy_j = d->total.net_energy_j;
            sr.decode_net_j_per_token = d->total.net_j_per_token;
        }
    }
    const std::string& phase = res_.phases.back().name;
    r.notes.push_back("sustained " + phase + " round " + std::to_string(round));
    // The round's power and temperatures come from the test's telemetry, cut by end_test.
    const TestResult& stored = run_.end_test(std::move(r));
    if (stored.telemetry)
        add_request_telemetry(*stored.telemetry, sr);
    run_.note(phase + " round " + std::to_string(round) + "/" + std::to_string(o_.rounds) +
              ": decode " + (sr.decode_tps ? fmt::format("{:.1f}", *sr.decode_tps) : "-") +
              " tok/s" + (sr.error ? " (" + *sr.error + ")" : ""));
}

std::vector<TelemetrySeries> SustainedRun::freq_series(int64_t since_ns) const {
    std::vector<TelemetrySeries> freq;
    Sampler* t = const_cast<RunContext&>(run_).sampler();
    if (!t)
        return freq;
    auto in_pass = [&](int64_t at) {
        for (const auto& [a, b] : pass_windows_)
            if (at >= a && at <= b)
                return true;
        return false;
    };
    for (auto& s : t->series_of(Quantity::frequency)) {
        TelemetrySeries cut = s;
        cut.t_ns.clear();
        cut.values.clear();
        for (size_t i = 0; i < s.t_ns.size(); ++i)
            if (s.t_ns[i] >= since_ns && !in_pass(s.t_ns[i])) {
                cut.t_ns.push_back(s.t_ns[i]);
                cut.values.push_back(s.values[i]);
            }
        freq.push_back(std::move(cut));
    }
    return freq;
}

void SustainedRun::traced_pass(int round) {
    const std::string& phase = res_.phases.back().name;
    const std::string label = "traced pass after round " + std::to_string(round);
    step_.stage = label;
    run_.progress().step(device_, step_);
    auto progress = [&](const std::string& m) { run_.note(phase + " " + label + ": " + m); };
    RoundTracedPass pass =
        o_.traced_pass
            ? o_.traced_pass(c_, label, progress)
            : traced_pass_of(run_traced_pass(run_.engines(), c_, label, progress, run_.clock()));
    pass_windows_.push_back({pass.start_ns, pass.end_ns});
    if (pass.status != PassStatus::ok) {
        ++failed_;
        run_.progress().done(device_);  // the status line makes way for a line shown with -q
        run_.progress().notice(phase + " " + label + " failed: " + pass.error.value_or("?"));
    }
    res_.phases.back().rounds.back().ops = std::move(pass);
    publish();
}

}  // namespace

RunResult run_sustained(const SustainedOptions& o, RunEnv env) {
    const SustainedPlan plan = plan_of(o);
    const MatrixSpec matrix = round_matrix(o, plan.threads);
    // The engine --engine names, from the run's factory, as `run` has it.
    HttpRun http(o.http, matrix, o.rpc_servers);
    std::vector<TestConfig> tests = http.plan(matrix);
    // The run context: the model described, RPC servers added, device names checked,
    // telemetry, warnings, the idle baseline and the document saved as it grows.
    RunSetup setup;
    setup.take(env);
    if (http.needs_gguf())
        setup.models = {o.workload.model_path};
    setup.rpc_servers = o.rpc_servers;
    if (http.uses_llama())
        setup.device_sets = {o.workload.devices};
    setup.telemetry = o.telemetry;
    setup.out_path = o.out_path;
    setup.progress = o.progress;
    setup.terminal = o.progress && Progress::stderr_is_terminal();
    RunContext run(env.doc, setup, env.err, env.listener);
    http.connect(run, tests);
    run.open(plan.threads);
    if (plan.cooldown.kind == CooldownPolicy::Kind::until_temp) {
        Sampler* tel = run.sampler();
        if (tel && !hottest_now(*tel))
            tel->sample_now();
        if (!tel || !hottest_now(*tel))
            throw input_error("--cooldown " + o.cooldown +
                              " needs a temperature sensor, and none was found");
    }
    SustainedRun rounds(run, o, plan, http, tests.at(0));
    rounds.publish();
    run.start();
    run.plan(static_cast<size_t>(o.rounds) * (plan.background ? 2 : 1));
    rounds.phase(plan.background ? "baseline" : "rounds", std::nullopt);
    if (plan.background && !run.should_stop() && !rounds.bad_input())
        rounds.phase("loaded", plan.background);
    rounds.finish_phases();
    return run.finish(rounds.failed() > 0 ? Outcome::failed : Outcome::ok);
}

}  // namespace sb
