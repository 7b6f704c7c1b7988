#pragma once
// The real engines of a run: the EngineFactory (engine/engine_factory.hpp) a run gets when its
// command names none. It lives here, above engine/ and profile/, because it makes the parts of
// both and of scenario/: LlamaEngine (in-process llama.cpp), HttpEngine (a server, connected),
// http_serve_target (serve's server), http_server_requests (explain's), the text generation on
// a LlamaEngine (llama_text_generation), the llama-server stagebench starts (scenario/
// llama_server.hpp, found by find_peer_program) and the op profiler's rig on llama.cpp
// (profile/tracer.hpp make_llama_op_rig).
#include "engine/engine_factory.hpp"

namespace sb {

// Stateless: one for the process.
EngineFactory& default_engine_factory();

}  // namespace sb
