#pragma once
// FakeEngine: a scripted Engine for unit tests of the measurement loop (hyperfine's
// MockExecutor idea). No model, no threads, no wall clock: every call advances a simulated
// clock by a scripted duration and is logged, so a test asserts exactly which calls a scenario
// made, in which order, and the times it recorded.
//
// Several fake engines share one FakeTimeline (its clock and its call log), as the engines of
// one process share sb::now_ns: a hybrid's two engines, or a test that interleaves runners. A
// FakeEngineFactory hands them to a runner as its setup's engine factory.
//
// It also has scripted logits (the logits interface of engine.hpp): the engine keeps the tokens
// of its KV cache, and the logits after them are the script's function of those tokens, so a
// fidelity test knows every distance exactly.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/engine.hpp"
#include "engine/engine_factory.hpp"
#include "engine/fake_serve.hpp"
#include "engine/server_requests.hpp"
#include "engine/text_generation.hpp"

namespace sb {

enum class FakeOp {
    load,
    reset,
    fill_to_depth,
    prefill,
    decode_step,
    save_state,
    restore_state,
    request,
    evaluate
};
inline constexpr int kFakeOps = 9;
// "load", "reset", "fill_to_depth", "prefill", "decode_step", "save_state", "restore_state",
// "request", "evaluate".
const char* fake_op_name(FakeOp op);

// One call of a fake engine, as the script sees it and the log keeps it.
struct FakeCall {
    std::string engine;  // FakeEngine::name()
    FakeOp op = FakeOp::load;
    int index = 0;  // 0-based: how many calls of this op this engine had before
    // prefill, request, evaluate: prompt tokens; fill_to_depth: depth; decode: 1
    int64_t n_tokens = 0;
    int32_t token = -1;    // decode_step: the token; prefill: its first token (-1: none)
    int64_t start_ns = 0;  // the simulated clock when the call began
    int64_t end_ns = 0;    // ... and when it returned (start_ns + its duration)
};

// The simulated clock and the log of every call of the engines that share it.
class FakeTimeline {
  public:
    // Starts at 1 s, so that no timestamp a loop takes is 0 (the "missing" of some fields).
    explicit FakeTimeline(int64_t start_ns = 1'000'000'000) : now_ns_(start_ns) {}
    FakeTimeline(const FakeTimeline&) = delete;
    FakeTimeline& operator=(const FakeTimeline&) = delete;

    int64_t now_ns() const { return now_ns_; }
    void advance(int64_t ns) { now_ns_ += ns; }
    // A Clock reading this timeline; valid while the timeline lives.
    Clock clock() {
        return [this] { return now_ns_.load(); };
    }
    // A wait of a run (scenario/run_context.hpp Pause) that moves this timeline on by the time
    // waited; valid while the timeline lives.
    std::function<void(int64_t ns)> pause() {
        return [this](int64_t ns) { now_ns_ += std::max<int64_t>(0, ns); };
    }
    const std::vector<FakeCall>& calls() const { return calls_; }
    // The calls of one op (of every engine), in order.
    std::vector<FakeCall> calls_of(FakeOp op) const;

  private:
    friend class FakeEngine;
    friend class FakeServeTarget;
    // Atomic: a run's sampler thread reads the run's clock too (telemetry on, on a machine with
    // sensors), beside the thread that moves it.
    std::atomic<int64_t> now_ns_;
    std::vector<FakeCall> calls_;
};

// What a fake engine's calls take and do. The defaults: load 5 ms, reset 0, fill_to_depth
// 10 us per token, prefill 100 us per token, decode_step 10 ms, save_state 1 ms,
// restore_state 2 ms, request (its time to the first token) 100 us per prompt token + 10 ms,
// evaluate 0 (untimed work).
struct FakeScript {
    // The simulated duration of a call (its start_ns is set; its end_ns is not yet); null:
    // the defaults above.
    std::function<int64_t(const FakeCall&)> duration_ns;
    // Runs when a call begins, before its time passes: a test throws from it (a failure at a
    // chosen call) or requests an interrupt. A call that throws is logged, takes no time and
    // changes no state.
    std::function<void(const FakeCall&)> before;
    // The logits (n_vocab floats) after context, the tokens of the KV cache oldest first (never
    // empty); null: default_fake_logits.
    std::function<std::vector<float>(std::span<const int32_t> context)> logits;
    // How text tokenizes; null: one token per byte (its value modulo n_vocab), after the BOS when
    // add_special and the engine has one.
    std::function<std::vector<int32_t>(const std::string& text, bool add_special)> tokenize;
};

// The default scripted logits: logit j after a context of n tokens ending in t is
// ((j + t + n) % 7) / 4, so they depend on the last token and the position.
std::vector<float> default_fake_logits(std::span<const int32_t> context, int32_t n_vocab);

// The engine's answers (model facts) are plain fields, set by the test before use.
class FakeEngine final : public Engine {
  public:
    FakeEngine(FakeTimeline& timeline, std::string name = "fake", FakeScript script = {});

