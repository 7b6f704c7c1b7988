#include "core/doc/fidelity_section.hpp"

#include <algorithm>

#include "core/json_util.hpp"

namespace sb {

using nlohmann::json;

std::string variant_label(const FidelityVariant& v) {
    return v.model_name + " on " + v.devices + " (" + to_string(v.type_k) + "/" +
           to_string(v.type_v) + ")";
}

void mark_frontier(std::vector<FidelityVariant>& variants) {
    for (auto& v : variants) {
        v.frontier = false;
        if (v.error || !v.decode_tps)
            continue;
        v.frontier = std::none_of(variants.begin(), variants.end(), [&](const auto& w) {
            return &w != &v && !w.error && w.decode_tps && *w.decode_tps >= *v.decode_tps &&
                   w.decode.kl_mean <= v.decode.kl_mean &&
                   (*w.decode_tps > *v.decode_tps || w.decode.kl_mean < v.decode.kl_mean);
        });
    }
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
           {"type_k", to_string(v.type_k)},
           {"type_v", to_string(v.type_v)},
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
        if (v.prompt)
            j["prompt"] = to_json(*v.prompt);
        if (v.text)
            j["text"] = to_json(*v.text);
    }
    if (v.perplexity || v.perplexity_error)
        j["perplexity"] = {{"value", opt(v.perplexity)}, {"error", opt(v.perplexity_error)}};
    return j;
}

json to_json(const FidelitySection& s) {
    json vs = json::array();
    for (const auto& v : s.variants)
        vs.push_back(to_json(v));
    json j{{"reference", s.reference}, {"n_prompt", s.n_prompt},
           {"n_gen", s.n_gen},         {"top_k", s.top_k},
           {"reps", s.reps},           {"seed", s.seed},
           {"tokens", s.tokens},       {"method", s.method},
           {"variants", vs},           {"prompt_logits", s.prompt_logits}};
    if (s.text)
        j["text"] = to_json(*s.text);
    j["interrupted"] = s.interrupted;
    return j;
}

json to_json(const FidelityText& t) {
    return json{
        {"path", t.path},
        {"tokens", t.tokens},
        {"n_ctx", t.n_ctx},
        {"chunks", t.chunks},
        {"scored", t.scored},
        {"reference_perplexity",
         {{"value", opt(t.reference_perplexity)}, {"error", opt(t.reference_perplexity_error)}}},
        {"method", t.method}};
}

namespace {
// {"value", "error"}: a perplexity and its error.
struct PerplexityIn {
    std::optional<double>& value;
    std::optional<double>& error;
};
void read(const JsonIn& in, PerplexityIn& p) {
    ObjectIn{in}("value", p.value)("error", p.error);
}
}  // namespace

void read(const JsonIn& in, StageFidelity& s) {
    ObjectIn{in}("positions", s.positions)("kl_mean", s.kl_mean)("kl_p99", s.kl_p99)(
        "kl_max", s.kl_max)("top1_agreement", s.top1_agreement)("topk_overlap", s.topk_overlap)(
        "max_abs", s.max_abs)("rms", s.rms);
}

void read(const JsonIn& in, FidelityVariant& v) {
    PerplexityIn ppl{v.perplexity, v.perplexity_error};
    ObjectIn{in}("model", v.model)("model_name", v.model_name)("devices", v.devices)(
        "type_k", v.type_k)("type_v", v.type_v)("reference", v.reference)(
        "prefill_tokens_per_s", v.prefill_tps)("decode_tokens_per_s", v.decode_tps)(
        "prefill_tokens_per_s_reps", v.prefill_tps_reps)(
        "decode_tokens_per_s_reps", v.decode_tps_reps)("frontier", v.frontier)("error", v.error)(
        "prefill", v.prefill)("decode", v.decode)("prompt", v.prompt)("text", v.text)("perplexity",
                                                                                      ppl)
        .non_negative({"prefill_tokens_per_s", "decode_tokens_per_s", "prefill_tokens_per_s_reps",
                       "decode_tokens_per_s_reps"});
}

void read(const JsonIn& in, FidelitySection& s) {
    ObjectIn{in}("reference", s.reference)("n_prompt", s.n_prompt)("n_gen", s.n_gen)(
        "top_k", s.top_k)("reps", s.reps)("seed", s.seed)("tokens", s.tokens)("method", s.method)(
        "variants", s.variants)("prompt_logits", s.prompt_logits)("text", s.text)("interrupted",
                                                                                  s.interrupted)
        .non_negative({"n_prompt", "n_gen", "top_k", "reps"});
}

void read(const JsonIn& in, FidelityText& t) {
    PerplexityIn ppl{t.reference_perplexity, t.reference_perplexity_error};
    ObjectIn{in}("path", t.path)("tokens", t.tokens)("n_ctx", t.n_ctx)("chunks", t.chunks)(
        "scored", t.scored)("reference_perplexity", ppl)("method", t.method);
}

json to_json(const TestFidelity& f) {
    json j{{"reference", f.reference}, {"top_k", f.top_k}, {"error", opt(f.error)}};
    if (f.prefill)
        j["prefill"] = to_json(*f.prefill);
    if (f.decode)
        j["decode"] = to_json(*f.decode);
    return j;
}

void read(const JsonIn& in, TestFidelity& f) {
    ObjectIn{in}("reference", f.reference)("top_k", f.top_k)("prefill", f.prefill)(
        "decode", f.decode)("error", f.error);
}

}  // namespace sb
