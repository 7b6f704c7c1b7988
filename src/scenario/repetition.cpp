#include "scenario/repetition.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>

#include "core/interrupt.hpp"
#include "engine/backends.hpp"

namespace sb {

// The context holds the whole test: depth, prompt and generated tokens, 8 to spare. Its batch
// is at most the cells before decoding (depth + prompt) and its micro-batch at most the batch:
// the sizes llama-bench's prompt test runs with, whose context holds exactly those cells (llama.cpp
// clamps both to it). A micro-batch larger than the prompt made a small prompt up to a tenth
// slower (docs/run.md).
LoadSpec load_spec_for(const TestConfig& c) {
    LoadSpec ls = load_spec(c, c.n_depth + c.n_prompt + c.n_gen + 8);
    ls.n_batch = std::min(ls.n_batch, std::max(1, c.n_depth + c.n_prompt));
    ls.n_ubatch = std::min(ls.n_ubatch, ls.n_batch);
    return ls;
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

void finish_result(TestResult& r) {
    if (r.prefill)
        finish_stage(*r.prefill);
    if (r.decode)
        finish_decode(*r.decode);
    r.ttft = summarize_ns(r.ttft_ns);
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

RepeatRule test_repeat_rule(const TestResult& r, const TestConfig& c) {
    RepeatRule rule;
    rule.min_reps = c.reps;
    rule.max_reps = c.max_reps;
    if (c.target_ci)
        rule.enough = [&r, &c](const std::vector<int64_t>&) {
            return target_ci_reached(r, *c.target_ci);
        };
    return rule;
}

void record_stop_reason(TestResult& r, const TestConfig& c) {
    if (c.target_ci && r.reps_done >= c.reps && target_ci_reached(r, *c.target_ci))
        record_stopped_at_target_ci(r);
    else if (r.reps_done >= c.max_reps && c.target_ci)
        record_stopped_at_max_reps(r);
    else
        record_stopped_at_reps(r);
}

namespace {

std::string fixed(double v, int digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

void add_note_once(TestResult& r, const std::string& n) {
    if (std::find(r.notes.begin(), r.notes.end(), n) == r.notes.end())
        r.notes.push_back(n);
}

}  // namespace

// ---- whole requests (an engine behind HTTP) --------------------------------------------------

void add_request_repetition(TestResult& r, const RequestMeasure& m, int64_t n_prompt) {
    const RequestTiming& t = m.timing;
    if (!r.client)
        r.client.emplace();
    int64_t prompt = n_prompt;
    if (m.prompt_tokens)
        prompt = *m.prompt_tokens;
    else if (m.server && m.server->prompt_n)
        prompt = *m.server->prompt_n + m.server->cache_n.value_or(0);
    // The stages appear with their first measured repetition, so a test that failed before
    // measuring anything reads as failed, not as a row of empty numbers.
    if (!r.prefill)
        r.prefill.emplace().n_tokens = r.config.n_prompt;
    if (!r.decode && r.config.n_gen >= 2) {
        r.decode.emplace().n_tokens = r.config.n_gen - 1;  // the tokens after the first
        r.decode->kv_depth_start = r.config.n_prompt + 1;
    }
    const int64_t ttft = std::max<int64_t>(1, t.ttft_ns);
    r.ttft_ns.push_back(t.ttft_ns);
    if (r.prefill) {
        r.prefill->duration_ns.push_back(t.ttft_ns);
        r.prefill->start_ns.push_back(m.start_ns);
        r.prefill->tokens_per_s.push_back(static_cast<double>(prompt) * 1e9 / ttft);
    }
    if (r.decode && t.n_out >= 2 && t.e2e_ns > t.ttft_ns) {
        const int64_t d = t.e2e_ns - t.ttft_ns;
        r.decode->duration_ns.push_back(d);
        r.decode->start_ns.push_back(m.start_ns + t.ttft_ns);
        r.decode->tokens_per_s.push_back(static_cast<double>(t.n_out - 1) * 1e9 / d);
        r.decode->token_latency_ns.insert(r.decode->token_latency_ns.end(), t.itl_ns.begin(),
                                          t.itl_ns.end());
        r.decode->token_latency_counts.push_back(static_cast<int64_t>(t.itl_ns.size()));
    }
    ClientTimings& c = *r.client;
    c.e2e_ns.push_back(t.e2e_ns);
    if (t.tpot_ns)
        c.tpot_ns.push_back(*t.tpot_ns);
    c.first_content_ns.push_back(t.first_content_ns);
    c.prompt_tokens.push_back(prompt);
    c.output_tokens.push_back(t.n_out);
    c.streamed_tokens.push_back(t.n_streamed);
    c.claimed_output_tokens.push_back(t.claimed_out);
    c.chunks.push_back(t.n_chunks);
    if (m.server) {
        if (!r.server)
            r.server.emplace();
        const ServerTimings& s = *m.server;
        r.server->reps.push_back(s);
        if (s.prompt_ns)
            r.server->ttft_minus_prompt_ns.push_back(t.ttft_ns - *s.prompt_ns);
        if (s.prompt_ns && s.predicted_ns)
            r.server->e2e_minus_total_ns.push_back(t.e2e_ns - *s.prompt_ns - *s.predicted_ns);
    }
}

void finish_request_result(TestResult& r, const std::string& server_kind) {
    finish_result(r);
    const TestConfig& cfg = r.config;
    const std::string name = cfg.test_name() + " over HTTP";
    if (r.client) {
        ClientTimings& c = *r.client;
        c.e2e = summarize_ns(c.e2e_ns);
        c.tpot = summarize_ns(c.tpot_ns);
        std::vector<double> fc;
        for (const auto& v : c.first_content_ns)
            if (v)
                fc.push_back(static_cast<double>(*v));
        c.first_content = summarize(fc);
        if (!c.prompt_tokens.empty()) {
            const auto [lo, hi] =
                std::minmax_element(c.prompt_tokens.begin(), c.prompt_tokens.end());
            if (*lo != cfg.n_prompt || *hi != cfg.n_prompt) {
                std::string counted = std::to_string(*lo);
                if (*hi != *lo) {
                    counted += '-';
                    counted += std::to_string(*hi);
                }
                add_note_once(r, name + ": the server counted " + counted +
                                     " prompt tokens (asked " + std::to_string(cfg.n_prompt) +
                                     "; its tokenizer or chat template); prefill t/s uses its "
                                     "count");
            }
        }
        const int64_t want = std::max(1, cfg.n_gen);
        if (!c.output_tokens.empty()) {
            const int64_t lo = *std::min_element(c.output_tokens.begin(), c.output_tokens.end());
            if (lo < want)
                add_note_once(
                    r, name + ": the server stopped after " + std::to_string(lo) + " of " +
                           std::to_string(want) +
                           " tokens in some repetition (EOS it would not ignore, or a limit)");
        }
    }
    if (r.server) {
        ServerSide& s = *r.server;
        std::vector<double> pre, dec;
        for (const auto& t : s.reps) {
            if (t.prompt_n && t.prompt_ns && *t.prompt_ns > 0)
                pre.push_back(static_cast<double>(*t.prompt_n) * 1e9 / *t.prompt_ns);
            if (t.predicted_n && t.predicted_ns && *t.predicted_ns > 0)
                dec.push_back(static_cast<double>(*t.predicted_n) * 1e9 / *t.predicted_ns);
        }
        s.prefill_tokens_per_s = summarize(pre);
        s.decode_tokens_per_s = summarize(dec);
        s.ttft_minus_prompt = summarize_ns(s.ttft_minus_prompt_ns);
        s.e2e_minus_total = summarize_ns(s.e2e_minus_total_ns);
        std::string n = name + " (" + server_kind + " timings, medians): server prefill ";
        n += s.prefill_tokens_per_s.median ? fixed(*s.prefill_tokens_per_s.median, 1) : "-";
        n += " t/s, decode ";
        n += s.decode_tokens_per_s.median ? fixed(*s.decode_tokens_per_s.median, 1) : "-";
        n += " t/s; client - server: TTFT - prompt time ";
        n +=
            s.ttft_minus_prompt.median ? fixed(*s.ttft_minus_prompt.median * 1e-6, 3) + " ms" : "-";
        n += ", E2E - server total ";
        n += s.e2e_minus_total.median ? fixed(*s.e2e_minus_total.median * 1e-6, 3) + " ms" : "-";
        add_note_once(r, n);
    }
}

// ---- the runner ------------------------------------------------------------------------------

namespace {

// A RequestRound as the engine of whole requests the runner drives: run_request is the round;
// there is nothing to load, and no stage entries.
class RoundEngine final : public Engine {
  public:
    RoundEngine(RequestRound round, std::string name)
        : round_(std::move(round)), name_(std::move(name)) {}
    EngineCaps caps() const override {
        EngineCaps c;
        c.name = name_;
        c.measures_whole_request = true;
        return c;
    }
    void load(const LoadSpec&) override {}
    void reset() override {}
    void fill_to_depth(int n_depth, uint64_t) override {
        if (n_depth > 0)
            throw input_error(name_ + " has no KV cache to fill");
    }
    StageTimes prefill(std::span<const int32_t>) override {
        throw input_error(name_ + " takes whole requests, not a prefill");
    }
    int64_t decode_step(int32_t) override {
        throw input_error(name_ + " takes whole requests, not a decode step");
    }
    int32_t n_vocab() const override { return 0; }
    std::optional<int32_t> bos_token() const override { return std::nullopt; }
    std::vector<std::string> active_backends() const override { return {}; }
    RequestMeasure run_request(const RequestSpec& spec) override { return round_(spec); }

  private:
    RequestRound round_;
    std::string name_;
};

}  // namespace

RepetitionRunner::RepetitionRunner(Engine& engine, const TestConfig& config, SweepHooks hooks,
                                   RepetitionOptions opts)
    : pre_(engine),
      dec_(opts.decode_engine ? *opts.decode_engine : engine),
      c_(config),
      hooks_(std::move(hooks)),
      opts_(std::move(opts)),
      loop_(test_repeat_rule(r_, c_), opts_.clock) {
    if (!opts_.clock)
        opts_.clock = now_ns;
    whole_request_ = pre_.caps().measures_whole_request;
    r_.config = c_;
    r_.started_ns = opts_.clock();
}

RepetitionRunner::RepetitionRunner(std::unique_ptr<Engine> own, const TestConfig& config,
                                   SweepHooks hooks, RepetitionOptions opts)
    : own_(std::move(own)),
      pre_(*own_),
      dec_(*own_),
      c_(config),
      hooks_(std::move(hooks)),
      opts_(std::move(opts)),
      loop_(test_repeat_rule(r_, c_), opts_.clock) {
    opts_.decode_engine = nullptr;
    opts_.load = false;
    if (!opts_.clock)
        opts_.clock = now_ns;
    whole_request_ = true;
    r_.config = c_;
    r_.started_ns = opts_.clock();
}

RepetitionRunner::RepetitionRunner(RequestRound round, std::string name, const TestConfig& config,
                                   SweepHooks hooks, RepetitionOptions opts)
    : RepetitionRunner(std::make_unique<RoundEngine>(std::move(round), std::move(name)), config,
                       std::move(hooks), std::move(opts)) {}

void RepetitionRunner::mark(const char* stage, bool begin, std::optional<int64_t> tokens) const {
    if (hooks_.stage_marker)
        hooks_.stage_marker(stage, begin, tokens);
}

void RepetitionRunner::doing(const char* what) const {
    if (hooks_.activity)
        hooks_.activity(what);
}

std::string RepetitionRunner::label() const {
    return whole_request_ ? c_.test_name() + " over HTTP" : c_.test_name();
}

std::vector<int32_t> RepetitionRunner::prompt_for(int rep) const {
    // After a filled KV cache the prompt continues a sequence: no BOS.
    return sequence_tokens(c_.n_prompt, n_vocab_, prompt_seed(c_.seed, rep),
                           c_.n_depth == 0 ? bos_ : std::nullopt);
}

void RepetitionRunner::record_error(const std::exception& e) {
    stopped_ = true;
    // A request cut off by the interrupt (Ctrl-C ends a wait on a server) is an interruption,
    // and so is a stage llama.cpp gave up in the middle because of it (its abort callback
    // polls the flag: a prefill of 100k tokens answers Ctrl-C within one graph node).
    const auto* se = dynamic_cast<const Error*>(&e);
    if (interrupted_now() && (whole_request_ || !se || se->kind() == ErrorKind::runtime)) {
        record_interrupted(r_, e.what());
        return;
    }
    error_kind_ = se ? se->kind() : ErrorKind::runtime;
    // A server's failure (an HTTP status, a cut stream) does not tell whether the user's input
    // or the measurement failed: its kind stays unknown.
    if (whole_request_)
        error_kind_.reset();
    record_failure(r_, e.what(), error_kind_);
}

void RepetitionRunner::prepare() {
    if (prepared_ || stopped_)
        return;
    prepared_ = true;
    try {
        if (opts_.load) {
            doing("loading the model");
            pre_.load(load_spec_for(c_));
            const auto notes = pre_.notes();
            r_.notes.insert(r_.notes.begin(), notes.begin(), notes.end());
        }
        r_.backends = pre_.active_backends();
        r_.memory = pre_.memory();
        if (&dec_ != &pre_) {
            for (auto& b : dec_.active_backends())
                if (std::find(r_.backends.begin(), r_.backends.end(), b) == r_.backends.end())
                    r_.backends.push_back(std::move(b));
            // Two engines, each with its model and context, held at once: their buffers add up.
            for (const auto& m : dec_.memory()) {
                auto it = std::find_if(r_.memory.begin(), r_.memory.end(),
                                       [&](const BufferMemory& x) { return x.buffer == m.buffer; });
                if (it == r_.memory.end()) {
                    r_.memory.push_back(m);
                } else {
                    it->model_bytes += m.model_bytes;
                    it->context_bytes += m.context_bytes;
                    it->compute_bytes += m.compute_bytes;
                }
            }
        }
        if (whole_request_) {
            // The stages appear with the first request (add_request_repetition).
            if (c_.warmup) {
                doing("warmup");
                RequestSpec q;
                q.n_prompt = c_.n_prompt;
                q.n_gen = std::min(std::max(1, c_.n_gen), 8);
                q.prompt_seed = prompt_seed(c_.seed, -1);
                q.seed = gen_seed(c_.seed, -1);
                q.rep = -1;
                pre_.run_request(q);
            }
            record_stopped_at_reps(r_);
            return;
        }
        n_vocab_ = pre_.n_vocab();
        bos_ = pre_.bos_token();
        if (c_.n_prompt > 0)
            r_.prefill.emplace().n_tokens = c_.n_prompt;
        if (c_.n_gen > 0) {
            r_.decode.emplace().n_tokens = c_.n_gen;
            r_.decode->kv_depth_start = c_.n_depth + c_.n_prompt;
            // Every token latency is stored inside the timed loop: no reallocation there.
            r_.decode->token_latency_ns.reserve(static_cast<size_t>(c_.n_gen) * c_.max_reps);
        }
        if (c_.warmup) {
            doing("warmup");
            pre_.fill_to_depth(c_.n_depth, c_.seed);
            if (c_.n_prompt > 0)
                pre_.prefill(prompt_for(-1));
            if (&dec_ != &pre_) {
                pre_.save_state(state_buf_);
                dec_.restore_state(state_buf_);
            }
            if (c_.n_gen > 0)
                dec_.decode_step(bos_.value_or(0));
        }
        record_stopped_at_reps(r_);
    } catch (const std::exception& e) {
        record_error(e);
    }
}

bool RepetitionRunner::has_repeats_remaining() const {
    return !stopped_ && r_.reps_done < c_.max_reps;
}

void RepetitionRunner::fail(const std::string& error, std::optional<ErrorKind> kind) {
    record_failure(r_, error, kind);
    error_kind_ = kind;
    stopped_ = true;
}

bool RepetitionRunner::interrupted_now() const {
    return opts_.interrupted ? opts_.interrupted() : interrupt_requested();
}

void RepetitionRunner::interrupt() {
    record_interrupted(r_);
    stopped_ = true;
}

void RepetitionRunner::do_one_repetition() {
    prepare();
    if (!has_repeats_remaining())
        return;
    if (interrupted_now()) {
        interrupt();
        return;
    }
    const int rep = r_.reps_done;
    if (hooks_.repetition)
        hooks_.repetition(rep + 1, c_.max_reps);
    try {
        if (whole_request_)
            measure_request(rep);
        else
            measure(rep);
        // A decode cut short by the interrupt: the repetition counts, shorter (its samples are
        // kept), and the test stops as interrupted.
        if (partial_decode_) {
            r_.reps_done = rep + 1;
            interrupt();
        } else {
            r_.reps_done = rep + 1;
            if (!loop_.has_repeats_remaining()) {
                record_stop_reason(r_, c_);
                stopped_ = true;
            }
        }
    } catch (const std::exception& e) {
        record_error(e);
    }
}

void RepetitionRunner::measure_request(int rep) {
    const bool decode = c_.n_gen >= 2;  // a decode stage needs tokens after the first
    RequestSpec q;
    q.n_prompt = c_.n_prompt;
    q.n_gen = std::max(1, c_.n_gen);
    q.prompt_seed = prompt_seed(c_.seed, rep);
    q.seed = gen_seed(c_.seed, rep);
    q.rep = rep;
    q.on_send = [&] { mark("prefill", true); };
    q.on_first_output = [&] {
        mark("prefill", false, c_.n_prompt);
        if (decode)
            mark("decode", true);
    };
    const RequestMeasure m = pre_.run_request(q);
    if (decode)
        mark("decode", false, std::max<int64_t>(0, m.timing.n_out - 1));
    for (const auto& n : m.timing.notes)
        add_note_once(r_, label() + ": " + n);
    add_request_repetition(r_, m, c_.n_prompt);
    loop_.add(m.timing.e2e_ns);
}

void RepetitionRunner::measure(int rep) {
    if (c_.n_depth > 0)
        doing("filling the KV cache");
    pre_.fill_to_depth(c_.n_depth, c_.seed);
    // Inputs are made before the clock starts.
    const auto prompt = prompt_for(rep);
    const auto gen = random_tokens(c_.n_gen, n_vocab_, gen_seed(c_.seed, rep));

    int64_t prefill_ns = 0;
    if (c_.n_prompt > 0) {
        doing("prefill");
        mark("prefill", true);
        const StageTimes st = pre_.prefill(prompt);
        mark("prefill", false, c_.n_prompt);
        prefill_ns = st.end_ns - st.start_ns;
        r_.prefill->duration_ns.push_back(prefill_ns);
        r_.prefill->start_ns.push_back(st.start_ns);
        r_.prefill->tokens_per_s.push_back(c_.n_prompt * 1e9 / prefill_ns);
    }

    int64_t transfer_ns = 0;
    if (&dec_ != &pre_) {
        doing("the state transfer");
        mark("transfer", true);
        const int64_t t0 = opts_.clock();
        const size_t bytes = pre_.save_state(state_buf_);
        const int64_t t1 = opts_.clock();
        dec_.restore_state(state_buf_);
        const int64_t t2 = opts_.clock();
        mark("transfer", false);
        transfer_ns = t2 - t0;
        transfer_.start_ns.push_back(t0);
        transfer_.save_ns.push_back(t1 - t0);
        transfer_.restore_ns.push_back(t2 - t1);
        transfer_.transfer_ns.push_back(transfer_ns);
        transfer_.bytes.push_back(static_cast<int64_t>(bytes));
    }

    int64_t decode_ns = 0;
    if (c_.n_gen > 0) {
        doing("decode");
        mark("decode", true);
        const size_t first = r_.decode->token_latency_ns.size();
        // Ctrl-C inside a long decode (thousands of tokens) ends it at the next token: the
        // tokens decoded are kept as this repetition's, shorter, and the test stops.
        const DecodeTiming d = time_decode(dec_, gen, opts_.clock, r_.decode->token_latency_ns,
                                           [this] { return interrupted_now(); });
        mark("decode", false, d.n_tokens);
        if (d.n_tokens < c_.n_gen)
            partial_decode_ = d.n_tokens;
        decode_ns = d.end_ns - d.start_ns;
        r_.decode->duration_ns.push_back(decode_ns);
        r_.decode->token_latency_counts.push_back(d.n_tokens);
        r_.decode->start_ns.push_back(d.start_ns);
        r_.decode->tokens_per_s.push_back(static_cast<double>(d.n_tokens) * 1e9 / decode_ns);
        // TTFT: the prompt, the state moved, and the first token generated.
        if (c_.n_prompt > 0)
            r_.ttft_ns.push_back(prefill_ns + transfer_ns + r_.decode->token_latency_ns[first]);
    }
    loop_.add(prefill_ns + transfer_ns + decode_ns);
    if (partial_decode_) {
        r_.notes.push_back("interrupted in repetition " + std::to_string(rep + 1) +
                           ": its decode ran " + std::to_string(*partial_decode_) + " of " +
                           std::to_string(c_.n_gen) + " tokens");
    }
}

void RepetitionRunner::fill_roofline() {
    // Roofline context: what decode read per token and what prefill computed.
    if (r_.decode && r_.decode->throughput.median) {
        auto wb = dec_.weight_bytes();
        auto kv = dec_.kv_bytes_read(r_.decode->kv_depth_start + c_.n_gen / 2);
        if (wb && kv) {
            r_.roofline.decode_bytes_per_token = static_cast<double>(*wb) + *kv;
            r_.roofline.decode_bandwidth_gbps =
                *r_.roofline.decode_bytes_per_token * *r_.decode->throughput.median / 1e9;
            if (opts_.membw_gbps && *opts_.membw_gbps > 0)
                r_.roofline.decode_bandwidth_fraction =
                    *r_.roofline.decode_bandwidth_gbps / *opts_.membw_gbps;
        }
    }
    if (r_.prefill && r_.prefill->duration.median) {
        auto np = pre_.n_params();
        auto sh = pre_.shape();
        if (np && sh)  // FLOPs per ns = GFLOP/s
            r_.roofline.prefill_gflops =
                prefill_flops(*np, *sh, c_.n_depth, c_.n_prompt) / *r_.prefill->duration.median;
    }
}

TestResult RepetitionRunner::results() {
    stopped_ = true;
    if (whole_request_) {
        finish_request_result(r_, pre_.caps().name);
    } else {
        finish_result(r_);
        if (opts_.roofline)
            fill_roofline();
    }
    r_.finished_ns = opts_.clock();
    return r_;
}

TestResult run_repetitions(Engine& engine, const TestConfig& config, const SweepHooks& hooks,
                           RepetitionOptions opts) {
    RepetitionRunner runner(engine, config, hooks, std::move(opts));
    runner.prepare();
    while (runner.has_repeats_remaining())
        runner.do_one_repetition();
    return runner.results();
}

TestResult run_repetitions(RequestRound round, std::string name, const TestConfig& config,
                           const SweepHooks& hooks, RepetitionOptions opts) {
    RepetitionRunner runner(std::move(round), std::move(name), config, hooks, std::move(opts));
    runner.prepare();
    while (runner.has_repeats_remaining())
        runner.do_one_repetition();
    return runner.results();
}

std::vector<std::pair<int, int>> mode_run_order(int n_modes, int rounds) {
    std::vector<std::pair<int, int>> order;
    for (int r = 0; r < rounds; ++r)
        for (int i = 0; i < n_modes; ++i)
            order.emplace_back(r, r % 2 == 0 ? i : n_modes - 1 - i);
    return order;
}

InterleavedRounds::InterleavedRounds(int n_measures, int rounds, std::function<bool()> interrupted)
    : order_(mode_run_order(n_measures, rounds)), poll_(std::move(interrupted)) {}

bool InterleavedRounds::has_runs_remaining() {
    if (interrupted_ || next_ >= order_.size())
        return false;
    interrupted_ = poll_ ? poll_() : interrupt_requested();
    return !interrupted_;
}

InterleavedRounds::Run InterleavedRounds::next() {
    const auto [round, index] = order_.at(next_);
    Run r;
    r.round = round;
    r.index = index;
    r.sequence = static_cast<int>(next_++);
    return r;
}

}  // namespace sb
