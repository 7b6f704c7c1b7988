#pragma once
// The "modes" section of a result document: a backend's pipeline modes as an experiment
// (`stagebench decompose --mode`, scenario/mode_experiment.hpp) or as imported logs
// (`stagebench import hexagon-profile --mode`). The same stage(s) ran once per mode, each mode
// with its own environment in a fresh process (backends read their knobs when they
// initialise), interleaved round by round (A B A B ...); or each mode is one log of the
// backend's own profile. The parts of the pipeline are the differences between consecutive
// modes: part 0 is the first mode's stage time, part i (i >= 1) is mode i's time less mode
// (i-1)'s, so the parts add up to the last mode's time (the study's OPMASK 0x1 queue only,
// 0x3 + the dynamic quantizer, 0x7 full: communication, quantization, compute). The arithmetic
// lives in analysis/mode_parts.hpp; this header is the data and its JSON.
//
// The section is the document's top-level member "modes" (ResultDocument::modes).
//
// Times are nanoseconds (double for medians and differences). Missing is not zero: a mode that
// never ran to the end has no time and the parts next to it have none either.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/doc/json_in.hpp"

namespace sb {

struct EnvSetting {
    std::string name;
    std::string value;
};

// One run of a mode: one child process (one round), or one imported log.
struct ModeRun {
    int round = 0;     // 0-based round; 0 for a log
    int sequence = 0;  // 0-based position among every run of the experiment (the order they ran)
    // The stage times this run measured, by stage ("prefill", "decode"; "log" for an import
    // without stages); a stage it did not measure is absent.
    std::map<std::string, double> stage_ns;
    std::optional<int> exit_code;      // the child's exit status (processes)
    std::optional<int64_t> wall_ns;    // the child's whole life (processes)
    std::optional<std::string> error;  // why this run has no times
    // What the child process recorded of its environment (the backend knobs it saw:
    // system.backend_env of its document); null for logs and for children that wrote nothing.
    nlohmann::json env_seen;
    std::optional<int> n_threads;  // the CPU threads the child used, as it recorded them
};

// A mode's stage time over its runs: the median with a bootstrap 95% CI over the runs
// (core/stats.hpp median_ci, each run one sample); the CI is null with fewer than 2 runs.
struct ModeStageTime {
    std::string stage;  // prefill | decode | log (an import without stages)
    int n = 0;          // runs with a time for this stage
    std::optional<double> median_ns, ci95_lo_ns, ci95_hi_ns;
};

struct Mode {
    std::string name;
    std::vector<EnvSetting> env;          // processes: what the child's environment got
    std::optional<std::string> log_path;  // imports: the log of this mode
    std::vector<ModeRun> runs;
    std::vector<ModeStageTime> times;  // one per stage of the section
    int n_failed = 0;                  // runs with an error
};

// One part of the pipeline for one stage.
struct ModePart {
    std::string stage;
    std::string name;                 // the mode the part ends at
    std::optional<std::string> from;  // the mode before it (null for part 0: the base)
    // median(mode) - median(from) (part 0: median(mode)), with a bootstrap 95% CI
    // (core/stats.hpp difference_of_medians; part 0: the mode's median_ci). Null when a mode
    // has no time; the CI is null when a mode has fewer than 2 runs.
    std::optional<double> ns, ci95_lo_ns, ci95_hi_ns;
    std::optional<double> share;  // ns / the last mode's median for this stage
    bool no_difference = false;   // the CI contains 0 (inside the noise)
    std::string note;
};

struct ModesSection {
    std::string source;  // "processes" (decompose --mode) | "hexagon-profile" (imported logs)
    std::string model_path;
    std::string devices;
    int n_prompt = 0, n_gen = 0, n_depth = 0;
    int n_threads = 0;                // asked (0: the child's default)
    int rounds = 0;                   // rounds asked (processes) or 1 (logs)
    std::vector<std::string> stages;  // the stages reported, in order
    // What a stage time is: processes "stage wall time in a fresh process (stagebench run, 1
    // repetition after a warm-up)"; logs "sum of call-usec" or "sum of op-usec".
    std::string time_basis;
    std::vector<Mode> modes;  // in the order given: the pipeline's order
    std::vector<ModePart> parts;
    std::vector<std::string> notes;
};

nlohmann::json to_json(const EnvSetting& e);
nlohmann::json to_json(const ModeRun& r);
nlohmann::json to_json(const ModeStageTime& t);
nlohmann::json to_json(const Mode& m);
nlohmann::json to_json(const ModePart& p);
nlohmann::json to_json(const ModesSection& s);

void read(const JsonIn&, EnvSetting&);
void read(const JsonIn&, ModeRun&);
void read(const JsonIn&, ModeStageTime&);
void read(const JsonIn&, Mode&);
void read(const JsonIn&, ModePart&);
void read(const JsonIn&, ModesSection&);

}  // namespace sb
