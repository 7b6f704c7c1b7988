#include "scenario/explain.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <latch>
#include <map>
#include <memory>
#include <thread>

#include "analysis/explain.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/json_util.hpp"
#include "core/last_word.hpp"
#include "core/stats.hpp"
#include "core/sysinfo.hpp"
#include "engine/backends.hpp"
#include "engine/http_engine.hpp"
#include "engine/managed_server.hpp"
#include "engine/server_requests.hpp"
#include "engine/text_generation.hpp"
#include "engine/workload.hpp"
#include "model/inspect.hpp"
#include "scenario/explain_settings.hpp"
#include "scenario/ops_run.hpp"
#include "scenario/repetition.hpp"
#include "scenario/run_context.hpp"

namespace sb {

namespace {

using nlohmann::json;

// A text of English words whose chat prompt is n_tokens long (or the closest below that the
// words and a padding of " a" reach), with the model's own template and tokenizer.
struct PromptText {
    std::string text;    // the user's words
    std::string prompt;  // with the chat template applied: what levels 4 and 5 send
    int64_t tokens = 0;
};

uint64_t mix(uint64_t x) {  // splitmix64: distinct seeds for every (round, client)
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

PromptText sized_text(const TextGenerator& p, int64_t n, uint64_t seed) {
    auto count = [&](int64_t words) { return p.count(prompt_words(seed, words)); };
    if (const int64_t one = count(1); one > n)
        throw input_error(fmt::format(
            "-p {} is shorter than a one-word chat prompt of this model ({} tokens with its "
            "template): give -p {} or more",
            n, one, one));
    // A longer text with the same seed starts with the shorter one, so the count grows with
    // the words: the most words that stay within n, by doubling and then halving.
    int64_t lo = 0, hi = 1;
    while (count(hi) <= n) {
        lo = hi;
        hi *= 2;
        if (hi > 64 * n + 64)
            throw runtime_error(fmt::format("cannot make a prompt of {} tokens from words", n));
    }
    while (hi - lo > 1) {
        const int64_t mid = (lo + hi) / 2;
        (count(mid) <= n ? lo : hi) = mid;
    }
    PromptText t{prompt_words(seed, std::max<int64_t>(lo, 1)), "", 0};
    t.tokens = p.count(t.text);
    for (int i = 0; i < 64 && t.tokens < n; ++i) {
        const std::string longer = t.text + " a";
        const int64_t c = p.count(longer);
        if (c > n)
            break;
        t.text = longer;
        t.tokens = c;
    }
    t.prompt = p.apply(t.text);
    return t;
}

std::string spec_key(const LoadSpec& s) {
    return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", s.model_path, s.devices.str(),
                       s.n_gpu_layers, s.n_ctx, s.n_batch, s.n_ubatch, s.n_threads,
                       to_string(s.flash_attn), to_string(s.type_k), to_string(s.type_v));
}

json spec_json(const LoadSpec& s) {
    return json{{"devices", s.devices.str()},
                {"n_threads", s.n_threads},
                {"n_batch", s.n_batch},
                {"n_ubatch", s.n_ubatch},
                {"n_ctx", s.n_ctx},
                {"flash_attn", to_string(s.flash_attn)},
                {"type_k", to_string(s.type_k)},
                {"type_v", to_string(s.type_v)}};
}

// The request levels 4 and 5 send: the prompt text with the chat template applied (as level 3
// makes it), which the server tokenizes, to /v1/completions, streamed, with the server's own
// sampling (no sampling field), the generation bounded and EOS ignored (ignore_eos), usage
// asked for. Not the chat endpoint: its output parser fails on a synthetic model's random
// tokens ("does not match the expected ... format"), which is not what is measured here.
GenerationStream::Spec completion_spec(const std::string& base, const std::string& prompt,
                                       int n_gen, uint64_t seed, int64_t prompt_tokens,
                                       const std::string& model, int64_t read_ms,
                                       const std::vector<int32_t>& banned) {
    GenerationStream::Spec s;
    s.api = HttpApi::openai;
    s.path = "/v1/completions";
    s.where = base + s.path;
    s.body = json{{"prompt", prompt},   {"max_tokens", n_gen},
                  {"stream", true},     {"stream_options", {{"include_usage", true}}},
                  {"ignore_eos", true}, {"seed", seed}};
    if (!model.empty())
        s.body["model"] = model;
    if (!banned.empty())
        s.body["logit_bias"] = banned_logit_bias(banned);
    s.n_gen = n_gen;
    s.n_prompt = prompt_tokens;  // bounds the server's prompt count (request_measure)
    s.read_ms = read_ms;
    return s;
}

// Everything the real measures need, set up once by run_explain.
class Levels {
  public:
    Levels(const ExplainOptions& o, ExplainSection& s, EngineFactory& engines, const Clock& clock,
           LoadSpec base, TextGenerator& text, ServerRequests& server, SamplerSettings sampler,
           std::vector<std::vector<PromptText>> texts, std::string url, std::string model_name)
        : o_(o),
          s_(s),
          engines_(engines),
          clock_(clock),
          base_(std::move(base)),
          text_(text),
          server_(server),
          sampler_(sampler),
          texts_(std::move(texts)),
          url_(std::move(url)),
          model_name_(std::move(model_name)) {
        loaded_ = spec_key(base_);
        warm_text_ = prompt_words(mix(o_.seed ^ 0x5eed), 8);
        warm_prompt_ = text_.apply(prompt_words(mix(o_.seed ^ 0xabcdef), 16));
    }

