#pragma once
// GgmlOpReplayer: OpReplayer (profile/op_trace.hpp) over ggml backends, for the nodes a
// LlamaOpTracer captured (profile/tracer.hpp): one backend per device of the profiled context
// and one CPU thread pool, made once the engine's context is gone (two pools would spin
// against each other). Replays of equal signatures on one device are made once and shared.
// Internal to src/profile.
#include <memory>

#include "profile/op_replay.hpp"
#include "profile/op_trace.hpp"

namespace sb {

std::unique_ptr<OpReplayer> make_ggml_replayer(std::shared_ptr<NodeStore> store);

}  // namespace sb
