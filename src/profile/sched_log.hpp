#pragma once
// Reader for the ggml scheduler's assignment dump (GGML_SCHED_DEBUG=2, logged at debug level
// whenever a graph is split): which backend runs each split of the graph, where each split
// starts, and which tensors are copied into it. llama.cpp does not expose its scheduler, so
// this dump is the one public source of the scheduler's op-to-backend assignment (the tensor's
// buffer does not tell: BLAS computes on host buffers shared with the CPU). Pure text parsing.
//
// Dump format (ggml-backend.cpp, ggml_backend_sched_print_assignments):
//   "## SPLIT #<k>: <backend> # <n> inputs[: [<name> (<size>)] ...]"
//   "node #<i> (<op, 10 wide>): <name, 20 wide> (<size>) [<backend> <cause>] use=..,c=..: ..."
// View ops get no node line; a split other than the first always starts at a non-view node.
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sb {

struct SchedSplit {
    int index = 0;
    std::string backend;  // ggml_backend_name(): "CPU", "BLAS", "RPC0[127.0.0.1:50052]"
    int first_node = 0;   // index of its first node in the graph
    int n_inputs = 0;
    std::vector<std::string> inputs;  // names of the tensors copied in
};

struct SchedNodeLine {
    std::string op;    // trimmed, at most 10 characters of ggml_op_desc()
    std::string name;  // trimmed, at most 20 characters of the tensor name
};

struct SchedAssignment {
    std::vector<SchedSplit> splits;
    std::map<int, SchedNodeLine> nodes;  // non-view nodes by index

    bool empty() const { return splits.empty(); }
    // The split that node `index` belongs to; nullptr when there are no splits.
    const SchedSplit* split_of(int index) const;
};

// Parses the last complete dump in text (the text may hold several; the latest wins).
SchedAssignment parse_sched_assignments(const std::string& text);

// True when the tensor name / op desc of a traced node agree with a dump line (the dump cuts
// names to 20 and ops to 10 characters).
bool sched_line_matches(const SchedNodeLine& line, const std::string& op, const std::string& name);

}  // namespace sb
