#pragma once
// `stagebench sustained`: one fixed workload (seeded prompt, bounded generation) repeated for
// many rounds, to see throttling, DVFS floors and round-to-round variation; optionally a second
// phase with background load, compared with the first in the same invocation.
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "core/sustained_result.hpp"
#include "scenario/http_run.hpp"
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
    std::string model;
    std::string devices = "CPU";
    std::vector<std::string> rpc_servers;
    int threads = 0;
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
    // few decode steps on the same devices (profile/traced_pass.hpp); its per-op records go to
    // the round's "ops". "" = none. In-process engine only.
    std::string trace_ops_rounds;
};

// --trace-ops-rounds "1,20" or "1,last" -> the chosen round numbers, each in 1..rounds; ""
// -> none. Throws sb::Error(usage) with one line for anything else.
std::set<int> parse_trace_ops_rounds(const std::string& text, int rounds);

// Across-round statistics of a phase's rounds (pure: tests feed it fixture rounds). series
// are the sampled frequency series of the phase for time-at-floor (may be empty).
AcrossRounds summarize_rounds(const std::vector<SustainedRound>& rounds,
                              const std::vector<Series>& freq_series);

// Runs the protocol. Returns the exit code (0 all rounds ok, 1 a round failed or interrupted,
// 2 a round failed on bad input, e.g. a model llama.cpp refuses: then no further round runs);
// throws sb::Error for bad input found before measuring. Rounds reach --out as they end.
int run_sustained(const SustainedOptions& opts, ResultDocument& doc, std::ostream& out,
                  std::ostream& err);

}  // namespace sb
