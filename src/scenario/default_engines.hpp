#pragma once
// The real engines of a run: the EngineFactory (engine/engine_factory.hpp) a run gets when its
// command names none. It lives here, above engine/ and profile/, because it makes the parts of
// both and of scenario/: LlamaEngine (in-process llama.cpp), HttpEngine (a server, connected),
// http_serve_target (serve's server), http_server_requests (explain's), the text generation on
// a LlamaEngine (llama_text_generation), the llama-server stagebench starts (scenario/
// llama_server.hpp, found by find_peer_program) and the op profiler's rig on llama.cpp
// (profile/tracer.hpp make_llama_op_rig).
#include <memory>

#include "core/clock.hpp"
#include "engine/engine_factory.hpp"

namespace sb {

// The real engines, waiting on clock and pause where they wait (the start of the llama-server
// they start, LlamaServer): the run's (RunContext makes its own of these when the command gives
// no factory).
std::unique_ptr<EngineFactory> make_default_engine_factory(Clock clock, Pause pause);

// The real engines on the real clock (sb::now_ns, sb::sleep_ns): one for the process.
EngineFactory& default_engine_factory();

}  // namespace sb
