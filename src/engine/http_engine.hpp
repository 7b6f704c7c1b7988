#pragma once
// An engine behind HTTP: llama-server, vLLM, MLC LLM, Ollama, MLX-LM... measured from the
// client with one monotonic clock (sb::now_ns), with the stage definitions of the serving
// benchmarks (../shared/domain.md section 5):
//   TTFT   request start -> first streamed token (a reasoning or tool-call token counts; the
//          first answer content is reported separately);
//   ITL    gaps between consecutive tokens; a chunk that carries k tokens splits its gap into k
//          equal gaps (the extra tokens of the first chunk have no observable gap: skipped);
//   TPOT   (E2E - TTFT) / (output tokens - 1);  E2E  request start -> last token.
// Output tokens come from `usage` (stream_options.include_usage) or the server's own counts,
// cross-checked with the stream; server-side stage timings are kept when the server sends
// them (llama-server timings, Ollama *_duration, MLC usage.extra, vLLM metrics).
//
// Unlike the in-process engines, a server takes whole requests: this Engine has
// caps().measures_whole_request, measures a repetition with run_request() (a prompt, then one
// streamed generation) and has no prefill/decode steps. Errors are sb::Error: input when the
// server cannot be used at all (connect()) or a stage entry is called, runtime for a failed
// request, always one line.
//
// The engine orchestrates (discovery, tokenizer, prompts, measuring a request) over three
// seams: the wire API it speaks (WireApi, engine/wire_api.hpp: requests and messages), the kind
// of server it found (ServerKind, engine/server_kind.hpp: recognition, quirks, timings) and the
// transport (HttpClient, engine/http_client.hpp). The stream and its measure are
// engine/generation_stream.hpp and engine/generation.hpp.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "engine/engine.hpp"
#include "engine/generation.hpp"
#include "engine/generation_stream.hpp"
#include "engine/http_client.hpp"
#include "engine/server_kind.hpp"
#include "engine/wire_api.hpp"

namespace sb {

struct HttpEngineOptions {
    std::string url;  // http://host:port (a trailing /v1 is accepted)
    HttpApi api = HttpApi::openai;
    HttpTimeouts timeouts;
    // Tokens no request may draw: a logit bias of -infinity (llama-server's logit_bias with
    // false) in every generation sent to a llama-server (synthetic_token_ban,
    // engine/text_generation.hpp); other servers are sent none.
    std::vector<int32_t> banned_tokens;
};

// One token id of a server's /tokenize answer (a number, or vLLM's {"id": number}): a claim,
// believed only when it is a whole number from 0 to below n_vocab (when the server said its
// vocabulary's size) and fits int32; else nullopt (an id above 2^31 is never truncated into
// another token, a negative one never sent on).
std::optional<int32_t> claimed_token_id(const nlohmann::json& v, std::optional<int64_t> n_vocab);

class HttpEngine final : public Engine {
  public:
    // Throws sb::Error(usage) for a malformed URL.
    explicit HttpEngine(HttpEngineOptions o);
    ~HttpEngine() override;

    // name: server_kind(); measures_whole_request.
    EngineCaps caps() const override;
    // Selects the model that requests name (spec.model_path; "" for the server's default).
    // The rest of the spec is the server's own business; nothing is sent.
    void load(const LoadSpec& spec) override;
    void reset() override {}  // every request is a sequence of its own
    // Only depth 0: a server's KV cache cannot be brought to a depth (sb::Error(input)).
    void fill_to_depth(int n_depth, uint64_t seed) override;
    // Not available behind HTTP: sb::Error(input).
    StageTimes prefill(std::span<const int32_t> tokens) override;
    int64_t decode_step(int32_t token) override;
    int32_t n_vocab() const override { return 0; }
    std::optional<int32_t> bos_token() const override { return std::nullopt; }
    std::vector<std::string> active_backends() const override { return {}; }
    // make_prompt(model, n_prompt, prompt_seed), then generate(...) of n_gen with the seed;
    // spec.on_send runs between them.
    RequestMeasure run_request(const RequestSpec& spec) override;

    // Talks to the server once: reachable, what it is, which models it lists. Throws
    // sb::Error(input) when it cannot be reached or cannot serve the chosen API.
    void connect();

    const HttpEngineOptions& options() const { return opts_; }
    // What connect() found: "llama-server", "ollama", "vllm", "mlc-llm" or "openai-compatible"
    // (engine/server_kind.hpp).
    const ServerKind& kind() const { return *kind_; }
    std::string server_kind() const { return kind_->name(); }
    const std::vector<std::string>& models() const { return models_; }
    // {"url", "api", "server", "models", "tokenizer", and what the server said about itself}
    nlohmann::json describe() const override;

    // A prompt of n_tokens for model, its words varied by seed so that no prefix cache helps.
    // Exact through the server's tokenizer (llama-server, vLLM /tokenize) where one exists;
    // otherwise calibrated with short requests and approximate. Throws sb::Error(runtime).
    HttpPrompt make_prompt(const std::string& model, int64_t n_tokens, uint64_t seed);

    // Streams one generation of n_gen tokens (>= 1) with greedy sampling and the seed,
    // EOS ignored where the API allows, prompt caching off on llama-server.
    // on_first_output runs once, right after the first output was timestamped (telemetry
    // marks). Throws sb::Error(runtime), one line, for an HTTP error, a transport failure,
    // a malformed stream, an error inside the stream, a stream that ends early or carries
    // no token, no token (nor the final message) for timeouts.read_ms while bytes keep coming
    // (a trickling server), or more than 4 * n_gen + 64 messages (one that never stops).
    Generation generate(const std::string& model, const HttpPrompt& prompt, int64_t n_gen,
                        uint64_t seed, const std::function<void()>& on_first_output = {});
    // The same request as generate's, for a caller that moves the bytes itself (HttpMulti).
    std::unique_ptr<GenerationStream> start_generation(
        const std::string& model, const HttpPrompt& prompt, int64_t n_gen, uint64_t seed,
        const std::function<void()>& on_first_output = {}) const;

  private:
    std::optional<std::vector<int32_t>> tokenize(const std::string& model, const std::string& text,
                                                 bool add_special);
    int64_t probe_prompt_tokens(const std::string& model, const std::string& text);
    std::string resolve_model(const std::string& model) const;
    static const ServerKind& discover_common(const ServerGet& get, const std::string& where,
                                             DiscoveredServer& facts);

    HttpEngineOptions opts_;
    std::string model_;  // from load()
    std::unique_ptr<HttpClient> client_;
    const WireApi* wire_;     // opts_.api's
    const ServerKind* kind_;  // openai-compatible until connect() finds it
    std::vector<std::string> models_;
    nlohmann::json about_ = nlohmann::json::object();
    enum class Tokenizer { unknown, llama, vllm, none } tokenizer_ = Tokenizer::unknown;
    std::optional<int64_t> n_vocab_;  // the vocabulary's size, as /v1/models' meta claims it
    std::map<std::string, int64_t> template_overhead_;                  // per model (chat)
    std::map<std::string, std::pair<double, double>> words_to_tokens_;  // per model: a + b*words
};

// Deterministic text of n_words common English words drawn with seed; a longer text with the
// same seed starts with the shorter one.
std::string prompt_words(uint64_t seed, int64_t n_words);

}  // namespace sb