    ExplainRun measure(const ExplainMeasure& m, int round) {
        if (m.level == "ops")
            return ops(round);
        if (m.level == "graph")
            return graph(m, round);
        if (m.level == "generation")
            return generation(round);
        if (m.level == "server")
            return server(round);
        return served(*m.concurrency, round);
    }

    LoadSpec spec_for(const ExplainMeasure& m) const {
        LoadSpec spec = base_;
        if (!m.setting)
            return spec;
        for (const auto& set : s_.settings)
            if (set.measure && (*m.setting == "all" || *m.setting == set.name))
                apply_setting(spec, set);
        return spec;
    }

  private:
    int64_t timeout_ms() const { return static_cast<int64_t>(o_.timeout_s * 1000); }

    void load(const LoadSpec& spec) {
        const std::string key = spec_key(spec);
        if (loaded_ == key)
            return;
        loaded_.clear();
        text_.load(spec);
        loaded_ = key;
        warm_generation_ = false;
    }

    ExplainRun ops(int) {
        // The profiler loads the model itself; a model this engine holds would keep its
        // accelerator modules loaded under the profiler's contexts (engine/backends.hpp).
        text_.unload();
        loaded_.clear();
        OpsOptions po;
        po.workload = base_;
        po.n_prompt = o_.n_prompt;
        po.replay_copies = o_.replay_copies;
        po.traced_reps = 1;
        po.plain_reps = 1;
        po.seed = o_.seed;
        ExplainRun r;
        r.start_ns = clock_();
        OpsHooks hooks;
        hooks.clock = clock_;
        const OpsProfile p = profile_ops(engines_, po, hooks);
        r.end_ns = clock_();
        for (const auto& st : p.stages) {
            if (!st.rec.sum_op_ns || st.n_tokens < 1)
                continue;
            if (st.stage == "prefill")
                r.prefill_ns = *st.rec.sum_op_ns;
            else if (st.stage == "decode")
                r.decode_ns = *st.rec.sum_op_ns / st.n_tokens;
        }
        r.prompt_tokens = o_.n_prompt;
        if (!r.prefill_ns && !r.decode_ns)
            r.error = "the profile has no op time (replay failed?)";
        return r;
    }

    ExplainRun graph(const ExplainMeasure& m, int round) {
        const LoadSpec spec = spec_for(m);
        load(spec);
        TestConfig c;
        c.model_path = spec.model_path;
        c.devices = spec.devices;
        c.n_prompt = o_.n_prompt;
        c.n_gen = o_.n_gen - 1;  // the tokens after the first, as levels 3 to 5 time them
        c.n_threads = spec.n_threads;
        c.n_batch = spec.n_batch;
        c.n_ubatch = spec.n_ubatch;
        c.type_k = spec.type_k;
        c.type_v = spec.type_v;
        c.reps = 1;
        c.max_reps = 1;
        c.warmup = true;
        c.seed = mix(o_.seed + static_cast<uint64_t>(round));
        RepetitionOptions ro;
        ro.load = false;
        ro.roofline = false;
        ro.clock = clock_;
        RepetitionRunner runner(text_.engine(), c, SweepHooks{}, ro);
        while (runner.has_repeats_remaining())
            runner.do_one_repetition();
        const TestResult t = runner.results();
        ExplainRun r;
        if (t.status != Status::ok || !t.prefill || t.prefill->duration_ns.empty() || !t.decode ||
            t.decode->duration_ns.empty()) {
            loaded_.clear();  // a failed context is not reused
            r.error = t.error.value_or("no stage was measured");
            return r;
        }
        r.start_ns = t.prefill->start_ns[0];
        r.end_ns = t.decode->start_ns[0] + t.decode->duration_ns[0];
        r.prefill_ns = static_cast<double>(t.prefill->duration_ns[0]);
        r.decode_ns = static_cast<double>(t.decode->duration_ns[0]) / c.n_gen;
        r.prompt_tokens = o_.n_prompt;
        r.output_tokens = o_.n_gen;
        return r;
    }

    // A level's turn in a round, through the one repetition loop: one repetition of round
    // (warmed up first when warm), named name, of a prompt of n_prompt tokens, on the run's clock.
    TestResult run_level(RequestRound round, const std::string& name, int64_t n_prompt,
                         bool warm) const {
        TestConfig c;
        c.model_path = o_.workload.model_path;
        c.n_prompt = static_cast<int>(n_prompt);
        c.n_gen = o_.n_gen;
        c.reps = 1;
        c.max_reps = 1;
        c.warmup = warm;
        c.seed = o_.seed;
        RepetitionOptions ro;
        ro.roofline = false;
        ro.clock = clock_;
        return run_repetitions(std::move(round), name, c, SweepHooks{}, ro);
    }

