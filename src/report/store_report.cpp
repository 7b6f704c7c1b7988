#include "report/store_report.hpp"

#include <fmt/format.h>

#include "core/json_util.hpp"

namespace sb {

namespace {

using nlohmann::json;

std::string text(const json& v) {
    if (v.is_null())
        return "-";
    return v.is_string() ? v.get<std::string>() : dump_json(v);
}

std::string median(const json& summary, double scale = 1) {
    const json& m = json_field(summary, "median");
    return m.is_number() ? fmt::format("{:.2f}", m.get<double>() * scale) : std::string("-");
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
                       {"n_tests", e.n_tests}});
    return out;
}

void write_document_summary_markdown(std::ostream& out, int64_t id, const json& doc) {
    const json& sys = json_field(doc, "system");
    const json& tool = json_field(doc, "tool");
    const json& llama = json_field(doc, "llama");
    out << "## #" << id << ": " << text(json_field(doc, "command")) << "\n\n"
        << "- started " << text(json_field(doc, "started_at")) << ", finished "
        << text(json_field(doc, "finished_at")) << "\n"
        << "- system: " << text(json_field(sys, "hostname")) << ", "
        << text(json_field(sys, "cpu_model")) << ", " << text(json_field(sys, "os")) << "\n"
        << "- stagebench " << text(json_field(tool, "version")) << " ("
        << text(json_field(tool, "build_type")) << "), llama.cpp " << text(json_field(llama, "tag"))
        << "\n";
    std::vector<std::string> models;
    if (const json& ms = json_field(doc, "models"); ms.is_array())
        for (const auto& m : ms)
            models.push_back(json_field(m, "name").is_string() ? text(json_field(m, "name"))
                                                               : text(json_field(m, "path")));
    out << "- models: " << joined(models) << "\n";

    const json& tests = json_field(doc, "tests");
    if (!tests.is_array() || tests.empty()) {
        out << "\nNo tests in this document; `stagebench db export " << id
            << "` gives all of it.\n";
        return;
    }
    out << "\n| test | devices | threads | status | reps | prefill t/s | decode t/s | TTFT ms |\n"
        << "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: |\n";
    for (const auto& t : tests) {
        const json& c = json_field(t, "config");
        const json& th = json_field(c, "n_threads");
        const std::string threads =
            th.is_number_integer() && th.get<int64_t>() <= 0 ? "auto" : text(th);
        out << "| " << text(json_field(c, "test")) << " | " << text(json_field(c, "devices"))
            << " | " << threads << " | " << text(json_field(t, "status")) << " | "
            << text(json_field(t, "reps_done")) << " | "
            << median(json_field(json_field(t, "prefill"), "throughput")) << " | "
            << median(json_field(json_field(t, "decode"), "throughput")) << " | "
            << median(json_field(t, "ttft"), 1e-6) << " |\n";
    }
}

}  // namespace sb
