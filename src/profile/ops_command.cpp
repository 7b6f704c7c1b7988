#include "profile/ops_command.hpp"

#include <set>
#include <sstream>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/json_util.hpp"
#include "profile/hexagon_import.hpp"
#include "profile/ops_report.hpp"

namespace sb {

int run_import_hexagon(const ImportOptions& o, ResultDocument& doc, std::ostream& err) {
    check_ops_format(o.format);
    std::istringstream f(read_input_file(o.log_path, "log"));
    HexagonImport imp = parse_hexagon_profile(f);
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
    StageProfile s;
    s.stage = "log";
    s.ops = std::move(imp.records);
    s.n_graphs = 1;
    if (imp.n_unparsed > 0) {
        std::string note =
            fmt::format("{} profile-op line(s) did not parse and were skipped", imp.n_unparsed);
        for (size_t i = 0; i < imp.unparsed.size() && i < 3; ++i)
            note += fmt::format("; line {}: {}", imp.unparsed[i].line, imp.unparsed[i].reason);
        s.notes.push_back(note);
    }
    if (!imp.batches.empty()) {
        double total = 0;
        for (const auto& b : imp.batches)
            total += b.usec;
        s.notes.push_back(
            fmt::format("{} OPBATCH line(s): {:.0f} µs in batches", imp.batches.size(), total));
    }
    for (const auto& [fmt_name, count] : imp.formats)
        s.notes.push_back(fmt::format("{} record(s) in the {} format", count, fmt_name));
    finalize_stage(s, o.top_n);
    p.stages.push_back(std::move(s));

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
