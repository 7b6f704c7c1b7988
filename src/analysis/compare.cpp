#include "analysis/compare.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "analysis/compare_steps.hpp"
#include "analysis/explain_compare.hpp"
#include "analysis/serve_compare.hpp"
#include "core/document.hpp"
#include "core/error.hpp"
#include "core/json_util.hpp"
#include "core/result.hpp"

namespace sb {

using nlohmann::json;

namespace {

// Fields listed under "differs" when matched sides disagree and the match leaves them out, in
// this order ("server", "host" and "cpu" are not configuration fields and always listed).
const std::vector<std::string> kDiffOrder = {"engine",       "server",     "devices",  "n_threads",
                                             "n_gpu_layers", "model_path", "n_prompt", "n_gen",
                                             "n_depth",      "n_batch",    "n_ubatch", "type_k",
                                             "type_v",       "flash_attn", "host",     "cpu"};

bool is_listed(const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
}

// Checks the match fields. Throws sb::Error(usage).
CompareMatcher checked_matcher(const CompareOptions& opts) {
    CompareMatcher m{opts.match.empty() ? kCompareDefaultMatch : opts.match, &opts.model_alias};
    for (const auto& f : m.match) {
        bool known = false;
        for (const auto& k : kCompareKeyFields)
            known = known || f == k.name;
        if (!known)
            throw usage_error("cannot match tests by '" + f + "': not a configuration field");
    }
    return m;
}

// The value of field f of test e of document d, for "differs".
CompareValue doc_value(const CompareDoc& d, const CompareEntry& e, const std::string& f) {
    if (f == "host")
        return text_or_null(d.info.host);
    if (f == "cpu")
        return text_or_null(d.info.cpu);
    if (f == "server") {
        // The server behind an http engine, null for the in-process engine.
        if (e.test->config.at("engine") != CompareValue("http"))
            return {};
        return d.http_server.value_or("http");
    }
    return e.test->config.at(f);
}

// One test of the baseline and its counterparts in the other inputs.
struct MatchedTest {
    const CompareEntry* base;
    std::vector<std::size_t> idx;         // the inputs having it, the baseline first
    std::vector<const CompareEntry*> es;  // their entries, parallel to idx
};

// Assembles the rows of matched tests, and the notes of their statuses and energy.
class Assembler {
  public:
    Assembler(const std::vector<CompareDoc>& docs,
              const std::vector<std::vector<CompareEntry>>& entries, const CompareMatcher& m,
              const std::vector<std::string>& split, const CompareOptions& opts, CompareResult& r)
        : docs_(docs), entries_(entries), m_(m), split_(split), opts_(opts), r_(r) {
        for (const auto& f : kDiffOrder)
            if (!is_listed(m.match, f))
                diff_fields_.push_back(f);
    }

    const CompareEntry* find(std::size_t i, const std::string& key) const {
        for (const auto& e : entries_[i])
            if (e.key == key)
                return &e;
        return nullptr;
    }

    // The rows of one test of the baseline, or an unmatched test.
    void add_test(const CompareEntry& base) {
        MatchedTest t{&base, {0}, {&base}};
        for (std::size_t i = 1; i < docs_.size(); ++i) {
            if (const CompareEntry* e = find(i, base.key)) {
                t.idx.push_back(i);
                t.es.push_back(e);
            } else if (docs_.size() > 2) {
                r_.notes.push_back(
                    docs_[i].info.label + " has no test matching " + docs_[0].info.label + "'s " +
                    base.name + ": " +
                    compare_unmatched_reason(docs_, entries_, 0, base, {i}, m_, split_));
            }
        }
        if (t.idx.size() < 2) {
            std::vector<std::size_t> others;
            for (std::size_t i = 1; i < docs_.size(); ++i)
                others.push_back(i);
            r_.unmatched.push_back(
                {docs_[0].info.label, base.name,
                 compare_unmatched_reason(docs_, entries_, 0, base, others, m_, split_)});
            return;
        }
        note_statuses(t);
        const CompareDiffers differs = differs_of(t);
        for (const auto& st : kCompareStages) {
            std::vector<std::vector<double>> samples;
            bool any = false;
            for (const auto* e : t.es) {
                samples.push_back(compare_samples(*e->test, st));
                any = any || !samples.back().empty();
            }
            if (any)
                add_row(t, st, samples, differs);
        }
        add_energy_rows(t, differs);
        add_battery_rows(t, differs);
        add_fidelity_rows(t, differs);
    }

