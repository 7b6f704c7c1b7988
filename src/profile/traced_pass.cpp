#include "profile/traced_pass.hpp"

#include <exception>

#include "core/clock.hpp"
#include "core/json_util.hpp"

namespace sb {

OpsOptions traced_pass_options(const TracedPassSpec& spec) {
    OpsOptions o;
    o.model_path = spec.model_path;
    o.devices = spec.devices;
    o.n_prompt = spec.n_prompt;
    o.n_depth = 0;
    o.prefill = true;
    o.decode = true;
    o.n_threads = spec.n_threads;
    o.n_batch = spec.n_batch;
    o.n_ubatch = spec.n_ubatch;
    o.n_gpu_layers = spec.n_gpu_layers;
    o.flash_attn = spec.flash_attn;
    o.type_k = spec.type_k;
    o.type_v = spec.type_v;
    // Replaying every distinct op would take far longer than the pass; the timeline needs call
    // times only.
    o.replay_copies = 0;
    o.traced_reps = spec.traced_reps;
    o.plain_reps = 1;
    o.seed = spec.seed;
    return o;
}

TracedPass run_traced_pass(const TracedPassSpec& spec, const std::string& label,
                           const ProgressFn& progress) {
    TracedPass p;
    p.label = label;
    p.start_ns = now_ns();
    try {
        p.profile = profile_ops(traced_pass_options(spec), progress);
    } catch (const std::exception& e) {
        p.status = "error";
        p.error = e.what();
    }
    p.end_ns = now_ns();
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
