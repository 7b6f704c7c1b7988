#include "analysis/compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "core/error.hpp"
#include "core/json_reader.hpp"
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

// The configuration fields a key can hold, with the short names `--match` also accepts (the
// letters of `run`'s flags).
struct KeyField {
    const char* name;
    const char* short_name;
};
constexpr KeyField kKeyFields[] = {
    {"model", "m"},          {"n_prompt", "p"},  {"n_gen", "n"},     {"n_depth", "d"},
    {"n_batch", "b"},        {"n_ubatch", "ub"}, {"type_k", "ctk"},  {"type_v", "ctv"},
    {"flash_attn", "fa"},    {"engine", ""},     {"devices", "dev"}, {"n_threads", "t"},
    {"n_gpu_layers", "ngl"}, {"model_path", ""}};

// Fields listed under "differs" when matched sides disagree and the match leaves them out, in
// this order ("server", "host" and "cpu" are not configuration fields and always listed).
const std::vector<std::string> kDiffOrder = {"engine",       "server",     "devices",  "n_threads",
                                             "n_gpu_layers", "model_path", "n_prompt", "n_gen",
                                             "n_depth",      "n_batch",    "n_ubatch", "type_k",
                                             "type_v",       "flash_attn", "host",     "cpu"};

bool contains(const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
}

// How tests are told apart: the match fields and the model aliases.
struct Matcher {
    std::vector<std::string> match;
    const std::map<std::string, std::string>* alias;

    // The model's name for matching: an alias of its whole path or of its file name, else its
    // file name.
    json model(const json& config) const {
        const auto path = str_field(config, "model_path");
        if (!path)
            return nullptr;
        const std::string file = std::filesystem::path(*path).filename().string();
        for (const auto& n : {*path, file})
            if (auto it = alias->find(n); it != alias->end())
                return it->second;
        return file;
    }
    json value(const json& config, const std::string& name) const {
        return name == "model" ? model(config) : json_field(config, name.c_str());
    }
    std::string base_key(const json& config) const {
        std::string k;
        for (const auto& f : match)
            k += (k.empty() ? "" : ",") + f + "=" + key_text(value(config, f));
        return k;
    }
};

struct Stage {
    const char* name;    // prefill | decode | ttft
    const char* metric;  // see CompareRow::metric
    bool higher_is_better;
    const char* better;  // the verdicts' words
    const char* worse;
};
constexpr Stage kStages[] = {{"prefill", "tokens_per_s", true, "faster", "slower"},
                             {"decode", "tokens_per_s", true, "faster", "slower"},
                             {"ttft", "ttft_ms", false, "faster", "slower"}};
constexpr Stage kEnergyStages[] = {
    {"prefill", "j_per_token", false, "less energy", "more energy"},
    {"prefill", "net_j_per_token", false, "less energy", "more energy"},
    {"prefill", "mean_power_mw", false, "lower power", "higher power"},
    {"decode", "j_per_token", false, "less energy", "more energy"},
    {"decode", "net_j_per_token", false, "less energy", "more energy"},
    {"decode", "mean_power_mw", false, "lower power", "higher power"}};

// The raw per-repetition samples of a stage in the row's unit.
std::vector<double> stage_samples(const json& test, const Stage& st) {
    std::vector<double> v;
    const std::string stage = st.name, metric = st.metric;
    if (metric == "tokens_per_s" || metric == "ttft_ms") {
        const json& arr = stage == "ttft"
                              ? json_field(test, "ttft_ns")
                              : json_field(json_field(test, stage.c_str()), "tokens_per_s");
        if (!arr.is_array())
            return v;
        for (const auto& x : arr)
            if (x.is_number())
                v.push_back(stage == "ttft" ? x.get<double>() / 1e6 : x.get<double>());
        return v;
    }
    // Energy: the stage's whole-system reading of every repetition (telemetry.<stage>[i].total,
    // as `run` and every sustained round record it).
    const json& occ = json_field(json_field(test, "telemetry"), stage.c_str());
    if (!occ.is_array())
        return v;
    for (const auto& o : occ) {
        const json& total = json_field(o, "total");
        if (metric == "mean_power_mw") {
            const json& e = json_field(total, "energy_j");
            const json& d = json_field(o, "duration_ns");
            if (e.is_number() && d.is_number() && d.get<double>() > 0)
                v.push_back(e.get<double>() / (d.get<double>() * 1e-9) * 1e3);
        } else if (const json& x = json_field(total, metric.c_str()); x.is_number()) {
            v.push_back(x.get<double>());
        }
    }
    return v;
}

