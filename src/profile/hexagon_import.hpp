#pragma once
// Parser for llama.cpp Hexagon backend profile logs, turning a phone user's log into the same
// per-op records as `stagebench ops`. Every upstream line format since the backend appeared is
// read (ggml/src/ggml-hexagon/ggml-hexagon.cpp; dates of the ggml mirror, each format lasting
// until the next):
//
//   2025-10-22, PR 16547 (the backend added; INFO level, printed without -v; needs
//   GGML_HEXAGON_PROFILE=1 and, for times of the op itself, GGML_HEXAGON_OPSYNC=1):
//     ggml-hex: HTP0 MUL_MAT <src0> 3072:3072:1:1 x <src1> 3072:8:1:1 -> <dst> 3072:8:1:1 :
//       op-usec N op-cycles N op-pkts N (F) call-usec N
//     (unary ops have one source, ROPE may have three, MUL_MAT_ID prints
//      "matmul-id <src0> <ne> x <src1> <ne> (<ids> <ne>) -> <dst> <ne>"; names may hold spaces)
//   2025-12-23, PR 17500 (DEBUG level from here on: needs verbose logging):
//     ggml-hex: HTP0 profile-op MUL_MAT: <names> : <dims> : <types> : <strides> : <buffs> :
//       op-usec N op-cycles N op-pkts N (F) call-usec N
//   2026-04-23, PR 22269 (asynchronous profiler, no call time):
//     ggml-hex: HTP0 profile-op MUL_MAT: <names> : <dims> : <types> : <strides> :
//       usec N cycles N[ pmu [8 counters]]
//     ggml-hex: HTP0 profile-batch n-ops N batch-dur-usec N htp-ops-usec N   (after its ops)
//   2026-06-18, PR 24592: "usec N cycles N start N mhz F" and, at PROFILE=3, "trace-op" lines
//     and " evt [11 counts]" on profile-batch
//   2026-06-24, PR 24954: fields separated by '|', a kernel-parameters field before the times:
//     ggml-hex: HTP0 profile-op MUL_MAT|<names>|<dims>|<types>|<strides>|<kparams>|
//       usec N cycles N start N mhz F[ pmu [..]]
//   2026-07-23, PR 26049 (the pinned tree): batches as profile-op lines written before their ops,
//     ggml-hex: HTP0 profile-op OPBATCH|----|n-ops N|<evt-cnt or ---->|----|----|usec N cycles N
//       start N mhz F
//     and "trace-evt" lines. Fused ops print as "MUL_MAT+ADD".
//
// <names>, <dims>, <types> list the inputs then the output: "a x b -> out", dims "2048:2048".
// Whatever precedes "ggml-hex:" is a prefix and skipped: llama.cpp's own ("0.01.576.635 D ",
// with or without its colour escapes, which are removed everywhere), logcat's threadtime
// ("06-18 12:34:56.789  1234  1250 D llama   : ") and brief ("D/llama   ( 1234): ").
//
// Lines that look like profile lines but do not parse are counted with their line number and
// reason, never fatal. A line whose values cannot be true is refused the same way, in its own
// list, and never enters the records (see kMaxHexagonUsec and the checks below). Other lines are
// ignored. Only the formats before PR 22269 have call times: call_ns stays null in the others.
#include <cstdint>
#include <istream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile/op_record.hpp"

