#pragma once
// What `explain` says to a server beyond an Engine (its setup and its levels 4 and 5): a GET of
// a JSON document (/props, /v1/models) and streamed requests that explain builds itself (the
// server's own sampling, its logit_bias), each connection its own and kept between requests.
// The run's engine factory makes it (EngineFactory::server_requests): over HTTP for users,
// scripted in tests (engine/fake_engine.hpp), so explain never opens a connection itself.
#include <cstddef>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/http_client.hpp"
#include "engine/http_engine.hpp"

namespace sb {

class ServerRequests {
  public:
    virtual ~ServerRequests() = default;
    // The document at path when the server answers 200 with JSON; null otherwise (a failed
    // request included: never throws).
    virtual nlohmann::json get_json(const std::string& path) = 0;
    // Makes connections 0 .. n-1 now, so that requests timed from several threads at once
    // do not make theirs inside the timing.
    virtual void prepare(std::size_t n) = 0;
    // One streamed request (spec: path, body, the bounds GenerationStream checks) on connection
    // `connection` (0-based, made on first use, kept). Different connections may stream from
    // different threads at once, each from one thread. The Generation, or sb::Error(runtime)
    // as HttpEngine::generate throws.
    virtual Generation stream(std::size_t connection, GenerationStream::Spec spec) = 0;
};

// Over HTTP to url (http://host:port), each connection an HttpClient with timeouts.
std::unique_ptr<ServerRequests> http_server_requests(const std::string& url,
                                                     const HttpTimeouts& timeouts);

}  // namespace sb
