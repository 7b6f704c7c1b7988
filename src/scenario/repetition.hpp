#pragma once
// The one repetition loop: every scenario that measures an Engine (the sweep of `run` on an
// in-process engine or a server, the rounds of `sustained`, the modes of `hybrid`) measures
// through a RepetitionRunner, shaped like Google Benchmark's BenchmarkRunner: built for one
// test (an engine, a TestConfig and hooks), it measures one repetition per
// do_one_repetition(), says whether more are needed (has_repeats_remaining(): the fixed count,
// the --target-ci goal, max_reps, an interrupt or a failure) and hands over the finished
// TestResult (results()). A driver that interleaves several tests (hybrid) keeps one runner
// per test and calls each in turn. What is not an Engine but measures whole requests (explain's
// levels 3 to 5: a generation in-process from a text, explain's own streamed request, one
// client of several at once) is driven by the same runner as a RequestRound. Measures run in
// interleaved rounds rather than as one test's repetitions (explain's levels, decompose
// --mode's child processes) take their turns from this file's InterleavedRounds, the one
// rounds loop; each turn of an explain level is then one runner's test.
//
// What one repetition is: the KV cache brought to n_depth; the prompt prefilled as one stage;
// optionally the sequence state moved to a second engine (a "transfer" stage); n_gen tokens
// decoded one at a time. On an engine that measures whole requests (caps(): an engine behind
// HTTP) it is one request timed from the client, TTFT and the stream (add_request_repetition).
// Inputs are made before any clock starts (random_tokens with the repetition's seeds,
// engine/workload.hpp); time is read only from the engine's returned timestamps and the
// runner's Clock, so a fake engine makes the loop exact in tests.
//
// A failure of the test itself (the engine throws while loading, warming up or measuring) is
// recorded in the result (status failed, its error and kind), never thrown.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.hpp"
#include "core/repetitions.hpp"
#include "core/result.hpp"
#include "engine/engine.hpp"
#include "engine/workload.hpp"

