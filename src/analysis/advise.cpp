#include "analysis/advise.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/json_reader.hpp"
#include "core/stats.hpp"

namespace sb {
namespace {

using nlohmann::json;

std::string ms(double ns) {
    return fmt::format("{:.2f} ms", ns / 1e6);
}

// What one successful test of a document says about its device set.
struct Sample {
    size_t doc = 0;  // index of the input it came from
    std::string devices;
    int n_prompt = 0, n_gen = 0, kv_depth = 0;
    std::vector<double> prefill_tps, decode_tps;            // raw, per repetition
    std::optional<double> prefill_ns, decode_ns_per_token;  // medians
    std::optional<double> prefill_j_per_token, decode_j_per_token;
};

bool is_hybrid_devices(const std::string& d) {
    return d.find('>') != std::string::npos;
}

// Collects the tests of a document (run, demo, hybrid alone modes).
void collect_tests(const JsonAt& doc, size_t index, std::vector<Sample>& out) {
    for (const auto& t : doc["tests"].objects()) {
        if (t["status"].string_or("") != "ok")
            continue;
        const JsonAt c = t["config"].object();
        Sample s;
        s.doc = index;
        s.devices = c["devices"].string_or("CPU");
        if (is_hybrid_devices(s.devices) || c["engine"].string_or("llama") != "llama")
            continue;
        s.n_prompt = c["n_prompt"].integer_or(0);
        s.n_gen = c["n_gen"].integer_or(0);
        s.kv_depth = c["n_depth"].integer_or(0) + s.n_prompt;
        const JsonAt pf = t["prefill"].object();
        if (pf.is_object()) {
            s.prefill_tps = pf["tokens_per_s"].numbers();
            s.prefill_ns = pf["duration"]["median"].number();
        }
        const JsonAt dc = t["decode"].object();
        if (dc.is_object() && s.n_gen > 0) {
            s.decode_tps = dc["tokens_per_s"].numbers();
            if (auto d = dc["duration"]["median"].number())
                s.decode_ns_per_token = *d / s.n_gen;
        }
        const JsonAt sm = t["telemetry"]["summary"];
        s.prefill_j_per_token = sm["prefill"]["j_per_token"]["median"].number();
        s.decode_j_per_token = sm["decode"]["j_per_token"]["median"].number();
        out.push_back(std::move(s));
    }
}

struct TransferFit {
    std::string prefill, decode;
    double intercept_ns = 0, ns_per_token = 0;
    std::optional<double> bytes_per_token;
    int n_points = 0;
    double at(int n_prompt) const { return std::max(0.0, intercept_ns + ns_per_token * n_prompt); }
};

// Least squares of transfer time over prompt length; one length: proportional.
TransferFit fit_transfer(const std::string& a, const std::string& b,
                         const std::vector<std::pair<double, double>>& pts,
                         std::optional<double> bytes_per_token) {
    TransferFit f;
    f.prefill = a;
    f.decode = b;
    f.bytes_per_token = bytes_per_token;
    f.n_points = static_cast<int>(pts.size());
    std::set<double> xs;
    for (auto& p : pts)
        xs.insert(p.first);
    if (xs.size() < 2) {
        double sx = 0, sy = 0;
        for (auto& p : pts) {
            sx += p.first;
            sy += p.second;
        }
        f.ns_per_token = sx > 0 ? sy / sx : 0;
        return f;
    }
    double mx = 0, my = 0;
    for (auto& p : pts) {
        mx += p.first;
        my += p.second;
    }
    mx /= pts.size();
    my /= pts.size();
    double sxy = 0, sxx = 0;
    for (auto& p : pts) {
        sxy += (p.first - mx) * (p.second - my);
        sxx += (p.first - mx) * (p.first - mx);
    }
    f.ns_per_token = sxy / sxx;
    f.intercept_ns = my - f.ns_per_token * mx;
    return f;
}

// The time model of one device set.
struct DeviceModel {
    std::vector<std::pair<double, double>> prefill;           // (n_prompt, median ns)
    std::vector<std::pair<double, double>> decode_per_token;  // (kv depth, median ns/token)
    bool can_prefill() const { return !prefill.empty(); }
    bool can_decode() const { return !decode_per_token.empty(); }
};

// Medians of the samples at the same x, sorted by x.
std::vector<std::pair<double, double>> merge_points(std::vector<std::pair<double, double>> v) {
    std::map<double, std::vector<double>> by;
    for (auto& [x, y] : v)
        by[x].push_back(y);
    std::vector<std::pair<double, double>> out;
    for (auto& [x, ys] : by)
        out.emplace_back(x, *percentile(ys, 0.5));
    return out;
}

struct Prediction {
    std::string prefill, decode;
    double prefill_ns = 0, transfer_ns = 0, decode_ns = 0;
    double e2e() const { return prefill_ns + transfer_ns + decode_ns; }
};

using Models = std::map<std::string, DeviceModel>;

// The time model of every device set from the samples that keep(sample) accepts.
template <class Keep>
Models build_models(const std::vector<Sample>& samples, Keep keep) {
    Models models;
    std::map<std::string, std::vector<std::pair<double, double>>> pf, dc;
    for (const auto& s : samples) {
        if (!keep(s))
            continue;
        if (s.prefill_ns)
            pf[s.devices].emplace_back(s.n_prompt, *s.prefill_ns);
        if (s.decode_ns_per_token)
            dc[s.devices].emplace_back(s.kv_depth + s.n_gen / 2.0, *s.decode_ns_per_token);
    }
    for (auto& [d, v] : pf)
        models[d].prefill = merge_points(v);
    for (auto& [d, v] : dc)
        models[d].decode_per_token = merge_points(v);
    return models;
}

// Every prefill/decode assignment the models and the measured transfers allow, fastest first.
std::vector<Prediction> predict_all(const Models& models, const std::vector<TransferFit>& fits,
                                    int p, int n) {
    auto find_fit = [&](const std::string& a, const std::string& b) -> const TransferFit* {
        for (auto& f : fits)
            if (f.prefill == a && f.decode == b)
                return &f;
        return nullptr;
    };
    std::vector<Prediction> v;
    for (auto& [a, ma] : models) {
        if (!ma.can_prefill())
            continue;
        for (auto& [b, mb] : models) {
            if (!mb.can_decode())
                continue;
            const TransferFit* f = a == b ? nullptr : find_fit(a, b);
            if (a != b && !f)
                continue;  // no measured transfer between them
            Prediction x{a, b};
            x.prefill_ns = interpolate(ma.prefill, p);
            x.transfer_ns = f ? f->at(p) : 0;
            // Decode reads a KV cache from p to p + n: the per-token time at the middle.
            const double per_token = mb.decode_per_token.size() == 1
                                         ? mb.decode_per_token[0].second
                                         : interpolate(mb.decode_per_token, p + n / 2.0);
            x.decode_ns = per_token * n;
            v.push_back(x);
        }
    }
    std::sort(v.begin(), v.end(),
              [](const Prediction& x, const Prediction& y) { return x.e2e() < y.e2e(); });
    return v;
}

std::string assignment_name(const std::string& a, const std::string& b) {
    return a == b ? a + " alone" : a + " → " + b;
}

}  // namespace

double interpolate(const std::vector<std::pair<double, double>>& pts, double x) {
    if (pts.empty())
        throw input_error("nothing to interpolate");
    if (pts.size() == 1)
        return pts[0].first > 0 ? pts[0].second * x / pts[0].first : pts[0].second;
    size_t i = 1;
    while (i + 1 < pts.size() && x > pts[i].first)
        ++i;
    const auto& [x0, y0] = pts[i - 1];
    const auto& [x1, y1] = pts[i];
    if (x1 == x0)
        return y1;
    return std::max(0.0, y0 + (y1 - y0) * (x - x0) / (x1 - x0));
}

json advise(const std::vector<AdviseInput>& inputs, const AdviseOptions& opts) {
    json out = {
        {"advise_schema_version", 1},   {"sources", json::array()},   {"stages", json::array()},
        {"predictions", json::array()}, {"crossover", json::array()}, {"validation", json::array()},
        {"fallback", json::array()},    {"dispatch", json::array()},  {"sustained", json::array()},
        {"sentences", json::array()},   {"notes", json::array()}};
    auto say = [&](const std::string& s) { out["sentences"].push_back(s); };
    auto note = [&](const std::string& s) { out["notes"].push_back(s); };

    std::vector<Sample> samples;
    std::map<std::pair<std::string, std::string>, std::vector<std::pair<double, double>>> transfers;
    std::map<std::pair<std::string, std::string>, std::optional<double>> transfer_bytes;
    json measured_hybrid = json::array();
    std::vector<JsonAt> ops_docs, sustained_docs;
    bool used_any = false;
    for (const auto& in : inputs) {
        // Every read goes through JsonAt: a document of the wrong shape is one line naming the
        // file and the field, an sb::Error(input), never a nlohmann type error.
        const JsonAt d(in.doc, in.source);
        if (!d.is_object())
            d.fail("an object (a stagebench result document)");
        const std::string cmd = d["command"].string_or("");
        out["sources"].push_back({{"source", in.source}, {"command", cmd}});
        const size_t before = samples.size();
        collect_tests(d, out["sources"].size() - 1, samples);
        bool used = samples.size() > before;
        // Sections of other scenarios sit at the top level of a document.
        if (const JsonAt h = d["hybrid"].object(); h.is_object()) {
            const std::string a = h["prefill_device"].string_or(""),
                              b = h["decode_device"].string_or("");
            for (const auto& pt : h["points"].objects()) {
                const int p = pt["n_prompt"].integer_or(0);
                const JsonAt tr = pt["transfer"];
                if (auto med = tr["duration"]["median"].number()) {
                    transfers[{a, b}].emplace_back(p, *med);
                    if (auto bpt = tr["bytes_per_token"].number())
                        transfer_bytes[{a, b}] = bpt;
                }
                if (auto med = pt["e2e"]["hybrid"]["summary"]["median"].number())
                    measured_hybrid.push_back({{"source", in.source},
                                               {"doc", out["sources"].size() - 1},
                                               {"prefill", a},
                                               {"decode", b},
                                               {"n_prompt", p},
                                               {"n_gen", pt["n_gen"].integer_or(0)},
                                               {"measured_ns", *med}});
            }
            used = true;
        }
        if (const JsonAt ops = d["ops"].object(); ops.is_object()) {
            ops_docs.push_back(ops);
            used = true;
        }
        if (const JsonAt sus = d["sustained"].object(); sus.is_object()) {
            sustained_docs.push_back(sus);
            used = true;
        }
        if (!used)
            note(in.source + ": a '" + cmd + "' document with nothing the advisor uses");
        used_any = used_any || used;
    }
    if (!used_any)
        throw input_error(
            "nothing to advise on: give result documents of run, hybrid, ops or sustained");

    // 1. Per stage: the fastest and the most energy-efficient device set, at the workload
    // measured on the most device sets.
    for (const std::string stage : {"prefill", "decode"}) {
        const bool pf = stage == "prefill";
        std::map<std::string, std::map<std::string, std::vector<const Sample*>>> by_workload;
        for (const auto& s : samples) {
            if ((pf ? s.prefill_tps : s.decode_tps).empty())
                continue;
            const std::string w =
                pf ? "pp" + std::to_string(s.n_prompt)
                   : "tg" + std::to_string(s.n_gen) + "@d" + std::to_string(s.kv_depth);
            by_workload[w][s.devices].push_back(&s);
        }
        if (by_workload.empty())
            continue;
        auto best_w = std::max_element(
            by_workload.begin(), by_workload.end(),
            [](const auto& x, const auto& y) { return x.second.size() < y.second.size(); });
        json cands = json::array();
        struct Cand {
            std::string dev;
            std::vector<double> tps;
            std::optional<double> jpt;
        };
        std::vector<Cand> cs;
        for (const auto& [dev, ss] : best_w->second) {
            Cand c{dev, {}, {}};
            std::vector<double> j;
            for (const Sample* s : ss) {
                const auto& v = pf ? s->prefill_tps : s->decode_tps;
                c.tps.insert(c.tps.end(), v.begin(), v.end());
                if (auto x = pf ? s->prefill_j_per_token : s->decode_j_per_token)
                    j.push_back(*x);
            }
            if (!j.empty())
                c.jpt = percentile(j, 0.5);
            cs.push_back(std::move(c));
        }
        std::sort(cs.begin(), cs.end(), [](const Cand& x, const Cand& y) {
            return *percentile(x.tps, 0.5) > *percentile(y.tps, 0.5);
        });
        for (const auto& c : cs) {
            const Summary s = summarize(c.tps);
            cands.push_back({{"devices", c.dev},
                             {"median_tokens_per_s", s.median ? json(*s.median) : json()},
                             {"ci95_lo", s.ci95_lo ? json(*s.ci95_lo) : json()},
                             {"ci95_hi", s.ci95_hi ? json(*s.ci95_hi) : json()},
                             {"n", s.n},
                             {"j_per_token", c.jpt ? json(*c.jpt) : json()}});
        }
        json st = {{"stage", stage},
                   {"workload", best_w->first},
                   {"candidates", cands},
                   {"fastest", cs[0].dev}};
        std::string sentence = fmt::format("{}: {} is the fastest at {} ({:.1f} tokens/s", stage,
                                           cs[0].dev, best_w->first, *percentile(cs[0].tps, 0.5));
        if (cs.size() > 1) {
            const RatioCi r = ratio_of_medians(cs[0].tps, cs[1].tps);
            st["ratio_to_runner_up"] = {{"runner_up", cs[1].dev},
                                        {"ratio", r.ratio},
                                        {"ci95_lo", r.lo},
                                        {"ci95_hi", r.hi},
                                        {"decisive", !r.no_difference}};
            sentence += fmt::format(", {:.2f}× {} with 95% CI {:.2f}–{:.2f}", r.ratio, cs[1].dev,
                                    r.lo, r.hi);
            if (r.no_difference)
                sentence += ", so not distinguishable from it";
        } else {
            sentence += ", the only device set measured";
        }
        sentence += ")";
        const Cand* eff = nullptr;
        for (const auto& c : cs)
            if (c.jpt && (!eff || *c.jpt < *eff->jpt))
                eff = &c;
        if (eff) {
            st["most_efficient"] = {{"devices", eff->dev}, {"j_per_token", *eff->jpt}};
            sentence += fmt::format("; the most energy-efficient is {} at {:.4f} J/token", eff->dev,
                                    *eff->jpt);
        } else {
            st["most_efficient"] = nullptr;
            sentence += "; no energy was measured for this stage";
        }
        say(sentence + ".");
        out["stages"].push_back(st);
    }

    // 2. The time model and predictions of every prefill/decode assignment.
    const Models models = build_models(samples, [](const Sample&) { return true; });
    std::vector<TransferFit> fits;
    for (auto& [ab, pts] : transfers)
        fits.push_back(fit_transfer(ab.first, ab.second, pts, transfer_bytes[ab]));
    json model = {{"devices", json::object()}, {"transfer", json::array()}};
    for (auto& [d, m] : models)
        model["devices"][d] = {{"prefill", m.prefill}, {"decode_per_token", m.decode_per_token}};
    for (auto& f : fits)
        model["transfer"].push_back(
            {{"prefill_device", f.prefill},
             {"decode_device", f.decode},
             {"intercept_ns", f.intercept_ns},
             {"ns_per_token", f.ns_per_token},
             {"bytes_per_token", f.bytes_per_token ? json(*f.bytes_per_token) : json()},
             {"n_points", f.n_points}});
    out["model"] = model;

    auto predict = [&](int p, int n) { return predict_all(models, fits, p, n); };
    auto to_j = [](const Prediction& x) {
        return json{{"prefill", x.prefill},       {"decode", x.decode},
                    {"prefill_ns", x.prefill_ns}, {"transfer_ns", x.transfer_ns},
                    {"decode_ns", x.decode_ns},   {"e2e_ns", x.e2e()}};
    };
    std::vector<std::pair<int, int>> lengths;
    if (opts.n_prompt || opts.n_gen || measured_hybrid.empty())
        lengths.emplace_back(opts.n_prompt.value_or(512), opts.n_gen.value_or(128));
    else
        for (const auto& m : measured_hybrid)
            lengths.emplace_back(m["n_prompt"].get<int>(), m["n_gen"].get<int>());
    std::sort(lengths.begin(), lengths.end());
    lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
    for (auto [p, n] : lengths) {
        auto v = predict(p, n);
        if (v.empty())
            continue;
        json a = json::array();
        for (auto& x : v)
            a.push_back(to_j(x));
        out["predictions"].push_back(
            {{"n_prompt", p}, {"n_gen", n}, {"assignments", a}, {"best", to_j(v[0])}});
        std::string s = fmt::format(
            "For a {}-token prompt and {} generated tokens the fastest "
            "assignment is {}: {} end to end",
            p, n, assignment_name(v[0].prefill, v[0].decode), ms(v[0].e2e()));
        if (v[0].transfer_ns > 0)
            s += fmt::format(" ({} prefill + {} state transfer + {} decode)", ms(v[0].prefill_ns),
                             ms(v[0].transfer_ns), ms(v[0].decode_ns));
        if (v.size() > 1)
            s += fmt::format("; next is {} at {} ({:.2f}×)",
                             assignment_name(v[1].prefill, v[1].decode), ms(v[1].e2e()),
                             v[1].e2e() / v[0].e2e());
        say(s + ".");
    }

    // Crossover over prompt length at each generation length: where the best assignment
    // changes, found on a fine grid between 1 and 4x the longest measured prompt.
    if (models.size() > 1) {
        int max_p = 0;
        for (auto& [d, m] : models)
            for (auto& [x, y] : m.prefill)
                max_p = std::max(max_p, static_cast<int>(x));
        std::set<int> gens;
        for (auto [p, n] : lengths)
            gens.insert(n);
        for (int n : gens) {
            json ranges = json::array();
            std::string cur;
            int from = 1;
            const int hi = std::max(16, 4 * max_p);
            auto best_at = [&](int p) {
                auto v = predict(p, n);
                return v.empty() ? std::string() : assignment_name(v[0].prefill, v[0].decode);
            };
            for (int p = 1; p <= hi; p += std::max(1, p / 64)) {
                const std::string b = best_at(p);
                if (b != cur) {
                    if (!cur.empty())
                        ranges.push_back(
                            {{"from_n_prompt", from}, {"to_n_prompt", p - 1}, {"best", cur}});
                    cur = b;
                    from = p;
                }
            }
            ranges.push_back({{"from_n_prompt", from}, {"to_n_prompt", nullptr}, {"best", cur}});
            out["crossover"].push_back({{"n_gen", n}, {"ranges", ranges}});
            std::string s = fmt::format("With {} generated tokens:", n);
            for (size_t i = 0; i < ranges.size(); ++i) {
                const auto& r = ranges[i];
                s += fmt::format("{} {} is fastest for prompts of {}", i ? ";" : "",
                                 r["best"].get<std::string>(), r["from_n_prompt"].get<int>());
                s += r["to_n_prompt"].is_null()
                         ? std::string(" tokens and longer")
                         : fmt::format("–{} tokens", r["to_n_prompt"].get<int>());
            }
            say(s +
                " (predicted from the measured model; extrapolated beyond the measured "
                "lengths).");
        }
    }

    // 3. The prediction next to every measured hybrid point.
    for (auto& m : measured_hybrid) {
        const std::string a = m["prefill"], b = m["decode"];
        const int p = m["n_prompt"], n = m["n_gen"];
        const size_t doc = m["doc"];
        m.erase("doc");
        // The parts from the hybrid run's own modes alone (measured interleaved with it) when it
        // has them, else from every document.
        const Models own = build_models(samples, [&](const Sample& s) { return s.doc == doc; });
        const bool has_own =
            own.count(a) && own.at(a).can_prefill() && own.count(b) && own.at(b).can_decode();
        const Models& basis = has_own ? own : models;
        std::optional<Prediction> pr;
        for (auto& x : predict_all(basis, fits, p, n))
            if (x.prefill == a && x.decode == b)
                pr = x;
        if (!pr) {
            note(
                fmt::format("no prediction for the hybrid {} at pp{}+tg{}: {} alone and {} "
                            "alone were not measured",
                            assignment_name(a, b), p, n, a, b));
            continue;
        }
        const double meas = m["measured_ns"];
        const double err = pr->e2e() / meas - 1;
        m["predicted_ns"] = pr->e2e();
        m["error"] = err;
        m["basis"] = has_own ? "the hybrid run's own modes alone" : "every document";
        out["validation"].push_back(m);
        say(
            fmt::format("The hybrid {} at pp{}+tg{} was predicted at {} and measured at {} "
                        "({:+.1f} %).",
                        assignment_name(a, b), p, n, ms(pr->e2e()), ms(meas), err * 100));
    }

    // 4. Operators from the profiler: fallback and dispatch overhead.
    for (const JsonAt& ops : ops_docs) {
        const std::string& src = ops.source();
        for (const auto& st : ops["stages"].objects()) {
            const std::string stage = st["stage"].string_or("");
            for (const auto& f : st["fallback"].objects()) {
                json row = f.raw();
                row["stage"] = stage;
                row["source"] = src;
                out["fallback"].push_back(row);
                std::string s =
                    fmt::format("{}: {} × {} asked of {} ran on {}", stage,
                                f["count"].integer_or(0), f["op"].string_or(""),
                                f["requested"].string_or(""), f["backend"].string_or(""));
                if (auto c = f["call_ns"].number())
                    s += fmt::format(", {} per stage in all", ms(*c));
                if (auto p = f["penalty"].number())
                    s += fmt::format(", its op time there {:.2f}× that on {}", *p,
                                     f["requested"].string_or(""));
                say(s + ".");
            }
            // Where an accelerator's pipeline goes: communication, conversion, compute.
            const JsonAt dec = st["decomposition"];
            if (const auto parts = dec["parts"].objects(); !parts.empty()) {
                std::string s = fmt::format("{}: the pipeline of {} splits into", stage,
                                            ops["devices"].string_or("?"));
                bool first = true;
                for (const auto& part : parts) {
                    if (auto share = part["share"].number()) {
                        s += fmt::format("{} {} {:.0f} %", first ? "" : ",",
                                         part["name"].string_or(""), *share * 100);
                        first = false;
                    }
                }
                if (!first) {
                    say(s + ".");
                    out["decomposition"].push_back(
                        {{"stage", stage}, {"source", src}, {"parts", dec["parts"].raw()}});
                }
            }
            // Dispatch overhead per call: call - op time of every computed op.
            std::map<std::pair<std::string, std::string>, std::vector<double>> over;
            for (const auto& r : st["ops"].objects()) {
                if (r["no_compute"].boolean_or(false))
                    continue;
                auto c = r["call_ns"].number(), o = r["op_ns"].number();
                if (c && o)
                    over[{r["op"].string_or(""), r["backend"].string_or("")}].push_back(*c - *o);
            }
            std::vector<json> rows;
            for (auto& [k, v] : over) {
                const double med = *percentile(v, 0.5);
                if (med <= opts.dispatch_budget_ns)
                    continue;
                double total = 0;
                for (double x : v)
                    total += x;
                rows.push_back({{"stage", stage},
                                {"op", k.first},
                                {"backend", k.second},
                                {"count", v.size()},
                                {"median_overhead_ns", med},
                                {"total_overhead_ns", total},
                                {"source", src}});
            }
            std::sort(rows.begin(), rows.end(), [](const json& x, const json& y) {
                return x["total_overhead_ns"].get<double>() > y["total_overhead_ns"].get<double>();
            });
            for (size_t i = 0; i < rows.size(); ++i) {
                auto& r = rows[i];
                out["dispatch"].push_back(r);
                if (i == 5)
                    say(
                        fmt::format("{}: {} more operators above the dispatch budget are in the "
                                    "table.",
                                    stage, rows.size() - 5));
                if (i >= 5)
                    continue;
                say(fmt::format(
                    "{}: {} on {} spends {:.1f} µs per call outside the op (median of "
                    "{}; {} in all), above the {:.0f} µs budget: a candidate for "
                    "fusion or batched dispatch.",
                    stage, r["op"].get<std::string>(), r["backend"].get<std::string>(),
                    r["median_overhead_ns"].get<double>() / 1e3, r["count"].get<size_t>(),
                    ms(r["total_overhead_ns"]), opts.dispatch_budget_ns / 1e3));
            }
            if (rows.empty() && !over.empty())
                say(
                    fmt::format("{}: no operator's dispatch overhead exceeds the {:.0f} µs "
                                "budget ({}).",
                                stage, opts.dispatch_budget_ns / 1e3, src));
        }
    }

    // 5. Sustained load: does the per-stage choice hold at the throttled steady state?
    for (const JsonAt& sus : sustained_docs) {
        const std::string& src = sus.source();
        const std::string dev = sus["config"]["devices"].string_or("CPU");
        for (const auto& ph : sus["phases"].objects()) {
            // The phase without background load: "rounds" of a plain run, "baseline" beside a
            // "loaded" one. Under background load the steady state is the load's, not the
            // device's.
            if (!ph["background"].string_or("").empty())
                continue;
            const JsonAt ac = ph["across"];
            const auto steady = ac["steady_decode_tps"].number();
            const auto peak_ratio = ac["peak_to_steady"].number();
            if (!steady)
                continue;
            const std::string verdict = ac["verdict"].string_or("");
            json row = {{"source", src},
                        {"devices", dev},
                        {"phase", ph["name"].string_or("")},
                        {"verdict", verdict},
                        {"steady_decode_tps", *steady},
                        {"peak_to_steady", peak_ratio ? json(*peak_ratio) : json()}};
            // The decode choice with this device set at its steady state.
            std::string others;
            std::optional<std::pair<std::string, double>> best_other;
            for (auto& st : out["stages"]) {
                if (st["stage"] != "decode")
                    continue;
                for (auto& c : st["candidates"])
                    if (c["devices"] != dev && c["median_tokens_per_s"].is_number()) {
                        const double v = c["median_tokens_per_s"];
                        if (!best_other || v > best_other->second)
                            best_other = {{c["devices"].get<std::string>(), v}};
                    }
            }
            std::string s = fmt::format(
                "Under sustained load {} decodes at {:.1f} tokens/s in the steady state ({})", dev,
                *steady, verdict.empty() ? "no verdict" : verdict);
            if (best_other) {
                const bool holds = *steady >= best_other->second;
                row["still_fastest_decode"] = holds;
                row["compared_with"] = {{"devices", best_other->first},
                                        {"tokens_per_s", best_other->second}};
                s += fmt::format(
                    "; {} measured {:.1f} tokens/s, so {} {} the faster decode "
                    "choice once throttled",
                    best_other->first, best_other->second, dev, holds ? "stays" : "is no longer");
            } else {
                row["still_fastest_decode"] = nullptr;
                s += "; no other device set's decode was measured to compare with";
            }
            out["sustained"].push_back(row);
            say(s + ".");
        }
    }
    if (out["stages"].empty() && out["fallback"].empty() && out["dispatch"].empty() &&
        out["sustained"].empty())
        note("the documents hold no stage measurements to rank");
    return out;
}

}  // namespace sb