  private:
    std::vector<std::string> labels(const MatchedTest& t) const {
        std::vector<std::string> l;
        for (std::size_t i : t.idx)
            l.push_back(docs_[i].info.label);
        return l;
    }

    void note_statuses(const MatchedTest& t) {
        for (std::size_t s = 0; s < t.idx.size(); ++s) {
            const CompareTest& test = *t.es[s]->test;
            const auto& status = test.status;
            if (!status || *status == "ok" ||
                !status_noted_.insert(docs_[t.idx[s]].info.label + t.es[s]->key).second)
                continue;
            const auto& error = test.error;
            r_.notes.push_back(docs_[t.idx[s]].info.label + "'s " + t.es[s]->name + " is " +
                               *status + (error ? ": " + *error : std::string()) +
                               "; its samples are compared as they are");
        }
    }

    CompareDiffers differs_of(const MatchedTest& t) const {
        CompareDiffers differs;
        for (const auto& f : diff_fields_) {
            std::vector<CompareValue> vals;
            for (std::size_t s = 0; s < t.idx.size(); ++s)
                vals.push_back(doc_value(docs_[t.idx[s]], *t.es[s], f));
            add_if_differing(std::move(vals), differs, f);
        }
        return differs;
    }

    void add_row(const MatchedTest& t, const CompareStage& st,
                 const std::vector<std::vector<double>>& samples, const CompareDiffers& differs) {
        CompareRow row = compare_row(st, labels(t), samples, opts_);
        row.test = t.base->name;
        row.key = t.base->key;
        row.differs = differs;
        if (row.metric == "tokens_per_s")
            for (std::size_t s = 0; s < t.es.size(); ++s) {
                const CompareTest& test = *t.es[s]->test;
                row.sides[s].robust =
                    row.stage == "prefill" ? test.prefill_robust : test.decode_robust;
            }
        for (auto& n : compare_cv_notes(row, opts_))
            r_.notes.push_back(std::move(n));
        r_.rows.push_back(std::move(row));
    }

    // A fidelity variant's distances where every side measured them (fidelity documents); a note
    // when the sides measured them against different references.
    void add_fidelity_rows(const MatchedTest& t, const CompareDiffers& differs) {
        for (const auto* e : t.es)
            if (!e->test->fidelity_decode)
                return;
        std::set<std::string> refs;
        for (const auto* e : t.es)
            refs.insert(e->test->fidelity_reference.value_or(""));
        if (refs.size() > 1 && reference_noted_.insert(t.base->key).second) {
            std::string which;
            for (std::size_t s = 0; s < t.idx.size(); ++s)
                which += (s ? ", " : "") + docs_[t.idx[s]].info.label + " to " +
                         t.es[s]->test->fidelity_reference.value_or("?");
            r_.notes.push_back(t.base->name +
                               ": the distances are each to its own document's "
                               "reference (" +
                               which + ")");
        }
        for (const auto& st : kCompareFidelityStages) {
            std::vector<std::vector<double>> samples;
            for (const auto* e : t.es)
                samples.push_back(compare_samples(*e->test, st));
            add_row(t, st, samples, differs);
        }
    }

    // A row per stage of `stages` where the baseline and another side both have samples, with
    // each side's meter (compare_energy_meter) a condition that may differ (`meter_field`):
    // a side without samples is never compared as zero; missing(side, stage) hears of each
    // side without samples of a stage another side has.
    void add_metered_rows(const MatchedTest& t, const CompareDiffers& differs,
                          const std::vector<CompareStage>& stages, const char* meter_field,
                          const std::function<void(std::size_t, const CompareStage&)>& missing) {
        for (const auto& st : stages) {
            std::vector<std::vector<double>> samples;
            std::size_t with = 0;
            for (const auto* e : t.es) {
                samples.push_back(compare_samples(*e->test, st));
                with += samples.back().empty() ? 0 : 1;
            }
            if (with == 0)
                continue;
            for (std::size_t s = 0; s < t.es.size(); ++s)
                if (samples[s].empty())
                    missing(s, st);
            if (samples[0].empty() || with < 2)
                continue;
            CompareDiffers row_differs = differs;
            std::vector<CompareValue> meters;
            for (const auto* e : t.es)
                meters.push_back(compare_energy_meter(*e->test, st.name));
            add_if_differing(std::move(meters), row_differs, meter_field);
            add_row(t, st, samples, row_differs);
        }
    }