namespace sb {

struct SweepHooks {
    // Called after every test, before the next starts (write results, print a row).
    std::function<void(const TestResult&)> on_test_done;
    // Progress lines for humans (stderr): events of their own, e.g. a server being started.
    std::function<void(const std::string&)> progress;
    // A repetition begins: its number (1-based) and the most there can be (max_reps). Called
    // outside the timed regions.
    std::function<void(int, int)> repetition;
    // Stage markers for telemetry: (stage name, begin?, tokens of the stage on the end mark),
    // called just outside the timed region at each boundary. Stages: "prefill", "transfer"
    // (only between two engines, no tokens), "decode".
    std::function<void(const std::string&, bool, std::optional<int64_t>)> stage_marker;
    // What the test is about to do ("loading the model", "warmup", "filling the KV cache",
    // "prefill", "the state transfer", "decode"), called outside the timed regions; the
    // string is a literal.
    std::function<void(const char*)> activity;
};

// How a runner measures, beyond the test's config.
struct RepetitionOptions {
    // Another engine that decodes: after prefill, the sequence state moves from the engine to
    // this one (save_state/restore_state, timed as the transfer). Null: the engine decodes.
    Engine* decode_engine = nullptr;
    // Load the engine with load_spec_for(config) first (the sweep). false: the caller loaded
    // the engine(s) for this test (hybrid, whose engines hold one context for every point).
    bool load = true;
    // Fill TestResult::roofline from the engine's model facts in results().
    bool roofline = true;
    std::optional<double> membw_gbps;  // the machine's bandwidth, for the roofline fraction
    Clock clock = now_ns;
    // Polled before each repetition and between decode steps; true stops the test as
    // interrupted (a decode cut short keeps its tokens as a shorter last repetition, with a
    // note). An engine's runtime error while it is true is the interruption too (llama.cpp
    // gave up a stage for it). Null: interrupt_requested() (core/interrupt.hpp).
    std::function<bool()> interrupted;
};

// How an engine loads a test: its workload (load_spec, engine/workload.hpp) with a context of
// n_depth + n_prompt + n_gen tokens and a little room.
LoadSpec load_spec_for(const TestConfig& c);

// Approximate FLOPs of a prefill of n_prompt tokens at KV depth n_depth: dense matrix
// multiplications (the embedding lookup excluded, one output row) plus attention.
double prefill_flops(uint64_t n_params, const ModelShape& shape, int n_depth, int n_prompt);

// Fills a stage's summaries from its raw samples: duration, throughput, the slow repetitions
// (stalls) and the robust rate from the median repetition.
void finish_stage(StageResult& s);
// finish_stage, then the inter-token latency summary, the stalled tokens and the robust rate
// from the median inter-token latency (token_latency_counts groups the tokens by repetition;
// empty: n_tokens per repetition).
void finish_decode(DecodeResult& d);

// The summaries of a test from its raw samples: finish_stage / finish_decode of its stages and
// the TTFT summary (what results() does before the roofline; also for a test cut short).
void finish_result(TestResult& r);

// The robust rates of StageResult::robust from the raw samples so far.
RobustRate stage_robust_rate(const StageResult& s);
RobustRate decode_robust_rate(const DecodeResult& d);

// Whether every measured stage's robust tokens/s has a 95 % CI half-width within target
// (relative to the rate): the median-based figure, which stalls do not move.
bool target_ci_reached(const TestResult& r, double target);

// The rule of a test's repetitions (core/repetitions.hpp): at least c.reps, at most c.max_reps,
// and with --target-ci until target_ci_reached(r, *c.target_ci). r and c are read when the rule
// is asked (the test so far), so both must outlive it.
RepeatRule test_repeat_rule(const TestResult& r, const TestConfig& c);
// Why a test that its rule stopped after r.reps_done repetitions stopped (r.stopped_by): the
// CI target met, max_reps reached (with or without a target), else the fixed count.
void record_stop_reason(TestResult& r, const TestConfig& c);

// Adds one measured whole request to r (an engine with caps().measures_whole_request), with the
// stage definitions of engine/http_engine.hpp: prefill = n_prompt (as the server counted it) /
// TTFT, decode = the tokens after the first / (E2E - TTFT) with the inter-token gaps as its
// samples, ttft_ns, and the client and server records. The stages appear with their first
// measured request, so a test that failed before reads as failed, not as empty numbers.
// n_prompt is the prompt length asked for (used when the server does not count it).
void add_request_repetition(TestResult& r, const RequestMeasure& m, int64_t n_prompt);
// Summaries of what add_request_repetition collected (finish_result, client and server
// summaries) and notes a reader needs: the server's numbers next to the client's (server_kind
// names it), prompts that were not the length asked, early stops.
void finish_request_result(TestResult& r, const std::string& server_kind);

// The samples of the transfer stage (two engines only), one per repetition, on the runner's
// clock: when it began, the time to save on the first engine and to restore on the second,
// their sum, and the bytes moved.
struct TransferSamples {
    std::vector<int64_t> start_ns, save_ns, restore_ns, transfer_ns, bytes;
};

// One whole request of something that is not an Engine, as the runner drives an engine that
// measures whole requests (Engine::run_request): spec says the repetition (spec.rep, -1 for the
// warm-up), the tokens to generate and the seeds; the round makes its prompt before its clock
// starts, calls spec.on_send / on_first_output where it can, and returns what it measured (its
// timestamps on the run's clock). Throws sb::Error(runtime) for a failed request, which the
// runner records.
using RequestRound = std::function<RequestMeasure(const RequestSpec& spec)>;

class RepetitionRunner {
  public:
    // The engine (and opts.decode_engine) must outlive the runner; hooks are copied.
    // started_ns is taken now.
    RepetitionRunner(Engine& engine, const TestConfig& config, SweepHooks hooks,
                     RepetitionOptions opts = {});
    // A runner of rounds: each repetition (and the warm-up, config.warmup) is one call of
    // round, measured as an engine of whole requests named `name` (the server's kind in the
    // notes of its timings) is; nothing is loaded, opts.decode_engine is ignored.
    RepetitionRunner(RequestRound round, std::string name, const TestConfig& config,
                     SweepHooks hooks, RepetitionOptions opts = {});
    // Its rule reads the runner's own result: it stays where it was made.
    RepetitionRunner(const RepetitionRunner&) = delete;
    RepetitionRunner& operator=(const RepetitionRunner&) = delete;

    // Loads the engine (opts.load) and warms up once: the KV cache to n_depth, a prefill of
    // the warm-up prompt, the transfer (two engines) and one decode step, none of it recorded.
    // do_one_repetition() calls it first when it was not called; a failure is recorded.
    void prepare();
    // Whether another repetition is due: not failed, not interrupted, and neither the fixed
    // count, the CI target nor max_reps reached.
    bool has_repeats_remaining() const;
    // Measures the next repetition (preparing first if needed). An interrupt (polled first)
    // stops the test with nothing measured in this call.
    void do_one_repetition();
    // Records error on the test (status failed) and stops it: a driver that measures several
    // tests as one unit fails them together.
    void fail(const std::string& error, std::optional<ErrorKind> kind);
    // Stops the test as interrupted (a driver that polls interrupts itself).
    void interrupt();
    // Adds a note for the reader of the result (after the engine's own, when it loads).
    void add_note(std::string note) { r_.notes.push_back(std::move(note)); }