    // The times of a level's run from its runner's test: TTFT (the prefill stage of a whole
    // request), the time per token after the first (the decode stage over those tokens), the
    // request's start and end; the test's error when it failed or measured nothing.
    static ExplainRun level_run(const TestResult& t) {
        ExplainRun r;
        if (t.status != Status::ok || !t.prefill || t.prefill->duration_ns.empty() || !t.client ||
            t.client->e2e_ns.empty()) {
            r.error = t.error.value_or("no request was measured");
            return r;
        }
        r.start_ns = t.prefill->start_ns[0];
        r.end_ns = *r.start_ns + t.client->e2e_ns[0];
        r.prefill_ns = static_cast<double>(t.prefill->duration_ns[0]);
        r.output_tokens = t.client->output_tokens[0];
        if (t.decode && !t.decode->duration_ns.empty() && *r.output_tokens >= 2)
            r.decode_ns = static_cast<double>(t.decode->duration_ns[0]) /
                          static_cast<double>(*r.output_tokens - 1);
        return r;
    }

    // Level 3: an in-process generation of the round's text, as a request whose first token
    // is the first sampled one. Warmed up (by the runner) on the first run after a load.
    ExplainRun generation(int round) {
        load(base_);
        const PromptText& t = texts_[static_cast<size_t>(round)][0];
        RequestRound generate = [&](const RequestSpec& q) {
            const bool warm = q.rep < 0;
            const TextGeneration g =
                warm ? text_.generate(warm_text_, static_cast<int>(q.n_gen), sampler_, o_.seed)
                     : text_.generate(t.text, static_cast<int>(q.n_gen), sampler_,
                                      mix(o_.seed + 17 * static_cast<uint64_t>(round)));
            return generation_measure(g);
        };
        const TestResult test = run_level(generate, "generation", t.tokens, !warm_generation_);
        if (test.status == Status::ok)
            warm_generation_ = true;
        ExplainRun r = level_run(test);
        if (!r.error)
            r.prompt_tokens = test.client->prompt_tokens[0];
        return r;
    }

    // A generation as a request: TTFT to the first token sampled and detokenized, every token
    // counted as generated.
    static RequestMeasure generation_measure(const TextGeneration& g) {
        RequestMeasure m;
        m.start_ns = g.start_ns;
        RequestTiming& t = m.timing;
        t.ttft_ns = g.first_token_ns - g.start_ns;
        t.first_content_ns = t.ttft_ns;
        t.e2e_ns = g.end_ns - g.start_ns;
        t.n_out = g.output_tokens;
        t.n_streamed = g.output_tokens;
        t.n_chunks = g.output_tokens;
        if (t.n_out >= 2 && t.e2e_ns > t.ttft_ns)
            t.tpot_ns = (t.e2e_ns - t.ttft_ns) / (t.n_out - 1);
        m.prompt_tokens = g.prompt_tokens;
        return m;
    }

    // The server's timings as request_measure believes them (serve's and run's bounds).
    static std::optional<ExplainServerTimes> server_times(const RequestMeasure& m) {
        if (!m.server)
            return std::nullopt;
        ExplainServerTimes t;
        t.prompt_n = m.server->prompt_n;
        t.cache_n = m.server->cache_n;
        t.predicted_n = m.server->predicted_n;
        if (m.server->prompt_ns)
            t.prompt_ns = static_cast<double>(*m.server->prompt_ns);
        if (m.server->predicted_ns)
            t.predicted_ns = static_cast<double>(*m.server->predicted_ns);
        return t;
    }

    // Level 4: the round's templated text streamed on connection 0 (kept between rounds), the
    // server's counts and times bounded as serve and run bound them. The runner's warm-up (a
    // short text, on the level's first run until one succeeds) keeps the server's first
    // request (its allocations, its caches) out of the rounds.
    ExplainRun server(int round) {
        const PromptText& t = texts_[static_cast<size_t>(round)][0];
        std::optional<RequestMeasure> measured;
        int64_t end_ns = 0;  // the response's end (its last message, after the last token)
        RequestRound request = [&](const RequestSpec& q) {
            const bool warm = q.rep < 0;
            GenerationStream::Spec spec =
                warm ? completion_spec(url_, warm_prompt_, static_cast<int>(q.n_gen), o_.seed, 0,
                                       model_name_, timeout_ms(), sampler_.banned)
                     : completion_spec(url_, t.prompt, static_cast<int>(q.n_gen),
                                       mix(o_.seed + 31 * static_cast<uint64_t>(round)), t.tokens,
                                       model_name_, timeout_ms(), sampler_.banned);
            const Generation g = server_.stream(0, std::move(spec));
            RequestMeasure m = request_measure(g);
            if (!warm) {
                measured = m;
                end_ns = g.end_ns;
            }
            return m;
        };
        const TestResult test = run_level(request, s_.server_kind, t.tokens, !warm_server_);
        if (test.status == Status::ok)
            warm_server_ = true;
        ExplainRun r = level_run(test);
        if (r.error || !measured)
            return r;
        const RequestMeasure& m = *measured;
        r.end_ns = end_ns;
        r.prompt_tokens = m.prompt_tokens;
        r.server = server_times(m);
        r.server_claim = m.claim;
        r.notes = m.timing.notes;
        if (m.prompt_tokens && *m.prompt_tokens != t.tokens)
            r.notes.push_back(fmt::format(
                "the server counted {} prompt tokens; the in-process tokenizer and template {}",
                *m.prompt_tokens, t.tokens));
        if (*r.output_tokens != o_.n_gen)
            r.notes.push_back(fmt::format("{} tokens came back, not {} (the server stopped early)",
                                          *r.output_tokens, o_.n_gen));
        return r;
    }

