#pragma once
// Parser for llama.cpp Hexagon backend profile logs (GGML_HEXAGON_PROFILE=1), turning a phone
// user's log into the same per-op records as `stagebench ops`. Three line formats are read:
//
//   old (until April 2026; needs GGML_HEXAGON_OPSYNC=1):
//     ggml-hex: HTP0 profile-op MUL_MAT: <names> : <dims> : <types> : <strides> : <buffs> :
//       op-usec N op-cycles N op-pkts N (F) call-usec N
//   PR 22269 (async profiler):
//     ggml-hex: HTP0 profile-op MUL_MAT: <names> : <dims> : <types> : ... :
//       usec N cycles N [start S] [mhz M] [pmu [..]] [evt [..]]
//   current upstream (fields separated by '|'; OPBATCH lines summarise a batch of ops):
//     ggml-hex: HTP0 profile-op MUL_MAT|<names>|<dims>|<types>|<strides>|<kparams>|
//       usec N cycles N start S mhz M [pmu [..]]
//
// <names>, <dims>, <types> list the inputs then the output: "a x b -> out", dims "2048:2048".
// Anything may precede "profile-op" (logcat prefixes, timestamps). Lines that mention
// profile-op but do not parse are counted with their line number and reason, never fatal;
// other lines are ignored. Only the newer formats lack call times: call_ns stays null there.
#include <istream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile/op_record.hpp"

namespace sb {

struct HexagonBatch {
    std::string device;
    int line = 0;
    double usec = 0;
    std::optional<int64_t> n_ops;
    std::optional<int64_t> cycles;
    std::optional<std::vector<int64_t>> evt_cnt;  // trace events per thread (PROFILE=3)
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
    int n_ignored = 0;                   // lines without profile-op (other log output)
    int n_unparsed = 0;                  // profile-op lines that did not parse
    std::vector<UnparsedLine> unparsed;  // the first 20 of them
    std::map<std::string, int> formats;  // "op-usec/call-usec", "usec (colon)", "usec (pipe)"
    // Parallel to records: the stage of the last --stage-of marker line before it ("" none),
    // whether an OPBATCH or marker line came between it and the record before, and whether a
    // marker line did.
    std::vector<std::string> stage_mark;
    std::vector<bool> boundary_before, marker_before;
    int n_marks = 0;  // marker lines seen
};

struct HexagonParseOptions {
    // {TEXT, STAGE}: a line (not a profile-op line) that contains TEXT puts the records after
    // it into STAGE, until the next such line (`import hexagon-profile --stage-of TEXT=STAGE`).
    std::vector<std::pair<std::string, std::string>> stage_marks;
};

HexagonImport parse_hexagon_profile(std::istream& in);
HexagonImport parse_hexagon_profile(std::istream& in, const HexagonParseOptions& opts);

// The split of an import into stages. Per record its stage and its graph within that stage.
// How: records after a --stage-of marker take the marker's stage. The others go by graph: the
// log is cut into segments at OPBATCH and marker lines and where the layer index falls back
// (the next graph's layer 0 after the last layer); a segment is "prefill" when one of its
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
