#include "analysis/compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "core/error.hpp"
#include "core/json_util.hpp"
#include "core/result.hpp"
#include "core/stats.hpp"

namespace sb {

using nlohmann::json;

namespace {

std::optional<std::string> str_field(const json& j, const char* key) {
    const json& v = json_field(j, key);
    return v.is_string() ? std::optional<std::string>(v.get<std::string>()) : std::nullopt;
}

// A config value as key text: strings bare, numbers and the rest as JSON.
std::string key_text(const json& v) {
    return v.is_string() ? v.get<std::string>() : dump_json(v);
}

// The workload of a test: what must be equal for two measurements to be comparable.
json workload_value(const json& config, const std::string& name) {
    if (name == "model") {
        const auto path = str_field(config, "model_path");
        return path ? json(std::filesystem::path(*path).filename().string()) : json(nullptr);
    }
    return json_field(config, name.c_str());
}

const std::vector<std::string> kWorkloadFields = {"model",      "n_prompt", "n_gen",  "n_depth",
                                                  "n_batch",    "n_ubatch", "type_k", "type_v",
                                                  "flash_attn", "engine"};
// Fields that tell apart several tests of one workload within one document.
const std::vector<std::string> kSplitFields = {"devices", "n_threads", "n_gpu_layers",
                                               "model_path"};
// Fields listed under "differs" when matched sides disagree (host and cpu from "system").
const std::vector<std::string> kDiffFields = {"n_threads",  "devices", "n_gpu_layers",
                                              "model_path", "host",    "cpu"};

std::string base_key(const json& config) {
    std::string k;
    for (const auto& f : kWorkloadFields)
        k += (k.empty() ? "" : ",") + f + "=" + key_text(workload_value(config, f));
    return k;
}

struct Stage {
    const char* name;
    const char* metric;
    bool higher_is_better;
};
constexpr Stage kStages[] = {{"prefill", "tokens_per_s", true},
                             {"decode", "tokens_per_s", true},
                             {"ttft", "ttft_ms", false}};

// The raw per-repetition samples of a stage in the row's unit.
std::vector<double> stage_samples(const json& test, const std::string& stage) {
    std::vector<double> v;
    const json& arr = stage == "ttft" ? json_field(test, "ttft_ns")
                                      : json_field(json_field(test, stage.c_str()), "tokens_per_s");
    if (!arr.is_array())
        return v;
    for (const auto& x : arr)
        if (x.is_number())
            v.push_back(stage == "ttft" ? x.get<double>() / 1e6 : x.get<double>());
    return v;
}

struct Entry {
    const json* test;
    std::string key;
    std::string name;
};

std::string pct(double fraction) {
    return fmt::format("{:.1f}%", fraction * 100);
}

// A sustained document compares as one test: the rounds of its unloaded phase are the samples,
// so a side's CV is its variation across rounds (the loaded phase's background differs from
// device to device and is left out). Throws sb::Error(input) when no round completed.
json pooled_rounds(const json& doc, const std::string& who, std::vector<std::string>& notes) {
    const json& tests = json_field(doc, "tests");
    // The phase without background load ("rounds", or "baseline" beside a "loaded" one).
    const json* phase = nullptr;
    for (const auto& ph : json_field(json_field(doc, "sustained"), "phases"))
        if (!phase && str_field(ph, "background").value_or("").empty())
            phase = &ph;
    if (!phase || !tests.is_array() || tests.empty())
        throw input_error(who + ": the `sustained` document has no baseline rounds to compare");
    json pre = json::array(), dec = json::array(), ttft = json::array();
    for (const auto& r : json_field(*phase, "rounds")) {
        if (str_field(r, "status").value_or("ok") != "ok")
            continue;
        if (json_field(r, "prefill_tps").is_number())
            pre.push_back(json_field(r, "prefill_tps"));
        if (json_field(r, "decode_tps").is_number())
            dec.push_back(json_field(r, "decode_tps"));
        if (json_field(r, "ttft_ms").is_number())
            ttft.push_back(json_field(r, "ttft_ms").get<double>() * 1e6);
    }
    if (dec.empty() && pre.empty())
        throw input_error(who + ": the `sustained` document has no completed baseline round");
    json config = json_field(tests[0], "config");
    config["test"] = str_field(config, "test").value_or("?") + " rounds";
    notes.push_back(who + " is a sustained run: its " + std::to_string(dec.size()) +
                    " rounds without background load are the samples, so its CV is the "
                    "variation across rounds");
    json out = doc;
    out["tests"] = json::array({{{"config", config},
                                 {"status", "ok"},
                                 {"prefill", {{"tokens_per_s", pre}}},
                                 {"decode", {{"tokens_per_s", dec}}},
                                 {"ttft_ns", ttft}}});
    return out;
}

}  // namespace

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

CompareResult compare_documents(const std::vector<CompareInput>& given,
                                const CompareOptions& opts) {
    std::vector<CompareInput> inputs = given;
    if (inputs.size() < 2)
        throw usage_error(
            "compare needs at least two result documents (the first is the "
            "baseline)");
    std::set<std::string> seen;
    for (const auto& in : inputs)
        if (!seen.insert(in.label).second)
            throw usage_error("label '" + in.label + "' is given to two inputs");

    CompareResult r;
    r.tool_version = opts.tool_version;
    r.created_at = utc_timestamp();
    for (auto& in : inputs) {
        const std::string who = in.label + " (" + in.source + ")";
        if (!in.doc.is_object() || !json_field(in.doc, "tests").is_array())
            throw input_error(who + " is not a stagebench result document (no \"tests\" array)");
        if (str_field(in.doc, "command") == "sustained")
            in.doc = pooled_rounds(in.doc, who, r.notes);
        if (json_field(in.doc, "tests").empty())
            throw input_error(who + ": the `" + str_field(in.doc, "command").value_or("?") +
                              "` document has no tests to compare; compare reads run and demo "
                              "documents");
        const json& sys = json_field(in.doc, "system");
        r.inputs.push_back({in.label, in.source, str_field(in.doc, "command"),
                            str_field(sys, "hostname"), str_field(sys, "cpu_model"),
                            str_field(in.doc, "started_at")});
    }

    // Fields that vary among tests of one workload in any document join every key.
    std::vector<std::string> split;
    for (const auto& f : kSplitFields) {
        bool varies = false;
        for (const auto& in : inputs) {
            std::map<std::string, std::set<std::string>> values;
            for (const auto& t : in.doc["tests"]) {
                const json& c = json_field(t, "config");
                values[base_key(c)].insert(key_text(json_field(c, f.c_str())));
            }
            for (const auto& [k, v] : values)
                varies = varies || v.size() > 1;
        }
        if (varies)
            split.push_back(f);
    }

    std::vector<std::vector<Entry>> entries(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        std::map<std::string, int> count;
        for (const auto& t : inputs[i].doc["tests"]) {
            const json& c = json_field(t, "config");
            std::string key = base_key(c);
            std::string name = str_field(c, "test").value_or("?");
            // The swept fields join the key, and the name too, so that a reader can tell the
            // rows of one workload apart: "pp32+tg8 [devices=CPU>RPC0]".
            std::string swept;
            for (const auto& f : split) {
                std::string v = key_text(json_field(c, f.c_str()));
                key += "," + f + "=" + v;
                if (f == "model_path")
                    v = v.substr(v.find_last_of('/') + 1);
                swept += (swept.empty() ? "" : ", ") + f + "=" + v;
            }
            if (!swept.empty())
                name += " [" + swept + "]";
            // Identical configurations in one document are matched in order of appearance.
            if (const int k = ++count[key]; k > 1) {
                key += ",#" + std::to_string(k);
                name += " #" + std::to_string(k);
            }
            entries[i].push_back({&t, key, name});
        }
    }

    auto find = [&](std::size_t i, const std::string& key) -> const Entry* {
        for (const auto& e : entries[i])
            if (e.key == key)
                return &e;
        return nullptr;
    };
    auto doc_value = [&](std::size_t i, const Entry& e, const std::string& f) -> json {
        if (f == "host")
            return json_field(json_field(inputs[i].doc, "system"), "hostname");
        if (f == "cpu")
            return json_field(json_field(inputs[i].doc, "system"), "cpu_model");
        return json_field(json_field(*e.test, "config"), f.c_str());
    };

    std::set<std::string> status_noted;
    for (const auto& base : entries[0]) {
        std::vector<std::size_t> idx{0};
        std::vector<const Entry*> es{&base};
        for (std::size_t i = 1; i < inputs.size(); ++i) {
            if (const Entry* e = find(i, base.key)) {
                idx.push_back(i);
                es.push_back(e);
            } else if (inputs.size() > 2) {
                r.notes.push_back(inputs[i].label + " has no test matching " + inputs[0].label +
                                  "'s " + base.name);
            }
        }
        if (idx.size() < 2) {
            r.unmatched.push_back({inputs[0].label, base.name});
            continue;
        }
        for (std::size_t s = 0; s < idx.size(); ++s) {
            const auto status = str_field(*es[s]->test, "status");
            if (status && *status != "ok" &&
                status_noted.insert(inputs[idx[s]].label + es[s]->key).second)
                r.notes.push_back(inputs[idx[s]].label + "'s " + es[s]->name + " is " + *status +
                                  (str_field(*es[s]->test, "error")
                                       ? ": " + *str_field(*es[s]->test, "error")
                                       : std::string()) +
                                  "; its samples are compared as they are");
        }
        json differs = json::object();
        for (const auto& f : kDiffFields) {
            json vals = json::array();
            for (std::size_t s = 0; s < idx.size(); ++s)
                vals.push_back(doc_value(idx[s], *es[s], f));
            bool differ = false;
            for (const auto& v : vals)
                differ = differ || v != vals[0];
            if (differ)
                differs[f] = vals;
        }

        for (const auto& st : kStages) {
            std::vector<std::vector<double>> samples;
            bool any = false;
            for (const auto* e : es) {
                samples.push_back(stage_samples(*e->test, st.name));
                any = any || !samples.back().empty();
            }
            if (!any)
                continue;
            CompareRow row;
            row.test = base.name;
            row.key = base.key;
            row.stage = st.name;
            row.metric = st.metric;
            row.higher_is_better = st.higher_is_better;
            row.differs = differs;
            for (std::size_t s = 0; s < idx.size(); ++s) {
                CompareSide side{inputs[idx[s]].label, std::nullopt, std::nullopt,
                                 samples[s].size()};
                if (!samples[s].empty()) {
                    const Summary sum = summarize(samples[s]);
                    side.median = sum.median;
                    side.cv = sum.cv;
                }
                row.sides.push_back(side);
            }
            for (std::size_t s = 1; s < idx.size(); ++s) {
                CompareRatio ratio;
                ratio.label = row.sides[s].label + "/" + row.sides[0].label;
                const auto& a = samples[s];
                const auto& b = samples[0];
                if (a.empty() || b.empty() || !row.sides[0].median || *row.sides[0].median == 0) {
                    ratio.verdict = "no data";
                } else if (a.size() < 2 || b.size() < 2) {
                    ratio.median = *row.sides[s].median / *row.sides[0].median;
                    ratio.verdict = "too few samples";
                } else {
                    const RatioCi ci = ratio_of_medians(a, b, opts.resamples, opts.seed);
                    ratio.median = ci.ratio;
                    ratio.ci_low = ci.lo;
                    ratio.ci_high = ci.hi;
                    ratio.verdict = ci.no_difference                     ? "no difference"
                                    : (ci.lo > 1) == st.higher_is_better ? "faster"
                                                                         : "slower";
                }
                row.ratios.push_back(ratio);

                // CV compared across devices, not only within one.
                const auto& ca = row.sides[s].cv;
                const auto& cb = row.sides[0].cv;
                if (ca && cb) {
                    const bool a_hi = *ca > opts.cv_note_factor * *cb;
                    const bool b_hi = *cb > opts.cv_note_factor * *ca;
                    if (a_hi || b_hi) {
                        const auto& hi = a_hi ? row.sides[s] : row.sides[0];
                        const auto& lo = a_hi ? row.sides[0] : row.sides[s];
                        r.notes.push_back(fmt::format(
                            "{} {}: {}'s CV ({}) is more than {:g}x {}'s ({})", row.test, row.stage,
                            hi.label, pct(*hi.cv), opts.cv_note_factor, lo.label, pct(*lo.cv)));
                    }
                }
            }
            r.rows.push_back(std::move(row));
        }
    }
    for (std::size_t i = 1; i < inputs.size(); ++i)
        for (const auto& e : entries[i])
            if (!find(0, e.key))
                r.unmatched.push_back({inputs[i].label, e.name});
    if (!split.empty()) {
        std::string f;
        for (const auto& s : split)
            f += (f.empty() ? "" : ", ") + s;
        r.notes.push_back("tests are also matched by " + f +
                          " (it varies among tests of one workload)");
    }
    return r;
}

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
        for (const auto& s : row.sides)
            sides.push_back(
                {{"label", s.label}, {"median", opt(s.median)}, {"cv", opt(s.cv)}, {"n", s.n}});
        json ratios = json::array();
        for (const auto& q : row.ratios)
            ratios.push_back({{"label", q.label},
                              {"median", opt(q.median)},
                              {"ci_low", opt(q.ci_low)},
                              {"ci_high", opt(q.ci_high)},
                              {"verdict", q.verdict}});
        rows.push_back({{"test", row.test},
                        {"key", row.key},
                        {"stage", row.stage},
                        {"metric", row.metric},
                        {"higher_is_better", row.higher_is_better},
                        {"differs", row.differs},
                        {"sides", sides},
                        {"ratios", ratios}});
    }
    json unmatched = json::array();
    for (const auto& u : r.unmatched)
        unmatched.push_back({{"label", u.label}, {"test", u.test}});
    return json{{"command", "compare"},
                {"compare_schema_version", kCompareSchemaVersion},
                {"tool_version", r.tool_version},
                {"created_at", r.created_at},
                {"inputs", inputs},
                {"rows", rows},
                {"unmatched", unmatched},
                {"notes", r.notes}};
}

}  // namespace sb
