#include "scenario/fidelity.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <span>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/result.hpp"
#include "core/stats.hpp"
#include "engine/llama_engine.hpp"
#include "engine/workload.hpp"
#include "scenario/logits.hpp"
#include "scenario/repetition.hpp"

namespace sb {

namespace {

struct Capture {
    int32_t n_vocab = 0;
    std::vector<float> logits;  // (1 + n_gen) x n_vocab: after the prompt, after each token
    std::span<const float> at(int pos) const {
        return {logits.data() + static_cast<size_t>(pos) * static_cast<size_t>(n_vocab),
                static_cast<size_t>(n_vocab)};
    }
};

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

// The untimed pass: the sequence's logits at every position that matters.
Capture capture(LlamaEngine& e, const std::vector<int32_t>& tokens, int n_prompt, int n_gen) {
    Capture c;
    c.n_vocab = e.n_vocab();
    c.logits.reserve(static_cast<size_t>(n_gen + 1) * static_cast<size_t>(c.n_vocab));
    e.reset();
    e.prefill(std::span<const int32_t>(tokens.data(), static_cast<size_t>(n_prompt)));
    auto keep = [&] {
        const auto l = e.last_logits();
        c.logits.insert(c.logits.end(), l.begin(), l.end());
    };
    keep();
    for (int i = 0; i < n_gen; ++i) {
        e.decode_step(tokens[static_cast<size_t>(n_prompt + i)]);
        keep();
    }
    return c;
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

std::vector<int32_t> top_k(std::span<const float> v, int k) {
    std::vector<int32_t> idx(v.size());
    std::iota(idx.begin(), idx.end(), 0);
    const size_t kk = std::min<size_t>(static_cast<size_t>(k), idx.size());
    std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(kk), idx.end(),
                      [&](int32_t a, int32_t b) { return v[a] > v[b] || (v[a] == v[b] && a < b); });
    idx.resize(kk);
    std::sort(idx.begin(), idx.end());
    return idx;
}

StageFidelity stage_fidelity(const Capture& ref, const Capture& x, int from, int to, int k) {
    StageFidelity s;
    std::vector<double> kls;
    double sq = 0, n_logits = 0, agree = 0, overlap = 0;
    for (int p = from; p < to; ++p) {
        const LogitsDiff d = diff_logits(ref.at(p), x.at(p));
        kls.push_back(d.kl);
        s.max_abs = std::max(s.max_abs, d.max_abs);
        sq += d.rms * d.rms * ref.n_vocab;
        n_logits += ref.n_vocab;
        agree += d.top1_agrees();
        const auto a = top_k(ref.at(p), k), b = top_k(x.at(p), k);
        std::vector<int32_t> both;
        std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
        overlap += a.empty() ? 1.0 : static_cast<double>(both.size()) / a.size();
    }
    s.positions = to - from;
    if (s.positions == 0)
        return s;
    s.kl_mean = std::accumulate(kls.begin(), kls.end(), 0.0) / s.positions;
    s.kl_max = *std::max_element(kls.begin(), kls.end());
    std::vector<double> sorted = kls;
    std::sort(sorted.begin(), sorted.end());
    // Nearest rank: the smallest value with at least 99 % of positions at or below it.
    const size_t rank = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(sorted.size())));
    s.kl_p99 = sorted[std::max<size_t>(rank, 1) - 1];
    s.top1_agreement = agree / s.positions;
    s.topk_overlap = overlap / s.positions;
    s.rms = std::sqrt(sq / n_logits);
    return s;
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
    FidelityResult r;
    r.options = o;
    r.n_prompt = o.n_prompt;
    r.n_gen = o.n_gen;
    r.top_k = o.top_k;
    r.reps = o.reps;
    r.seed = o.seed;
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
    progress << "fidelity: reference " << r.reference << "\n";
    Capture ref;
    {
        LlamaEngine e;
        e.load(load_spec_for(config_of(o, ref_model, ref_dev, o.type_k[0], o.type_v[0])));
        r.tokens = sequence_tokens(o.n_prompt + o.n_gen, e.n_vocab(), o.seed, e.bos_token());
        ref = capture(e, r.tokens, o.n_prompt, o.n_gen);
    }
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
                        e.load(load_spec_for(config_of(o, model, dev, ctk, ctv)));
                        if (e.n_vocab() != ref.n_vocab) {
                            other_vocab = true;
                            throw input_error(fmt::format(
                                "{} has a vocabulary of {} tokens, the reference {}: not the same "
                                "model shape",
                                model, e.n_vocab(), ref.n_vocab));
                        }
                        const Capture x = capture(e, r.tokens, o.n_prompt, o.n_gen);
                        v.prefill = stage_fidelity(ref, x, 0, 1, o.top_k);
                        v.decode = stage_fidelity(ref, x, 1, o.n_gen + 1, o.top_k);
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
    // The frontier: no other variant is at least as fast in decode and at least as close
    // (decode KL), and strictly better in one.
    for (auto& v : r.variants) {
        if (v.error || !v.decode_tps)
            continue;
        v.frontier = std::none_of(r.variants.begin(), r.variants.end(), [&](const auto& w) {
            return &w != &v && !w.error && w.decode_tps && *w.decode_tps >= *v.decode_tps &&
                   w.decode.kl_mean <= v.decode.kl_mean &&
                   (*w.decode_tps > *v.decode_tps || w.decode.kl_mean < v.decode.kl_mean);
        });
    }
    return r;
}

}  // namespace sb
