#pragma once
// Per-operator records and their aggregates: the common currency of `stagebench ops` (a traced
// llama.cpp graph) and `stagebench import hexagon-profile` (a backend's own profile log). Pure
// data and arithmetic, no ggml: every function here is deterministic and unit-tested.
//
// Times are nanoseconds (double: replayed op times are averages over many copies). Two times
// per op, after the study this tool generalises:
//   call_ns  host wall time of the op dispatched on its own and waited for (dispatch +
//            transport + synchronisation + compute);
//   op_ns    compute time with dispatch amortised (the op replayed many times back to back in
//            one graph, total / count), or the time the backend itself reports.
// Missing is not zero: an op whose time could not be measured has std::nullopt.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/doc/ops_section.hpp"  // TensorInfo, OpRecord, GroupBy, OpAggregate

namespace sb {

// True for ggml ops that only reinterpret memory (NONE, VIEW, RESHAPE, PERMUTE, TRANSPOSE).
bool is_no_compute_op(const std::string& op);

// Layer index from a tensor name: "ffn_up-3", "blk.3.attn_q.weight", "cache_k_l3 (view)",
// scheduler copies "CPU#attn_norm-3#0". nullopt for names outside any layer ("norm",
// "result_output", "inp_embd").
std::optional<int> parse_layer(const std::string& name);

// Groups records. Op and backend groups are sorted by call time (op time when no call time),
// largest first; layer groups by layer index with "none" last. share_denominator_ns is the
// time shares are taken of (the uninstrumented stage time, or the total op time of a log);
// nullopt leaves share null.
std::vector<OpAggregate> aggregate(const std::vector<OpRecord>& records, GroupBy by,
                                   std::optional<double> share_denominator_ns);

// Indices of the n records with the largest call time (op time when absent), largest first.
std::vector<size_t> top_records(const std::vector<OpRecord>& records, size_t n);

// Sums over records; nullopt when no record has the value.
std::optional<double> sum_op_ns(const std::vector<OpRecord>& records);
std::optional<double> sum_call_ns(const std::vector<OpRecord>& records, bool compute_only);

// "256x768" (trailing 1s dropped, at least one dimension).
std::string shape_text(const std::vector<int64_t>& ne);

}  // namespace sb