    const std::string& name() const { return name_; }
    FakeScript& script() { return script_; }
    // The spec of the latest load() (throws when never loaded).
    const LoadSpec& loaded_spec() const;
    // Tokens in the KV cache now, and the tokens themselves (fill_to_depth's are
    // random_tokens(depth, vocab, seed)).
    int64_t n_cached() const { return static_cast<int64_t>(tokens_.size()); }
    const std::vector<int32_t>& cached_tokens() const { return tokens_; }

    std::string kind = "fake";  // caps().name, unless server_kind says it
    // The kind of server it stands for (caps().server, and its name caps().name); null: none.
    const ServerKind* server_kind = nullptr;
    int32_t vocab = 1000;
    std::optional<int32_t> bos = 1;
    std::vector<std::string> backends{"CPU"};
    std::vector<std::string> load_notes;
    std::optional<HugePageAdvice> page_advice;  // huge_pages()
    std::optional<uint64_t> weights;            // weight_bytes()
    std::optional<uint64_t> params;             // n_params()
    std::optional<ModelShape> model_shape;
    std::optional<double> kv_bytes_per_token;  // kv_bytes_read(depth) = depth x this
    int64_t state_bytes_per_token = 1024;      // save_state() writes this per cached token
    bool can_transfer = true;                  // caps().state_transfer
    bool has_logits = true;                    // caps().logits
    // An engine behind HTTP: caps().measures_whole_request, and run_request() answers. A
    // request's call lasts its TTFT (the script's duration); each further token then takes
    // request_itl_ns; the server counts the prompt as asked.
    bool whole_requests = false;
    int64_t request_itl_ns = 10'000'000;

    EngineCaps caps() const override;
    // Throws sb::Error(input) for an empty model_path (as an unusable model would), unless it
    // takes whole requests: a server then serves its default model.
    void load(const LoadSpec& spec) override;
    void reset() override;
    void fill_to_depth(int n_depth, uint64_t seed) override;
    // Throws sb::Error(runtime) when the tokens would overflow the loaded n_ctx (or before
    // load()), as llama.cpp's decode fails.
    StageTimes prefill(std::span<const int32_t> tokens) override;
    int64_t decode_step(int32_t token) override;
    int32_t n_vocab() const override { return vocab; }
    std::optional<int32_t> bos_token() const override { return bos; }
    std::vector<std::string> active_backends() const override { return backends; }
    std::vector<std::string> notes() const override { return load_notes; }
    std::optional<HugePageAdvice> huge_pages() const override { return page_advice; }
    std::optional<uint64_t> weight_bytes() const override { return weights; }
    std::optional<uint64_t> n_params() const override { return params; }
    std::optional<ModelShape> shape() const override { return model_shape; }
    std::optional<double> kv_bytes_read(int depth) const override;
    // The state is max(state_bytes_per_token x the cached tokens, what it holds): the count
    // (8 bytes) and the cached tokens; restore_state takes them back.
    size_t save_state(std::vector<uint8_t>& buf) override;
    void restore_state(std::span<const uint8_t> state) override;
    RequestMeasure run_request(const RequestSpec& spec) override;
    // The script's logits after the cached tokens (sb::Error(runtime) when the cache is empty,
    // as nothing was computed).
    std::span<const float> last_logits() const override;
    std::vector<int32_t> tokenize(const std::string& text, bool add_special) const override;
    // An evaluate call: the cache becomes tokens, and the logits after every prefix of at least
    // first_output + 1 tokens are appended.
    void evaluate(std::span<const int32_t> tokens, int first_output,
                  std::vector<float>& out) override;

