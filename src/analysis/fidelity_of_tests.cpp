#include "analysis/fidelity_of_tests.hpp"

#include <algorithm>
#include <filesystem>
#include <tuple>

#include "core/stats.hpp"

namespace sb {

std::vector<FidelitySection> fidelity_of_tests(const ResultDocument& doc) {
    std::vector<FidelitySection> out;
    for (const auto& t : doc.tests) {
        if (!t.fidelity || t.fidelity->error || t.status != Status::ok)
            continue;
        const TestFidelity& f = *t.fidelity;
        const TestConfig& c = t.config;
        auto it = std::find_if(out.begin(), out.end(), [&](const FidelitySection& s) {
            return std::tie(s.n_prompt, s.n_gen, s.reference) ==
                   std::tie(c.n_prompt, c.n_gen, f.reference);
        });
        if (it == out.end()) {
            FidelitySection s;
            s.reference = f.reference;
            s.n_prompt = c.n_prompt;
            s.n_gen = c.n_gen;
            s.top_k = f.top_k;
            s.seed = c.seed;
            s.method =
                "run --fidelity: teacher-forced logits captured untimed after each test's timed "
                "repetitions; the speed is the test's";
            out.push_back(std::move(s));
            it = out.end() - 1;
        }
        FidelityVariant v;
        v.model = c.model_path;
        v.model_name = std::filesystem::path(c.model_path).filename().string();
        v.devices = c.devices.str();
        v.type_k = c.type_k;
        v.type_v = c.type_v;
        v.reference = variant_label(v) == f.reference;
        if (t.prefill) {
            v.prefill_tps_reps = t.prefill->tokens_per_s;
            if (!v.prefill_tps_reps.empty())
                v.prefill_tps = percentile(v.prefill_tps_reps, 0.5);
        }
        if (t.decode) {
            v.decode_tps_reps = t.decode->tokens_per_s;
            if (!v.decode_tps_reps.empty())
                v.decode_tps = percentile(v.decode_tps_reps, 0.5);
        }
        if (f.prefill)
            v.prefill = *f.prefill;
        if (f.decode)
            v.decode = *f.decode;
        it->reps = std::max(it->reps, static_cast<int>(v.decode_tps_reps.size()));
        it->variants.push_back(std::move(v));
    }
    for (auto& s : out)
        mark_frontier(s.variants);
    return out;
}

}  // namespace sb
