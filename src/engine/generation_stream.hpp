#pragma once
// One streamed generation from its request to its end (GenerationStream), whichever way its
// bytes are moved.
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/generation.hpp"
#include "engine/http_client.hpp"
#include "engine/wire_api.hpp"

namespace sb {

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

}  // namespace sb
