#pragma once
// `stagebench sustained`: one fixed workload (seeded prompt, bounded generation) repeated for
// many rounds, to see throttling, DVFS floors and round-to-round variation; optionally a second
// phase with background load, compared with the first in the same invocation.
#include <functional>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "analysis/sustained_summary.hpp"
#include "core/result.hpp"
#include "core/sustained_result.hpp"
#include "core/workload.hpp"
#include "scenario/http_run.hpp"
#include "scenario/run_context.hpp"
#include "scenario/telemetry_setup.hpp"
#include "telemetry/sampler.hpp"

namespace sb {

struct CooldownPolicy {
    enum class Kind { none, fixed, until_temp } kind = Kind::none;
    double seconds = 0;      // fixed
    double target_c = 0;     // until_temp: wait until the hottest sensor is at or below
    double timeout_s = 300;  // until_temp: give up waiting after this long
};

// "0", "10s", "500ms", "until-temp:45C". Throws sb::Error(usage).
CooldownPolicy parse_cooldown(const std::string& text);

struct SustainedOptions {
    // The model, devices and threads (0: default_thread_count()) of every round; its batch is
    // chunk's (below).
    Workload workload;
    std::vector<std::string> rpc_servers;
    int rounds = 20;
    int prompt_tokens = 512;
    int max_tokens = 128;
    std::optional<int> chunk;  // prefill in chunks of this many tokens
    std::string cooldown = "0";
    double cooldown_timeout_s = 300;
    std::optional<std::string> background;  // load spec; adds a loaded phase
    uint64_t seed = 1;
    TelemetryChoice telemetry;
    std::optional<std::string> out_path;
    OutputFormat format = OutputFormat::md;  // md | json
    bool progress = true;
    // --engine llama (in-process, default) or http (--url, or a llama-server started for -m).
    HttpRunOptions http;
    // --trace-ops-rounds: after each of these rounds (in every phase), once the round's
    // measured workload has finished, one node-by-node traced pass of the same prefill and a
    // few decode steps on the same devices (scenario/traced_pass.hpp); its per-op records go to
    // the round's "ops". "" = none. In-process engine only.
    std::string trace_ops_rounds;
    // Runs a traced pass; null: scenario/traced_pass.hpp's run_traced_pass on the run's engine
    // factory's op rig.
    std::function<RoundTracedPass(const TestConfig& workload, const std::string& label,
                                  const std::function<void(const std::string&)>& progress)>
        traced_pass;
};

// --trace-ops-rounds "1,20" or "1,last" -> the chosen round numbers, each in 1..rounds; ""
// -> none. Throws sb::Error(usage) with one line for anything else.
std::set<int> parse_trace_ops_rounds(const std::string& text, int rounds);

// A round's record from its test (the workload measured once): status, error, start and end,
// and the first repetition's prefill and decode tokens/s, inter-token latency p50/p99, TTFT,
// E2E, token counts and combined tokens/s (add_request_figures). Pure.
SustainedRound round_record(const TestResult& r, int round);

// What the rounds of a phase ask of their driver. measure is required; the rest optional.
struct RoundHooks {
    // Before round k > 1: the cool-down; returns the seconds waited.
    std::function<double(int round)> cooldown;
    // Measures round k's workload once: the test it is given (warm-up on the first round of
    // the phase only), on the engine the test names (HttpRun::measure). Never throws.
    std::function<TestResult(const TestConfig&)> measure;
    // Just before and just after measure (telemetry marks, the last word's state).
    std::function<void(int round, bool begin)> round_marker;
    // The round's test and record, before the record joins the phase: telemetry figures,
    // the document, progress.
    std::function<void(int round, TestResult&, SustainedRound&)> round_done;
    // The sampled frequency series of the phase so far (its samples at or after since_ns, the
    // phase's start on clock below), for time-at-floor (summarize_rounds).
    std::function<std::vector<TelemetrySeries>(int64_t since_ns)> freq_series;
    // After the phase's summary was updated with the round (save, a traced pass).
    std::function<void(int round)> after_round;
    // Polled before each round and after its cool-down. Null: interrupt_requested().
    std::function<bool()> interrupted;
    // The clock the phase's start is read on, before its first round: the run's (sb::now_ns,
    // the sampler's axis, for a real run).
    Clock clock = now_ns;
};

struct PhaseOutcome {
    int failed = 0;          // rounds whose test did not end ok
    bool bad_input = false;  // a round failed on bad input (usage or input): no round followed
};

// The rounds of one phase: up to `rounds` rounds of workload c, each measured once, its record
// appended to phase.rounds and phase.across recomputed (summarize_rounds) after every round.
// Stops early when interrupted or after a round that failed on bad input (refused again
// every round).
PhaseOutcome run_phase_rounds(TestConfig c, int rounds, SustainedPhase& phase,
                              const RoundHooks& hooks);

// Runs the protocol through a RunContext (every round a test begun and ended there, its
// engine from env.engines). Returns the document with the outcome (every round ok; a round or
// a traced pass failed, or the run was interrupted; a round failed on bad input, e.g. a model
// llama.cpp refuses: then no further round runs); throws sb::Error for bad input found before
// measuring. Rounds reach --out as they end. Prints nothing but progress and warnings on
// env.err: the caller shows the document (report/reporter.hpp print_document).
RunResult run_sustained(const SustainedOptions& opts, RunEnv env);

}  // namespace sb
