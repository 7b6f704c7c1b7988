#include "scenario/traced_pass.hpp"

#include <exception>

#include "core/clock.hpp"
#include "core/json_util.hpp"

namespace sb {

OpsOptions traced_pass_options(const TestConfig& workload, int traced_reps) {
    OpsOptions o;
    o.workload = workload;
    o.n_prompt = workload.n_prompt;
    o.n_depth = 0;
    o.prefill = true;
    o.decode = true;
    // Replaying every distinct op would take far longer than the pass; the timeline needs call
    // times only.
    o.replay_copies = 0;
    o.traced_reps = traced_reps;
    o.plain_reps = 1;
    o.decode_tokens = kTracedPassDecodeSteps;
    o.seed = workload.seed;
    return o;
}

TracedPass run_traced_pass(EngineFactory& engines, const TestConfig& workload,
                           const std::string& label, const ProgressFn& progress,
                           const Clock& clock) {
    TracedPass p;
    p.label = label;
    p.start_ns = clock();
    try {
        OpsHooks hooks;
        hooks.progress = progress;
        hooks.clock = clock;
        p.profile = profile_ops(engines, traced_pass_options(workload), hooks);
    } catch (const std::exception& e) {
        p.status = "error";
        p.error = e.what();
    }
    p.end_ns = clock();
    return p;
}

nlohmann::json to_json(const TracedPass& p) {
    nlohmann::json stages = nlohmann::json::array();
    for (const auto& s : p.profile.stages)
        stages.push_back(to_json(s));
    return nlohmann::json{{"label", p.label},
                          {"start_ns", p.start_ns},
                          {"end_ns", p.end_ns},
                          {"status", p.status},
                          {"error", opt(p.error)},
                          {"devices", p.profile.devices},
                          {"backends", p.profile.backends},
                          {"n_threads", p.profile.n_threads},
                          {"method", p.profile.method},
                          {"stages", stages}};
}

}  // namespace sb
