#include "analysis/explain_compare.hpp"

#include <fmt/format.h>

#include "analysis/compare_steps.hpp"
#include "core/error.hpp"
#include "core/json_util.hpp"
#include "core/result.hpp"

namespace sb {

namespace {

struct ExplainDoc {
    CompareInputInfo info;
    const ResultDocument* doc;  // the input's; not owned
    // The fields listed when sides disagree, by name.
    std::vector<std::pair<std::string, CompareValue>> differs;
};

ExplainDoc read_explain_doc(const CompareInput& in) {
    const std::string who = in.label + " (" + in.source + ")";
    ExplainDoc d;
    d.doc = &in.doc;
    if (!in.doc.explain)
        throw input_error(who + ": the `" + (in.doc.command.empty() ? "?" : in.doc.command) +
                          "` document has no explain section; explain documents compare only "
                          "with explain documents");
    d.info = compare_input_info(in);
    const ExplainSection& s = *in.doc.explain;
    std::string args;
    for (const auto& a : s.server_args)
        args += (args.empty() ? "" : " ") + a;
    std::string model = s.model_path;
    if (auto slash = model.find_last_of('/'); slash != std::string::npos)
        model = model.substr(slash + 1);
    d.differs = {{"cpu", text_or_null(d.info.cpu)},
                 {"host", text_or_null(d.info.host)},
                 {"model", model},
                 {"n_gen", int64_t{s.n_gen}},
                 {"n_prompt", int64_t{s.n_prompt}},
                 {"n_threads", int64_t{s.n_threads}},
                 {"server", s.server_kind},
                 {"server_args", args}};
    return d;
}

std::vector<double> samples_ms(const ExplainMeasure& m, const std::string& stage) {
    std::vector<double> v;
    for (const auto& r : m.runs) {
        const auto& x = stage == "prefill" ? r.prefill_ns : r.decode_ns;
        if (!r.error && x)
            v.push_back(*x * 1e-6);
    }
    return v;
}

// server - graph per round where both have a time.
std::vector<double> gap_ms(const ExplainSection& s, const std::string& stage) {
    const ExplainMeasure* g = find_measure(s, "graph");
    const ExplainMeasure* sv = find_measure(s, "server");
    std::vector<double> v;
    if (!g || !sv)
        return v;
    for (const auto& a : sv->runs) {
        const auto& x = stage == "prefill" ? a.prefill_ns : a.decode_ns;
        if (a.error || !x)
            continue;
        for (const auto& b : g->runs) {
            const auto& y = stage == "prefill" ? b.prefill_ns : b.decode_ns;
            if (b.round == a.round && !b.error && y)
                v.push_back((*x - *y) * 1e-6);
        }
    }
    return v;
}

std::vector<std::string> level_ids(const ExplainSection& s) {
    std::vector<std::string> ids;
    for (const auto& m : s.measures)
        if (!(m.level == "graph" && m.setting))
            ids.push_back(m.id);
    return ids;
}

}  // namespace

bool is_explain_input(const CompareInput& in) {
    return in.doc.explain.has_value();
}

CompareResult compare_explain_documents(const std::vector<CompareInput>& inputs,
                                        const CompareOptions& opts) {
    CompareResult r = begin_compare(inputs, opts, {"level"});
    std::vector<ExplainDoc> docs;
    for (const auto& in : inputs)
        docs.push_back(read_explain_doc(in));
    for (const auto& d : docs)
        r.inputs.push_back(d.info);
    CompareDiffers differs;
    for (std::size_t f = 0; f < docs[0].differs.size(); ++f) {
        std::vector<CompareValue> vals;
        for (const auto& d : docs)
            vals.push_back(d.differs[f].second);
        add_if_differing(std::move(vals), differs, docs[0].differs[f].first);
    }
    std::vector<std::string> labels;
    for (const auto& d : docs)
        labels.push_back(d.info.label);
    auto finish = [&](CompareRow row, const std::string& test) {
        row.test = test;
        row.key = "level=" + test;
        row.differs = differs;
        for (auto& note : compare_cv_notes(row, opts))
            r.notes.push_back(std::move(note));
        r.rows.push_back(std::move(row));
    };
    const ExplainSection& base = *docs[0].doc->explain;
    for (const std::string stage : {"prefill", "decode"}) {
        const CompareStage st{stage == "prefill" ? "prefill" : "decode", "median_ms", false,
                              "faster", "slower"};
        for (const auto& id : level_ids(base)) {
            std::vector<std::vector<double>> samples;
            bool all = true;
            for (const auto& d : docs) {
                const ExplainMeasure* m = find_measure(*d.doc->explain, id);
                if (!m) {
                    all = false;
                    break;
                }
                samples.push_back(samples_ms(*m, stage));
            }
            if (!all) {
                if (stage == "prefill")
                    r.unmatched.push_back({docs[0].info.label, id, {}});
                continue;
            }
            finish(compare_row(st, labels, samples, opts), id);
        }
        std::vector<std::vector<double>> gaps;
        bool positive = true;
        for (const auto& d : docs) {
            gaps.push_back(gap_ms(*d.doc->explain, stage));
            for (double g : gaps.back())
                positive = positive && g > 0;
        }
        if (positive && !gaps[0].empty())
            finish(compare_row(st, labels, gaps, opts), "gap");
        else
            r.notes.push_back(fmt::format(
                "{}: the gap (server - graph) is not above 0 in every round of every side: its "
                "ratio is not given",
                stage));
        // The parts' shares, one value per side.
        for (const auto& p : base.parts) {
            if (p.stage != stage || p.kind == "gap")
                continue;
            std::vector<std::optional<double>> shares;
            std::vector<std::size_t> n;
            bool all = true;
            for (const auto& d : docs) {
                const ExplainPart* q = nullptr;
                for (const auto& x : d.doc->explain->parts)
                    if (x.stage == stage && x.kind == p.kind && x.name == p.name)
                        q = &x;
                all = all && q;
                shares.push_back(q ? q->share : std::nullopt);
                n.push_back(q ? static_cast<std::size_t>(q->n_rounds) : 0);
            }
            if (!all)
                continue;
            const CompareRow row =
                one_value_row(stage, "share", false, labels, shares, n, "one value");
            finish(row, "part " + p.name);
        }
    }
    for (std::size_t i = 1; i < docs.size(); ++i)
        for (const auto& id : level_ids(*docs[i].doc->explain))
            if (!find_measure(base, id))
                r.unmatched.push_back({docs[i].info.label, id, {}});
    if (r.rows.empty())
        throw input_error("no level is in two explain documents");
    return r;
}

}  // namespace sb
