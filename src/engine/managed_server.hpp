#pragma once
// A server that stagebench starts for a GGUF and stops (`run --engine http -m FILE`, `serve -m
// FILE`, `explain` without --url): a llama-server on 127.0.0.1 for users
// (scenario/llama_server.hpp), a scripted one in tests (engine/fake_engine.hpp). Runners get it
// from the run's engine factory (EngineFactory::start_server) and hold it while they measure
// it; they never start one themselves.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.hpp"
#include "engine/http_engine.hpp"

namespace sb {

struct LlamaServerSpec {
    std::string binary;  // EngineFactory::server_program()
    std::string model;
    int threads = 0;  // 0: llama-server's default
    int n_ctx = 0;
    int slots = 1;  // -np
    HttpApi api = HttpApi::openai;
    double timeout_s = 120;
    // More of llama-server's own flags, after the ones above (a later flag wins in its
    // parser): `explain --server-args`.
    std::vector<std::string> extra_args;
    // Tokens no request to it may draw (HttpEngineOptions::banned_tokens).
    std::vector<int32_t> banned_tokens;
};

class ManagedServer {
  public:
    // Stops the server.
    virtual ~ManagedServer() = default;
    // Where it serves ("http://127.0.0.1:PORT").
    virtual const std::string& url() const = 0;
    // A client of it, connected with the spec's API, timeouts and banned tokens: an Engine that
    // measures whole requests (HttpEngine), valid while this lives.
    virtual Engine& engine() = 0;
    // What it has printed so far (its log), "" when nothing can be read.
    virtual std::string log() const = 0;
    // Once it has ended by itself (crashed, aborted, killed): one line saying so, how and why;
    // nullopt while it runs. Requests to a dead server fail with "cannot connect": this says
    // why.
    virtual std::optional<std::string> ended() = 0;
};

}  // namespace sb
