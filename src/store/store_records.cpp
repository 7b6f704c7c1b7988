#include <filesystem>

#include "core/document.hpp"
#include "core/error.hpp"
#include "core/json_util.hpp"
#include "core/result.hpp"
#include "core/utf8.hpp"
#include "store/sha256.hpp"
#include "store/store_backend.hpp"

namespace sb {

using nlohmann::json;

namespace {

std::string basename_of(const std::string& path) {
    return std::filesystem::path(path).filename().string();
}

// Columns are text a database must take: valid UTF-8 (PostgreSQL refuses anything else).
std::optional<std::string> clean(const std::optional<std::string>& s) {
    return s ? std::optional<std::string>(valid_utf8(*s)) : std::nullopt;
}

std::optional<std::string> nonempty_string(const json& j, const char* key) {
    const json& v = json_field(j, key);
    if (!v.is_string() || v.get_ref<const std::string&>().empty())
        return std::nullopt;
    return v.get<std::string>();
}

std::vector<StoredTest> tests_of(const ResultDocument& doc) {
    std::vector<StoredTest> out;
    for (std::size_t i = 0; i < doc.tests.size(); ++i) {
        const TestResult& t = doc.tests[i];
        const TestConfig& c = t.config;
        StoredTest r;
        r.index = static_cast<int64_t>(i);
        r.test = valid_utf8(c.test_name());
        r.model = valid_utf8(basename_of(c.model_path));
        r.devices = valid_utf8(c.devices.str());
        r.status = to_string(t.status);
        r.n_threads = c.n_threads;
        if (t.prefill)
            r.prefill_tps_median = t.prefill->throughput.median;
        if (t.decode)
            r.decode_tps_median = t.decode->throughput.median;
        out.push_back(std::move(r));
    }
    return out;
}

// The columns of a readable document (the text and hash are the caller's).
void fill_columns(DocumentRecord& r, const ResultDocument& doc) {
    const MachineView machine = machine_view(doc);
    r.command = valid_utf8(doc.command);
    r.started_at = valid_utf8(doc.started_at);
    r.host = clean(machine.hostname);
    r.cpu = clean(machine.cpu_model);
    r.tool_version = valid_utf8(doc.tool_version);
    r.device = clean(machine.device ? machine.device : machine.hostname);
    r.llama_commit = clean(nonempty_string(doc.llama, "commit"));
    for (const auto& m : doc.models) {
        const ModelView v = model_view(m);
        if (v.name)
            r.models.push_back(valid_utf8(*v.name));
        else if (!v.path.empty())
            r.models.push_back(valid_utf8(basename_of(v.path)));
    }
    r.n_tests = static_cast<int64_t>(doc.tests.size());
    r.tests = tests_of(doc);
}

// The columns of a document this build cannot read, from a plain look at its JSON.
void fill_columns(DocumentRecord& r, const json& j) {
    const json& system = json_field(j, "system");
    r.command = nonempty_string(j, "command");
    r.started_at = nonempty_string(j, "started_at");
    r.host = nonempty_string(system, "hostname");
    r.cpu = nonempty_string(system, "cpu_model");
    r.tool_version = nonempty_string(json_field(j, "tool"), "version");
    const auto fleet_device = nonempty_string(json_field(j, "fleet"), "device");
    r.device = fleet_device ? fleet_device : r.host;
    r.llama_commit = nonempty_string(json_field(j, "llama"), "commit");
    for (const auto& m : json_field(j, "models")) {
        if (const auto name = nonempty_string(m, "name"))
            r.models.push_back(*name);
        else if (const auto path = nonempty_string(m, "path"))
            r.models.push_back(basename_of(*path));
    }
    const json& tests = json_field(j, "tests");
    r.n_tests = tests.is_array() ? static_cast<int64_t>(tests.size()) : 0;
}

// Whether j is a result document of a newer stagebench: what from_json refuses to half read.
bool of_newer_schema(const json& j) {
    if (!j.is_object())
        return false;
    const auto v = j.find("schema_version");
    if (v == j.end() || !v->is_number_integer())
        return false;
    const int max = max_readable_version("schema_version");
    return v->is_number_unsigned() ? v->get<uint64_t>() > static_cast<uint64_t>(max)
                                   : v->get<int64_t>() > max;
}

}  // namespace

std::string content_hash(const ResultDocument& doc) {
    return sha256_hex(dump_json(to_json(doc)));
}

DocumentRecord record_of(const ResultDocument& doc) {
    DocumentRecord r;
    const json j = to_json(doc);
    r.text = dump_json(j, 2);
    r.content_hash = sha256_hex(dump_json(j));
    r.stored_at = utc_timestamp();
    fill_columns(r, doc);
    return r;
}

DocumentRecord record_of_text(const std::string& text, std::string hash, std::string stored_at,
                              const std::string& source, bool readable_or_newer) {
    DocumentRecord r;
    const json j = parse_document_text(text, source);
    std::optional<ResultDocument> doc;
    try {
        doc = from_json<ResultDocument>(j, source);
    } catch (const Error& e) {
        // A document this build cannot read is kept as it is, without an index of its tests.
        if (e.kind() != ErrorKind::input || (readable_or_newer && !of_newer_schema(j)))
            throw;
    }
    if (doc)
        fill_columns(r, *doc);
    else
        fill_columns(r, j);
    r.text = text;
    r.content_hash = !hash.empty() ? std::move(hash)
                     : doc         ? content_hash(*doc)
                                   : sha256_hex(dump_json(j));
    r.stored_at = std::move(stored_at);
    return r;
}

std::string fleet_run_hash(const FleetRun& run, const std::string& doc_hash) {
    const json j = {{"fleet", run.fleet},
                    {"device", run.device},
                    {"transport", run.transport},
                    {"command", run.command},
                    {"status", run.status},
                    {"error", opt(run.error)},
                    {"error_kind", opt(run.error_kind)},
                    {"document", doc_hash.empty() ? json(nullptr) : json(doc_hash)},
                    {"started_at", run.started_at},
                    {"finished_at", run.finished_at},
                    {"tool_version", opt(run.tool_version)},
                    {"llama_commit", opt(run.llama_commit)},
                    {"arch", opt(run.arch)}};
    return sha256_hex(dump_json(j));
}

}  // namespace sb