    // The test so far (raw samples, status; summaries are filled by results()).
    const TestResult& result() const { return r_; }
    // The kind of the failure that stopped the test (nullopt: none, or unknown).
    std::optional<ErrorKind> error_kind() const { return error_kind_; }
    const TransferSamples& transfer() const { return transfer_; }
    // prefill + transfer + decode of every measured repetition, ns.
    const std::vector<int64_t>& e2e_ns() const { return loop_.samples_ns(); }

    // The finished test: stage summaries, TTFT summary, roofline (opts.roofline), finished_ns.
    // Call once, after the last repetition.
    TestResult results();

  private:
    RepetitionRunner(std::unique_ptr<Engine> own, const TestConfig& config, SweepHooks hooks,
                     RepetitionOptions opts);
    void measure(int rep);
    void measure_request(int rep);
    void record_error(const std::exception& e);
    bool interrupted_now() const;
    std::string label() const;
    std::vector<int32_t> prompt_for(int rep) const;
    void mark(const char* stage, bool begin, std::optional<int64_t> tokens = {}) const;
    void doing(const char* what) const;
    void fill_roofline();

    std::unique_ptr<Engine> own_;  // a RequestRound's engine
    Engine& pre_;
    Engine& dec_;
    TestConfig c_;
    SweepHooks hooks_;
    RepetitionOptions opts_;
    TestResult r_;
    bool whole_request_ = false;  // the engine measures whole requests
    bool prepared_ = false;
    bool stopped_ = false;  // failed, interrupted or done
    std::optional<ErrorKind> error_kind_;
    std::optional<int64_t> partial_decode_;  // tokens of a decode the interrupt cut short
    int32_t n_vocab_ = 0;
    std::optional<int32_t> bos_;
    std::vector<uint8_t> state_buf_;
    TransferSamples transfer_;
    // The loop's core: the repetitions' rule (test_repeat_rule, reading r_) and their times
    // (each one's e2e).
    Repetitions loop_;
};

// Drives a runner for (engine, config, hooks, opts) until no repetition remains and returns
// its results: what run_test (the sweep) and run_http_test do. Never throws for a failure of
// the test itself.
TestResult run_repetitions(Engine& engine, const TestConfig& config, const SweepHooks& hooks,
                           RepetitionOptions opts = {});
// The same for a RequestRound (RepetitionRunner's second constructor).
TestResult run_repetitions(RequestRound round, std::string name, const TestConfig& config,
                           const SweepHooks& hooks, RepetitionOptions opts = {});

// The order of interleaved rounds: round r runs every measure, forward in even rounds and
// backward in odd ones (A B C, C B A, A B C, ...), so a slow drift of the machine adds to every
// measure alike. Pairs of (round, measure index), both 0-based.
std::vector<std::pair<int, int>> mode_run_order(int n_modes, int rounds);

// The one rounds loop of several measures run in turn (explain's levels, decompose --mode's
// modes), in mode_run_order, shaped like RepetitionRunner: has_runs_remaining() says whether
// another run is due (polling the interrupt), next() hands it out. What a run measures and
// records is the driver's.
class InterleavedRounds {
  public:
    struct Run {
        int round = 0;     // 0-based
        int index = 0;     // the measure's
        int sequence = 0;  // its place among all the runs so far (0-based)
    };
    // interrupted: polled by has_runs_remaining(); null: interrupt_requested()
    // (core/interrupt.hpp).
    InterleavedRounds(int n_measures, int rounds, std::function<bool()> interrupted = {});
    // Whether a run is due: not every run was handed out and no interrupt came (once one
    // came, interrupted() stays true and no run is due).
    bool has_runs_remaining();
    // The next run; only after has_runs_remaining() said true.
    Run next();
    // Whether an interrupt stopped the rounds before their last run.
    bool interrupted() const { return interrupted_; }

  private:
    std::vector<std::pair<int, int>> order_;
    std::function<bool()> poll_;
    std::size_t next_ = 0;
    bool interrupted_ = false;
};

}  // namespace sb
