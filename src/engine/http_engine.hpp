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
#include "engine/http_client.hpp"

namespace sb {

// openai: /v1/completions (SSE); openai-chat: /v1/chat/completions (SSE); llama:
// llama-server's native /completion (SSE); ollama: Ollama's native /api/generate (NDJSON).
enum class HttpApi { openai, openai_chat, llama, ollama };

// Throws sb::Error(usage) for an unknown name.
HttpApi parse_http_api(const std::string& name);
const char* http_api_name(HttpApi api);

// What one streamed message says, whatever the API.
struct ChunkInfo {
    bool output = false;   // carries generated output: text, reasoning, a tool call or a token
    bool content = false;  // carries answer content (not reasoning)
    std::optional<int64_t> tokens;      // tokens it carries, when the server says
    std::optional<int64_t> cum_tokens;  // tokens generated so far, when the server says
    bool final = false;                 // the server's last message (finish, usage, done, stop)
    bool done_marker = false;           // "data: [DONE]"
    std::optional<int64_t> usage_prompt, usage_completion;
    std::optional<ServerTimings> server;
    std::optional<std::string> error;  // an error the server reported inside the stream
    std::string finish_reason;
    // The server's id of the request ("id" of an OpenAI-style message, at most 128 bytes of
    // it), when it sends one: what joins a record with the server's logs. A claim.
    std::optional<std::string> id;
    // Counts and times of the message that are no count or no duration (negative,
    // fractional, beyond 2^53, longer than a day, of another type): "usage.completion_tokens =
    // -3 (not a token count)". Read as absent.
    std::vector<std::string> rejected;
};

// Reads one streamed message of api. Throws sb::Error(runtime) ("malformed JSON in the
// stream: ...") when the payload is not a JSON object, or nests arrays and objects deeper than
// kMaxDocumentDepth (parse_server_json). Every count and time in it is the
// server's claim: read only when it is a count (a whole number, 0 to 2^53) or a duration (0
// to a day), else listed in `rejected`; bounded by what was received in compute_timing and
// request_measure.
ChunkInfo interpret_message(HttpApi api, const StreamMessage& m);

// Everything one streamed request returned, on the client clock.
struct Generation {
    struct Chunk {
        int64_t arrival_ns = 0;
        bool content = false;
        std::optional<int64_t> tokens, cum_tokens;
    };
    int64_t start_ns = 0;       // just before the request was sent
    int64_t end_ns = 0;         // the response ended
    std::vector<Chunk> chunks;  // messages that carried output, in arrival order
    // What the server claims (usage or its own counts), as it said them: not yet checked
    // against the stream (compute_timing, request_measure do that).
    std::optional<int64_t> prompt_tokens, completion_tokens;
    std::optional<ServerTimings> server;
    std::string finish_reason;
    // The first bytes of the response's body arrived (the first byte of the stream, whatever
    // it carries; null when none came), and the server's id of the request (the first one a
    // message carried).
    std::optional<int64_t> first_byte_ns;
    std::optional<std::string> request_id;
    int64_t n_asked = 0;       // output tokens asked for (max_tokens); 0: not known
    int64_t prompt_asked = 0;  // prompt tokens sent (or aimed at, for a text); 0: not known
    std::vector<std::string> rejected;  // ChunkInfo::rejected of every message, each once
};

// The most tokens a server may claim for one request when the request does not say how many
// were asked: 2^24, the longest context stagebench allows (cli/flag_checks.hpp kMaxTokens).
inline constexpr int64_t kMaxClaimedTokens = int64_t{1} << 24;

// Tokens are counted from the stream: a chunk's token array (vLLM token_ids, llama-server
// tokens) is what it carried, else each chunk is one token. The server's claims are checked
// against that count and against what was asked (g.n_asked, else kMaxClaimedTokens):
//   - running counts (llama-server timings.predicted_n, tokens_predicted) split the chunks
//     into tokens when they never decrease and end within what was asked; else they are
//     ignored, with a note;
//   - usage's completion count is the output count (n_out) when it lies between 1 and what
//     was asked; more tokens than chunks are then spread evenly over the chunks after the
//     first (with a note). Otherwise (10^12 tokens for a 4-token stream, 0 for a stream that
//     carried some) it is not believed: n_out is the stream's count, with a note.
// claimed_out keeps usage's count as the server said it; notes say where a claim and the
// count disagree. So no claim sizes an allocation: the gaps are at most what was asked or
// what arrived. Throws sb::Error(runtime) when g has no output chunk.
RequestTiming compute_timing(const Generation& g);

// A generation's measure: its start, compute_timing(g), the server's prompt count and timings,
// each checked: the prompt count when between 1 and 4 x the prompt sent + 4096 (a chat
// template's tokens), and at most kMaxClaimedTokens; server token counts within the prompt's
// and the output's bounds and equal to the client's (predicted_n = the output count n_out;
// prompt_n + cache_n = usage's prompt count, when believed); server times no longer than the
// request as the client saw it (start to end, or to the last token when later), the prompt's
// time within the client's TTFT and prompt and generation together within its E2E (each plus
// server_claim_slack_ns of that span, core/doc/server_claim.hpp). A claim that fails is left
// out of m.server (absent), with a note in timing.notes naming it; m.claim keeps the timings
// as the server said them, with the same reasons as its disagreements.
RequestMeasure request_measure(const Generation& g);

// One streamed generation from its request to its end: the request (path and body), the
// framing of the response (SSE or NDJSON), the reading of every message and the bounds of
// HttpEngine::generate. The bytes may come from HttpClient::post_stream (generate: a thread
// per request) or from HttpMulti (serve's event loop): the same chunks, stamped the same way,
// give the same Generation. Made by HttpEngine::start_generation.
class GenerationStream {
  public:
    struct Spec {
        HttpApi api = HttpApi::openai;
        std::string path;
        nlohmann::json body;
        int64_t n_gen = 1;
        int64_t n_prompt = 0;      // the prompt's tokens, sent or aimed at (0: not known)
        int64_t read_ms = 120000;  // no token for this long while bytes come: an error
        std::string where;         // base URL + path, for the error lines
        std::function<void()> on_first_output;
    };
    explicit GenerationStream(Spec spec);
    GenerationStream(const GenerationStream&) = delete;
    GenerationStream& operator=(const GenerationStream&) = delete;

