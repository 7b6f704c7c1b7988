#pragma once
// The engines of a run, made in one place by kind (EngineKind, core/enums.hpp). Scenarios never
// construct an engine: their setup carries an EngineFactory (scenario/run_context.hpp), so a
// test hands a runner scripted engines (FakeEngineFactory, engine/fake_engine.hpp) and checks
// its loop, document and outcome exactly, and a real run gets default_engine_factory().
#include <memory>

#include "core/enums.hpp"
#include "engine/engine.hpp"
#include "engine/http_engine.hpp"
#include "engine/serve_target.hpp"

namespace sb {

class EngineFactory {
  public:
    virtual ~EngineFactory() = default;
    // A new engine of kind, not loaded; the caller owns it. EngineKind::llama: in-process
    // (server is not read). EngineKind::http: a client of the server that server names, already
    // connected (it answered and said what it is). Throws sb::Error: usage for a malformed
    // server URL, input for a server that cannot be reached or cannot serve the API.
    virtual std::unique_ptr<Engine> make(EngineKind kind, const HttpEngineOptions& server = {}) = 0;
    // The server `serve` puts under load (engine/serve_target.hpp), connected. Throws as make()
    // does for EngineKind::http.
    virtual std::unique_ptr<ServeTarget> serve_target(const HttpEngineOptions& server) = 0;
};

// LlamaEngine (llama.cpp in-process), HttpEngine and http_serve_target. Stateless: one for the
// process.
EngineFactory& default_engine_factory();

}  // namespace sb
