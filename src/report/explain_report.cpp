#include "report/explain_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "analysis/explain.hpp"

namespace sb {

namespace {

std::string ms(const std::optional<double>& ns) {
    return ns ? format_ms(*ns) : "-";
}

std::string signed_ms(const std::optional<double>& ns) {
    if (!ns)
        return "-";
    return (*ns >= 0 ? "+" : "") + format_ms(*ns);
}

std::string ci(const std::optional<double>& lo, const std::optional<double>& hi) {
    if (!lo || !hi)
        return "-";
    return fmt::format("[{}, {}]", format_ms(*lo), format_ms(*hi));
}

std::string explain_pct(double share) {
    const double p = std::round(share * 100);
    return fmt::format("{:.0f} %", p == 0 ? 0.0 : p);  // never "-0 %"
}

std::string cell(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '|')
            out += "\\|";
        else if (c == '\n')
            out += ' ';
        else
            out += c;
    }
    return out;
}

const ExplainStat& stat(const ExplainMeasure& m, const std::string& stage) {
    return stage == "prefill" ? m.prefill : m.decode;
}

std::string level_label(const ExplainMeasure& m) {
    if (m.level == "ops")
        return "1 ops: Σ op time (replayed)";
    if (m.level == "graph")
        return "2 graph: the stage as llama-bench times it";
    if (m.level == "generation")
        return "3 generation: the application's loop in-process";
    if (m.level == "server")
        return "4 server: one client over loopback";
    return fmt::format("5 served: {} clients at once", m.concurrency.value_or(0));
}

const ExplainPart* find_part(const std::vector<ExplainPart>& v, const std::string& stage,
                             const std::string& kind, const std::optional<std::string>& to) {
    for (const auto& p : v)
        if (p.stage == stage && p.kind == kind && (!to || p.to == to))
            return &p;
    return nullptr;
}

void write_stage(const ExplainSection& s, const std::string& stage, std::ostream& out) {
    out << "\n## " << stage
        << (stage == "prefill" ? ": time to the first token" : ": time per token after the first")
        << "\n\n";
    out << "| level | median | 95 % CI | runs | step from the level before | 95 % CI |\n"
        << "| --- | ---: | ---: | ---: | ---: | ---: |\n";
    for (const ExplainMeasure& m : s.measures) {
        if (m.level == "graph" && m.setting)
            continue;
        const ExplainStat& st = stat(m, stage);
        const ExplainPart* step = find_part(s.steps, stage, "step", m.id);
        out << "| " << cell(level_label(m)) << " | " << ms(st.median_ns) << " | "
            << ci(st.ci95_lo_ns, st.ci95_hi_ns) << " | " << st.n << "/" << m.runs.size() << " | "
            << (step ? signed_ms(step->ns) : "") << " | "
            << (step ? ci(step->ci95_lo_ns, step->ci95_hi_ns) : "") << " |\n";
    }
    const ExplainPart* gap = find_part(s.parts, stage, "gap", std::nullopt);
    const ExplainMeasure* graph = find_measure(s, "graph");
    const ExplainMeasure* server = find_measure(s, "server");
    if (!gap || !graph || !server)
        return;
    out << "\n### Where the gap between the bench and the server goes: " << signed_ms(gap->ns)
        << " (95 % CI " << ci(gap->ci95_lo_ns, gap->ci95_hi_ns) << ")\n\n";
    out << "| part | ms | 95 % CI | share of the gap | waterfall |\n"
        << "| --- | ---: | ---: | ---: | --- |\n";
    const double base = stat(*graph, stage).median_ns.value_or(0);
    const double top = stat(*server, stage).median_ns.value_or(0);
    // The scale: the highest point the waterfall reaches.
    double max_ns = std::max(base, top), run = base;
    for (const auto& p : s.parts)
        if (p.stage == stage && p.kind != "gap" && p.ns) {
            run += *p.ns;
            max_ns = std::max(max_ns, run);
        }
    out << "| the bench (graph level) | " << ms(base) << " | "
        << ci(stat(*graph, stage).ci95_lo_ns, stat(*graph, stage).ci95_hi_ns) << " | | `"
        << waterfall_bar(0, base, max_ns) << "` |\n";
    run = base;
    for (const auto& p : s.parts) {
        if (p.stage != stage || p.kind == "gap")
            continue;
        const double from = run;
        run += p.ns.value_or(0);
        out << "| " << cell(p.label) << " | " << signed_ms(p.ns) << " | "
            << ci(p.ci95_lo_ns, p.ci95_hi_ns) << " | "
            << (p.share ? explain_pct(*p.share) : std::string("-")) << " | `"
            << waterfall_bar(from, run, max_ns) << "` |\n";
    }
    out << "| = the server (1 client) | " << ms(top) << " | "
        << ci(stat(*server, stage).ci95_lo_ns, stat(*server, stage).ci95_hi_ns) << " | | `"
        << waterfall_bar(0, top, max_ns) << "` |\n";
}