    const std::string& path() const { return s_.path; }
    const nlohmann::json& body() const { return s_.body; }
    // The next chunk of a 2xx response, stamped on arrival; false: stop reading (the reason
    // is kept for finish). Never throws.
    bool on_bytes(std::string_view bytes, int64_t arrival_ns);
    // The transfer ended with o: the Generation, or sb::Error(runtime) as generate() says.
    Generation finish(const StreamOutcome& o);

  private:
    bool handle(const StreamMessage& m);
    Spec s_;
    Generation g_;
    SseParser sse_;
    NdjsonParser nd_;
    std::vector<StreamMessage> msgs_;
    std::optional<std::string> stream_error_;
    bool saw_final_ = false, first_ = true;
    int64_t max_messages_ = 0;
    int64_t last_progress_ns_ = 0, n_progress_ = 0, bytes_since_progress_ = 0;
};

// A prompt made before the clock starts.
struct HttpPrompt {
    std::vector<int32_t> tokens;  // sent as token ids when non-empty: exactly n_tokens long
    std::string text;             // sent as text otherwise
    int64_t n_tokens = 0;         // the length the server should count
    bool exact = false;           // verified with the server's tokenizer
};

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

// llama-server's logit_bias that bans tokens: [[id, false], ...].
nlohmann::json banned_logit_bias(const std::vector<int32_t>& tokens);

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
    // "llama-server", "ollama", "vllm", "mlc-llm" or "openai-compatible".
    const std::string& server_kind() const { return kind_; }
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

    HttpEngineOptions opts_;
    std::string model_;  // from load()
    std::unique_ptr<HttpClient> client_;
    std::string kind_ = "openai-compatible";
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