  private:
    // Logs the call, runs script_.before, advances the clock; returns the logged call.
    const FakeCall& call(FakeOp op, int64_t n_tokens, int32_t token);
    void check_room(int64_t more) const;
    std::vector<float> logits_after(std::span<const int32_t> context) const;
    void check_logits() const;

    FakeTimeline& tl_;
    std::string name_;
    FakeScript script_;
    std::optional<LoadSpec> spec_;
    std::vector<int32_t> tokens_;
    // last_logits()'s storage, computed once after each change of the cached tokens (its span
    // stays valid until the next change, as an engine's does).
    mutable std::vector<float> last_;
    mutable bool last_valid_ = false;
    int counts_[kFakeOps] = {};
};

// Explain's text-generation view (engine/text_generation.hpp) on a FakeEngine: the chat
// template makes "<user>" + text + "</user><assistant>", tokens are the engine's tokenize (BOS
// added), and a generation (on the engine's timeline) resets the engine, prefills the prompt,
// then draws each token as the highest scripted logit that is not banned (greedy: the seed and
// the other sampler settings are not read), decoding each one but the last. unload() is
// counted (unloads).
class FakeTextGenerator final : public TextGenerator {
  public:
    FakeTextGenerator(FakeTimeline& timeline, std::unique_ptr<FakeEngine> engine)
        : tl_(timeline), engine_(std::move(engine)) {}
    Engine& engine() override { return *engine_; }
    FakeEngine& fake() { return *engine_; }
    void load(const LoadSpec& spec) override { engine_->load(spec); }
    void unload() override { ++unloads; }
    const std::string& template_used() const override { return template_; }
    std::string apply(const std::string& user_text) const override;
    int64_t count(const std::string& user_text) const override;
    std::vector<int32_t> non_utf8_tokens() const override { return non_utf8; }
    // sb::Error(usage) for n_gen < 1, sb::Error(runtime) when every token is banned.
    TextGeneration generate(const std::string& user_text, int n_gen, const SamplerSettings& s,
                            uint64_t seed) override;

    std::vector<int32_t> non_utf8;  // non_utf8_tokens()
    int unloads = 0;

  private:
    FakeTimeline& tl_;
    std::unique_ptr<FakeEngine> engine_;
    std::string template_ = "fake chat template";
};

// One streamed request a FakeEngineFactory's server_requests() answered.
struct FakeStream {
    std::string url;  // the server's
    std::size_t connection = 0;
    GenerationStream::Spec spec;
    int64_t start_ns = 0;
};

// A server a FakeEngineFactory started (start_server): what it was asked, and what a test makes
// of it while it runs. Shared by the factory (started()) and the server it handed over.
struct FakeServerState {
    LlamaServerSpec spec;
    std::string url;  // "http://fake-server-<i>" (0-based, in the order they were started)
    // Set by a test (from a script, while the server is held): the server has ended by itself;
    // ended() answers this.
    std::optional<std::string> ended;
    std::string log;       // log() answers this
    bool stopped = false;  // the runner dropped it
};

// The ManagedServer of a FakeEngineFactory: its engine is a fake one taking whole requests, made
// as make(http) makes one (named, set up, its options logged in servers()).
class FakeManagedServer final : public ManagedServer {
  public:
    FakeManagedServer(std::shared_ptr<FakeServerState> state, std::unique_ptr<Engine> engine)
        : state_(std::move(state)), engine_(std::move(engine)) {}
    ~FakeManagedServer() override { state_->stopped = true; }
    const std::string& url() const override { return state_->url; }
    Engine& engine() override { return *engine_; }
    std::string log() const override { return state_->log; }
    std::optional<std::string> ended() override { return state_->ended; }

