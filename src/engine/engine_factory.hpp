#pragma once
// What executes a run's tests, made in one place. Scenarios never construct an engine: their
// setup carries an EngineFactory (scenario/run_context.hpp) and they ask it for what a test
// needs, so a test hands a runner scripted parts (FakeEngineFactory, engine/fake_engine.hpp)
// and checks its loop, document and outcome exactly, and a real run gets the real ones
// (default_engine_factory(), scenario/default_engines.hpp: it sits above profile/, whose
// op-profiling rig it makes too).
#include <functional>
#include <memory>
#include <string>

#include "core/enums.hpp"
#include "engine/engine.hpp"
#include "engine/http_engine.hpp"
#include "engine/managed_server.hpp"
#include "engine/serve_target.hpp"
#include "engine/server_requests.hpp"
#include "engine/text_generation.hpp"

namespace sb {

class OpTracer;    // profile/op_trace.hpp, above this folder
class OpReplayer;  // profile/op_trace.hpp

// The parts of one op profile, owned together: the engine, the tracer on its context and the
// replayer of the nodes the tracer captures (profile/op_trace.hpp make_op_rig puts them
// together). `parts` owns the tracer and the replayer (and what they share), so that a rig can be
// held and dropped here, below profile/, where their types are only declared. Members are
// destroyed in reverse order: the replayer and the tracer, then the engine.
struct OpRig {
    std::unique_ptr<Engine> engine;
    OpTracer* tracer = nullptr;
    OpReplayer* replayer = nullptr;
    std::shared_ptr<void> parts;
};

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
    // What explain says to the server at url beyond an Engine (engine/server_requests.hpp).
    // Connects lazily: errors come with the requests.
    virtual std::unique_ptr<ServerRequests> server_requests(const std::string& url,
                                                            const HttpTimeouts& timeouts) = 0;
    // Explain's text-generation view of a new in-process engine, not loaded
    // (engine/text_generation.hpp).
    virtual std::unique_ptr<TextGenerator> text_generation() = 0;
    // The program a server stagebench starts runs (llama-server's path); "" when there is none,
    // which a runner that needs one reports as bad input before it measures anything.
    virtual std::string server_program() = 0;
    // Starts a server for spec (spec.binary: server_program()'s) and returns once it serves,
    // its client connected; progress (optional) hears a line as it starts. Stopped when the
    // caller drops it. Throws sb::Error, one line with the reason: input when it exits before
    // serving (a model or an option it refuses), runtime when it does not become ready in time
    // or Ctrl-C came first.
    virtual std::unique_ptr<ManagedServer> start_server(
        const LlamaServerSpec& spec, const std::function<void(const std::string&)>& progress) = 0;
    // The parts of one op profile (`ops`, `decompose`, explain's ops level, sustained's traced
    // passes): an engine, not loaded, the tracer that loads it and the replayer; huge_pages:
    // its weights advised onto transparent huge pages as they load (OpsOptions::huge_pages).
    virtual OpRig op_rig(bool huge_pages) = 0;
};

}  // namespace sb
