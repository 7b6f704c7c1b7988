#pragma once
// One node-by-node traced pass of a workload (prefill of the prompt, then a few one-token
// decode steps) on a device set, made with the `stagebench ops` pipeline (scenario/ops_run.hpp)
// without op times: every op's backend, call time and start/end on the run's clock.
// `sustained --trace-ops-rounds` runs one after each chosen round, outside the round's measured
// time.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "scenario/ops_run.hpp"

namespace sb {

struct TracedPass {
    std::string label;                 // e.g. "traced pass after round 3"
    int64_t start_ns = 0, end_ns = 0;  // the run's clock: the whole pass (model load included)
    std::string status = "ok";         // ok | error
    std::optional<std::string> error;
    OpsProfile profile;  // stages as `stagebench ops` records them (op times not replayed)
};

// Traced decode steps of each repetition of a traced pass (as many untraced between them).
constexpr int kTracedPassDecodeSteps = 4;

// The profiler options of a traced pass: the workload's model, devices ('+'-joined), prompt,
// context settings and seed (its n_gen and repetitions are not read); op replays off (op_ns
// stays null; call times are the node-by-node measurement), traced_reps traced repetitions,
// each a prefill and kTracedPassDecodeSteps traced decode steps with an untraced one after
// each (decode's uninstrumented samples; OpsOptions), one uninstrumented prefill for the
// reconciliation. Pure.
OpsOptions traced_pass_options(const TestConfig& workload, int traced_reps = 3);

// Runs the pass on the op-profiling rig of engines (EngineFactory::op_rig: llama.cpp for users),
// its start, end and stage times on clock (the run's). Never throws for a failure of the pass
// itself (bad device, llama.cpp error, a rig that cannot be made): it is recorded as status
// "error" with its message, so the caller's run continues.
TracedPass run_traced_pass(EngineFactory& engines, const TestConfig& workload,
                           const std::string& label, const ProgressFn& progress,
                           const Clock& clock = now_ns);

// {"label", "start_ns", "end_ns", "status", "error", "devices", "method", "stages": [the
// per-stage shape of the ops document's ops.stages[]]}.
nlohmann::json to_json(const TracedPass& p);

}  // namespace sb
