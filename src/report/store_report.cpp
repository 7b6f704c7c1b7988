#include "report/store_report.hpp"

#include <fmt/format.h>

#include "core/json_util.hpp"
#include "report/explain_report.hpp"
#include "report/fidelity_report.hpp"
#include "report/serve_report.hpp"

namespace sb {

namespace {

using nlohmann::json;

std::string or_dash(const std::string& s) {
    return s.empty() ? "-" : s;
}

std::string median(const Summary& s, double scale = 1) {
    return s.median ? fmt::format("{:.2f}", *s.median * scale) : std::string("-");
}

// The stall-robust rate with the 95% CI of its median: "3132.50 [3100.00, 3150.00]".
std::string robust(const StageResult& s) {
    const RobustRate& r = s.robust;
    if (!r.tokens_per_s)
        return "-";
    std::string t = fmt::format("{:.2f}", *r.tokens_per_s);
    if (r.ci95_lo && r.ci95_hi)
        t += fmt::format(" [{:.2f}, {:.2f}]", *r.ci95_lo, *r.ci95_hi);
    return t;
}

// "1/5 reps", "3/640 tokens".
std::string stalls(const Stalls& s, const char* unit) {
    return fmt::format("{}/{} {}", s.count(), s.n, unit);
}

std::string joined(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v)
        s += (s.empty() ? "" : ", ") + x;
    return s.empty() ? "-" : s;
}

}  // namespace

void write_store_list_markdown(std::ostream& out, const std::vector<StoredEntry>& entries) {
    out << "| id | stored | command | started | host | cpu | version | models | tests |\n"
        << "| ---: | --- | --- | --- | --- | --- | --- | --- | ---: |\n";
    for (const auto& e : entries)
        out << "| " << e.id << " | " << e.stored_at << " | " << e.command.value_or("-") << " | "
            << e.started_at.value_or("-") << " | " << e.host.value_or("-") << " | "
            << e.cpu.value_or("-") << " | " << e.tool_version.value_or("-") << " | "
            << joined(e.models) << " | " << e.n_tests << " |\n";
}

json store_list_json(const std::vector<StoredEntry>& entries) {
    json out = json::array();
    for (const auto& e : entries)
        out.push_back({{"id", e.id},
                       {"stored_at", e.stored_at},
                       {"command", opt(e.command)},
                       {"started_at", opt(e.started_at)},
                       {"host", opt(e.host)},
                       {"cpu", opt(e.cpu)},
                       {"tool_version", opt(e.tool_version)},
                       {"models", e.models},
                       {"n_tests", e.n_tests},
                       {"device", opt(e.device)},
                       {"llama_commit", opt(e.llama_commit)},
                       {"content_hash", e.content_hash}});
    return out;
}

void write_document_summary_markdown(std::ostream& out, int64_t id, const ResultDocument& doc) {
    const MachineView m = machine_view(doc);
    out << "## #" << id << ": " << or_dash(doc.command) << "\n\n"
        << "- started " << or_dash(doc.started_at) << ", finished " << or_dash(doc.finished_at)
        << "\n"
        << "- system: " << m.hostname.value_or("-") << ", " << m.cpu_model.value_or("-") << ", "
        << m.os.value_or("-") << "\n"
        << "- stagebench " << or_dash(doc.tool_version) << " (" << or_dash(doc.build_type)
        << "), llama.cpp " << m.llama_tag.value_or("-") << "\n";
    std::vector<std::string> models;
    for (const auto& m : doc.models) {
        const ModelView v = model_view(m);
        models.push_back(v.name ? *v.name : or_dash(v.path));
    }
    out << "- models: " << joined(models) << "\n";
    if (m.device)
        out << "- fleet " << m.fleet.value_or("-") << ", device " << *m.device << "\n";
    if (doc.serve) {
        // A serve document: its points (report/serve_report.hpp).
        out << "\n";
        write_serve_markdown(*doc.serve, {}, out);
        return;
    }
    if (doc.explain) {
        // An explain document: its levels, waterfalls and settings (report/explain_report.hpp).
        out << "\n";
        write_explain_markdown(*doc.explain, {}, out);
        return;
    }
    if (doc.tests.empty() && doc.fidelity) {
        out << "\n";
        write_fidelity_markdown(out, *doc.fidelity);
        return;
    }
    if (doc.tests.empty()) {
        out << "\nNo tests in this document; `stagebench db export " << id
            << "` gives all of it.\n";
        return;
    }
    out << "\n| test | devices | threads | status | reps | prefill t/s median | prefill robust t/s "
           "[95% CI] | prefill stalls | decode t/s median | decode robust t/s [95% CI] | decode "
           "stalls | TTFT ms median |\n"
        << "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    for (const auto& t : doc.tests) {
        const TestConfig& c = t.config;
        const std::string threads = c.n_threads <= 0 ? "auto" : std::to_string(c.n_threads);
        out << "| " << c.test_name() << " | " << or_dash(c.devices.str()) << " | " << threads
            << " | " << to_string(t.status) << " | " << t.reps_done << " | "
            << (t.prefill ? median(t.prefill->throughput) : "-") << " | "
            << (t.prefill ? robust(*t.prefill) : "-") << " | "
            << (t.prefill ? stalls(t.prefill->stalls, "reps") : "-") << " | "
            << (t.decode ? median(t.decode->throughput) : "-") << " | "
            << (t.decode ? robust(*t.decode) : "-") << " | "
            << (t.decode ? stalls(t.decode->token_stalls, "tokens") : "-") << " | "
            << median(t.ttft, 1e-6) << " |\n";
    }
    out << "\nRobust t/s, the figure to quote: prefill = prompt tokens / the median repetition "
           "time, decode = 1e9 / the median inter-token latency, with the 95% CI of that median "
           "(seeded bootstrap over the repetitions); stalls are counted, never dropped.\n";
}

}  // namespace sb