    // Level 5: n clients at once, each its own text and connection (kept between rounds as
    // level 4's is) and its own runner, started together; the round's value is the median
    // client's, its span the run's clock around them all.
    ExplainRun served(int n, int round) {
        std::size_t offset = 1;  // this measure's texts: texts_[round][offset ...]
        for (int c : s_.concurrency) {
            if (c == n)
                break;
            offset += static_cast<std::size_t>(c);
        }
        const std::size_t first_client = 1 + (offset - 1);  // client 0 is level 4's
        server_.prepare(first_client + static_cast<std::size_t>(n));
        struct Out {
            TestResult test;
            std::optional<RequestMeasure> measured;
        };
        std::vector<Out> outs(static_cast<size_t>(n));
        std::latch start(n);
        std::vector<std::thread> threads;
        const int64_t t0 = clock_();
        for (int i = 0; i < n; ++i)
            threads.emplace_back([&, i] {
                const PromptText& t = texts_[static_cast<size_t>(round)][offset + i];
                Out& out = outs[static_cast<size_t>(i)];
                bool arrived = false;
                RequestRound request = [&](const RequestSpec& q) {
                    auto spec =
                        completion_spec(url_, t.prompt, static_cast<int>(q.n_gen),
                                        mix(o_.seed + 131 * static_cast<uint64_t>(round) +
                                            static_cast<uint64_t>(i)),
                                        t.tokens, model_name_, timeout_ms(), sampler_.banned);
                    arrived = true;
                    start.arrive_and_wait();
                    out.measured = request_measure(
                        server_.stream(first_client + static_cast<size_t>(i), std::move(spec)));
                    return *out.measured;
                };
                out.test = run_level(request, s_.server_kind, t.tokens, false);
                if (!arrived)  // the runner stopped before its request (Ctrl-C)
                    start.count_down();
            });
        for (auto& th : threads)
            th.join();
        ExplainRun r;
        r.start_ns = t0;
        r.end_ns = clock_();
        std::vector<double> ttft, tpot;
        std::string first_error;
        for (int i = 0; i < n; ++i) {
            const Out& out = outs[static_cast<size_t>(i)];
            const ExplainRun one = level_run(out.test);
            ExplainClient c;
            c.client = i;
            if (one.error) {
                c.error = one.error;
                if (first_error.empty())
                    first_error = *one.error;
            } else {
                c.ttft_ns = one.prefill_ns;
                c.tpot_ns = one.decode_ns;
                c.output_tokens = one.output_tokens;
                if (out.measured) {
                    c.prompt_tokens = out.measured->prompt_tokens;
                    c.server_claim = out.measured->claim;
                }
            }
            if (c.ttft_ns)
                ttft.push_back(*c.ttft_ns);
            if (c.tpot_ns)
                tpot.push_back(*c.tpot_ns);
            r.clients.push_back(c);
        }
        if (ttft.empty()) {
            r.error = "every client failed (first: " + first_error + ")";
            return r;
        }
        // The round's value: the median client's.
        r.prefill_ns = percentile(ttft, 0.5);
        if (!tpot.empty())
            r.decode_ns = percentile(tpot, 0.5);
        if (ttft.size() < static_cast<size_t>(n))
            r.notes.push_back(fmt::format("{} of {} clients failed (first: {})",
                                          n - static_cast<int>(ttft.size()), n, first_error));
        return r;
    }

