#include "profile/ops_command.hpp"

#include <algorithm>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/json_util.hpp"
#include "profile/hexagon_import.hpp"

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
    if (imp.records.empty())
        throw input_error(fmt::format(
            "'{}': no GGML_HEXAGON_PROFILE op record found ({} lines, {} profile-op lines did "
            "not parse{})",
            o.log_path, imp.n_lines, imp.n_unparsed,
            imp.unparsed.empty()
                ? std::string()
                : fmt::format("; line {}: {}", imp.unparsed[0].line, imp.unparsed[0].reason)));
    if (imp.n_unparsed > 0) {
        err << "stagebench: " << imp.n_unparsed
            << " profile-op line(s) did not parse and were skipped";
        if (!imp.unparsed.empty())
            err << " (first: line " << imp.unparsed[0].line << ": " << imp.unparsed[0].reason
                << ")";
        err << "\n";
    }

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
        "call-usec where the log has it (older format with GGML_HEXAGON_OPSYNC=1); the newer "
        "async profiler reports no call time.";
    p.import_info = to_json(imp);
    p.import_info["path"] = o.log_path;
    std::vector<std::string> common_notes;
    if (imp.n_unparsed > 0) {
        std::string note =
            fmt::format("{} profile-op line(s) did not parse and were skipped", imp.n_unparsed);
        for (size_t i = 0; i < imp.unparsed.size() && i < 3; ++i)
            note += fmt::format("; line {}: {}", imp.unparsed[i].line, imp.unparsed[i].reason);
        common_notes.push_back(note);
    }
    if (!imp.batches.empty()) {
        double total = 0;
        for (const auto& b : imp.batches)
            total += b.usec;
        common_notes.push_back(
            fmt::format("{} OPBATCH line(s): {:.0f} µs in batches", imp.batches.size(), total));
    }
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
        for (size_t i = 0; i < imp.records.size(); ++i) {
            if (sp.stage[i] != name)
                continue;
            OpRecord r = imp.records[i];
            r.graph = sp.graph[i];
            if (auto t = matmul_tokens(r))
                s.n_tokens = std::max<int>(s.n_tokens, static_cast<int>(*t));
            s.ops.push_back(std::move(r));
        }
        s.notes = common_notes;
        if (sp.method != "none")
            s.notes.push_back(fmt::format(
                "stage from {} ({} graph(s), {} op(s); n_tokens is the largest mat-mul token "
                "count)",
                sp.method == "tokens"    ? "the mat-muls' token dimension"
                : sp.method == "markers" ? "--stage-of markers"
                                         : "--stage-of markers, else the mat-muls' token dimension",
                s.n_graphs, s.ops.size()));
        finalize_stage(s, o.top_n);
        p.stages.push_back(std::move(s));
    }

    // The machine that reads the log is not the one that produced it.
    doc.system = nullptr;
    doc.llama = nullptr;
    doc.warnings.clear();
    doc.ops = p;
    doc.finished_at = utc_timestamp();
    if (o.out_path)
        write_document(doc, *o.out_path);
    return 0;
}

}  // namespace sb
