#pragma once
// The Engine interface: what a scenario needs from an inference engine to time its stages.
// Implementations: LlamaEngine (llama.cpp in-process), HttpEngine (a server behind HTTP),
// FakeEngine (scripted, for tests). Engines never print to stdout and report failures by
// throwing sb::Error (input for unusable models/devices, runtime for failures while running).
//
// Two kinds of engine, told apart by caps().measures_whole_request (capabilities as data):
// an in-process engine exposes the stages (fill_to_depth, prefill, decode_step, each with its
// own timestamps); an engine behind HTTP takes whole requests, so a repetition is one
// run_request() measured from the client (TTFT, the stream), and the stage entries throw. The
// one repetition loop (scenario/repetition.hpp) drives both.
//
// Scenarios never construct engines: they ask the run's EngineFactory (engine/engine_factory.hpp)
// for one of a kind, so tests hand them scripted engines (engine/fake_engine.hpp).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/result.hpp"
#include "engine/huge_pages.hpp"

struct ggml_tensor;  // ggml's graph node, opaque here (only engines and the profiler see ggml)

namespace sb {

class ServerKind;  // engine/server_kind.hpp

// llama.cpp's eval callback (llama_context_params::cb_eval, ggml_backend_sched's eval callback):
// for every node of a graph the scheduler asks (ask = true: "do you want this node?") and, when
// the answer is yes, computes the node alone and calls back (ask = false) once it is done.
using EvalCallback = bool (*)(ggml_tensor* node, bool ask, void* user_data);

// What an engine can do, as data, so scenarios adapt instead of guessing.
struct EngineCaps {
    std::string name;             // "llama.cpp"
    bool in_process = false;      // timings are taken in the engine's own process
    bool kv_depth_cache = false;  // can restore a KV state to start decode at depth d quickly
    bool thread_control = false;  // honours LoadSpec::n_threads
    bool state_transfer = false;  // save_state()/restore_state() move a sequence between engines
    // Takes whole requests (a server): run_request() measures one repetition; fill_to_depth
    // (beyond 0), prefill and decode_step throw sb::Error(input).
    bool measures_whole_request = false;
    // Gives its logits (last_logits, evaluate) and tokenizes text (tokenize): what fidelity,
    // perplexity and `logits` read. Without it those entries throw sb::Error(input).
    bool logits = false;
    // (optional) The kind of server behind it (engine/server_kind.hpp), for an engine that takes
    // whole requests: what a runner asks of the server (its settings, its timings) instead of
    // comparing names. Null: none (in-process), or not known.
    const ServerKind* server = nullptr;
};

// How an engine loads a test: its workload (core/workload.hpp) with the context's size and, for
// a profiler, an eval callback. The fields that select the model's placement (model_path,
// devices, n_gpu_layers) force a reload when they change; the rest only a new context. Made by
// load_spec_for (engine/workload.hpp).
struct LoadSpec : Workload {
    int n_ctx = 0;  // 0 = enough for the test (the caller computes it)
    // (optional) An eval callback on the context, with its user data (not owned: it must
    // outlive the context), for a profiler that times the graph node by node
    // (profile/tracer.hpp). Null, the default: none, as every measurement runs. A different
    // callback or user data is a different context. In-process llama.cpp engines only; others
    // ignore it.
    EvalCallback eval_callback = nullptr;
    void* eval_user_data = nullptr;
};

struct ModelShape {
    int n_layer = 0;
    int n_embd = 0;  // embedding width (the token embedding lookup is n_vocab x n_embd)
    int n_vocab = 0;
    int n_attn = 0;  // n_head x head_dim: width of Q and of the attention output
};

struct StageTimes {
    int64_t start_ns = 0;  // sb::now_ns() clock
    int64_t end_ns = 0;
};

// One request of a workload, for an engine that measures whole requests.
struct RequestSpec {
    int64_t n_prompt = 0;      // prompt tokens asked for
    int64_t n_gen = 1;         // tokens to generate (>= 1)
    uint64_t prompt_seed = 0;  // varies the prompt's words, so no prefix cache helps
    uint64_t seed = 0;         // the sampling seed sent with the request
    int rep = 0;               // the repetition it measures (0-based); -1: the warm-up
    // Just before the request is sent, the prompt made (telemetry marks; outside the timing).
    std::function<void()> on_send;
    // Once, right after the first output was timestamped.
    std::function<void()> on_first_output;
};

// The client-side measures of one request (durations relative to its start, in ns).
struct RequestTiming {
    int64_t ttft_ns = 0;
    std::optional<int64_t> first_content_ns;
    int64_t e2e_ns = 0;
    int64_t n_out = 0;       // output tokens: usage's claim when believable, else n_streamed
    int64_t n_streamed = 0;  // tokens counted from the stream
    std::optional<int64_t> claimed_out;  // the output tokens the server claimed (usage), as
                                         // it said them, believed or not; null: none
    int64_t n_chunks = 0;
    std::vector<int64_t> itl_ns;     // one gap per token after the first chunk's
    std::optional<int64_t> tpot_ns;  // undefined for fewer than 2 tokens or E2E == TTFT
    std::vector<std::string> notes;  // disagreements between the stream and the counts
};

// What one whole request measured.
struct RequestMeasure {
    int64_t start_ns = 0;  // just before the request was sent (sb::now_ns clock)
    RequestTiming timing;
    std::optional<int64_t> prompt_tokens;  // the prompt as the server counted it, if it said
    std::optional<ServerTimings> server;   // the server's own stage timings, if it sent them
    // The same timings as the server said them, with every way the client's measurement
    // contradicts them (the fields of `server` above that were contradicted are absent there).
    std::optional<ServerClaim> claim;
};

// The clock a scenario reads between an engine's own timestamps is core/clock.hpp's Clock, on
// the engine's time axis: sb::now_ns for real engines, a simulated clock for a fake engine.

class Engine {
  public:
    virtual ~Engine() = default;
    virtual EngineCaps caps() const = 0;