// The meter a test's stage energy was read from (its first repetition's), null without one.
json energy_meter(const json& test, const std::string& stage) {
    const json& occ = json_field(json_field(test, "telemetry"), stage.c_str());
    if (!occ.is_array())
        return nullptr;
    for (const auto& o : occ)
        if (const json& m = json_field(json_field(o, "total"), "metric"); m.is_string())
            return m;
    return nullptr;
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
// device to device and is left out). Each round is also a test of the document, in the order of
// the phases and rounds; their per-stage telemetry is pooled the same way. Throws
// sb::Error(input) when no round completed.
json pooled_rounds(const json& doc, const std::string& who, std::vector<std::string>& notes) {
    const json& tests = json_field(doc, "tests");
    // The phase without background load ("rounds", or "baseline" beside a "loaded" one), and
    // the index of its first round's test.
    const json* phase = nullptr;
    std::size_t first_test = 0;
    for (const auto& ph : json_field(json_field(doc, "sustained"), "phases")) {
        if (phase)
            break;
        if (str_field(ph, "background").value_or("").empty())
            phase = &ph;
        else if (const json& r = json_field(ph, "rounds"); r.is_array())
            first_test += r.size();
    }
    if (!phase || !tests.is_array() || tests.empty())
        throw input_error(who + ": the `sustained` document has no baseline rounds to compare");
    json pre = json::array(), dec = json::array(), ttft = json::array();
    json tel_pre = json::array(), tel_dec = json::array();
    const json& rounds = json_field(*phase, "rounds");
    // Round k's test is tests[first_test + k] when the document holds a test per round.
    const bool tests_per_round = rounds.is_array() && tests.size() >= first_test + rounds.size();
    std::size_t k = 0;
    for (const auto& r : rounds) {
        const std::size_t index = first_test + k++;
        if (str_field(r, "status").value_or("ok") != "ok")
            continue;
        if (json_field(r, "prefill_tps").is_number())
            pre.push_back(json_field(r, "prefill_tps"));
        if (json_field(r, "decode_tps").is_number())
            dec.push_back(json_field(r, "decode_tps"));
        if (json_field(r, "ttft_ms").is_number())
            ttft.push_back(json_field(r, "ttft_ms").get<double>() * 1e6);
        if (tests_per_round) {
            const json& tel = json_field(tests[index], "telemetry");
            for (const auto& o : json_field(tel, "prefill"))
                tel_pre.push_back(o);
            for (const auto& o : json_field(tel, "decode"))
                tel_dec.push_back(o);
        }
    }
    if (dec.empty() && pre.empty())
        throw input_error(who + ": the `sustained` document has no completed baseline round");
    json config = json_field(tests[0], "config");
    if (!config.is_object())
        config = json::object();
    config["test"] = str_field(config, "test").value_or("?") + " rounds";
    notes.push_back(who + " is a sustained run: its " + std::to_string(dec.size()) +
                    " rounds without background load are the samples, so its CV is the "
                    "variation across rounds");
    json out = doc;
    json test = {{"config", config},
                 {"status", "ok"},
                 {"prefill", {{"tokens_per_s", pre}}},
                 {"decode", {{"tokens_per_s", dec}}},
                 {"ttft_ns", ttft},
                 {"telemetry", nullptr}};
    if (!tel_pre.empty() || !tel_dec.empty())
        test["telemetry"] = {{"prefill", tel_pre}, {"decode", tel_dec}};
    out["tests"] = json::array({test});
    return out;
}

// The server behind a test's http engine ("llama-server", "ollama", ...), null for the
// in-process engine.
json server_of(const json& doc, const json& config) {
    if (str_field(config, "engine") != "http")
        return nullptr;
    const json& s = json_field(json_field(json_field(doc, "engines"), "http"), "server");
    return s.is_string() ? s : json("http");
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

const std::vector<std::string> kCompareDefaultMatch = {
    "model",    "n_prompt", "n_gen",  "n_depth",    "n_batch",
    "n_ubatch", "type_k",   "type_v", "flash_attn", "engine"};

std::vector<std::string> parse_compare_match(const std::string& text) {
    auto valid = [] {
        std::string v;
        for (const auto& f : kKeyFields)
            v += (v.empty() ? "" : ", ") + std::string(f.name) +
                 (*f.short_name ? std::string(" (") + f.short_name + ")" : "");
        return v;
    };
    std::vector<std::string> out;
    std::size_t pos = 0;
    while (pos <= text.size()) {
        const std::size_t comma = std::min(text.find(',', pos), text.size());
        const std::string item = text.substr(pos, comma - pos);
        const KeyField* f = nullptr;
        for (const auto& k : kKeyFields)
            if (item == k.name || (*k.short_name && item == k.short_name))
                f = &k;
        if (!f)
            throw usage_error("--match '" + text + "': '" + item +
                              "' is not a configuration field (one of " + valid() + ")");
        if (contains(out, f->name))
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
    std::vector<CompareInput> inputs = given;
    if (inputs.size() < 2)
        throw usage_error(
            "compare needs at least two result documents (the first is the "
            "baseline)");
    std::set<std::string> seen;
    for (const auto& in : inputs)
        if (!seen.insert(in.label).second)
            throw usage_error("label '" + in.label + "' is given to two inputs");
    const Matcher m{opts.match.empty() ? kCompareDefaultMatch : opts.match, &opts.model_alias};
    for (const auto& f : m.match) {
        bool known = false;
        for (const auto& k : kKeyFields)
            known = known || f == k.name;
        if (!known)
            throw usage_error("cannot match tests by '" + f + "': not a configuration field");
    }

    CompareResult r;
    r.tool_version = opts.tool_version;
    r.created_at = utc_timestamp();
    r.match = m.match;
    r.model_alias = opts.model_alias;
    for (auto& in : inputs) {
        const std::string who = in.label + " (" + in.source + ")";
        if (!in.doc.is_object() || !json_field(in.doc, "tests").is_array())
            throw input_error(who + " is not a stagebench result document (no \"tests\" array)");
        for (std::size_t i = 0; i < in.doc["tests"].size(); ++i)
            if (!in.doc["tests"][i].is_object())
                throw input_error(who + ": .tests[" + std::to_string(i) + "] is " +
                                  json_type_words(in.doc["tests"][i]) + ", expected an object");
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

    // Configuration fields left out of the match that vary among tests of one key in any
    // document join every key (the model's file name stands for its path when both vary).
    std::vector<std::string> split;
    for (const auto& kf : kKeyFields) {
        const std::string f = kf.name;
        if (contains(m.match, f) || (f == "model_path" && contains(split, "model")))
            continue;
        bool varies = false;
        for (const auto& in : inputs) {
            std::map<std::string, std::set<std::string>> values;
            for (const auto& t : in.doc["tests"]) {
                const json& c = json_field(t, "config");
                values[m.base_key(c)].insert(key_text(m.value(c, f)));
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
            std::string key = m.base_key(c);
            std::string name = str_field(c, "test").value_or("?");
            // The swept fields join the key, and the name too, so that a reader can tell the
            // rows of one workload apart: "pp32+tg8 [devices=CPU>RPC0]".
            std::string swept;
            for (const auto& f : split) {
                std::string v = key_text(m.value(c, f));
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
        const json& c = json_field(*e.test, "config");
        if (f == "host")
            return json_field(json_field(inputs[i].doc, "system"), "hostname");
        if (f == "cpu")
            return json_field(json_field(inputs[i].doc, "system"), "cpu_model");
        if (f == "server")
            return server_of(inputs[i].doc, c);
        return json_field(c, f.c_str());
    };
    std::vector<std::string> diff_fields;
    for (const auto& f : kDiffOrder)
        if (!contains(m.match, f))
            diff_fields.push_back(f);

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
        auto differing = [&](const json& vals, json& into, const std::string& name) {
            bool differ = false;
            for (const auto& v : vals)
                differ = differ || v != vals[0];
            if (differ)
                into[name] = vals;
        };
        json differs = json::object();
        for (const auto& f : diff_fields) {
            json vals = json::array();
            for (std::size_t s = 0; s < idx.size(); ++s)
                vals.push_back(doc_value(idx[s], *es[s], f));
            differing(vals, differs, f);
        }

        auto add_row = [&](const Stage& st, const std::vector<std::vector<double>>& samples,
                           const json& row_differs) {
            CompareRow row;
            row.test = base.name;
            row.key = base.key;
            row.stage = st.name;
            row.metric = st.metric;
            row.higher_is_better = st.higher_is_better;
            row.differs = row_differs;
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
                // A ratio needs two positive medians: a net energy at or below the idle
                // baseline has none.
                if (a.empty() || b.empty() || !row.sides[0].median || *row.sides[0].median <= 0 ||
                    !row.sides[s].median || *row.sides[s].median <= 0) {
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
                                    : (ci.lo > 1) == st.higher_is_better ? st.better
                                                                         : st.worse;
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
                        const std::string what =
                            row.metric == "tokens_per_s" || row.metric == "ttft_ms"
                                ? row.stage
                                : row.stage + " " + row.metric;
                        r.notes.push_back(fmt::format(
                            "{} {}: {}'s CV ({}) is more than {:g}x {}'s ({})", row.test, what,
                            hi.label, pct(*hi.cv), opts.cv_note_factor, lo.label, pct(*lo.cv)));
                    }
                }
            }
            r.rows.push_back(std::move(row));
        };

        for (const auto& st : kStages) {
            std::vector<std::vector<double>> samples;
            bool any = false;
            for (const auto* e : es) {
                samples.push_back(stage_samples(*e->test, st));
                any = any || !samples.back().empty();
            }
            if (any)
                add_row(st, samples, differs);
        }
        // Energy where the baseline and another side both have readings: a side without any is
        // not compared as zero, and a note says whose readings are missing.
        std::set<std::size_t> no_energy, no_idle;
        for (const auto& st : kEnergyStages) {
            std::vector<std::vector<double>> samples;
            std::size_t with = 0;
            for (std::size_t s = 0; s < es.size(); ++s) {
                samples.push_back(stage_samples(*es[s]->test, st));
                with += samples.back().empty() ? 0 : 1;
            }
            if (with == 0)
                continue;
            const std::string metric = st.metric;
            for (std::size_t s = 0; s < es.size(); ++s)
                if (samples[s].empty())
                    (metric == "net_j_per_token" ? no_idle : no_energy).insert(s);
            if (samples[0].empty() || with < 2)
                continue;
            json row_differs = differs;
            json meters = json::array();
            for (const auto* e : es)
                meters.push_back(energy_meter(*e->test, st.name));
            differing(meters, row_differs, "energy_meter");
            add_row(st, samples, row_differs);
        }
        for (std::size_t s : no_energy)
            r.notes.push_back(inputs[idx[s]].label + "'s " + es[s]->name +
                              " has no energy readings (no whole-system meter, or telemetry "
                              "off): its energy is not compared");
        for (std::size_t s : no_idle)
            if (!no_energy.count(s))
                r.notes.push_back(inputs[idx[s]].label + "'s " + es[s]->name +
                                  " has no idle baseline (--idle 0): its net energy is not "
                                  "compared");
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
    json alias = json::object();
    for (const auto& [k, v] : r.model_alias)
        alias[k] = v;
    return json{{"command", "compare"},
                {"compare_schema_version", kCompareSchemaVersion},
                {"tool_version", r.tool_version},
                {"created_at", r.created_at},
                {"match", {{"fields", r.match}, {"model_alias", alias}}},
                {"inputs", inputs},
                {"rows", rows},
                {"unmatched", unmatched},
                {"notes", r.notes}};
}

}  // namespace sb
