#pragma once
// The server `serve` puts under load, as serve drives it: more than the Engine interface (a
// prompt made before the clock, streamed requests on many clients at once, requests in flight
// on one thread). The run's engine factory makes it (EngineFactory::serve_target), so a test
// hands run_serve a scripted server (FakeServeTarget, engine/fake_engine.hpp) on its fake
// clock, and a real run gets the HTTP one: HttpEngine's make_prompt and generate, and
// start_generation's streams driven by one HttpMulti.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/http_engine.hpp"

namespace sb {

// One client's connection: requests one at a time, from the thread that owns it.
class ServeClient {
  public:
    virtual ~ServeClient() = default;
    // One streamed generation, as HttpEngine::generate (its errors: sb::Error(runtime), one
    // line).
    virtual Generation generate(const std::string& model, const HttpPrompt& prompt, int64_t n_gen,
                                uint64_t seed) = 0;
};

// Requests in flight on one thread (serve --client loop). Not thread-safe.
class ServeStreams {
  public:
    // The outcome of one request: returns its Generation or throws its sb::Error, as
    // ServeClient::generate would.
    using Result = std::function<Generation()>;
    using OnDone = std::function<void(const Result&)>;

    virtual ~ServeStreams() = default;
    // Starts a request; on_done hears of its end from the wait() that saw it end, and may start
    // further requests. Throws sb::Error when the request cannot be started (on_done is then
    // never called).
    virtual void start(const std::string& model, const HttpPrompt& prompt, int64_t n_gen,
                       uint64_t seed, OnDone on_done) = 0;
    // Moves every request on for at most wait_ns (the clock may pass less when one ends
    // sooner; with none in flight, the time passes idle), calling on_done of those that ended.
    // Ctrl-C (core/interrupt.hpp) cuts the requests in flight: they end with an error.
    virtual void wait(int64_t wait_ns) = 0;
    virtual int in_flight() const = 0;
};

class ServeTarget {
  public:
    virtual ~ServeTarget() = default;
    // What the server says it is (HttpEngine::describe: {"url", "api", "server", ...}).
    virtual nlohmann::json describe() const = 0;
    // A distinct prompt of n_tokens for model (HttpEngine::make_prompt). Throws
    // sb::Error(runtime).
    virtual HttpPrompt make_prompt(const std::string& model, int64_t n_tokens, uint64_t seed) = 0;
    // A new client, connected (sb::Error(input) when the server cannot be reached).
    virtual std::unique_ptr<ServeClient> client() = 0;
    // A new set of requests in flight on the calling thread.
    virtual std::unique_ptr<ServeStreams> streams() = 0;
    // Lets ns pass with nothing to send (an open loop's wait for its next arrival with a client
    // per request): a real server sleeps, a scripted one lets its clock pass.
    virtual void pause(int64_t ns) = 0;
};

// The server at o.url through HttpEngine and HttpMulti, connected (connect()'s errors).
std::unique_ptr<ServeTarget> http_serve_target(const HttpEngineOptions& o);

}  // namespace sb
