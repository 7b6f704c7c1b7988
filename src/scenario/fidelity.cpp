#include "scenario/fidelity.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <numeric>
#include <span>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/result.hpp"
#include "core/stats.hpp"
#include "engine/llama_engine.hpp"
#include "engine/workload.hpp"
#include "scenario/fidelity_capture.hpp"
#include "scenario/logits.hpp"
#include "scenario/perplexity.hpp"
#include "scenario/repetition.hpp"

namespace sb {

namespace {

TestConfig config_of(const FidelityOptions& o, const std::string& model, const std::string& dev,
                     const std::string& ctk, const std::string& ctv) {
    TestConfig c;
    c.model_path = model;
    c.devices = DeviceSet(dev);
    c.n_prompt = o.n_prompt;
    c.n_gen = o.n_gen;
    c.n_threads = o.n_threads;
    c.type_k = ctk;
    c.type_v = ctv;
    return c;
}

// The text in llama-perplexity's windows: the logits of every scored position (kept when keep
// is set: the reference's, which every variant is compared with) and their negative
// log-likelihoods.
struct TextPass {
    LogitCapture scored;
    PerplexitySum sum;
};

TextPass text_pass(LlamaEngine& e, const std::vector<int32_t>& tokens, const PerplexityPlan& plan,
                   const std::function<void(int pos, std::span<const float>)>& each) {
    TextPass t;
    t.scored.n_vocab = e.n_vocab();
    const auto nv = static_cast<size_t>(t.scored.n_vocab);
    std::vector<float> out;
    for (int c = 0; c < plan.n_chunks; ++c) {
        if (interrupt_requested())
            throw runtime_error("interrupted");
        const std::vector<int32_t> w = window_tokens(tokens, plan, c, e.bos_token());
        out.clear();
        e.evaluate(w, plan.first, out);
        for (int j = 0; j < plan.scored_per_chunk(); ++j) {
            const std::span<const float> l(out.data() + static_cast<size_t>(j) * nv, nv);
            t.sum.add(token_nll(l, w[static_cast<size_t>(plan.first + j + 1)]));
            each(c * plan.scored_per_chunk() + j, l);
        }
    }
    return t;
}

// The timed pass on a fresh context: prefill and decode tokens/s, medians over reps.
void time_speed(LlamaEngine& e, const std::vector<int32_t>& tokens, const FidelityOptions& o,
                FidelityVariant& v) {
    std::vector<double> pp, tg;
    for (int r = 0; r < o.reps && !interrupt_requested(); ++r) {
        e.reset();
        const StageTimes t =
            e.prefill(std::span<const int32_t>(tokens.data(), static_cast<size_t>(o.n_prompt)));
        pp.push_back(o.n_prompt / (static_cast<double>(t.end_ns - t.start_ns) * 1e-9));
        // decode_step returns each token's completion time: the stage runs from before the
        // first to the last completion.
        const int64_t t0 = now_ns();
        int64_t end = t0;
        for (int i = 0; i < o.n_gen; ++i)
            end = e.decode_step(tokens[static_cast<size_t>(o.n_prompt + i)]);
        const int64_t ns = end - t0;
        if (o.n_gen > 0 && ns > 0)
            tg.push_back(o.n_gen / (static_cast<double>(ns) * 1e-9));
    }
    v.prefill_tps = percentile(pp, 0.5);
    v.decode_tps = percentile(tg, 0.5);
    v.prefill_tps_reps = pp;
    v.decode_tps_reps = tg;
}

// The file's name: the quantization axis is several files of one model (one general.name).
std::string model_name(const std::string& path) {
    return std::filesystem::path(path).filename().string();
}

}  // namespace

FidelityResult run_fidelity(const FidelityOptions& o, std::ostream& progress) {
    if (o.models.empty())
        throw usage_error("fidelity needs a model (-m)");
    if (o.device_sets.empty() || o.type_k.empty() || o.type_v.empty())
        throw usage_error("fidelity needs a device set and KV cache types");
    if (o.n_prompt < 1 || o.n_gen < 0 || o.top_k < 1 || o.reps < 1)
        throw usage_error("fidelity: -p, -n, --top-k and -r must be positive");
    if (o.text && o.text->empty())
        throw usage_error("--text " + o.text_path + ": the file is empty");
    FidelityResult r;
    r.options = o;
    r.n_prompt = o.n_prompt;
    r.n_gen = o.n_gen;
    r.top_k = o.top_k;
    r.reps = o.reps;
    r.seed = o.seed;
    r.prompt_logits = o.prompt_logits;
    r.method =
        "teacher-forced: the same tokens for every variant; logits captured on an untimed pass, "
        "speed measured on a separate pass; KL(reference || variant) in nats";
    const std::string ref_dev =
        o.reference_devices.empty() ? o.device_sets[0] : o.reference_devices;
    if (std::find(o.device_sets.begin(), o.device_sets.end(), ref_dev) == o.device_sets.end())
        throw usage_error("--reference " + ref_dev + " is not one of --device (" +
                          fmt::format("{}", fmt::join(o.device_sets, ",")) + ")");
    const std::string ref_model = o.reference_model.value_or(o.models[0]);
    r.reference =
        fmt::format("{} on {} ({}/{})", std::filesystem::path(ref_model).filename().string(),
                    ref_dev, o.type_k[0], o.type_v[0]);

    // The reference first: its vocabulary and tokens are every variant's.
    const bool with_text = o.text.has_value();
    auto spec_for = [&](const std::string& model, const std::string& dev, const std::string& ctk,
                        const std::string& ctv) {
        LoadSpec spec = load_spec_for(config_of(o, model, dev, ctk, ctv));
        if (with_text)
            spec.n_ctx = std::max(spec.n_ctx, o.ctx);
        return spec;
    };
    LogitCapture ref;
    std::vector<int32_t> text_tokens;
    PerplexityPlan plan;
    LogitCapture ref_text;
    {
        LlamaEngine e;
        e.load(spec_for(ref_model, ref_dev, o.type_k[0], o.type_v[0]));
        if (with_text) {
            // Before anything is computed: a text too short for one window is bad input.
            text_tokens = e.tokenize(*o.text, /*add_special=*/true);
            plan = plan_perplexity(static_cast<int64_t>(text_tokens.size()), o.ctx, o.chunks);
            FidelityText t;
            t.path = o.text_path;
            t.tokens = static_cast<int64_t>(text_tokens.size());
            t.n_ctx = plan.n_ctx;
            t.chunks = plan.n_chunks;
            t.scored = plan.scored();
            t.method =
                "llama-perplexity's windows: n_ctx-token windows, the first token the BOS (when "
                "the vocabulary adds one), the second half of each scored; PPL = exp(mean NLL); "
                "the text stage compares the scored positions' logits with the reference's";
            r.text = t;
        }
        // After the checks of the text: bad input stays the only line.
        progress << "fidelity: reference " << r.reference << "\n";
        r.tokens = sequence_tokens(o.n_prompt + o.n_gen, e.n_vocab(), o.seed, e.bos_token());
        ref = capture_sequence(e, r.tokens, o.n_prompt, o.n_gen, o.prompt_logits);
        if (with_text) {
            progress << fmt::format(
                "fidelity: the text, {} tokens, {} windows of {} ({} tokens scored)\n",
                text_tokens.size(), plan.n_chunks, plan.n_ctx, plan.scored());
            ref_text.n_vocab = e.n_vocab();
            ref_text.logits.reserve(static_cast<size_t>(plan.scored()) *
                                    static_cast<size_t>(ref_text.n_vocab));
            const TextPass t = text_pass(e, text_tokens, plan, [&](int, std::span<const float> l) {
                ref_text.logits.insert(ref_text.logits.end(), l.begin(), l.end());
            });
            r.text->reference_perplexity = t.sum.ppl();
            r.text->reference_perplexity_error = t.sum.ppl_error();
        }
    }
    const int P = ref.prompt_positions;
    const bool ref_is_variant =
        std::find(o.models.begin(), o.models.end(), ref_model) != o.models.end();
    for (const auto& model : o.models)
        for (const auto& dev : o.device_sets)
            for (const auto& ctk : o.type_k)
                for (const auto& ctv : o.type_v) {
                    if (interrupt_requested())
                        break;
                    FidelityVariant v;
                    v.model = model;
                    v.model_name = model_name(model);
                    v.devices = dev;
                    v.type_k = ctk;
                    v.type_v = ctv;
                    v.reference = ref_is_variant && model == ref_model && dev == ref_dev &&
                                  ctk == o.type_k[0] && ctv == o.type_v[0];
                    progress << fmt::format("fidelity: {} on {} ({}/{})\n", v.model_name, dev, ctk,
                                            ctv);
                    bool other_vocab = false;
                    try {
                        LlamaEngine e;
                        e.load(spec_for(model, dev, ctk, ctv));
                        if (e.n_vocab() != ref.n_vocab) {
                            other_vocab = true;
                            throw input_error(fmt::format(
                                "{} has a vocabulary of {} tokens, the reference {}: not the same "
                                "model shape",
                                model, e.n_vocab(), ref.n_vocab));
                        }
                        if (with_text) {
                            other_vocab = true;  // a model that cannot tokenize is bad input
                            if (e.tokenize(*o.text, true) != text_tokens)
                                throw input_error(
                                    model +
                                    " tokenizes the text differently from the reference: not "
                                    "the same vocabulary");
                            other_vocab = false;
                        }
                        const LogitCapture x =
                            capture_sequence(e, r.tokens, o.n_prompt, o.n_gen, o.prompt_logits);
                        v.prefill = compare_positions(ref, x, P - 1, P, o.top_k);
                        v.decode = compare_positions(ref, x, P, P + o.n_gen, o.top_k);
                        if (o.prompt_logits)
                            v.prompt = compare_positions(ref, x, 0, P, o.top_k);
                        if (with_text) {
                            StageStats st(o.top_k);
                            const TextPass t = text_pass(e, text_tokens, plan,
                                                         [&](int pos, std::span<const float> l) {
                                                             st.add(ref_text.at(pos), l);
                                                         });
                            v.text = st.finish();
                            v.perplexity = t.sum.ppl();
                            v.perplexity_error = t.sum.ppl_error();
                        }
                        time_speed(e, r.tokens, o, v);
                    } catch (const Error& err) {
                        if (other_vocab)
                            throw;  // nothing of this run compares with it: bad input
                        v.error = err.what();
                        progress << "fidelity: " << v.model_name << " on " << dev
                                 << " failed: " << err.what() << "\n";
                    }
                    r.variants.push_back(std::move(v));
                }
    mark_frontier(r.variants);
    r.interrupted = interrupt_requested();
    return r;
}

}  // namespace sb
