#pragma once
// The NPU's pipeline split from one imported Hexagon profile (import hexagon-profile), no mode
// runs needed: per stage and per NPU session,
// - the host's batch time against the NPU's op time (profile-batch batch-dur-usec against the
//   ops' usec, PR 22269 to PR 24954): communication and queueing;
// - the NPU's batch time against its ops (OPBATCH usec, PR 26049): the batch's own overhead;
// - the NPU's trace events (GGML_HEXAGON_PROFILE=3, PR 26049) by kind: activation quantization
//   and preparation (HVX_A_QUANT, HVX_A_PREP: the study's dynamic quantization), weight
//   dequantization and preparation, attention's Q/K/V preparation, DMA, compute (HVX_COMP,
//   HMX_COMP, the flash-attention kernels), output processing, and the rest.
// How the events become time: per batch, each start is paired with the next stop of the same
// thread, event and info; the 32-bit cycle counter is unwrapped against the batch's start (or
// its first event) and turned into microseconds at the batch's clock (mhz); a kind's time is the
// union of its intervals over every thread (wall time), never their sum. Kinds overlap each
// other across threads, so the parts may add up to more than the batch. Sessions (HTP0, HTP1)
// are kept apart, each against the host.
// Per op type (NpuPipeline::by_op, the study's Table V): the events of a batch are given to its
// ops by time, as the log has no op index on them (info is a tile or chunk index): an event
// belongs to the op whose window (the op line's start and cycles, on the events' counter)
// holds it from start to stop; per node each kind is the union over threads at the op line's
// mhz, "untraced" the node's usec with no event, summed over the op type's nodes. Events no
// window holds (the batch's cache flushes and buffer set-up, an event across two ops, events
// without a batch line) are counted as unattributed, never guessed. The host's time is per
// batch in every format with trace events, so communication and queueing is not split per op.
#include <string>
#include <vector>

#include "core/doc/ops_section.hpp"
#include "profile/hexagon_import.hpp"

namespace sb {

// The kind of a trace event ("activation_quantization" for HVX_A_QUANT); "other" for events
// not named here.
std::string npu_event_kind(const std::string& event);

// The pipeline of each session with batches or trace events in `stage` (sp: split_stages of
// imp), in order of first appearance. Empty when the log has neither.
std::vector<NpuPipeline> npu_pipelines(const HexagonImport& imp, const StageSplit& sp,
                                       const std::string& stage);

// A stage's batch lines in one note, per session, never added up (sessions run at once; a sum
// would count parallel time twice): "batches in this stage, per NPU session: HTP0 3 batch(es),
// NPU busy 0.456 ms (OPBATCH usec); HTP1 ...", each session's busy time against the host's
// batch time where the log has it ("of host batch 0.100 ms (40.0 %)"), else a clause saying
// the log holds no host time. Empty when no session has a batch line in the stage.
std::string npu_batch_note(const std::vector<NpuPipeline>& pipes);

}  // namespace sb
