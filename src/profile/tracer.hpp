#pragma once
// The op profiler's parts on llama.cpp (the seam they implement: profile/op_trace.hpp; the
// pipeline that drives them: scenario/ops_run.hpp).
//
// Capture (LlamaOpTracer): llama.cpp's eval callback (LoadSpec::eval_callback, the
// ggml_backend_sched eval callback) on the engine's context. While the tracer is idle it
// answers "not needed" for every node and the scheduler computes each split as one graph, as
// without a callback: uninstrumented stages run on the same context. Between begin() and end()
// it answers "needed" for every node, so the scheduler dispatches each node alone to its
// backend, synchronises and calls back: the time from the "ask" callback to the "done"
// callback is the node's call time (dispatch + transport + synchronisation + compute).
// Timestamps are taken as late as possible in ask and as early as possible in done.
//  * Backend of a node: the scheduler's own assignment, read from its GGML_SCHED_DEBUG=2 dump
//    (llama.cpp exposes no scheduler handle; a node's buffer cannot tell BLAS from CPU), set
//    while the context is created; split boundaries and the inputs copied between backends
//    come from the same dump.
//  * Capture (TraceMode::capture) also describes each node (profile/op_replay.hpp NodeDesc:
//    op, parameters, shapes, strides, types, buffer types, the real bytes of graph inputs) and
//    asks each device of the context whether it supports the node and can read its weights.
//  * On an RPC device a node's done callback reads a few bytes of its output: ggml-rpc's
//    synchronise returns once the request is sent, a read with a reply waits for the server.
//
// Replay (GgmlOpReplayer): the captured nodes replayed on the context's devices
// (profile/op_replay.hpp), with its own CPU thread pool once the engine's is gone.
//
// Throws sb::Error(input) for an unusable model or device; never calls exit.
#include <memory>
#include <string>
#include <vector>

#include "engine/llama_engine.hpp"
#include "profile/op_trace.hpp"

namespace sb {

struct NodeStore;  // the captured nodes' ggml descriptions, shared by a tracer and its replayer

// The llama.cpp parts of one op profile (OpRig, engine/engine_factory.hpp): a LlamaEngine (loaded
// without mmap: a mapped model file whose weights llama.cpp repacks for the CPU stays resident
// beside the repacked copy; its weight buffers advised onto transparent huge pages with
// huge_pages), the tracer on its context and the replayer of the nodes the tracer captures.
// Sets llama.cpp's log callback for the rig's lifetime (the scheduler's dumps are read from it;
// other messages go where they went, or to stderr with STAGEBENCH_LLAMA_LOG=1). The run's
// engine factory calls it (scenario/default_engines.hpp); runners ask the factory.
OpRig make_llama_op_rig(bool huge_pages = true);

}  // namespace sb
