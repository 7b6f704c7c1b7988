#include "core/doc/import_section.hpp"

#include "core/json_util.hpp"

namespace sb {

using nlohmann::json;

json to_json(const ImportedFile& f) {
    return json{{"path", f.path},
                {"format", f.format},
                {"variant", f.variant},
                {"rows", f.rows},
                {"skipped", f.skipped}};
}

json to_json(const ImportSection& s) {
    json files = json::array();
    for (const auto& f : s.files)
        files.push_back(to_json(f));
    return json{{"tool", s.tool}, {"files", files}, {"method", s.method}, {"notes", s.notes}};
}

json to_json(const ImportedRow& r) {
    return json{{"file", r.file},
                {"line", r.line},
                {"test", r.test},
                {"stage", r.stage},
                {"avg_ts", opt(r.avg_ts)},
                {"stddev_ts", opt(r.stddev_ts)},
                {"avg_ns", opt(r.avg_ns)},
                {"stddev_ns", opt(r.stddev_ns)},
                {"samples_ns", r.samples_ns},
                {"samples_ts", r.samples_ts},
                {"fields", r.fields}};
}

json to_json(const TestImport& t) {
    json rows = json::array();
    for (const auto& r : t.rows)
        rows.push_back(to_json(r));
    return json{{"tool", t.tool}, {"rows", rows}};
}

void read(const JsonIn& in, ImportedFile& f) {
    ObjectIn o(in);
    o("path", f.path)("format", f.format)("variant", f.variant)("rows", f.rows)("skipped",
                                                                                f.skipped)
        .non_negative({"rows", "skipped"});
}

void read(const JsonIn& in, ImportSection& s) {
    ObjectIn o(in);
    o("tool", s.tool)("files", s.files)("method", s.method)("notes", s.notes);
}

void read(const JsonIn& in, ImportedRow& r) {
    ObjectIn o(in);
    o("file", r.file)("line", r.line)("test", r.test)("stage", r.stage)("avg_ts", r.avg_ts)(
        "stddev_ts", r.stddev_ts)("avg_ns", r.avg_ns)("stddev_ns", r.stddev_ns)(
        "samples_ns", r.samples_ns)("samples_ts", r.samples_ts)
        .non_negative(
            {"line", "avg_ts", "stddev_ts", "avg_ns", "stddev_ns", "samples_ns", "samples_ts"});
    read_object_or_null(o.at("fields"), r.fields);
    if (r.fields.is_null())
        r.fields = json::object();
}

void read(const JsonIn& in, TestImport& t) {
    ObjectIn o(in);
    o("tool", t.tool)("rows", t.rows);
}

}  // namespace sb
