#include "core/doc/fidelity_section.hpp"

#include "core/json_util.hpp"

namespace sb {

using nlohmann::json;

std::string variant_label(const FidelityVariant& v) {
    return v.model_name + " on " + v.devices + " (" + v.type_k + "/" + v.type_v + ")";
}

json to_json(const StageFidelity& s) {
    return json{{"positions", s.positions},
                {"kl_mean", s.kl_mean},
                {"kl_p99", s.kl_p99},
                {"kl_max", s.kl_max},
                {"top1_agreement", s.top1_agreement},
                {"topk_overlap", s.topk_overlap},
                {"max_abs", s.max_abs},
                {"rms", s.rms}};
}

json to_json(const FidelityVariant& v) {
    json j{{"model", v.model},
           {"model_name", v.model_name},
           {"devices", v.devices},
           {"type_k", v.type_k},
           {"type_v", v.type_v},
           {"reference", v.reference},
           {"prefill_tokens_per_s", opt(v.prefill_tps)},
           {"decode_tokens_per_s", opt(v.decode_tps)},
           {"prefill_tokens_per_s_reps", v.prefill_tps_reps},
           {"decode_tokens_per_s_reps", v.decode_tps_reps},
           {"frontier", v.frontier},
           {"error", opt(v.error)}};
    if (!v.error) {
        j["prefill"] = to_json(v.prefill);
        j["decode"] = to_json(v.decode);
    }
    return j;
}

json to_json(const FidelitySection& s) {
    json vs = json::array();
    for (const auto& v : s.variants)
        vs.push_back(to_json(v));
    return json{{"reference", s.reference}, {"n_prompt", s.n_prompt}, {"n_gen", s.n_gen},
                {"top_k", s.top_k},         {"reps", s.reps},         {"seed", s.seed},
                {"tokens", s.tokens},       {"method", s.method},     {"variants", vs}};
}

void read(const JsonIn& in, StageFidelity& s) {
    ObjectIn{in}("positions", s.positions)("kl_mean", s.kl_mean)("kl_p99", s.kl_p99)(
        "kl_max", s.kl_max)("top1_agreement", s.top1_agreement)("topk_overlap", s.topk_overlap)(
        "max_abs", s.max_abs)("rms", s.rms);
}

void read(const JsonIn& in, FidelityVariant& v) {
    ObjectIn{in}("model", v.model)("model_name", v.model_name)("devices", v.devices)(
        "type_k", v.type_k)("type_v", v.type_v)("reference", v.reference)(
        "prefill_tokens_per_s", v.prefill_tps)("decode_tokens_per_s", v.decode_tps)(
        "prefill_tokens_per_s_reps", v.prefill_tps_reps)(
        "decode_tokens_per_s_reps", v.decode_tps_reps)("frontier", v.frontier)("error", v.error)(
        "prefill", v.prefill)("decode", v.decode);
}

void read(const JsonIn& in, FidelitySection& s) {
    ObjectIn{in}("reference", s.reference)("n_prompt", s.n_prompt)("n_gen", s.n_gen)(
        "top_k", s.top_k)("reps", s.reps)("seed", s.seed)("tokens", s.tokens)("method", s.method)(
        "variants", s.variants);
}

}  // namespace sb
