#pragma once
// Op times of a profiled stage's records (profile/trace_stage.hpp), by one of two methods, per
// signature (equal signatures on one backend get the same method):
//  * in situ: where a node dispatched alone costs its compute plus one fixed dispatch
//    (OpReplayer::fixed_dispatch: backends in host memory) and the traced calls of the
//    signature (their median) are at least in_situ_factor times that dispatch
//    (OpReplayer::dispatch_ns), each node's own traced call less the dispatch: the op as it ran
//    inside the real graph, its weights as cold as they were there, and no replay at all;
//  * replayed: otherwise (light ops, where the dispatch is a large part of the call, and
//    devices across a transport), the signature replayed once on the backend that ran it in
//    the buffers it ran with (OpReplayer::replay), its time given to every node that has it.
// On a GPU of this machine (OpReplayer::in_situ_only) an op's time is the device's own timer
// where OpTimeOptions::device_times has one for it (profile/vk_perf_log.hpp), else its traced
// call less the device's no-work round trip.
// Views and reshapes get 0. No ggml: deterministic for a given replayer.
#include <cstddef>
#include <functional>

#include "profile/op_trace.hpp"
#include "profile/trace_stage.hpp"

namespace sb {

struct OpTimeOptions {
    double in_situ_factor = 20;  // the dispatch is then at most 5 % of the call
    // Polled before each replay; true leaves the remaining ops without op time ("interrupted
    // before replay"). Null: never.
    std::function<bool()> interrupted;
    // Called before each distinct replay with the count so far (progress lines).
    std::function<void(size_t)> on_replay;
    // Parallel to the stage's ops (null: none): an op's time from the device's own timer
    // (op_ns, with its method), or why there is none (method only, kept beside the fallback's).
    // Used for ops on in_situ_only backends.
    const std::vector<std::optional<OpTime>>* device_times = nullptr;
};

// Fills op_ns, isolated_call_ns (replayed) and op_method of b.stage.ops, and
// rec.node_dispatch_ns, rec.n_op_in_situ, rec.n_op_replayed, rec.n_op_device_timer and
// rec.sum_op_in_situ_ns; a note in stage.notes for a device whose timer's op times sum to more
// than the same ops' calls. The replayer must be open.
void assign_op_times(BuiltStage& b, OpReplayer& replayer, const OpTimeOptions& opts);

}  // namespace sb