    const ExplainOptions& o_;
    ExplainSection& s_;
    EngineFactory& engines_;
    Clock clock_;  // the run's
    LoadSpec base_;
    TextGenerator& text_;
    ServerRequests& server_;
    SamplerSettings sampler_;
    std::vector<std::vector<PromptText>> texts_;
    std::string url_, model_name_;
    std::string loaded_;  // spec_key of what the engine holds ("" nothing known)
    // The warm-ups' inputs (made while the engine is loaded: the ops level unloads it).
    std::string warm_text_, warm_prompt_;
    bool warm_generation_ = false;  // level 3 ran warm since the engine's last load
    bool warm_server_ = false;      // level 4's warm-up went through
};

std::string run_line(const ExplainMeasure& m, const ExplainRun& r, int rounds) {
    std::string line = fmt::format("round {}/{}: {}", r.round + 1, rounds, m.id);
    if (r.prefill_ns)
        line += fmt::format(" {} {}", m.level == "ops" || m.level == "graph" ? "prefill" : "TTFT",
                            format_ms(*r.prefill_ns));
    if (r.decode_ns)
        line +=
            fmt::format(", {} {}/token", m.level == "ops" || m.level == "graph" ? "decode" : "TPOT",
                        format_ms(*r.decode_ns));
    if (r.error)
        line += " failed: " + *r.error;
    return line;
}

// The device set llama-server uses when told nothing: every device llama.cpp finds here (RPC
// servers need --rpc, so none of those).
// The accelerators among them (BLAS), which every context uses whatever -dev says.
std::pair<std::string, std::string> default_devices() {
    std::string all = "CPU", accel;
    for (const auto& d : list_devices()) {
        if (d.name == "CPU" || d.name.rfind("RPC", 0) == 0)
            continue;
        all += "+" + d.name;
        if (d.type == "accel")
            accel += (accel.empty() ? "" : "+") + d.name;
    }
    return {all, accel};
}

}  // namespace

int run_explain_rounds(ExplainSection& s, const ExplainMeasurer& measure,
                       const std::function<void()>& save, std::ostream& err, bool progress) {
    if (s.rounds < 1)
        throw usage_error("explain needs at least one round (-r)");
    std::vector<std::size_t> index;  // s.order -> s.measures
    for (const auto& id : s.order) {
        const auto it = std::find_if(s.measures.begin(), s.measures.end(),
                                     [&](const ExplainMeasure& m) { return m.id == id; });
        if (it == s.measures.end())
            throw usage_error("explain: no measure '" + id + "' to run");
        index.push_back(static_cast<std::size_t>(it - s.measures.begin()));
    }
    bool failed = false;
    InterleavedRounds rounds(static_cast<int>(index.size()), s.rounds);
    while (rounds.has_runs_remaining()) {
        const auto [round, i, sequence] = rounds.next();
        ExplainMeasure& m = s.measures[index[static_cast<std::size_t>(i)]];
        ExplainRun r;
        // llama.cpp may end the process inside a level (an abort on a vocabulary it cannot
        // tokenize, a device that fails): the last word records that run's error at its level,
        // summarised and saved beside the runs before, as a failed run would be.
        const LastWordScope last_word(
            [&](const std::string& message) -> std::optional<std::string> {
                ExplainRun stopped;
                stopped.round = round;
                stopped.sequence = sequence;
                stopped.error = "llama.cpp stopped the process: " + strip_source_location(message);
                m.runs.push_back(stopped);
                summarize_explain(s);
                if (save)
                    save();
                return fmt::format("explain: round {}/{} of {} failed: {}", round + 1, s.rounds,
                                   m.id, *stopped.error);
            });
        try {
            r = measure(m, round);
        } catch (const std::exception& e) {
            r = ExplainRun{};
            r.error = e.what();
        }
        r.round = round;
        r.sequence = sequence;
        if (r.error || (!r.prefill_ns && !r.decode_ns)) {
            if (!r.error)
                r.error = "no time was measured";
            failed = true;
        }
        if (progress)
            err << run_line(m, r, s.rounds) << "\n";
        m.runs.push_back(std::move(r));
        summarize_explain(s);
        if (save)
            save();
    }
    // Ctrl-C during the last run stopped no run, but cut that one short.
    if (rounds.interrupted() || interrupt_requested())
        s.interrupted = true;
    summarize_explain(s);
    return failed || s.interrupted ? 1 : 0;
}

namespace {

// -p, -n, -r and --concurrency in range. Throws sb::Error(usage).
void check_explain_options(const ExplainOptions& o) {
    if (o.n_prompt < 1)
        throw usage_error("-p must be at least 1");
    if (o.n_gen < 2)
        throw usage_error("-n must be at least 2: decode is the time per token after the first");
    if (o.rounds < 1)
        throw usage_error("-r must be at least 1");
    for (int c : o.concurrency)
        if (c < 1 || c > 256)
            throw usage_error(fmt::format("--concurrency {}: clients must be 1 to 256", c));
}

// The server explain measures: a llama-server it starts for the model, or the one at --url,
// both from the run's engine factory.
struct ExplainServer {
    std::unique_ptr<ManagedServer> managed;
    std::unique_ptr<Engine> remote;
    Engine* http = nullptr;  // managed's or remote: a client of it
    std::string url;
    std::unique_ptr<ServerRequests> requests;  // explain's own requests to it
};

// Starts or connects to the server. Throws sb::Error(input) when it cannot start or be reached.
ExplainServer open_explain_server(const ExplainOptions& o,
                                  const std::vector<std::string>& server_args,
                                  EngineFactory& engines,
                                  const std::function<void(const std::string&)>& note) {
    ExplainServer srv;
    if (o.url) {
        HttpEngineOptions eo;
        eo.url = *o.url;
        eo.api = HttpApi::openai;
        eo.timeouts.connect_ms = static_cast<int64_t>(o.timeout_s * 1000);
        eo.timeouts.read_ms = eo.timeouts.connect_ms;
        // Connected: a dead server is bad input (sb::Error(input)).
        srv.remote = engines.make(EngineKind::http, eo);
        srv.http = srv.remote.get();
        srv.url = eo.url;
    } else {
        LlamaServerSpec ls;
        ls.binary = engines.server_program();
        if (ls.binary.empty())
            throw input_error(
                "llama-server was not found (build/peers/ or the llama.cpp build); give --url");
        ls.model = o.workload.model_path;
        ls.api = HttpApi::openai;
        ls.timeout_s = o.timeout_s;
        ls.extra_args = server_args;
        try {
            srv.managed = engines.start_server(ls, note);
        } catch (const Error& e) {
            // What it was told (--server-args) or the model stopped it: the user's input.
            throw input_error(e.what());
        }
        srv.http = &srv.managed->engine();
        srv.url = srv.managed->url();
    }
    const int64_t timeout_ms = static_cast<int64_t>(o.timeout_s * 1000);
    srv.requests = engines.server_requests(srv.url, HttpTimeouts{timeout_ms, timeout_ms});
    return srv;
}

// What the server says of itself (its settings, its log) and the name of the model it serves.
struct ServerView {
    ServerFacts facts;
    std::string model_name;  // "" where the server does not say
};

// Reads the server's facts; at --url, checks that it serves o.workload.model_path (model). Throws
// sb::Error(input) when it serves another model.
ServerView read_explain_server(const ExplainOptions& o, const ExplainServer& srv,
                               const ModelInfo& model, const std::vector<std::string>& server_args,
                               const std::string& server_devices, const std::string& accel_devices,
                               const std::function<void(const std::string&)>& note) {
    const std::string& url = srv.url;
    auto get_json = [&](const std::string& path) { return srv.requests->get_json(path); };
    ServerView v;
    ServerFacts& facts = v.facts;
    const ServerKind* kind = srv.http->caps().server;
    facts.settings_readable = kind && kind->reports_settings();
    facts.args = redact_server_args(server_args);
    facts.default_devices = o.url ? "" : server_devices;
    facts.accel_devices = accel_devices;
    if (facts.settings_readable)
        facts.props = get_json("/props");
    if (srv.managed)
        facts.log = srv.managed->log();
    // The model the server serves must be this one: llama-server says its parameters and
    // vocabulary in /v1/models.
    std::string& model_name = v.model_name;
    if (o.url) {
        const json models = get_json("/v1/models");
        const json& data = json_field(models, "data");
        const json meta = data.is_array() && !data.empty() ? json_field(data[0], "meta") : json();
        if (data.is_array() && !data.empty() && json_field(data[0], "id").is_string())
            model_name = data[0]["id"].get<std::string>();
        const json& np = json_field(meta, "n_params");
        const json& nv = json_field(meta, "n_vocab");
        if (np.is_number_integer() && np.get<uint64_t>() != model.n_params)
            throw input_error(fmt::format(
                "{} serves another model ('{}', {} parameters), not {} ({} parameters)", url,
                model_name, np.get<uint64_t>(), o.workload.model_path, model.n_params));
        if (nv.is_number_integer() && model.n_vocab && nv.get<int64_t>() != *model.n_vocab)
            throw input_error(
                fmt::format("{} serves another model ('{}', a vocabulary of {}), not {} ({})", url,
                            model_name, nv.get<int64_t>(), o.workload.model_path, *model.n_vocab));
        if (!np.is_number_integer())
            note("the server does not say which model it serves: not checked against " +
                 o.workload.model_path);
    }
    return v;
}

// The texts of levels 3 to 5: one per round for levels 3 and 4, one per client per round for
// level 5; max_tokens the longest, chat template included.
struct ExplainTexts {
    std::vector<std::vector<PromptText>> texts;
    int64_t max_tokens = 0;
};

ExplainTexts make_explain_texts(const ExplainOptions& o, const TextGenerator& prompter) {
    int clients = 1;
    for (int c : o.concurrency)
        clients += c;
    ExplainTexts t;
    auto& texts = t.texts;
    int64_t& max_tokens = t.max_tokens;
    texts.resize(static_cast<size_t>(o.rounds));
    for (int r = 0; r < o.rounds; ++r)
        for (int c = 0; c < clients; ++c) {
            texts[static_cast<size_t>(r)].push_back(
                sized_text(prompter, o.n_prompt,
                           mix(o.seed * 1000003ULL + static_cast<uint64_t>(r) * 1009 +
                               static_cast<uint64_t>(c))));
            max_tokens = std::max(max_tokens, texts[static_cast<size_t>(r)].back().tokens);
        }
    return t;
}

// The section's description of the run: the workload, the server, the sampler both sides
// use, the settings that differ; returns the sampler.
SamplerSettings describe_explain(ExplainSection& s, const ExplainOptions& o, int threads,
                                 const std::vector<std::string>& server_args,
                                 const ExplainServer& srv, const ServerFacts& facts,
                                 const TextGenerator& prompter, const ModelInfo& model,
                                 const LoadSpec& base, int64_t max_tokens) {
    s.model_path = o.workload.model_path;
    s.n_prompt = o.n_prompt;
    s.n_gen = o.n_gen;
    s.n_threads = threads;
    s.rounds = o.rounds;
    s.seed = o.seed;
    s.concurrency = o.concurrency;
    s.url = o.url;
    s.server_args = redact_server_args(server_args);
    s.server_kind = srv.http->caps().name;
    s.settings_read = facts.settings_readable;
    s.server = srv.http->describe();
    s.chat_template = prompter.template_used();
    std::vector<std::string> sampler_notes;
    SamplerSettings sampler = sampler_from_props(facts.props, sampler_notes);
    if (model.synthetic) {
        // Banned at levels 3 to 5 alike, as serve and run --engine http ban them.
        TokenBan ban = synthetic_token_ban(
            true, prompter.non_utf8_tokens(),
            "at levels 3 to 5 (a logit bias in the in-process sampler and in every request)");
        sampler.banned = std::move(ban.tokens);
        if (!ban.note.empty())
            sampler_notes.push_back(std::move(ban.note));
    }
    s.sampler = to_json(sampler);
    for (auto& n : sampler_notes)
        s.notes.push_back(std::move(n));
    BenchSettings bench;
    bench.devices = o.workload.devices.str();
    bench.n_threads = threads;
    bench.n_batch = base.n_batch;
    bench.n_ubatch = base.n_ubatch;
    bench.n_ctx = base.n_ctx;
    bench.flash_attn = to_string(base.flash_attn);
    bench.type_k = to_string(base.type_k);
    bench.type_v = to_string(base.type_v);
    s.settings = compare_settings(bench, facts, sampler);
    if (!facts.settings_readable)
        s.findings.push_back(
            {"settings", "",
             fmt::format("the server at {} is {}, not llama-server: its settings could not be "
                         "read, so no setting is measured alone; levels 4 and 5 and the "
                         "remainder are measured, the remainder holding every setting's part",
                         srv.url, s.server_kind)});
    if (std::abs(max_tokens - o.n_prompt) > 0)
        s.notes.push_back(fmt::format(
            "the text prompts are up to {} tokens (chat template included) against {} for the "
            "graph level's token prompt: words do not always add up to the exact count",
            max_tokens, o.n_prompt));
    s.notes.push_back(
        "prefill is the prefill stage at levels 1 and 2 and the time to the first "
        "token at levels 3 to 5; decode is the time per token after the first");
    return sampler;
}

// The measures, by level, and the order a forward round runs them.
void add_explain_measures(ExplainSection& s, const ExplainOptions& o, const LoadSpec& base) {
    auto add = [&](std::string id, std::string level, std::string what) -> ExplainMeasure& {
        ExplainMeasure m;
        m.id = std::move(id);
        m.level = std::move(level);
        m.what = std::move(what);
        s.measures.push_back(std::move(m));
        return s.measures.back();
    };
    if (o.ops)
        add("ops", "ops", "Σ op time of each stage, each op replayed in one graph (the profiler)")
            .config = spec_json(base);
    add("graph", "graph", "the stages as llama-bench times them (random tokens, no sampling)")
        .config = spec_json(base);
    int measured = 0;
    for (const auto& set : s.settings)
        if (set.measure) {
            ExplainMeasure& m =
                add(*set.measure, "graph",
                    fmt::format("the graph level with {} as the server has it", set.label));
            m.setting = set.name;
            ++measured;
        }
    if (measured >= 2)
        add("graph+all", "graph", "the graph level with every differing setting as the server's")
            .setting = "all";
    add("generation", "generation",
        "the loop an application runs in-process: chat template, tokenizer, prefill, sampler, "
        "detokenizer")
        .config = {{"sampler", s.sampler}, {"chat_template", s.chat_template}};
    add("server", "server",
        "one client streaming /v1/completions over loopback (the prompt with the chat template "
        "applied)");
    for (int c : o.concurrency) {
        if (std::any_of(s.measures.begin(), s.measures.end(),
                        [&](const ExplainMeasure& m) { return m.concurrency == c; }))
            continue;
        ExplainMeasure& m =
            add(fmt::format("served@{}", c), "served",
                fmt::format("{} clients at once, each its own text; the round's value is the "
                            "median client's",
                            c));
        m.concurrency = c;
    }
    for (const auto& m : s.measures)
        if (m.level == "ops")
            s.order.push_back(m.id);
    for (const auto& m : s.measures)
        if (m.level == "graph" && m.setting)
            s.order.push_back(m.id);
    for (const char* id : {"graph", "generation", "server"})
        s.order.push_back(id);
    for (const auto& m : s.measures)
        if (m.level == "served")
            s.order.push_back(m.id);
}

}  // namespace

RunResult run_explain(const ExplainOptions& o, RunEnv env) {
    check_explain_options(o);
    const std::vector<std::string> server_args = split_server_args(o.server_args);

    // Setup: the model described (bad input throws here), the device names checked.
    RunSetup setup;
    setup.take(env);
    setup.models = {o.workload.model_path};
    setup.device_sets = {o.workload.devices};
    setup.out_path = o.out_path;
    setup.progress = o.progress;
    RunContext ctx(env.doc, setup, env.err, env.listener);
    ResultDocument& doc = env.doc;  // the context's, until finish() hands it back
    auto note = [&](const std::string& line) {
        if (o.progress)
            ctx.progress().note(line);
    };
    const ModelInfo model = inspect_model(o.workload.model_path);
    const int threads = threads_or_default(o.workload.n_threads);
    // Listed before the engine loads: listing loads every backend module, and the engine's
    // first load unloads those its devices do not name.
    const auto [server_devices, accel_devices] = default_devices();

    // The in-process engine: its tokenizer and template size the texts of levels 3 to 5.
    LoadSpec base = load_spec(o.workload, o.n_prompt + o.n_gen + 64);
    base.n_threads = threads;
    const std::unique_ptr<TextGenerator> text = ctx.engines().text_generation();
    text->load(base);
    const TextGenerator& prompter = *text;

    // The server.
    const ExplainServer srv = open_explain_server(o, server_args, ctx.engines(), note);
    const std::string url = srv.url;
    const ServerView view =
        read_explain_server(o, srv, model, server_args, server_devices, accel_devices, note);
    const ServerFacts& facts = view.facts;

    ExplainTexts t = make_explain_texts(o, prompter);
    const int64_t max_tokens = t.max_tokens;
    const std::optional<int64_t> slot_ctx = [&]() -> std::optional<int64_t> {
        const json& v = json_field(json_field(facts.props, "default_generation_settings"), "n_ctx");
        return v.is_number_integer() ? std::optional(v.get<int64_t>()) : std::nullopt;
    }();
    if (slot_ctx && max_tokens + o.n_gen > *slot_ctx)
        throw input_error(fmt::format(
            "the workload ({}-token prompt + {} tokens) does not fit the server's context of {} "
            "tokens per slot (-c / -np): give a smaller -p or -n, or the server a larger -c",
            max_tokens, o.n_gen, *slot_ctx));
    base.n_ctx = static_cast<int>(std::max<int64_t>(o.n_prompt, max_tokens)) + o.n_gen + 8;
    text->load(base);

    ExplainSection& s = doc.explain.emplace();
    const SamplerSettings sampler =
        describe_explain(s, o, threads, server_args, srv, facts, prompter, model, base, max_tokens);
    add_explain_measures(s, o, base);

    Levels levels(o, s, ctx.engines(), ctx.clock(), base, *text, *srv.requests, sampler,
                  std::move(t.texts), url, view.model_name);
    for (auto& m : s.measures)
        if (m.level == "graph" && m.setting)
            m.config = spec_json(levels.spec_for(m));
    doc.engines["llama"] = {{"name", "llama.cpp"}, {"in_process", true}};
    doc.engines["http"] = s.server;
    ctx.open(threads);
    ctx.start();
    // The server levels against a server stagebench started that has since stopped (an abort,
    // a crash): the run's error says so, and why, where a request would only say "cannot
    // connect"; no request is sent to it again.
    auto measure = [&](const ExplainMeasure& m, int round) {
        const bool at_server = m.level != "ops" && m.level != "graph" && m.level != "generation";
        if (!at_server || !srv.managed)
            return levels.measure(m, round);
        if (auto why = srv.managed->ended()) {
            ExplainRun r;
            r.error = *why;
            return r;
        }
        ExplainRun r;
        try {
            r = levels.measure(m, round);
        } catch (const std::exception&) {
            if (auto why = srv.managed->ended()) {
                r.error = *why;
                return r;
            }
            throw;
        }
        if (r.error)
            if (auto why = srv.managed->ended())
                r.error = *why;
        return r;
    };
    const int code = run_explain_rounds(
        s, measure, [&] { ctx.save(); }, env.err, o.progress);
    if (s.interrupted)
        doc.warnings.push_back({"interrupted",
                                "interrupted (Ctrl-C) before every round ran: the levels' times "
                                "are of the runs that did",
                                "run it again to the end for every round"});
    // A failed or interrupted round makes the run's outcome failed (exit 1), as before.
    return ctx.finish(code != 0 ? Outcome::failed : Outcome::ok);
}

}  // namespace sb
