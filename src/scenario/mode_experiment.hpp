#pragma once
// A backend's pipeline modes as an experiment (`stagebench decompose --mode`): the same stage(s)
// run once per mode, each mode in a fresh process with its own environment (backends read their
// knobs when they initialise), interleaved round by round and repeated; and the same parts from
// one imported log per mode (`import hexagon-profile --mode`). The document's "modes" section
// (core/doc/modes_section.hpp) holds every run; analysis/mode_parts.hpp the medians and parts.
//
// The loop never starts a process itself: a ModeLauncher does (the CLI's re-exec of stagebench,
// cli/mode_child.cpp; a scripted one in tests), so the loop's order, its bookkeeping and its
// failures are tested without a clock.
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "core/doc/modes_section.hpp"
#include "core/result.hpp"
#include "profile/ops_command.hpp"
#include "scenario/repetition.hpp"

namespace sb {

struct ModeSpec {
    std::string name;
    std::vector<EnvSetting> env;  // set in the child's environment, in order
};

// Parses one --mode of decompose: "NAME=ENV=VAL[,ENV=VAL...]", or "NAME=" for the environment
// as inherited (a baseline). NAME: letters, digits, '_', '-', '.'; ENV: a letter or '_' then
// letters, digits, '_'; VAL: anything but ',' (may be empty). Throws sb::Error(usage), one line
// quoting the text, for anything else.
ModeSpec parse_mode_spec(const std::string& text);

// Parses one --mode of import: "NAME=PATH" (NAME as above, PATH not empty). Throws
// sb::Error(usage).
std::pair<std::string, std::string> parse_mode_log(const std::string& text);

// The GGML_* environment variables the linked llama.cpp's sources read (getenv), sorted; empty
// when the build did not know the source tree.
const std::vector<std::string>& llama_env_variables();

// The GGML_* variables the modes set that `read` (llama_env_variables()) does not hold, each
// once, in the order first set; none when read is empty (unknown). A mode setting only such
// variables measures the same build as the baseline: its "differences" are noise.
std::vector<std::string> unread_mode_variables(const std::vector<ModeSpec>& modes,
                                               const std::vector<std::string>& read);

// Throws sb::Error(usage) unless there are at least two names and no name twice.
void check_mode_names(const std::vector<std::string>& names);

// What one run of a mode gave. stage_ns: the stage times it measured (absent: not measured);
// error set when the run failed (its times, if any, are still kept).
struct ModeChildResult {
    std::map<std::string, double> stage_ns;
    std::optional<int> exit_code;
    std::optional<int64_t> wall_ns;
    std::optional<std::string> error;
    nlohmann::json env_seen;  // what the child recorded of its environment; null: nothing
    std::optional<int> n_threads;
};

// Runs mode `mode` for round `round` (0-based). Must not throw for the child's own failure
// (return it in error); may throw sb::Error for a failure of the parent (e.g. no temporary
// directory), which ends the experiment.
using ModeLauncher = std::function<ModeChildResult(const ModeSpec& mode, int round)>;

struct ModeExperimentOptions {
    std::vector<ModeSpec> modes;      // >= 2, names unique (check_mode_names)
    int rounds = 5;                   // >= 1
    std::vector<std::string> stages;  // "prefill" and/or "decode"
    // Described in the section (the launcher runs them): the model and the child's settings.
    std::string model_path, devices;
    int n_prompt = 0, n_gen = 0, n_depth = 0, n_threads = 0;
    std::string time_basis;
    std::optional<std::string> out_path;  // doc saved after every run
    bool progress = true;                 // one line per run on err
};

// Runs the experiment into doc.modes (the section, its runs, medians and parts), saving --out
// after every run. A run that fails keeps its error and the experiment goes on with the others.
// Ctrl-C stops at the next run: what ran is kept. Returns 0 when every run succeeded, 1 when one
// failed or the experiment was interrupted. Throws sb::Error(usage) for bad options.
int run_mode_experiment(const ModeExperimentOptions& o, const ModeLauncher& launch,
                        ResultDocument& doc, std::ostream& err);

// `import hexagon-profile --mode NAME=LOG ...`: each log imported as `import hexagon-profile`
// does (profile/ops_command.hpp run_import_hexagon) with `how`'s stage_of markers and
// one_stage (its log_path, format and out_path are not used), one run per mode, into
// doc.modes with the parts per stage the importer gives (or the whole log, stage "log"). A
// stage's time is the sum of the host's call times when every log has them for every stage
// (call-usec, the formats before llama.cpp PR 22269), else the sum of the backend's op times.
// Modes in the order given; names checked (check_mode_names). Throws sb::Error(input) for a log
// that cannot be read or holds no op record, and for a bad --stage-of (naming the mode),
// sb::Error(usage) for bad names. Warnings of the logs' imports are kept, each naming its mode.
// Returns 0.
int import_mode_logs(const std::vector<std::pair<std::string, std::string>>& logs,
                     ResultDocument& doc, std::ostream& err, const ImportOptions& how = {});

}  // namespace sb
