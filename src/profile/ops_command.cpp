#include "profile/ops_command.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/json_util.hpp"
#include "profile/hexagon_import.hpp"
#include "profile/hexagon_pipeline.hpp"
#include "profile/ops_profile.hpp"

namespace sb {

int run_import_hexagon(const ImportOptions& o, ResultDocument& doc, std::ostream& err) {
    HexagonParseOptions popts;
    for (const auto& m : o.stage_of) {
        const size_t eq = m.rfind('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == m.size())
            throw input_error(fmt::format(
                "--stage-of '{}': expected TEXT=STAGE (a log line containing TEXT starts STAGE)",
                m));
        popts.stage_marks.emplace_back(m.substr(0, eq), m.substr(eq + 1));
    }
    std::istringstream f(read_input_file(o.log_path, "log"));
    HexagonImport imp = parse_hexagon_profile(f, popts);
    if (imp.records.empty()) {
        // Name the first line that was refused or did not parse, whichever came first.
        const UnparsedLine* first = nullptr;
        for (const auto* list : {&imp.unparsed, &imp.refused})
            if (!list->empty() && (!first || list->front().line < first->line))
                first = &list->front();
        throw input_error(fmt::format(
            "'{}': no Hexagon profile op record found ({} lines, {} profile line(s) did not "
            "parse, {} refused for values that cannot be true{})",
            o.log_path, imp.n_lines, imp.n_unparsed, imp.n_refused,
            first ? fmt::format("; line {}: {}", first->line, first->reason) : std::string()));
    }
    if (imp.n_unparsed > 0) {
        err << "stagebench: " << imp.n_unparsed
            << " profile line(s) did not parse and were skipped";
        if (!imp.unparsed.empty())
            err << " (first: line " << imp.unparsed[0].line << ": " << imp.unparsed[0].reason
                << ")";
        err << "\n";
    }
    if (imp.n_refused > 0)
        err << "stagebench: warning: " << imp.n_refused
            << " profile line(s) refused for values that cannot be true (first: line "
            << imp.refused[0].line << ": " << imp.refused[0].reason << ")\n";

    OpsProfile p;
    p.source = "hexagon-profile";
    p.model_path = o.log_path;
    std::set<std::string> devices;
    for (const auto& r : imp.records)
        devices.insert(r.backend);
    for (const auto& d : devices) {
        p.devices += (p.devices.empty() ? "" : "+") + d;
        p.backends.push_back(d);
    }
    p.method =
        "Op time: the backend's own per-op time (usec, Hexagon profiler). Call time: the host's "
        "call-usec where the log has it (the formats before llama.cpp PR 22269, April 2026; "
        "with GGML_HEXAGON_OPSYNC=1 for op times of the op itself); the asynchronous profiler "
        "since reports no call time.";
    p.import_info = to_json(imp);
    p.import_info["path"] = o.log_path;
    std::vector<std::string> common_notes;
    if (imp.n_unparsed > 0) {
        std::string note =
            fmt::format("{} profile line(s) did not parse and were skipped", imp.n_unparsed);
        for (size_t i = 0; i < imp.unparsed.size() && i < 3; ++i)
            note += fmt::format("; line {}: {}", imp.unparsed[i].line, imp.unparsed[i].reason);
        common_notes.push_back(note);
    }
    if (imp.n_refused > 0) {
        std::string note =
            fmt::format("{} profile line(s) refused for values that cannot be true, not in any sum",
                        imp.n_refused);
        for (size_t i = 0; i < imp.refused.size() && i < 3; ++i)
            note += fmt::format("; line {}: {}", imp.refused[i].line, imp.refused[i].reason);
        common_notes.push_back(note);
    }
    if (imp.n_trace > static_cast<int>(imp.events.size()))
        common_notes.push_back(
            fmt::format("{} trace-op line(s) (GGML_HEXAGON_PROFILE=3, PR 24592) counted, not read",
                        imp.n_trace - static_cast<int>(imp.events.size())));
    for (const auto& [fmt_name, count] : imp.formats)
        common_notes.push_back(fmt::format("{} record(s) in the {} format", count, fmt_name));
    if (!o.stage_of.empty() && imp.n_marks == 0)
        common_notes.push_back("no line of the log matched a --stage-of marker");

    StageSplit sp;
    if (o.one_stage) {
        sp.stage.assign(imp.records.size(), "log");
        sp.graph.assign(imp.records.size(), 0);
        sp.order = {"log"};
        sp.n_graphs["log"] = 1;
        sp.method = "none";
    } else {
        sp = split_stages(imp);
    }
    p.import_info["stage_split"] = sp.method;
    for (const auto& name : sp.order) {
        StageProfile s;
        s.stage = name;
        s.n_graphs = sp.n_graphs[name];
        // The tokens of the stage: per graph its largest mat-mul token count (a prefill's output
        // projection computes only the last token), summed over the graphs, so that 8 decode
        // graphs are 8 tokens, as `ops` counts a prompt's micro-batches.
        std::map<int, int64_t> graph_tokens;
        for (size_t i = 0; i < imp.records.size(); ++i) {
            if (sp.stage[i] != name)
                continue;
            OpRecord r = imp.records[i];
            r.graph = sp.graph[i];
            int64_t& g = graph_tokens[r.graph];
            if (auto t = matmul_tokens(r))
                g = std::max(g, *t);
            s.ops.push_back(std::move(r));
        }
        // A log's dims are claims: the sum is bounded, never overflows.
        constexpr int64_t kMax = std::numeric_limits<int>::max();
        int64_t tokens = 0;
        for (const auto& [g, t] : graph_tokens)
            tokens = std::min(kMax, tokens + std::min(kMax, t));
        s.n_tokens = static_cast<int>(tokens);
        s.notes = common_notes;
        if (sp.method != "none")
            s.notes.push_back(fmt::format(
                "stage from {} ({} graph(s), {} op(s); n_tokens is the graphs' tokens: each "
                "graph's largest mat-mul token count, summed)",
                sp.method == "tokens"    ? "the mat-muls' token dimension"
                : sp.method == "markers" ? "--stage-of markers"
                                         : "--stage-of markers, else the mat-muls' token dimension",
                s.n_graphs, s.ops.size()));
        s.npu_pipeline = npu_pipelines(imp, sp, name);
        if (std::string note = npu_batch_note(s.npu_pipeline); !note.empty())
            s.notes.push_back(std::move(note));
        finalize_stage(s, o.top_n);
        p.stages.push_back(std::move(s));
    }

    // The machine that reads the log is not the one that produced it.
    doc.system = nullptr;
    doc.llama = nullptr;
    doc.warnings.clear();
    if (imp.n_refused > 0)
        doc.warnings.push_back(
            {"hexagon_implausible_lines",
             fmt::format("{} profile line(s) of '{}' refused for values that cannot be true "
                         "(first: line {}: {}); the totals are of the other lines",
                         imp.n_refused, o.log_path, imp.refused[0].line, imp.refused[0].reason),
             "see ops.import.refused; a damaged or hand-edited log, or a backend bug"});
    doc.ops = p;
    doc.finished_at = utc_timestamp();
    if (o.out_path)
        write_document(doc, *o.out_path);
    return 0;
}

}  // namespace sb
