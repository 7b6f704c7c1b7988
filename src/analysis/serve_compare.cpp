#include "analysis/serve_compare.hpp"

#include <fmt/format.h>

#include <cmath>

#include "analysis/compare_steps.hpp"
#include "core/error.hpp"
#include "core/json_util.hpp"
#include "core/result.hpp"

namespace sb {

namespace {

struct ServeDoc {
    CompareInputInfo info;
    const ResultDocument* doc;  // the input's; not owned
    // The fields listed when sides disagree, by name.
    std::vector<std::pair<std::string, CompareValue>> differs;
};

std::string point_key(const ServePoint& p) {
    return "mode=" + p.mode +
           ",value=" + (std::isinf(p.value) ? "inf" : fmt::format("{:g}", p.value));
}

const ServePoint* find_point(const ServeDoc& d, const std::string& key) {
    for (const auto& p : d.doc->serve->points)
        if (point_key(p) == key)
            return &p;
    return nullptr;
}

// A string member of a free-form object (the serve section's server, the engines); null
// otherwise.
CompareValue text_value_of(const nlohmann::json& object, const char* key) {
    const nlohmann::json& v = json_field(object, key);
    return v.is_string() ? CompareValue(v.get<std::string>()) : CompareValue();
}

ServeDoc read_serve_doc(const CompareInput& in) {
    const std::string who = in.label + " (" + in.source + ")";
    ServeDoc s;
    s.doc = &in.doc;
    if (!in.doc.serve)
        throw input_error(who + ": the `" + (in.doc.command.empty() ? "?" : in.doc.command) +
                          "` document has no serve section; serve documents compare only with "
                          "serve documents");
    s.info = compare_input_info(in);
    const ServeSection& sv = *in.doc.serve;
    CompareValue server = text_value_of(sv.server, "server");
    if (std::holds_alternative<std::monostate>(server))
        server = text_value_of(json_field(in.doc.engines, "http"), "server");
    CompareValue model;
    if (!in.doc.models.empty()) {
        const ModelView m = model_view(in.doc.models.front());
        model = m.name.value_or(m.path);
    }
    auto integer = [](const std::optional<int>& v) {
        return v ? CompareValue(int64_t{*v}) : CompareValue();
    };
    // In the order of the document's "differs" object (by name).
    s.differs = {{"client", sv.client.value_or("thread")},  // before --client: a thread each
                 {"cpu", text_or_null(s.info.cpu)},
                 {"host", text_or_null(s.info.host)},
                 {"model", model},
                 {"n_gen", int64_t{sv.n_gen}},
                 {"n_prompt", int64_t{sv.n_prompt}},
                 {"server", server},
                 {"slots", integer(sv.slots)}};
    return s;
}

std::vector<double> latencies_ms(const ServePoint& p, const std::string& stage) {
    std::vector<double> v;
    for (const auto& r : p.requests) {
        if (r.error)
            continue;
        const auto& x = stage == "ttft" ? r.ttft_ns : stage == "tpot" ? r.tpot_ns : r.e2e_ns;
        if (x)
            v.push_back(static_cast<double>(*x) * 1e-6);
    }
    return v;
}

const LatencyStats& stats_of(const ServePoint& p, const std::string& stage) {
    return stage == "ttft" ? p.ttft : stage == "tpot" ? p.tpot : p.e2e;
}

const std::vector<CompareStage> kLatencyMedians = {{"ttft", "median_ms", false, "faster", "slower"},
                                                   {"tpot", "median_ms", false, "faster", "slower"},
                                                   {"e2e", "median_ms", false, "faster", "slower"}};

std::string sweep_of(const ServeDoc& d) {
    std::string s;
    for (const auto& p : d.doc->serve->points)
        s += (s.empty() ? "" : ", ") + p.label();
    return d.info.label + " (" + d.info.source + "): " + (s.empty() ? "no points" : s);
}

}  // namespace

bool is_serve_input(const CompareInput& in) {
    return in.doc.serve.has_value();
}

CompareResult compare_serve_documents(const std::vector<CompareInput>& inputs,
                                      const CompareOptions& opts) {
    CompareResult r = begin_compare(inputs, opts, {"mode", "value"});
    std::vector<ServeDoc> docs;
    for (const auto& in : inputs)
        docs.push_back(read_serve_doc(in));
    for (const auto& d : docs)
        r.inputs.push_back(d.info);

    for (const auto& base : docs[0].doc->serve->points) {
        const std::string key = point_key(base);
        std::vector<std::size_t> idx{0};
        std::vector<const ServePoint*> pts{&base};
        for (std::size_t i = 1; i < docs.size(); ++i) {
            if (const ServePoint* p = find_point(docs[i], key)) {
                idx.push_back(i);
                pts.push_back(p);
            } else if (docs.size() > 2) {
                r.notes.push_back(docs[i].info.label + " has no point " + base.label());
            }
        }
        if (idx.size() < 2) {
            r.unmatched.push_back({docs[0].info.label, base.label(), {}});
            continue;
        }
        std::vector<std::string> labels;
        std::vector<std::size_t> n_ok;
        for (std::size_t s = 0; s < idx.size(); ++s) {
            labels.push_back(docs[idx[s]].info.label);
            n_ok.push_back(static_cast<std::size_t>(pts[s]->ok));
        }
        CompareDiffers differs;
        for (std::size_t f = 0; f < docs[0].differs.size(); ++f) {
            std::vector<CompareValue> vals;
            for (std::size_t i : idx)
                vals.push_back(docs[i].differs[f].second);
            add_if_differing(std::move(vals), differs, docs[0].differs[f].first);
        }
        std::vector<CompareRow> rows;
        auto values = [&](auto get) {
            std::vector<std::optional<double>> v;
            for (const auto* p : pts)
                v.push_back(get(*p));
            return v;
        };
        rows.push_back(one_value_row("throughput", "output_tokens_per_s", true, labels,
                                     values([](const ServePoint& p) {
                                         return std::optional<double>(p.output_tokens_per_s);
                                     }),
                                     n_ok, "one value"));
        rows.push_back(one_value_row(
            "throughput", "request_per_s", true, labels,
            values([](const ServePoint& p) { return std::optional<double>(p.request_per_s); }),
            n_ok, "one value"));
        bool all_goodput = true;
        for (const auto* p : pts)
            all_goodput = all_goodput && p->goodput_per_s.has_value();
        if (all_goodput)
            rows.push_back(one_value_row(
                "throughput", "goodput_per_s", true, labels,
                values([](const ServePoint& p) { return p.goodput_per_s; }), n_ok, "one value"));
        for (const auto& st : kLatencyMedians) {
            std::vector<std::vector<double>> samples;
            std::vector<std::size_t> n;
            for (const auto* p : pts) {
                samples.push_back(latencies_ms(*p, st.name));
                n.push_back(samples.back().size());
            }
            rows.push_back(compare_row(st, labels, samples, opts));
            rows.push_back(one_value_row(
                st.name, "p99_ms", false, labels,
                values([&](const ServePoint& p) { return stats_of(p, st.name).p99; }), n, "tail"));
        }
        for (auto& row : rows) {
            row.test = base.label();
            row.key = key;
            row.differs = differs;
            for (auto& note : compare_cv_notes(row, opts))
                r.notes.push_back(std::move(note));
            r.rows.push_back(std::move(row));
        }
    }
    for (std::size_t i = 1; i < docs.size(); ++i)
        for (const auto& p : docs[i].doc->serve->points)
            if (!find_point(docs[0], point_key(p)))
                r.unmatched.push_back({docs[i].info.label, p.label(), {}});
    if (r.rows.empty()) {
        std::string sweeps;
        for (const auto& d : docs)
            sweeps += (sweeps.empty() ? "" : "; ") + sweep_of(d);
        throw input_error("no serve point is in two inputs (points meet by mode and value): " +
                          sweeps);
    }
    return r;
}

}  // namespace sb
