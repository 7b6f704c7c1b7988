#include "scenario/stage_sweep.hpp"

#include <algorithm>
#include <random>

#include <fmt/format.h>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/sysinfo.hpp"
#include "engine/backends.hpp"

namespace sb {

std::vector<int32_t> random_tokens(int n, int32_t n_vocab, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int32_t> dist(0, n_vocab - 1);
    std::vector<int32_t> t(n);
    for (auto& x : t)
        x = dist(rng);
    return t;
}

LoadSpec load_spec_for(const TestConfig& c) {
    LoadSpec ls;
    ls.model_path = c.model_path;
    ls.devices = split_device_set(c.devices.str());
    ls.n_gpu_layers = c.n_gpu_layers;
    ls.n_ctx = c.n_depth + c.n_prompt + c.n_gen + 8;
    ls.n_batch = c.n_batch;
    ls.n_ubatch = c.n_ubatch;
    ls.n_threads = c.n_threads;
    ls.flash_attn = to_string(c.flash_attn);
    ls.type_k = c.type_k;
    ls.type_v = c.type_v;
    return ls;
}

namespace {

std::vector<double> as_double(const std::vector<int64_t>& v) {
    return std::vector<double>(v.begin(), v.end());
}

// tokens/s from a median (and its CI) of nanoseconds per token; a longer time is a lower rate.
RobustRate rate_from_ns(const MedianCi& m) {
    RobustRate r;
    if (!m.median || *m.median <= 0)
        return r;
    r.tokens_per_s = 1e9 / *m.median;
    if (m.ci95_lo && m.ci95_hi && *m.ci95_lo > 0) {
        r.ci95_lo = 1e9 / *m.ci95_hi;
        r.ci95_hi = 1e9 / *m.ci95_lo;
        r.ci95_half_rel = (*r.ci95_hi - *r.ci95_lo) / 2 / *r.tokens_per_s;
    }
    return r;
}

}  // namespace

RobustRate stage_robust_rate(const StageResult& s) {
    // ns per token of every repetition: the same as n_tokens / duration when the count is fixed,
    // and right for an engine behind HTTP whose server counted the prompt per repetition.
    std::vector<double> ns_per_token;
    for (double tps : s.tokens_per_s)
        if (tps > 0)
            ns_per_token.push_back(1e9 / tps);
    return rate_from_ns(median_ci(ns_per_token));
}

RobustRate decode_robust_rate(const DecodeResult& d) {
    const std::vector<double> lat = as_double(d.token_latency_ns);
    std::vector<std::size_t> groups;
    int64_t total = 0;
    for (int64_t n : d.token_latency_counts) {
        groups.push_back(static_cast<std::size_t>(std::max<int64_t>(0, n)));
        total += std::max<int64_t>(0, n);
    }
    if (total != static_cast<int64_t>(lat.size())) {
        // No usable grouping: repetitions of n_tokens each if that fits, else token by token.
        groups.clear();
        if (d.n_tokens > 0 && !lat.empty() &&
            lat.size() % static_cast<std::size_t>(d.n_tokens) == 0)
            groups.assign(lat.size() / static_cast<std::size_t>(d.n_tokens),
                          static_cast<std::size_t>(d.n_tokens));
    }
    return rate_from_ns(median_ci(lat, groups));
}

void finish_stage(StageResult& s) {
    s.duration = summarize_ns(s.duration_ns);
    s.throughput = summarize(s.tokens_per_s);
    s.stalls = detect_stalls(as_double(s.duration_ns));
    s.robust = stage_robust_rate(s);
}

void finish_decode(DecodeResult& d) {
    finish_stage(d);
    d.itl = summarize_ns(d.token_latency_ns);
    d.token_stalls = detect_stalls(as_double(d.token_latency_ns));
    d.robust = decode_robust_rate(d);
}

bool target_ci_reached(const TestResult& r, double target) {
    std::vector<RobustRate> rates;
    if (r.prefill)
        rates.push_back(stage_robust_rate(*r.prefill));
    if (r.decode)
        rates.push_back(decode_robust_rate(*r.decode));
    for (const auto& rate : rates)
        if (!rate.ci95_half_rel || *rate.ci95_half_rel > target)
            return false;
    return true;
}

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

bool repetition_done(TestResult& r, const TestConfig& c, int rep) {
    r.reps_done = rep + 1;
    if (r.reps_done >= c.reps && c.target_ci && target_ci_reached(r, *c.target_ci)) {
        r.stopped_by = StopReason::target_ci;
        return true;
    }
    if (r.reps_done >= c.max_reps) {
        r.stopped_by = c.target_ci ? StopReason::max_reps : StopReason::reps;
        return true;
    }
    return !c.target_ci && r.reps_done >= c.reps;
}

double prefill_flops(uint64_t n_params, const ModelShape& s, int n_depth, int n_prompt) {
    // Matrix multiplications: 2 FLOPs per weight per token, except the token embedding, which
    // is a lookup; the output projection runs for the last token only (no logits are asked
    // for the others), whether or not it shares the embedding's weights.
    const double embd = static_cast<double>(s.n_vocab) * s.n_embd;
    const double dense = 2.0 * (static_cast<double>(n_params) - embd) * n_prompt + 2.0 * embd;
    // Attention: QK^T and softmax(QK^T)V, 2 x 2 x n_attn FLOPs per (query, key) pair, and
    // query i attends to n_depth + i + 1 keys.
    const double pairs = static_cast<double>(n_prompt) * n_depth +
                         static_cast<double>(n_prompt) * (n_prompt + 1) / 2.0;
    return dense + 4.0 * s.n_layer * static_cast<double>(s.n_attn) * pairs;
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
    // A prefill of no tokens measures nothing; -n 0 gives a prefill-only test.
    positive(m.n_prompt, "-p", false);
    positive(m.n_gen, "-n", true);
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
                        for (int d : m.n_depth)
                            for (int t : m.n_threads)
                                for (int b : m.n_batch)
                                    for (int ub : m.n_ubatch)
                                        for (const auto& fa : m.flash_attn)
                                            for (const auto& tk : m.type_k)
                                                for (const auto& tv : m.type_v) {
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
                                                    c.flash_attn = enum_from_text<FlashAttn>(
                                                        fa, "--flash-attn");
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
                    std::optional<double> membw_gbps) {
    TestResult r;
    r.config = c;
    r.started_ns = now_ns();
    auto mark = [&](const char* stage, bool begin, std::optional<int64_t> tokens = {}) {
        if (hooks.stage_marker)
            hooks.stage_marker(stage, begin, tokens);
    };
    auto doing = [&](const char* what) {
        if (hooks.activity)
            hooks.activity(what);
    };
    try {
        doing("loading the model");
        engine.load(load_spec_for(c));
        r.backends = engine.active_backends();
        r.notes = engine.notes();
        const int32_t n_vocab = engine.n_vocab();
        const auto bos = engine.bos_token();

        if (c.n_prompt > 0)
            r.prefill.emplace().n_tokens = c.n_prompt;
        if (c.n_gen > 0) {
            r.decode.emplace().n_tokens = c.n_gen;
            r.decode->kv_depth_start = c.n_depth + c.n_prompt;
            // Every token latency is stored inside the timed loop: no reallocation there.
            r.decode->token_latency_ns.reserve(static_cast<size_t>(c.n_gen) * c.max_reps);
        }
        // Inputs are made before the clock starts; repetition i uses seed + i.
        auto prompt_for = [&](int rep) {
            auto t = random_tokens(c.n_prompt, n_vocab, c.seed * 1000003 + rep);
            if (bos && c.n_depth == 0 && !t.empty())
                t[0] = *bos;
            return t;
        };

        if (c.warmup) {
            if (hooks.progress)
                hooks.progress(c.test_name() + ": warmup");
            doing("warmup");
            engine.fill_to_depth(c.n_depth, c.seed);
            if (c.n_prompt > 0)
                engine.prefill(prompt_for(-1));
            if (c.n_gen > 0)
                engine.decode_step(bos.value_or(0));
        }

        r.stopped_by = StopReason::reps;
        for (int rep = 0; rep < c.max_reps; ++rep) {
            if (interrupt_requested()) {
                r.status = Status::interrupted;
                r.stopped_by = StopReason::interrupt;
                break;
            }
            if (hooks.progress)
                hooks.progress(c.test_name() + " on " + c.devices.str() + ": repetition " +
                               std::to_string(rep + 1) + "/" + std::to_string(c.max_reps));
            if (c.n_depth > 0)
                doing("filling the KV cache");
            engine.fill_to_depth(c.n_depth, c.seed);
            const auto prompt = prompt_for(rep);
            const auto gen = random_tokens(c.n_gen, n_vocab, c.seed * 7919 + rep);
            int64_t prefill_ns = 0;
            if (c.n_prompt > 0) {
                doing("prefill");
                mark("prefill", true);
                StageTimes st = engine.prefill(prompt);
                mark("prefill", false, c.n_prompt);
                prefill_ns = st.end_ns - st.start_ns;
                r.prefill->duration_ns.push_back(prefill_ns);
                r.prefill->start_ns.push_back(st.start_ns);
                r.prefill->tokens_per_s.push_back(c.n_prompt * 1e9 / prefill_ns);
            }
            if (c.n_gen > 0) {
                doing("decode");
                mark("decode", true);
                const int64_t start = now_ns();
                int64_t prev = start;
                for (int i = 0; i < c.n_gen; ++i) {
                    const int64_t t = engine.decode_step(gen[i]);
                    r.decode->token_latency_ns.push_back(t - prev);
                    prev = t;
                }
                mark("decode", false, c.n_gen);
                const int64_t total = prev - start;
                r.decode->duration_ns.push_back(total);
                r.decode->token_latency_counts.push_back(c.n_gen);
                r.decode->start_ns.push_back(start);
                r.decode->tokens_per_s.push_back(c.n_gen * 1e9 / total);
                if (c.n_prompt > 0)
                    r.ttft_ns.push_back(prefill_ns + r.decode->token_latency_ns[rep * c.n_gen]);
            }
            if (repetition_done(r, c, rep))
                break;
        }
    } catch (const std::exception& e) {
        record_failure(r, e);
    }
    if (r.prefill)
        finish_stage(*r.prefill);
    if (r.decode)
        finish_decode(*r.decode);
    r.ttft = summarize_ns(r.ttft_ns);

    // Roofline context: what decode read per token and what prefill computed.
    if (r.decode && r.decode->throughput.median) {
        auto wb = engine.weight_bytes();
        auto kv = engine.kv_bytes_read(r.decode->kv_depth_start + c.n_gen / 2);
        if (wb && kv) {
            r.roofline.decode_bytes_per_token = static_cast<double>(*wb) + *kv;
            r.roofline.decode_bandwidth_gbps =
                *r.roofline.decode_bytes_per_token * *r.decode->throughput.median / 1e9;
            if (membw_gbps && *membw_gbps > 0)
                r.roofline.decode_bandwidth_fraction =
                    *r.roofline.decode_bandwidth_gbps / *membw_gbps;
        }
    }
    if (r.prefill && r.prefill->duration.median) {
        auto np = engine.n_params();
        auto sh = engine.shape();
        if (np && sh)  // FLOPs per ns = GFLOP/s
            r.roofline.prefill_gflops =
                prefill_flops(*np, *sh, c.n_depth, c.n_prompt) / *r.prefill->duration.median;
    }
    r.finished_ns = now_ns();
    return r;
}

}  // namespace sb
