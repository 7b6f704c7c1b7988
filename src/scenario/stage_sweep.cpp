#include "scenario/stage_sweep.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/sysinfo.hpp"

namespace sb {

std::optional<Warning> stall_warning(const TestResult& r) {
    auto total = [](const std::vector<int64_t>& v) {
        double sum = 0;
        for (int64_t x : v)
            sum += static_cast<double>(x);
        return sum;
    };
    std::string what;
    // Stalls that added less than 1 % to their stage are counted in the document but not worth
    // a warning: a tight distribution makes small deviations "stalls" by the rule.
    auto add = [&](const Stalls& s, const char* text, double stage_ns) {
        if (s.count() == 0 || !(stage_ns > 0) || s.excess < kStallWarnFraction * stage_ns)
            return;
        what += fmt::format("{}{} of {} {}, {:.1f} ms added ({:.1f} % of the stage)",
                            what.empty() ? "" : "; ", s.count(), s.n, text, s.excess * 1e-6,
                            100 * s.excess / stage_ns);
    };
    if (r.prefill)
        add(r.prefill->stalls, "prefill repetitions slow", total(r.prefill->duration_ns));
    if (r.decode) {
        add(r.decode->token_stalls, "decode tokens stalled", total(r.decode->token_latency_ns));
        add(r.decode->stalls, "decode repetitions slow", total(r.decode->duration_ns));
    }
    if (what.empty())
        return std::nullopt;
    return Warning{
        "stalls",
        fmt::format("{} on {}: {} (modified z-score > {}): the means and their CIs include them, "
                    "the robust (median-based) tokens/s do not",
                    r.config.test_name(), r.config.devices.str(), what, kStallModifiedZ),
        "Quote the robust figure (`robust` in the document) and check the stall count: stalls "
        "come from other processes, a shared VM's host or the power manager. Stop background "
        "work, or rerun; --target-ci repeats until the robust figure's CI is narrow."};
}

std::vector<TestConfig> expand_matrix(const MatrixSpec& m) {
    if (m.models.empty())
        throw usage_error("no model given (-m FILE)");
    if (m.reps < 1)
        throw usage_error("repetitions (-r) must be at least 1");
    if (m.target_ci && (*m.target_ci <= 0 || *m.target_ci >= 1))
        throw usage_error("--target-ci must be a percentage between 0 and 100");
    auto positive = [](const std::vector<int>& v, const char* flag, bool zero_ok) {
        for (int x : v)
            if (x < 0 || (!zero_ok && x == 0))
                throw usage_error(std::string(flag) + " must be " + (zero_ok ? ">= 0" : "> 0") +
                                  ", got " + std::to_string(x));
    };
    // -n 0 gives a test of prefill alone, -p 0 one of decode alone (llama-bench's pp and tg
    // tests); a point with neither measures nothing and is left out of the sweep (llama-bench's
    // -p 0,512 -n 0,128 makes pp512 and tg128, here pp512+tg128 too).
    positive(m.n_prompt, "-p", true);
    positive(m.n_gen, "-n", true);
    if (std::ranges::all_of(m.n_prompt, [](int p) { return p == 0; }) &&
        std::ranges::all_of(m.n_gen, [](int n) { return n == 0; }))
        throw usage_error(
            "-p 0 with -n 0 measures nothing: give prompt (-p) or generated (-n) "
            "tokens");
    positive(m.n_depth, "-d", true);
    positive(m.n_threads, "-t", true);
    positive(m.n_batch, "-b", false);
    positive(m.n_ubatch, "-ub", false);
    const int max_reps = m.max_reps > 0 ? std::max(m.max_reps, m.reps)
                                        : (m.target_ci ? std::max(50, m.reps) : m.reps);
    std::vector<TestConfig> out;
    for (const auto& model : m.models)
        for (const auto& dev : m.devices)
            for (int ngl : m.n_gpu_layers)
                for (int p : m.n_prompt)
                    for (int n : m.n_gen) {
                        if (p == 0 && n == 0)
                            continue;
                        for (int d : m.n_depth)
                            for (int t : m.n_threads)
                                for (int b : m.n_batch)
                                    for (int ub : m.n_ubatch)
                                        for (FlashAttn fa : m.flash_attn)
                                            for (KvType tk : m.type_k)
                                                for (KvType tv : m.type_v) {
                                                    TestConfig c;
                                                    c.model_path = model;
                                                    c.devices = dev;
                                                    c.n_gpu_layers = ngl;
                                                    c.n_prompt = p;
                                                    c.n_gen = n;
                                                    c.n_depth = d;
                                                    c.n_threads = threads_or_default(t);
                                                    c.n_batch = b;
                                                    c.n_ubatch = std::min(ub, b);
                                                    c.flash_attn = fa;
                                                    c.type_k = tk;
                                                    c.type_v = tv;
                                                    c.reps = m.reps;
                                                    c.target_ci = m.target_ci;
                                                    c.max_reps = max_reps;
                                                    c.warmup = m.warmup;
                                                    c.seed = m.seed;
                                                    out.push_back(c);
                                                }
                    }
    return out;
}

TestResult run_test(Engine& engine, const TestConfig& c, const SweepHooks& hooks,
                    std::optional<double> membw_gbps, Clock clock) {
    RepetitionOptions o;
    o.membw_gbps = membw_gbps;
    o.clock = std::move(clock);
    return run_repetitions(engine, c, hooks, std::move(o));
}

}  // namespace sb