// Short labels for the chart's rows (the table keeps the long ones).
std::string short_label(const ExplainPart& p, const ExplainSection& s) {
    if (p.kind == "setting") {
        for (const auto& set : s.settings)
            if (set.name == p.name) {
                std::string flag = set.label;
                if (auto a = flag.find('('); a != std::string::npos)
                    flag = flag.substr(a + 1, flag.find(')', a) - a - 1);
                else
                    flag = set.name;
                std::string v = set.server.value_or("?");
                if (v.size() > 12)
                    v = v.substr(0, 11) + "…";
                return flag + " " + v + " (bench " + set.bench + ")";
            }
        return p.name;
    }
    if (p.kind == "interaction")
        return "settings together";
    if (p.kind == "application")
        return "application work";
    if (p.kind == "remainder")
        return "server overhead (rest)";
    return p.name;
}

std::optional<double> to_ms(const std::optional<double>& ns) {
    return ns ? std::optional<double>(*ns / 1e6) : std::nullopt;
}

nlohmann::json opt_json(const std::optional<double>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

nlohmann::json explain_html_view(const ResultDocument& doc) {
    using nlohmann::json;
    if (!doc.explain)
        return nullptr;
    const ExplainSection& s = *doc.explain;
    json v{{"model", s.model_path}, {"n_prompt", s.n_prompt},       {"n_gen", s.n_gen},
           {"rounds", s.rounds},    {"server_kind", s.server_kind}, {"verdicts", s.verdicts},
           {"notes", s.notes}};
    json findings = json::array();
    for (const auto& f : s.findings)
        findings.push_back(f.message);
    v["findings"] = findings;
    json settings = json::array();
    for (const auto& set : s.settings) {
        std::string alone = set.measure                  ? "measured"
                            : set.server && !set.differs ? "same"
                                                         : set.note;
        settings.push_back({{"label", set.label},
                            {"bench", set.bench},
                            {"server", set.server ? json(*set.server) : json(nullptr)},
                            {"source", set.source},
                            {"differs", set.differs},
                            {"alone", alone}});
    }
    v["settings"] = settings;
    json stages = json::array();
    for (const std::string stage : {"prefill", "decode"}) {
        json st{{"stage", stage},
                {"title", stage == "prefill" ? "prefill: time to the first token"
                                             : "decode: time per token after the first"}};
        json levels = json::array();
        for (const auto& m : s.measures) {
            if (m.level == "graph" && m.setting)
                continue;
            const ExplainStat& x = stat(m, stage);
            const ExplainPart* step = find_part(s.steps, stage, "step", m.id);
            levels.push_back(
                {{"label", level_label(m)},
                 {"ms", opt_json(to_ms(x.median_ns))},
                 {"lo_ms", opt_json(to_ms(x.ci95_lo_ns))},
                 {"hi_ms", opt_json(to_ms(x.ci95_hi_ns))},
                 {"n", x.n},
                 {"runs", m.runs.size()},
                 {"step_ms", opt_json(step ? to_ms(step->ns) : std::nullopt)},
                 {"step_lo_ms", opt_json(step ? to_ms(step->ci95_lo_ns) : std::nullopt)},
                 {"step_hi_ms", opt_json(step ? to_ms(step->ci95_hi_ns) : std::nullopt)}});
        }
        st["levels"] = levels;
        json wf = json::array();
        const ExplainPart* gap = find_part(s.parts, stage, "gap", std::nullopt);
        const ExplainMeasure* graph = find_measure(s, "graph");
        const ExplainMeasure* server = find_measure(s, "server");
        st["gap"] = nullptr;
        if (gap && graph && server && stat(*graph, stage).median_ns &&
            stat(*server, stage).median_ns) {
            st["gap"] = {{"ms", opt_json(to_ms(gap->ns))},
                         {"lo_ms", opt_json(to_ms(gap->ci95_lo_ns))},
                         {"hi_ms", opt_json(to_ms(gap->ci95_hi_ns))}};
            const double base = *stat(*graph, stage).median_ns / 1e6;
            const double top = *stat(*server, stage).median_ns / 1e6;
            auto total = [&](const char* label, double x, const ExplainStat& xs) {
                return json{{"label", label},
                            {"short", label},
                            {"kind", "total"},
                            {"start_ms", 0.0},
                            {"end_ms", x},
                            {"ms", x},
                            {"lo_ms", opt_json(to_ms(xs.ci95_lo_ns))},
                            {"hi_ms", opt_json(to_ms(xs.ci95_hi_ns))},
                            {"share", nullptr},
                            {"value_label", format_ms(x * 1e6)}};
            };
            wf.push_back(total("the bench (graph)", base, stat(*graph, stage)));
            double run = base;
            for (const auto& p : s.parts) {
                if (p.stage != stage || p.kind == "gap" || !p.ns)
                    continue;
                const double d = *p.ns / 1e6;
                std::string value = signed_ms(p.ns);
                if (p.share)
                    value += " (" + explain_pct(*p.share) + ")";
                wf.push_back({{"label", p.label},
                              {"short", short_label(p, s)},
                              {"kind", p.kind},
                              {"start_ms", run},
                              {"end_ms", run + d},
                              {"ms", d},
                              {"lo_ms", opt_json(to_ms(p.ci95_lo_ns))},
                              {"hi_ms", opt_json(to_ms(p.ci95_hi_ns))},
                              {"share", p.share ? json(*p.share) : json(nullptr)},
                              {"value_label", value}});
                run += d;
            }
            wf.push_back(total("the server (1 client)", top, stat(*server, stage)));
        }
        st["waterfall"] = wf;
        stages.push_back(st);
    }
    v["stages"] = stages;
    return v;
}

std::string waterfall_bar(double start_ns, double end_ns, double max_ns, int width) {
    if (!(max_ns > 0))
        return "";
    auto pos = [&](double ns) {
        return std::clamp(static_cast<int>(std::lround(ns / max_ns * width)), 0, width);
    };
    const int a = pos(std::min(start_ns, end_ns)), b = pos(std::max(start_ns, end_ns));
    std::string out;
    for (int i = 0; i < a; ++i)
        out += "·";
    // Every part gets at least one mark, so a small one is still seen.
    const int n = std::max(1, b - a);
    for (int i = 0; i < n; ++i)
        out += end_ns >= start_ns ? "█" : "░";
    return out;
}

namespace {

// One line on the server's own timings of levels 4 and 5's requests: how many agree with the
// client's measurement, and the first that does not.
void write_explain_server_claims(const ExplainSection& s, std::ostream& out) {
    int with = 0, disagree = 0;
    std::string first;
    auto count = [&](const std::optional<ServerClaim>& c, const std::string& where) {
        if (!c)
            return;
        ++with;
        if (c->disagreements.empty())
            return;
        if (disagree++ == 0)
            first = where + ": " + c->disagreements.front();
    };
    for (const auto& m : s.measures)
        for (const auto& r : m.runs) {
            count(r.server_claim, fmt::format("{} round {}", m.id, r.round + 1));
            for (const auto& c : r.clients)
                count(c.server_claim,
                      fmt::format("{} round {} client {}", m.id, r.round + 1, c.client + 1));
        }
    if (with == 0)
        return;
    out << fmt::format(
        "- the server's own timings (kept per request as server_claim): {} of {} request(s) "
        "agree with the client's measurement (the same token counts, the prompt time within the "
        "client's TTFT, prompt and generation within its E2E, by at most {}){}\n",
        with - disagree, with, kServerClaimSlackText,
        disagree == 0 ? std::string()
                      : fmt::format("; {} disagree (not used), e.g. {}", disagree, first));
}

}  // namespace

void write_explain_markdown(const ExplainSection& s, const Warnings& warnings, std::ostream& out) {
    out << "# explain: " << s.model_path << "\n\n";
    out << fmt::format(
        "a {}-token prompt and {} generated tokens · the bench with {} threads · {} round(s)",
        s.n_prompt, s.n_gen, s.n_threads, s.rounds);
    out << " · " << s.server_kind << " "
        << (s.url ? "at " + *s.url : std::string("started by stagebench"));
    if (!s.server_args.empty()) {
        std::string a;
        for (const auto& x : s.server_args)
            a += (a.empty() ? "" : " ") + x;
        out << " (--server-args \"" << a << "\")";
    }
    out << "\n";
    if (s.interrupted)
        out << "\ninterrupted: the numbers are of the rounds that ran\n";
    if (!s.verdicts.empty()) {
        out << "\n## Verdict\n\n";
        for (const auto& v : s.verdicts)
            out << "- " << v << "\n";
    }
    for (const char* stage : {"prefill", "decode"})
        write_stage(s, stage, out);

    out << "\n## Settings: the bench against the server\n\n"
        << "| setting | bench | server | the server's value from | measured alone at level 2 "
           "|\n"
        << "| --- | --- | --- | --- | --- |\n";
    for (const auto& set : s.settings) {
        std::string alone;
        if (set.measure) {
            for (const char* stage : {"prefill", "decode"})
                for (const auto& p : s.parts)
                    if (p.stage == stage && p.kind == "setting" && p.name == set.name)
                        alone += fmt::format("{}{} {} {}", alone.empty() ? "" : "; ", stage,
                                             signed_ms(p.ns), ci(p.ci95_lo_ns, p.ci95_hi_ns));
            if (alone.empty())
                alone = "measured, no time";
        } else if (set.server && !set.differs) {
            alone = "same";
        } else {
            alone = set.note;
        }
        out << "| " << cell(set.label) << " | " << cell(set.bench) << " | "
            << cell(set.server.value_or("-")) << " | "
            << cell(set.source.empty() ? "-" : set.source) << " | " << cell(alone) << " |\n";
    }

    if (!s.findings.empty()) {
        out << "\n## Findings\n\n";
        for (const auto& f : s.findings)
            out << "- " << f.message << "\n";
    }
    out << "\n## Levels\n\n";
    for (const auto& m : s.measures)
        out << "- " << m.id << ": " << m.what << "\n";
    out << "- chat template: " << s.chat_template << "\n";
    write_explain_server_claims(s, out);
    if (!s.notes.empty()) {
        out << "\n## Notes\n\n";
        for (const auto& n : s.notes)
            out << "- " << n << "\n";
    }
    for (const auto& w : warnings)
        out << "\nwarning: " << w.message << (w.hint.empty() ? "" : " (" + w.hint + ")") << "\n";
    out.flush();
}

}  // namespace sb
