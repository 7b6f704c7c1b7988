#include "report/modes_report.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "core/json_util.hpp"

namespace sb {

namespace {

std::string modes_ms(const std::optional<double>& ns) {
    return ns ? fmt::format("{:.3f} ms", *ns / 1e6) : std::string("-");
}

std::string modes_ci(const std::optional<double>& lo, const std::optional<double>& hi) {
    if (!lo || !hi)
        return "-";
    return fmt::format("{:.3f} … {:.3f} ms", *lo / 1e6, *hi / 1e6);
}

std::string modes_pct(const std::optional<double>& f) {
    return f ? fmt::format("{:.1f} %", *f * 100.0) : std::string("-");
}

std::string modes_cell(const std::string& s) {
    std::string o;
    for (char c : s) {
        if (c == '|')
            o += "\\|";
        else if (c == '\n')
            o += ' ';
        else
            o += c;
    }
    return o;
}

std::string env_text(const Mode& m) {
    if (m.log_path)
        return *m.log_path;
    if (m.env.empty())
        return "(as inherited)";
    std::string s;
    for (const auto& e : m.env)
        s += (s.empty() ? "" : ", ") + e.name + "=" + e.value;
    return s;
}

}  // namespace

void write_modes_markdown(const ModesSection& s, std::ostream& out) {
    out << "# Pipeline modes: " << s.model_path << "\n\n";
    if (s.source == "processes")
        out << s.modes.size() << " modes, " << s.rounds << " round(s), each run a fresh process"
            << " · " << s.devices << " · " << s.n_prompt << " prompt token(s), " << s.n_gen
            << " generated · " << (s.n_threads > 0 ? std::to_string(s.n_threads) : "default")
            << " threads\n";
    else
        out << s.modes.size() << " imported " << s.source << " logs, one per mode\n";
    out << "\nStage time: " << s.time_basis << ".\n";
    const std::string last = s.modes.empty() ? "" : s.modes.back().name;
    for (size_t si = 0; si < s.stages.size(); ++si) {
        const std::string& stage = s.stages[si];
        out << "\n## " << stage << "\n\n";
        out << "| mode | environment | runs | stage time | 95 % CI | part | part time | 95 % CI "
               "| share of "
            << modes_cell(last) << " |\n";
        out << "| --- | --- | ---: | ---: | --- | --- | ---: | --- | ---: |\n";
        for (size_t i = 0; i < s.modes.size(); ++i) {
            const Mode& m = s.modes[i];
            const ModeStageTime* t = si < m.times.size() ? &m.times[si] : nullptr;
            const ModePart* p = nullptr;
            for (const auto& q : s.parts)
                if (q.stage == stage && q.name == m.name)
                    p = &q;
            std::string part_name = m.name;
            if (p && p->from)
                part_name += " − " + *p->from;
            out << "| " << modes_cell(m.name) << " | " << modes_cell(env_text(m)) << " | "
                << (t ? std::to_string(t->n) : "0")
                << (m.n_failed ? fmt::format(" ({} failed)", m.n_failed) : std::string()) << " | "
                << modes_ms(t ? t->median_ns : std::nullopt) << " | "
                << (t ? modes_ci(t->ci95_lo_ns, t->ci95_hi_ns) : "-") << " | "
                << modes_cell(part_name) << " | " << modes_ms(p ? p->ns : std::nullopt) << " | "
                << (p ? modes_ci(p->ci95_lo_ns, p->ci95_hi_ns) +
                            (p->no_difference ? " (no difference)" : "")
                      : std::string("-"))
                << " | " << modes_pct(p ? p->share : std::nullopt) << " |\n";
        }
        for (const auto& p : s.parts)
            if (p.stage == stage && !p.note.empty() && (!p.ns || *p.ns < 0))
                out << "\n- " << modes_cell(p.name) << ": " << p.note;
        out << "\n";
    }
    out << "\n## Runs, in the order they ran\n\n| # | round | mode |";
    for (const auto& st : s.stages)
        out << " " << st << " |";
    out << " threads | environment seen | error |\n| ---: | ---: | --- |";
    for (size_t i = 0; i < s.stages.size(); ++i)
        out << " ---: |";
    out << " ---: | --- | --- |\n";
    std::vector<std::pair<const Mode*, const ModeRun*>> runs;
    for (const auto& m : s.modes)
        for (const auto& r : m.runs)
            runs.emplace_back(&m, &r);
    std::sort(runs.begin(), runs.end(),
              [](const auto& a, const auto& b) { return a.second->sequence < b.second->sequence; });
    for (const auto& [m, r] : runs) {
        out << "| " << r->sequence << " | " << r->round << " | " << modes_cell(m->name) << " |";
        for (const auto& st : s.stages) {
            auto it = r->stage_ns.find(st);
            out << " "
                << (it == r->stage_ns.end() ? std::string("-")
                                            : modes_ms(std::optional<double>(it->second)))
                << " |";
        }
        std::string seen;
        if (r->env_seen.is_object())
            for (const auto& [k, v] : r->env_seen.items())
                seen += (seen.empty() ? "" : ", ") + k + "=" +
                        (v.is_string() ? v.get<std::string>() : v.dump());
        out << " " << (r->n_threads ? std::to_string(*r->n_threads) : "-") << " | "
            << modes_cell(seen.empty() ? "-" : seen) << " | " << modes_cell(r->error.value_or(""))
            << " |\n";
    }
    if (!s.notes.empty()) {
        out << "\n";
        for (const auto& n : s.notes)
            out << "- " << n << "\n";
    }
    out.flush();
}

const FieldTable<ModeRunRow>& mode_run_fields() {
    using R = ModeRunRow;
    static const FieldTable<ModeRunRow> table = {
        {"mode", [](const R& r) { return FieldValue(r.mode->name); }},
        {"round", [](const R& r) { return FieldValue(int64_t{r.run->round}); }},
        {"sequence", [](const R& r) { return FieldValue(int64_t{r.run->sequence}); }},
        {"stage", [](const R& r) { return FieldValue(*r.stage); }},
        {"ns",
         [](const R& r) {
             const auto it = r.run->stage_ns.find(*r.stage);
             return it == r.run->stage_ns.end() ? FieldValue() : FieldValue(it->second);
         },
         "{:.0f}"},
        {"exit_code",
         [](const R& r) {
             return r.run->exit_code ? FieldValue(int64_t{*r.run->exit_code}) : FieldValue();
         }},
        {"error", [](const R& r) { return FieldValue(r.run->error.value_or("")); }}};
    return table;
}

void write_modes_csv(const ModesSection& s, std::ostream& out) {
    write_csv_header(out, mode_run_fields());
    for (const auto& m : s.modes)
        for (const auto& r : m.runs)
            for (const auto& st : s.stages)
                write_csv_row(out, mode_run_fields(), ModeRunRow{&m, &r, &st});
    out.flush();
}

void print_modes_document(const ResultDocument& doc, OutputFormat format, std::ostream& out) {
    if (format != OutputFormat::md && format != OutputFormat::csv && format != OutputFormat::json)
        throw usage_error("output format must be md, csv or json, not '" + to_string(format) + "'");
    if (format == OutputFormat::json) {
        out << dump_json(to_json(doc), 2) << "\n";
        out.flush();
        return;
    }
    const std::optional<ModesSection> s = doc.modes;
    if (!s) {
        // nothing measured
    } else if (format == OutputFormat::csv) {
        write_modes_csv(*s, out);
    } else {
        write_modes_markdown(*s, out);
        if (!doc.warnings.empty()) {
            out << "\n### Warnings\n\n";
            for (const auto& w : doc.warnings)
                out << "- " << w.message << (w.hint.empty() ? "" : " (" + w.hint + ")") << "\n";
        }
    }
    out.flush();
}

}  // namespace sb
