#pragma once
// The Engine interface: what a scenario needs from an inference engine to time its stages.
// Implementations: LlamaEngine (llama.cpp in-process). Engines never print to stdout and
// report failures by throwing sb::Error (input for unusable models/devices, runtime for
// failures while running).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace sb {

// What an engine can do, as data, so scenarios adapt instead of guessing.
struct EngineCaps {
    std::string name;             // "llama.cpp"
    bool in_process = false;      // timings are taken in the engine's own process
    bool kv_depth_cache = false;  // can restore a KV state to start decode at depth d quickly
    bool thread_control = false;  // honours LoadSpec::n_threads
    bool state_transfer = false;  // save_state()/restore_state() move a sequence between engines
};

// Everything that selects how a model is loaded and run. Fields that select the model's
// placement (path, devices, n_gpu_layers) force a reload when they change; the rest only a
// new context.
struct LoadSpec {
    std::string model_path;
    // Devices for this test, e.g. {"CPU"}, {"BLAS"}, {"RPC0"}, {"BLAS", "RPC0"}. The host CPU
    // is always present; accelerator devices (BLAS) are enabled only when named; GPU-like
    // devices (GPU, RPC) receive the offloaded layers.
    std::vector<std::string> devices{"CPU"};
    int n_gpu_layers = 99;  // layers offloaded to the GPU-like devices (when any)
    int n_ctx = 0;          // 0 = enough for the test (the caller computes it)
    int n_batch = 2048;
    int n_ubatch = 512;
    int n_threads = 0;                // 0 = sb::default_thread_count()
    std::string flash_attn = "auto";  // auto | on | off
    std::string type_k = "f16";
    std::string type_v = "f16";
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

// The clock a scenario reads between an engine's own timestamps, in nanoseconds on the
// engine's time axis: sb::now_ns for real engines, a simulated clock for a fake engine in tests.
using Clock = std::function<int64_t()>;

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
    // Notes about the current load that a reader of the results should know.
    virtual std::vector<std::string> notes() const { return {}; }

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
};

}  // namespace sb
