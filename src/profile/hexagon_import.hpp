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
};

HexagonImport parse_hexagon_profile(std::istream& in);

nlohmann::json to_json(const HexagonImport& imp);  // everything but the records

}  // namespace sb