    // Energy; a note says whose readings (or idle baseline, for net energy) are missing.
    void add_energy_rows(const MatchedTest& t, const CompareDiffers& differs) {
        std::set<std::size_t> no_energy, no_idle;
        add_metered_rows(
            t, differs, kCompareEnergyStages, "energy_meter",
            [&](std::size_t s, const CompareStage& st) {
                (std::string(st.metric) == "net_j_per_token" ? no_idle : no_energy).insert(s);
            });
        for (std::size_t s : no_energy)
            r_.notes.push_back(docs_[t.idx[s]].info.label + "'s " + t.es[s]->name +
                               " has no energy readings (no whole-system meter, or telemetry "
                               "off): its energy is not compared");
        for (std::size_t s : no_idle)
            if (!no_energy.count(s))
                r_.notes.push_back(docs_[t.idx[s]].info.label + "'s " + t.es[s]->name +
                                   " has no idle baseline (--idle 0): its net energy is not "
                                   "compared");
    }

    // The battery's drain; a note names a side without one when another has one (no battery
    // anywhere: no row, no note).
    void add_battery_rows(const MatchedTest& t, const CompareDiffers& differs) {
        std::set<std::size_t> none;
        add_metered_rows(t, differs, kCompareBatteryStages, "drain_from",
                         [&](std::size_t s, const CompareStage&) { none.insert(s); });
        for (std::size_t s : none)
            r_.notes.push_back(docs_[t.idx[s]].info.label + "'s " + t.es[s]->name +
                               " has no battery drain (no battery, or telemetry off): its "
                               "drain is not compared");
    }

    const std::vector<CompareDoc>& docs_;
    const std::vector<std::vector<CompareEntry>>& entries_;
    const CompareMatcher& m_;
    const std::vector<std::string>& split_;
    const CompareOptions& opts_;
    CompareResult& r_;
    std::vector<std::string> diff_fields_;
    std::set<std::string> status_noted_;     // input label + key
    std::set<std::string> reference_noted_;  // keys of tests noted for differing references
};

}  // namespace

std::string compare_value_text(const CompareValue& v) {
    if (const auto* text = std::get_if<std::string>(&v))
        return *text;
    if (const auto* n = std::get_if<int64_t>(&v))
        return std::to_string(*n);
    return "null";
}

CompareResult begin_compare(const std::vector<CompareInput>& inputs, const CompareOptions& opts,
                            std::vector<std::string> match) {
    if (inputs.size() < 2)
        throw usage_error(
            "compare needs at least two result documents (the first is the baseline)");
    std::set<std::string> seen;
    for (const auto& in : inputs)
        if (!seen.insert(in.label).second)
            throw usage_error("label '" + in.label + "' is given to two inputs");
    CompareResult r;
    r.tool_version = opts.tool_version;
    r.created_at = utc_timestamp();
    r.match = std::move(match);
    return r;
}

void add_if_differing(std::vector<CompareValue> values, CompareDiffers& into,
                      const std::string& name) {
    for (const auto& v : values)
        if (v != values.front()) {
            into[name] = std::move(values);
            return;
        }
}

std::vector<std::string> default_compare_labels(std::size_t n) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < n; ++i) {
        std::string l(1, static_cast<char>('A' + i % 26));
        if (i >= 26)
            l += std::to_string(i / 26 + 1);
        out.push_back(l);
    }
    return out;
}

const std::vector<std::string> kCompareDefaultMatch = {
    "model",    "n_prompt", "n_gen",  "n_depth",    "n_batch",
    "n_ubatch", "type_k",   "type_v", "flash_attn", "engine"};

std::vector<std::string> parse_compare_match(const std::string& text) {
    auto valid = [] {
        std::string v;
        for (const auto& f : kCompareKeyFields)
            v += (v.empty() ? "" : ", ") + std::string(f.name) +
                 (*f.short_name ? std::string(" (") + f.short_name + ")" : "");
        return v;
    };
    std::vector<std::string> out;
    std::size_t pos = 0;
    while (pos <= text.size()) {
        const std::size_t comma = std::min(text.find(',', pos), text.size());
        const std::string item = text.substr(pos, comma - pos);
        const CompareKeyField* f = nullptr;
        for (const auto& k : kCompareKeyFields)
            if (item == k.name || (*k.short_name && item == k.short_name))
                f = &k;
        if (!f)
            throw usage_error("--match '" + text + "': '" + item +
                              "' is not a configuration field (one of " + valid() + ")");
        if (is_listed(out, f->name))
            throw usage_error("--match '" + text + "': " + f->name + " is given twice");
        out.push_back(f->name);
        pos = comma + 1;
    }
    return out;
}

