#include "profile/ops_command.hpp"

#include <set>
#include <sstream>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/json_util.hpp"
#include "core/last_word.hpp"
#include "core/sysinfo.hpp"
#include "engine/backends.hpp"
#include "model/inspect.hpp"
#include "profile/hexagon_import.hpp"
#include "profile/ops_report.hpp"

namespace sb {

namespace {

void check_format(const std::string& f) {
    if (f != "md" && f != "csv" && f != "json")
        throw usage_error("output format must be md, csv or json, not '" + f + "'");
}

void emit(const OpsProfile& p, const ResultDocument& doc, const std::string& format,
          std::ostream& out, size_t top_n, bool brief = false) {
    if (format == "json") {
        out << dump_json(to_json(doc), 2) << "\n";
    } else if (format == "csv") {
        write_ops_csv(p, out);
    } else {
        write_ops_markdown(p, out, top_n, brief);
        if (!doc.warnings.empty()) {
            out << "\n### Warnings\n\n";
            for (const auto& w : doc.warnings)
                out << "- " << w.message << (w.hint.empty() ? "" : " (" + w.hint + ")") << "\n";
        }
    }
    out.flush();
}

}  // namespace

int run_ops_command(const OpsCommandOptions& o, ResultDocument& doc, std::ostream& out,
                    std::ostream& err) {
    check_format(o.format);
    doc.models.push_back(to_json(inspect_model(o.ops.model_path)));
    for (const auto& ep : o.rpc_servers)
        add_rpc_server(ep);
    check_device_names(o.ops.devices);
    for (auto& w : model_warnings(doc.models))
        doc.warnings.push_back(w);
    SystemInfo si = read_system_info();
    for (auto& w : system_warnings(si, threads_or_default(o.ops.n_threads)))
        doc.warnings.push_back(w);
    if (o.out_path)
        write_document(doc, *o.out_path, DocumentSave::progress);

    ProgressFn progress;
    if (o.progress)
        progress = [&err](const std::string& m) { err << "stagebench: " << m << "\n"; };
    // llama.cpp may stop the process mid-profile (an RPC server that dies): the profile is one
    // measurement, so nothing is recorded, but the line says which server went away.
    std::string device_set;
    for (const auto& d : o.ops.devices)
        device_set += (device_set.empty() ? "" : "+") + d;
    LastWordScope last_word([&](const std::string& message) -> std::optional<std::string> {
        return "the ops profile on " + device_set +
               " failed: " + describe_llama_stop(message, device_set, "") +
               "; nothing of it was recorded";
    });
    OpsProfile p = profile_ops(o.ops, progress);
    for (auto& w : profile_warnings(p))
        doc.warnings.push_back(w);
    doc.ops = p;
    doc.finished_at = utc_timestamp();
    if (o.out_path)
        write_document(doc, *o.out_path);
    emit(p, doc, o.format, out, o.ops.top_n, o.brief);
    return 0;
}

int run_import_hexagon(const ImportOptions& o, ResultDocument& doc, std::ostream& out,
                       std::ostream& err) {
    check_format(o.format);
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
    emit(p, doc, o.format, out, o.top_n);
    return 0;
}

}  // namespace sb