    // Loads (or reuses) the model and creates a context for spec. Throws sb::Error(input) for
    // an unusable model or device, sb::Error(runtime) when the engine fails.
    virtual void load(const LoadSpec& spec) = 0;

    // Clears the KV cache: the next prefill starts at position 0.
    virtual void reset() = 0;

    // Brings the KV cache to n_depth tokens of context (seeded random tokens), untimed; a
    // cached state is restored when the engine can. n_depth == 0 is reset().
    virtual void fill_to_depth(int n_depth, uint64_t seed) = 0;

    // Processes the prompt as one stage (in n_batch chunks) and waits for completion.
    virtual StageTimes prefill(std::span<const int32_t> tokens) = 0;

    // Processes one token and waits for it; returns the completion time (sb::now_ns clock).
    virtual int64_t decode_step(int32_t token) = 0;

    virtual int32_t n_vocab() const = 0;
    // Token to start a sequence with, if the model wants one.
    virtual std::optional<int32_t> bos_token() const = 0;
    // The devices and backends that the current context really uses, e.g. "CPU", "BLAS".
    virtual std::vector<std::string> active_backends() const = 0;
    // What the current model and context hold in each buffer type (weights, context, compute
    // buffers), by the engine's own accounting (core/result.hpp, BufferMemory); empty where it
    // cannot say.
    virtual std::vector<BufferMemory> memory() const { return {}; }
    // Notes about the current load that a reader of the results should know.
    virtual std::vector<std::string> notes() const { return {}; }
    // What the load did to the pages the weights sit on, when it was asked to advise them
    // onto transparent huge pages (engine/huge_pages.hpp); null: not asked.
    virtual std::optional<HugePageAdvice> huge_pages() const { return std::nullopt; }

    // Roofline inputs, when the engine knows them: bytes of weights, parameter count, the
    // shape that attention and the embedding lookup take, and bytes of KV cache that one
    // decoded token reads at KV depth `depth`.
    virtual std::optional<uint64_t> weight_bytes() const { return std::nullopt; }
    virtual std::optional<uint64_t> n_params() const { return std::nullopt; }
    virtual std::optional<ModelShape> shape() const { return std::nullopt; }
    virtual std::optional<double> kv_bytes_read(int depth) const { return std::nullopt; }

    // The sequence state (KV cache and positions of the one sequence) as bytes, and back, so a
    // prompt prefilled by one engine is decoded by another (caps().state_transfer). save_state
    // overwrites buf (reusing its capacity) and returns the byte count; restore_state replaces
    // this engine's state, and the next decode_step continues after the restored tokens. Both
    // throw sb::Error(runtime) on failure, including states from an incompatible context
    // (other model, KV types); engines without the capability throw sb::Error(input).
    virtual size_t save_state(std::vector<uint8_t>& buf) {
        throw input_error(caps().name + " cannot move a sequence state between engines");
    }
    virtual void restore_state(std::span<const uint8_t> state) {
        throw input_error(caps().name + " cannot move a sequence state between engines");
    }

    // (optional, caps().logits) The logits (n_vocab() floats, unnormalised) of the last token
    // that the latest decode_step() or prefill() computed, read outside any timed region. The
    // span is valid until the next call that changes the sequence (prefill, decode_step, reset,
    // fill_to_depth, restore_state, evaluate, load). Throws sb::Error(runtime) when nothing was
    // computed since the context was created or reset; sb::Error(input) without the capability.
    virtual std::span<const float> last_logits() const {
        throw input_error(caps().name + " does not give its logits");
    }
    // (optional, caps().logits) The text as the model's vocabulary tokenizes it: with
    // add_special, the BOS first when the vocabulary adds one. Throws sb::Error(input) when the
    // vocabulary cannot tokenize text (engine/tokenizer_check.hpp) or the engine lacks it.
    virtual std::vector<int32_t> tokenize(const std::string& text, bool add_special) const {
        throw input_error(caps().name + " does not tokenize text");
    }
    // (optional, caps().logits) Evaluates tokens on a cleared cache from position 0, untimed,
    // appending the logits of every position >= first_output to out (n_vocab() floats each,
    // in order). Afterwards the sequence continues with decode_step() and last_logits() is the
    // last position's. Throws sb::Error(input) without the capability.
    virtual void evaluate(std::span<const int32_t> tokens, int first_output,
                          std::vector<float>& out) {
        throw input_error(caps().name + " does not give its logits");
    }

    // What the engine is and how it runs, for the document's `engines`: at least "name" and
    // "in_process" (an engine behind HTTP adds its server, API and models).
    virtual nlohmann::json describe() const {
        const EngineCaps c = caps();
        return {{"name", c.name}, {"in_process", c.in_process}};
    }

    // (optional) One whole request (caps().measures_whole_request): the prompt is made before
    // the clock starts, then the generation is streamed and timed. Throws sb::Error(runtime)
    // for a failed request; engines without the capability throw sb::Error(input).
    virtual RequestMeasure run_request(const RequestSpec& spec) {
        throw input_error(caps().name + " does not measure whole requests");
    }
};

}  // namespace sb
