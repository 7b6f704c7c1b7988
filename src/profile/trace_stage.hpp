#pragma once
// The bookkeeping of one profiled stage from its traced runs (profile/op_trace.hpp): a record
// per node (op, tensors, layer, backend, median call time, its start and end in the run of
// median wall time that dispatched every node alone, else in the capturing run), the graph's splits
// with the inputs copied into them and the time those copies took, the scheduler's time between
// nodes, and the op coverage of the stage. Pure: no ggml, no clock; every function here is
// deterministic and unit-tested.
//
// Backend of a node: the split the scheduler's assignment puts it in; without an assignment
// for its graph, the device of its output's buffer ("unknown" when that is unknown too), and
// splits wherever that changes between computing nodes.
// Copy time of a split (not the first of its graph): the gap before its first node, median
// over the runs: the scheduler synchronising the previous backend and copying the inputs.
#include <cstddef>
#include <string>
#include <vector>

#include "core/doc/ops_section.hpp"
#include "profile/op_trace.hpp"

namespace sb {

struct BuiltStage {
    StageProfile stage;               // ops, splits, copies, traced times, coverage, notes
    std::vector<CapturedNode> nodes;  // parallel to stage.ops
    // Some timed run dispatched only some nodes alone (profile/op_trace.hpp Isolation): each
    // node's call time is the median of the runs that dispatched it alone, the timeline is the
    // capturing run's, and rec.host_ns is set (each run's wall time less its tracer work, calls
    // and gaps, median): the sum of the calls is not a run's.
    bool strided = false;
};

// capture: the capturing run (calls, nodes, assignments); runs: the timed traced runs of the
// same stage (start_ns and wall_ns filled). Runs whose graph differs from the capture's (other
// graph or nodes) are left out with a note; a run's calls may each compute several nodes
// (Isolation): a node's call time is then the median of the runs that dispatched it alone.
// Fills StageProfile::stage, traced_reps, timeline_rep, n_graphs, ops, splits,
// rec.traced_ns / traced_start_ns / tracer_ns / sched_gap_ns (host_ns when strided),
// coverage_devices and coverage (when coverage_devices is not empty) and notes; op times and
// the aggregates are left to the caller (op times, then finalize_stage).
BuiltStage build_stage(const std::string& name, const TracedRun& capture,
                       const std::vector<TracedRun>& runs,
                       const std::vector<std::string>& coverage_devices);

// Splits a run of several one-token decode steps (one graph each) into one run per step,
// its graphs numbered from 0: walls_ns[i] and starts_ns[i] are step i's, as the repetition
// loop timed it. Graphs beyond walls_ns are dropped. The node descriptions and assignments of
// a capturing run go with the steps they describe.
std::vector<TracedRun> split_steps(const TracedRun& run, const std::vector<int64_t>& walls_ns,
                                   const std::vector<int64_t>& starts_ns);

}  // namespace sb
