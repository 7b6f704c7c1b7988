#pragma once
// Fallback and its penalty (`stagebench ops`): for each op type of a stage whose nodes ran off
// the requested device(s), what leaving the device costs in that stage. No ggml: the replays
// on the requested device go through an OpReplayer (profile/op_trace.hpp).
//
// Per (op type, backend it ran on), over its computing nodes there:
//  * call_ns, op_ns: their call and op times where they ran (the op's CPU time);
//  * the splits they force: the off-device splits holding them, each with the copies and
//    synchronisations at its two boundaries (the gap before the split's first node, i.e. the
//    scheduler synchronising the device and copying inputs out, and the gap before the next
//    split when that one returns to a requested device, copying the results back) and the
//    bytes those copies move. A split holding several op types is shared among them by their
//    share of its computing nodes, so the rows of a stage add up to the splits' whole cost;
//  * against the graph with no split there: where the requested device supports the op, the
//    nodes replayed on it (its default buffers): penalty_ns = the time where they ran (op time,
//    else call time) + the splits' share - their op time on the device, and penalty = the
//    ratio of the op times; where it does not, no graph without the split can be measured and
//    penalty_ns is the splits' own cost (penalty_basis says which). A row without penalty_ns
//    says why in its note.
#include <string>
#include <vector>

#include "core/doc/ops_section.hpp"
#include "profile/op_trace.hpp"

namespace sb {

// The fallback rows of a stage whose records (ops, parallel to nodes), splits (with copy
// times) and op times are final. requested: the devices asked for; replayer: open, or null
// (no replays: penalties from the splits only); replay_on: the requested device to replay on
// ("" for none). Rows are sorted by penalty_ns (rows without one last), then call time.
std::vector<FallbackRow> fallback_rows(const StageProfile& stage,
                                       const std::vector<CapturedNode>& nodes,
                                       const std::vector<std::string>& requested,
                                       OpReplayer* replayer, const std::string& replay_on);

}  // namespace sb