namespace sb {

// The bounds of a plausible line. A time (op, call or batch) above kMaxHexagonUsec (1000 s for
// one op or batch: a negative 32-bit time printed unsigned lands above it), a clock above
// kMaxHexagonMhz (no Hexagon runs at 10 GHz; "mhz 1e23"), a clock of 0 or less while the op took
// time, a clock that disagrees with the line's own cycles/usec by more than 1 %, cycles per
// microsecond above twice kMaxHexagonMhz (integer microseconds at most halve the true time), a
// batch of more than kMaxHexagonBatchOps ops, or any negative count is refused.
inline constexpr double kMaxHexagonUsec = 1e9;
inline constexpr double kMaxHexagonMhz = 10000;
inline constexpr int64_t kMaxHexagonBatchOps = 1000000;

struct HexagonBatch {
    std::string device;
    int line = 0;
    // "OPBATCH" (PR 26049: a profile-op line before the batch's ops; usec is the NPU's batch
    // time) or "profile-batch" (PR 22269 to PR 24954: after the batch's ops; usec is the host's
    // batch duration, batch-dur-usec, and htp_ops_usec the sum of the ops' usec).
    std::string kind;
    double usec = 0;
    std::optional<int64_t> n_ops;
    std::optional<int64_t> cycles;
    std::optional<double> mhz;
    std::optional<int64_t> htp_ops_usec;
    std::optional<std::vector<int64_t>> evt_cnt;  // trace events per thread (PROFILE=3)
    std::optional<int64_t> start;  // OPBATCH: the NPU's cycle counter at the batch's start
    // Records before the line: an OPBATCH's ops follow it, a profile-batch's precede it.
    std::size_t records_before = 0;
};

// One trace event of the NPU (GGML_HEXAGON_PROFILE=3, PR 26049):
//   ggml-hex: HTP0 trace-evt HVX_A_QUANT: thread 2 info 5 start 123456789
// printed after the ops of its batch, per thread; cycles are the counter's lower 32 bits.
struct HexagonTraceEvent {
    std::string device;
    std::string event;  // DMA, HVX_COMP, HVX_A_QUANT, HMX_COMP, ... (as printed)
    int thread = 0;
    int info = 0;  // the tile or chunk index
    bool stop = false;
    uint32_t cycles = 0;
    int line = 0;
    int batch = -1;  // index into HexagonImport::batches of its session's last batch line
    std::size_t records_before = 0;
};

struct UnparsedLine {
    int line = 0;      // 1-based
    std::string text;  // the line, cut to 200 characters
    std::string reason;
};

struct HexagonImport {
    std::vector<OpRecord> records;  // node = 0-based order in the log; op_ns from usec
    std::vector<HexagonBatch> batches;
    int n_lines = 0;
    int n_ignored = 0;                      // other log output (marker lines included)
    int n_trace = 0;                        // trace-op / trace-evt lines (PROFILE=3)
    std::vector<HexagonTraceEvent> events;  // the trace-evt lines, in order
    int n_unparsed = 0;                     // profile lines that did not parse
    std::vector<UnparsedLine> unparsed;     // the first 20 of them
    int n_refused = 0;                      // profile lines whose values cannot be true
    std::vector<UnparsedLine> refused;      // the first 20 of them, with the value and the bound
    // Records per line format: "first (PR 16547)", "op-usec (PR 17500)", "usec (PR 22269)",
    // "usec start mhz (PR 24592)", "pipe (PR 24954)".
    std::map<std::string, int> formats;
    // Parallel to records: the stage of the last --stage-of marker line before it ("" none),
    // whether a batch or marker line came between it and the record before, and whether a
    // marker line did.
    std::vector<std::string> stage_mark;
    std::vector<bool> boundary_before, marker_before;
    // Parallel to records: a "graph-compute n_nodes N" line (verbose logging) came between it
    // and the record before: the host started a new graph.
    std::vector<bool> graph_before;
    int n_marks = 0;        // marker lines seen
    int n_graph_lines = 0;  // graph-compute lines seen
};

struct HexagonParseOptions {
    // {TEXT, STAGE}: a line (not a profile line) that contains TEXT puts the records after it
    // into STAGE, until the next such line (`import hexagon-profile --stage-of TEXT=STAGE`).
    std::vector<std::pair<std::string, std::string>> stage_marks;
};

// Never throws for the log's content (any bytes); n_lines == n_ignored + n_trace + n_unparsed +
// n_refused + records + batches. Throws sb::Error(runtime) when interrupt_requested()
// (core/interrupt.hpp: Ctrl-C or SIGTERM) while it reads.
HexagonImport parse_hexagon_profile(std::istream& in);
HexagonImport parse_hexagon_profile(std::istream& in, const HexagonParseOptions& opts);

// The line with terminal colour escapes (ESC [ ... final byte) and a trailing '\r' removed:
// llama.cpp colours its prefixes, and resets the colour after a DEBUG message, at the start of
// the next line.
std::string strip_log_escapes(const std::string& line);

// The split of an import into stages. Per record its stage and its graph within that stage.
// How: records after a --stage-of marker take the marker's stage. The others go by graph: the
// log is cut into segments at batch, marker and graph-compute lines, where the layer index
// falls back (the next graph's layer 0 after the last layer), after the output projection
// (result_output: the last node of a graph, which also cuts the graphs of a one-layer model),
// and where the mat-muls' token count changes; a segment is "prefill" when one of its
// mat-muls (op MUL_MAT, MUL_MAT_ID or a fusion starting with them) has more than one token
// (output ne[1], ne[2] for MUL_MAT_ID), "decode" when all of them have one; a segment without
// mat-muls takes the stage of the segment before it (the first, of the one after). A log
// without any mat-mul or marker is one stage, "log". A one-token prompt looks like decode,
// and batched decoding (several sequences) like prefill: use markers there.
struct StageSplit {
    std::vector<std::string> stage;  // per record
    std::vector<int> graph;          // per record: 0-based graph within its stage
    std::vector<std::string> order;  // the stages in order of first appearance
    std::map<std::string, int> n_graphs;
    std::string method;  // "markers", "tokens", "markers+tokens" or "none"
};
StageSplit split_stages(const HexagonImport& imp);

// Tokens of a mat-mul record (see split_stages); nullopt for other ops or unknown shapes.
std::optional<int64_t> matmul_tokens(const OpRecord& r);

nlohmann::json to_json(const HexagonImport& imp);  // everything but the records

}  // namespace sb