  private:
    std::shared_ptr<FakeServerState> state_;
    std::unique_ptr<Engine> engine_;
};

// Makes fake engines on one timeline, as a runner's engine factory (engine_factory.hpp). The
// i-th engine made (0-based) is named "<kind><i>" ("llama0", "http1"); kind http gives one that
// takes whole requests. setup (optional) scripts each before it is handed over. The runner
// owns the engines; the timeline keeps their calls. serve_target() gives a FakeServeTarget
// (engine/fake_serve.hpp) on the same timeline, scripted by `serve`.
class FakeEngineFactory final : public EngineFactory {
  public:
    explicit FakeEngineFactory(FakeTimeline& timeline) : tl_(timeline) {}
    std::function<void(FakeEngine&, EngineKind)> setup;
    // A kind this factory refuses, as a real one refuses an unreachable server: make() throws
    // sb::Error(input).
    std::optional<EngineKind> refuse;
    FakeServeScript serve;

    std::unique_ptr<Engine> make(EngineKind kind, const HttpEngineOptions& server = {}) override;
    // Refused (sb::Error(input)) when refuse is EngineKind::http; the server is logged in
    // servers().
    std::unique_ptr<ServeTarget> serve_target(const HttpEngineOptions& server) override;
    // text_generation(): a FakeTextGenerator around an engine made as make(llama) makes one,
    // these its non-UTF-8 tokens.
    std::vector<int32_t> non_utf8_tokens;
    std::unique_ptr<TextGenerator> text_generation() override;
    // server_requests(): a GET answers documents[path] (null when absent); a streamed request
    // runs before_stream (a test throws from it, or ends a server), is logged (streamed()) and
    // answered on the timeline: its first token 10 ms + 100 µs per prompt token (spec.n_prompt)
    // after its start, then one every 10 ms, spec.n_gen of them, the prompt and the output
    // counted as asked. One thread at a time (the timeline is not thread-safe).
    std::map<std::string, nlohmann::json> documents;
    std::function<void(std::size_t connection, const GenerationStream::Spec&)> before_stream;
    std::unique_ptr<ServerRequests> server_requests(const std::string& url,
                                                    const HttpTimeouts& timeouts) override;
    const std::vector<FakeStream>& streamed() const { return streamed_; }
    // server_program(): "" as where llama-server is not found.
    std::string program = "fake-llama-server";
    // Runs when a server is asked for, before it starts: a test throws from it (a server that
    // does not start).
    std::function<void(const LlamaServerSpec&)> before_start;
    std::string server_program() override { return program; }
    // A FakeManagedServer at the next "http://fake-server-<i>", its client made as make(http)
    // makes one (refused as make() refuses), progress told "starting <url>". Logged in
    // started().
    std::unique_ptr<ManagedServer> start_server(
        const LlamaServerSpec& spec,
        const std::function<void(const std::string&)>& progress) override;
    const std::vector<std::shared_ptr<FakeServerState>>& started() const { return started_; }
    // An op profile's parts (OpRig) around a fake engine made as make(llama) makes one (named,
    // set up): the script adds the tracer and replayer (their types are in profile/, above this
    // folder; scenario/ops_test_rig.hpp has scripted ones). huge_pages is what the runner
    // asked for (also logged in rig_huge_pages()). Without a script, or when refuse is
    // EngineKind::llama, throws sb::Error(input).
    std::function<OpRig(std::unique_ptr<FakeEngine> engine, bool huge_pages)> op_rigs;
    OpRig op_rig(bool huge_pages) override;
    // How many engines were made, and the server each http one was asked for.
    int made() const { return made_; }
    const std::vector<HttpEngineOptions>& servers() const { return servers_; }
    const std::vector<bool>& rig_huge_pages() const { return rig_huge_pages_; }

  private:
    FakeTimeline& tl_;
    int made_ = 0;
    std::vector<HttpEngineOptions> servers_;
    std::vector<bool> rig_huge_pages_;
    std::vector<std::shared_ptr<FakeServerState>> started_;
    std::vector<FakeStream> streamed_;
    friend class FakeServerRequests;
};

}  // namespace sb