std::pair<std::string, std::string> parse_model_alias(const std::string& text) {
    const std::size_t eq = text.rfind('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
        throw usage_error("--model-alias '" + text +
                          "': expected NAME=ALIAS, e.g. qwen2.5:0.5b=qwen2.5-0.5b-q8_0.gguf");
    return {text.substr(0, eq), text.substr(eq + 1)};
}

CompareResult compare_documents(const std::vector<CompareInput>& given,
                                const CompareOptions& opts) {
    if (!given.empty() && is_ops_document(given[0].doc))
        return compare_ops_documents(given, opts);
    // Serve documents compare point by point (analysis/serve_compare.hpp); a serve document
    // beside another kind is refused there, in one line.
    for (const auto& in : given)
        if (is_serve_input(in))
            return compare_serve_documents(given, opts);
    // Explain documents compare level by level (analysis/explain_compare.hpp).
    for (const auto& in : given)
        if (is_explain_input(in))
            return compare_explain_documents(given, opts);
    CompareResult r = begin_compare(given, opts, {});
    const CompareMatcher m = checked_matcher(opts);
    r.match = m.match;
    r.model_alias = opts.model_alias;
    const std::vector<CompareDoc> docs = collect_compare_docs(given, r.notes);
    for (const auto& d : docs)
        r.inputs.push_back(d.info);

    const std::vector<std::string> split = compare_split_fields(m, docs);
    const auto entries = compare_entries(docs, m, split);
    Assembler a(docs, entries, m, split, opts, r);
    for (const auto& base : entries[0])
        a.add_test(base);
    for (std::size_t i = 1; i < docs.size(); ++i)
        for (const auto& e : entries[i])
            if (!a.find(0, e.key))
                r.unmatched.push_back(
                    {docs[i].info.label, e.name,
                     compare_unmatched_reason(docs, entries, i, e, {0}, m, split)});
    if (!split.empty()) {
        std::string f;
        for (const auto& s : split)
            f += (f.empty() ? "" : ", ") + s;
        r.notes.push_back("tests are also matched by " + f +
                          " (it varies among tests of one workload)");
    }
    return r;
}

namespace {

json value_json(const CompareValue& v) {
    if (const auto* text = std::get_if<std::string>(&v))
        return *text;
    if (const auto* n = std::get_if<int64_t>(&v))
        return *n;
    return nullptr;
}

}  // namespace

json to_json(const CompareResult& r) {
    json inputs = json::array();
    for (const auto& i : r.inputs)
        inputs.push_back({{"label", i.label},
                          {"source", i.source},
                          {"command", opt(i.command)},
                          {"host", opt(i.host)},
                          {"cpu", opt(i.cpu)},
                          {"started_at", opt(i.started_at)}});
    json rows = json::array();
    for (const auto& row : r.rows) {
        json sides = json::array();
        for (const auto& s : row.sides) {
            json robust = nullptr;
            if (const auto& x = s.robust)
                robust = {{"tokens_per_s", opt(x->tokens_per_s)},
                          {"ci_low", opt(x->ci_low)},
                          {"ci_high", opt(x->ci_high)},
                          {"stalls", x->stalls},
                          {"of", x->of},
                          {"unit", x->unit}};
            sides.push_back({{"label", s.label},
                             {"median", opt(s.median)},
                             {"median_ci_low", opt(s.median_ci_low)},
                             {"median_ci_high", opt(s.median_ci_high)},
                             {"cv", opt(s.cv)},
                             {"n", s.n},
                             {"total", opt(s.total)},
                             {"robust", robust}});
        }
        json ratios = json::array();
        for (const auto& q : row.ratios)
            ratios.push_back({{"label", q.label},
                              {"median", opt(q.median)},
                              {"ci_low", opt(q.ci_low)},
                              {"ci_high", opt(q.ci_high)},
                              {"verdict", q.verdict}});
        json differs = json::object();
        for (const auto& [name, values] : row.differs) {
            json& vals = differs[name] = json::array();
            for (const auto& v : values)
                vals.push_back(value_json(v));
        }
        json signature = nullptr;
        if (const auto& g = row.signature)
            signature = {{"op", g->op}, {"role", g->role}, {"shape", g->shape}};
        rows.push_back({{"test", row.test},
                        {"key", row.key},
                        {"stage", row.stage},
                        {"metric", row.metric},
                        {"higher_is_better", row.higher_is_better},
                        {"differs", differs},
                        {"sides", sides},
                        {"ratios", ratios},
                        {"op", opt(row.op)},
                        {"signature", signature},
                        {"fused", opt(row.fused)}});
    }
    json unmatched = json::array();
    for (const auto& u : r.unmatched)
        unmatched.push_back({{"label", u.label}, {"test", u.test}, {"why", u.why}});
    json alias = json::object();
    for (const auto& [k, v] : r.model_alias)
        alias[k] = v;
    json j{{"command", "compare"},
           {"compare_schema_version", kCompareSchemaVersion},
           {"tool_version", r.tool_version},
           {"created_at", r.created_at},
           {"match", {{"fields", r.match}, {"model_alias", alias}}},
           {"inputs", inputs},
           {"rows", rows},
           {"unmatched", unmatched},
           {"notes", r.notes}};
    if (!r.gates.empty()) {
        json& gates = j["gates"] = json::array();
        for (const auto& g : r.gates)
            gates.push_back(to_json(g));
    }
    return j;
}

void read(const JsonIn& in, CompareValue& v) {
    const json& j = in.raw();
    if (j.is_null()) {
        v = std::monostate();
    } else if (j.is_string()) {
        v = j.get<std::string>();
    } else if (j.is_number_integer()) {
        int64_t n = 0;
        read(in, n);
        v = n;
    } else {
        in.fail_type("a string, an integer or null");
    }
}

void read(const JsonIn& in, CompareInputInfo& i) {
    ObjectIn{in}("label", i.label)("source", i.source)("command", i.command)("host", i.host)(
        "cpu", i.cpu)("started_at", i.started_at);
}

void read(const JsonIn& in, CompareRobust& r) {
    ObjectIn{in}("tokens_per_s", r.tokens_per_s)("ci_low", r.ci_low)("ci_high", r.ci_high)(
        "stalls", r.stalls)("of", r.of)("unit", r.unit);
}

void read(const JsonIn& in, CompareSide& s) {
    ObjectIn{in}("label", s.label)("median", s.median)("median_ci_low", s.median_ci_low)(
        "median_ci_high", s.median_ci_high)("cv", s.cv)("n", s.n)("total", s.total)("robust",
                                                                                    s.robust);
}

void read(const JsonIn& in, CompareOpSignature& g) {
    ObjectIn{in}("op", g.op)("role", g.role)("shape", g.shape);
}

void read(const JsonIn& in, CompareRatio& q) {
    ObjectIn{in}("label", q.label)("median", q.median)("ci_low", q.ci_low)("ci_high", q.ci_high)(
        "verdict", q.verdict);
}

void read(const JsonIn& in, CompareRow& row) {
    ObjectIn{in}("test", row.test)("key", row.key)("stage", row.stage)("metric", row.metric)(
        "higher_is_better", row.higher_is_better)("differs", row.differs)("sides", row.sides)(
        "ratios", row.ratios)("op", row.op)("signature", row.signature)("fused", row.fused);
}

void read(const JsonIn& in, CompareUnmatched& u) {
    ObjectIn{in}("label", u.label)("test", u.test)("why", u.why);
}

void read(const JsonIn& in, CompareResult& r) {
    ObjectIn o(in);
    const JsonIn command = o.at("command");
    if (command.raw() != "compare")
        command.fail("expected \"compare\", found " + dump_json(command.raw()));
    if (!o.has("compare_schema_version"))
        in.fail("no compare_schema_version: not a compare document");
    check_version_field(in, "compare_schema_version");
    o.check<int64_t>("compare_schema_version");
    o("tool_version", r.tool_version)("created_at", r.created_at);
    if (o.has("match")) {
        ObjectIn m(o.at("match"));
        m("fields", r.match)("model_alias", r.model_alias);
    }
    o("inputs", r.inputs)("rows", r.rows)("unmatched", r.unmatched)("notes", r.notes)("gates",
                                                                                      r.gates);
}

}  // namespace sb
