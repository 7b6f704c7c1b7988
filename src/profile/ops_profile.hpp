#pragma once
// The arithmetic of `stagebench ops` (and of `import hexagon-profile`) over its result, the
// types of core/doc/ops_section.hpp (stored in ResultDocument::ops): the aggregates and
// reconciliation of a stage, its decomposition along the accelerator path, and the warnings a
// reader must see. Times in ns; fractions as fractions (0.25 = 25 %).
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/doc/ops_section.hpp"
#include "core/warning.hpp"
#include "profile/op_record.hpp"

namespace sb {

// Fills the aggregates, top ops, split/copy totals and the reconciliation sums from ops,
// splits and rec.plain_ns / rec.traced_ns. Shares are of the uninstrumented stage time when
// known, else of the summed op time. Sets rec.fit_cause when the summed op time is not within
// 5 % of the uninstrumented stage time (what the difference is made of, from the stage's own
// figures), and adds a note when it exceeds the stage time.
void finalize_stage(StageProfile& s, size_t top_n = 10);

// Splits the stage (ops, splits, rec must be final) into the parts of Decomposition:
// accelerator compute (op times of computing ops on `accelerators`, less conversion),
// conversion (conversion_ns per op index, where measured), communication (one dispatch per
// accelerator split: dispatch_ns of its backend), copies (split input copies), fallback ops
// (op times of computing ops elsewhere) and host (the uninstrumented stage time left over).
// Every part but host is >= 0. A negative host says in its note that the parts overlap; a part
// larger than the uninstrumented stage time says in its note that it exceeds it.
Decomposition decompose_stage(const StageProfile& s, const std::vector<std::string>& accelerators,
                              const std::map<std::string, double>& dispatch_ns,
                              const std::vector<std::optional<double>>& conversion_ns);

// Op coverage of a stage (StageProfile::coverage), by op type in order of first appearance:
// computing records only (views left out). supports[i] and usable[i] hold, for records[i], bit
// k for devices[k]: the device's supports_op answer for the node, and whether the weights the
// node reads lie in buffers the device can use. A row counts per device the nodes it supports
// and per backend the nodes that ran there; its note says, for each device but the CPU (the
// host, where the rest goes), why nodes ran elsewhere: not supported, supported but their
// weights in buffers it cannot use, or supported and placed elsewhere by the scheduler (the
// weights' location, the backends' order). Throws sb::Error(usage) when the sizes disagree
// or there are more than 32 devices.
std::vector<CoverageRow> coverage_rows(const std::vector<OpRecord>& records,
                                       const std::vector<std::string>& devices,
                                       const std::vector<uint32_t>& supports,
                                       const std::vector<uint32_t>& usable);

// Warnings a reader must see (op time above the stage time, replays that failed).
Warnings profile_warnings(const OpsProfile& p);

}  // namespace sb
