#include "report/compare_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "core/error.hpp"
#include "core/json_util.hpp"
#include "report/gate_report.hpp"

namespace sb {

namespace {

std::string num(const std::optional<double>& v, const char* f = "{:.2f}") {
    return v ? fmt::format(fmt::runtime(f), *v) : std::string("-");
}

std::string pct(const std::optional<double>& v) {
    return v ? fmt::format("{:.1f}%", *v * 100) : std::string("-");
}

std::string stage_label(const CompareRow& r) {
    // Serve documents (analysis/serve_compare.hpp).
    if (r.metric == "output_tokens_per_s")
        return "output tok/s";
    if (r.metric == "request_per_s")
        return "req/s";
    if (r.metric == "goodput_per_s")
        return "goodput req/s";
    if (r.metric == "median_ms" || r.metric == "p99_ms") {
        std::string stage = r.stage;
        for (auto& c : stage)
            c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        return stage + (r.metric == "median_ms" ? " median ms" : " p99 ms");
    }
    if (r.stage == "ttft")
        return "TTFT ms";
    if (r.metric == "j_per_token")
        return r.stage + " J/token";
    if (r.metric == "net_j_per_token")
        return r.stage + " net J/token";
    if (r.metric == "mean_power_mw")
        return r.stage + " mean W";
    if (r.metric == "energy_j")
        return r.stage + " J";
    if (r.metric == "drain_pct")
        return "battery drain %";
    if (r.metric == "drain_pct_per_h")
        return "battery drain %/h";
    if (r.metric == "e2e_s")
        return "E2E s";
    if (r.metric == "combined_tps")
        return "combined t/s";
    if (r.metric == "op_total_us")
        return r.stage + " Σ op µs";
    if (r.metric == "call_total_us")
        return r.stage + " Σ call µs";
    if (r.metric == "call_per_op_total")
        return r.stage + " Σ call / Σ op";
    if (r.metric == "op_us")
        return r.stage + " op µs";
    if (r.metric == "fallback_us")
        return r.stage + " fallback µs";
    if (r.metric == "call_us")
        return r.stage + " call µs";
    if (r.metric == "call_per_op")
        return r.stage + " call/op";
    if (r.metric == "kl_mean")
        return r.stage + " KL mean";
    if (r.metric == "kl_p99")
        return r.stage + " KL p99";
    if (r.metric == "top1_agreement")
        return r.stage + " top-1 %";
    return r.stage + " t/s";
}

// A side's median as the table shows it: energy per token with four significant digits (a
// small model spends millijoules), power in watts.
std::string median_text(const CompareRow& r, const std::optional<double>& v) {
    if (!v)
        return "-";
    if (r.metric == "j_per_token" || r.metric == "net_j_per_token" || r.metric == "energy_j")
        return fmt::format("{:.4g}", *v);
    if (r.metric == "drain_pct" || r.metric == "drain_pct_per_h" || r.metric == "e2e_s")
        return fmt::format("{:.4g}", *v);
    if (r.metric == "mean_power_mw")
        return fmt::format("{:.2f}", *v / 1e3);
    if (r.metric == "kl_mean" || r.metric == "kl_p99")  // nats; 0 for the reference itself
        return fmt::format("{:.3g}", *v);
    if (r.metric == "top1_agreement")
        return fmt::format("{:.1f}", *v * 100);
    return fmt::format("{:.2f}", *v);
}

// A side's value with the median's interval ("1234.50 [1220.00, 1250.00]"), or a total
// ("Σ 1600.00").
std::string side_text(const CompareRow& r, const CompareSide& s) {
    if (s.total)
        return "Σ " + median_text(r, s.total);
    std::string t = median_text(r, s.median);
    if (s.median_ci_low && s.median_ci_high)
        t += " [" + median_text(r, s.median_ci_low) + ", " + median_text(r, s.median_ci_high) + "]";
    return t;
}

// The robust rate with its interval, "-" without one.
std::string robust_text(const std::optional<CompareRobust>& x) {
    if (!x || !x->tokens_per_s)
        return "-";
    std::string t = fmt::format("{:.2f}", *x->tokens_per_s);
    if (x->ci_low && x->ci_high)
        t += fmt::format(" [{:.2f}, {:.2f}]", *x->ci_low, *x->ci_high);
    return t;
}

// "3/640 tokens", "-" without a count.
std::string stalls_text(const std::optional<CompareRobust>& x) {
    if (!x || x->of == 0)
        return "-";
    return fmt::format("{}/{} {}", x->stalls, x->of, x->unit);
}

const CompareSide* side_of(const CompareRow& r, const std::string& label) {
    for (const auto& s : r.sides)
        if (s.label == label)
            return &s;
    return nullptr;
}

const CompareRatio* ratio_of(const CompareRow& r, const std::string& label) {
    for (const auto& q : r.ratios)
        if (q.label == label)
            return &q;
    return nullptr;
}

FieldValue real(const std::optional<double>& v) {
    return v ? FieldValue(*v) : FieldValue();
}

FieldValue count(std::size_t n) {
    return static_cast<int64_t>(n);
}

FieldValue text_of(const std::optional<std::string>& v) {
    return v ? FieldValue(*v) : FieldValue();
}

// A field of a side's robust record, absent without one.
template <class F>
FieldValue robust_field(const CompareSide& s, F f) {
    return s.robust ? f(*s.robust) : FieldValue();
}

}  // namespace

std::string differs_text(const CompareRow& r) {
    std::string s;
    for (const auto& [name, vals] : r.differs) {
        std::string v;
        for (const auto& x : vals)
            v += (v.empty() ? "" : " / ") + compare_value_text(x);
        s += (s.empty() ? "" : "; ") + name + ": " + v;
    }
    return s;
}

const FieldTable<CompareSideRow>& compare_fields() {
    using R = CompareSideRow;
    auto base = [](const R& r) -> const CompareSide& { return r.row->sides.front(); };
    auto side = [](const R& r) -> const CompareSide& { return r.row->sides[r.side]; };
    auto ratio = [](const R& r) -> const CompareRatio& { return r.row->ratios[r.side - 1]; };
    static const FieldTable<CompareSideRow> table = {
        {"test", [](const R& r) { return FieldValue(r.row->test); }},
        {"key", [](const R& r) { return FieldValue(r.row->key); }},
        {"stage", [](const R& r) { return FieldValue(r.row->stage); }},
        {"metric", [](const R& r) { return FieldValue(r.row->metric); }},
        {"higher_is_better", [](const R& r) { return FieldValue(r.row->higher_is_better); }},
        {"baseline", [base](const R& r) { return FieldValue(base(r).label); }},
        {"baseline_median", [base](const R& r) { return real(base(r).median); }},
        {"baseline_cv", [base](const R& r) { return real(base(r).cv); }},
        {"baseline_n", [base](const R& r) { return count(base(r).n); }},
        {"label", [side](const R& r) { return FieldValue(side(r).label); }},
        {"median", [side](const R& r) { return real(side(r).median); }},
        {"cv", [side](const R& r) { return real(side(r).cv); }},
        {"n", [side](const R& r) { return count(side(r).n); }},
        {"ratio", [ratio](const R& r) { return real(ratio(r).median); }},
        {"ci_low", [ratio](const R& r) { return real(ratio(r).ci_low); }},
        {"ci_high", [ratio](const R& r) { return real(ratio(r).ci_high); }},
        {"verdict", [ratio](const R& r) { return FieldValue(ratio(r).verdict); }},
        {"differs", [](const R& r) { return FieldValue(differs_text(*r.row)); }},
        // Added after the first columns, so that those keep their places.
        {"baseline_median_ci_low", [base](const R& r) { return real(base(r).median_ci_low); }},
        {"baseline_median_ci_high", [base](const R& r) { return real(base(r).median_ci_high); }},
        {"baseline_total", [base](const R& r) { return real(base(r).total); }},
        {"median_ci_low", [side](const R& r) { return real(side(r).median_ci_low); }},
        {"median_ci_high", [side](const R& r) { return real(side(r).median_ci_high); }},
        {"total", [side](const R& r) { return real(side(r).total); }},
        {"baseline_robust_tokens_per_s",
         [base](const R& r) {
             return robust_field(base(r),
                                 [](const CompareRobust& x) { return real(x.tokens_per_s); });
         }},
        {"baseline_robust_ci_low",
         [base](const R& r) {
             return robust_field(base(r), [](const CompareRobust& x) { return real(x.ci_low); });
         }},
        {"baseline_robust_ci_high",
         [base](const R& r) {
             return robust_field(base(r), [](const CompareRobust& x) { return real(x.ci_high); });
         }},
        {"baseline_stalls",
         [base](const R& r) {
             return robust_field(base(r), [](const CompareRobust& x) { return count(x.stalls); });
         }},
        {"baseline_stalls_of",
         [base](const R& r) {
             return robust_field(base(r), [](const CompareRobust& x) { return count(x.of); });
         }},
        {"robust_tokens_per_s",
         [side](const R& r) {
             return robust_field(side(r),
                                 [](const CompareRobust& x) { return real(x.tokens_per_s); });
         }},
        {"robust_ci_low",
         [side](const R& r) {
             return robust_field(side(r), [](const CompareRobust& x) { return real(x.ci_low); });
         }},
        {"robust_ci_high",
         [side](const R& r) {
             return robust_field(side(r), [](const CompareRobust& x) { return real(x.ci_high); });
         }},
        {"stalls",
         [side](const R& r) {
             return robust_field(side(r), [](const CompareRobust& x) { return count(x.stalls); });
         }},
        {"stalls_of",
         [side](const R& r) {
             return robust_field(side(r), [](const CompareRobust& x) { return count(x.of); });
         }},
        {"stalls_unit",
         [side](const R& r) {
             return robust_field(side(r),
                                 [](const CompareRobust& x) { return FieldValue(x.unit); });
         }},
        {"op", [](const R& r) { return text_of(r.row->op); }},
        {"role",
         [](const R& r) {
             return r.row->signature ? FieldValue(r.row->signature->role) : FieldValue();
         }},
        {"shape",
         [](const R& r) {
             return r.row->signature ? FieldValue(r.row->signature->shape) : FieldValue();
         }},
        {"fused", [](const R& r) { return text_of(r.row->fused); }}};
    return table;
}

void write_compare_markdown(std::ostream& out, const CompareResult& r) {
    out << "| input | source | command | host | cpu | started |\n"
        << "| --- | --- | --- | --- | --- | --- |\n";
    for (const auto& i : r.inputs)
        out << "| " << i.label << " | " << i.source << " | " << i.command.value_or("-") << " | "
            << i.host.value_or("-") << " | " << i.cpu.value_or("-") << " | "
            << i.started_at.value_or("-") << " |\n";
    out << "\n";
    // How tests met, when not by the default workload.
    if ((!r.match.empty() && r.match != kCompareDefaultMatch) || !r.model_alias.empty()) {
        std::string m;
        for (const auto& f : r.match)
            m += (m.empty() ? "" : ", ") + f;
        out << "Matched by: " << m;
        for (const auto& [name, alias] : r.model_alias)
            out << "; model " << name << " as " << alias;
        out << "\n\n";
    }

    if (r.rows.empty()) {
        out << "No test matched between the inputs.\n";
    } else {
        const std::string base = r.inputs.front().label;
        // The robust rate and stalls only where a row has them (run and demo documents).
        const bool robust = std::any_of(r.rows.begin(), r.rows.end(), [](const CompareRow& row) {
            return std::any_of(row.sides.begin(), row.sides.end(),
                               [](const CompareSide& s) { return s.robust.has_value(); });
        });
        out << "| test | stage";
        std::string align = "| --- | ---";
        for (const auto& i : r.inputs) {
            out << " | " << i.label << " median [95% CI] | CV " << i.label;
            align += " | ---: | ---:";
        }
        out << " | n";
        align += " | ---:";
        if (robust)
            for (const auto& i : r.inputs) {
                out << " | " << i.label << " robust t/s [95% CI] | stalls " << i.label;
                align += " | ---: | ---:";
            }
        for (std::size_t k = 1; k < r.inputs.size(); ++k) {
            out << " | " << r.inputs[k].label << "/" << base << " | 95% CI | verdict";
            align += " | ---: | --- | ---";
        }
        out << " | differs |\n" << align << " | --- |\n";
        for (const auto& row : r.rows) {
            out << "| " << row.test << (row.fused ? " (fused; " + *row.fused + ")" : "") << " | "
                << stage_label(row);
            std::string n;
            for (const auto& i : r.inputs) {
                const CompareSide* s = side_of(row, i.label);
                out << " | " << (s ? side_text(row, *s) : "-") << " | " << (s ? pct(s->cv) : "-");
                n += (n.empty() ? "" : " / ") + (s ? std::to_string(s->n) : std::string("-"));
            }
            out << " | " << n;
            if (robust)
                for (const auto& i : r.inputs) {
                    const CompareSide* s = side_of(row, i.label);
                    out << " | " << robust_text(s ? s->robust : std::nullopt) << " | "
                        << stalls_text(s ? s->robust : std::nullopt);
                }
            for (std::size_t k = 1; k < r.inputs.size(); ++k) {
                const CompareRatio* q = ratio_of(row, r.inputs[k].label + "/" + base);
                if (!q) {
                    out << " | - | - | -";
                    continue;
                }
                const std::string ci =
                    q->ci_low ? fmt::format("[{:.3f}, {:.3f}]", *q->ci_low, *q->ci_high) : "-";
                out << " | " << num(q->median, "{:.3f}") << " | " << ci << " | " << q->verdict;
            }
            out << " | " << differs_text(row) << " |\n";
        }
    }
    if (!r.unmatched.empty()) {
        out << "\nUnmatched:";
        for (const auto& u : r.unmatched)
            out << " " << u.label << " " << u.test << (u.why.empty() ? "" : " (" + u.why + ")")
                << (&u == &r.unmatched.back() ? "" : ";");
        out << "\n";
    }
    if (!r.notes.empty()) {
        out << "\n";
        for (const auto& n : r.notes)
            out << "- " << n << "\n";
    }
    write_gates_markdown(out, r.gates);
}

void write_compare_csv(std::ostream& out, const CompareResult& r) {
    write_csv_header(out, compare_fields());
    for (const auto& row : r.rows)
        for (std::size_t k = 1; k < row.sides.size(); ++k)
            write_csv_row(out, compare_fields(), CompareSideRow{&row, k});
}

void write_compare(std::ostream& out, const CompareResult& r, OutputFormat format) {
    switch (format) {
        case OutputFormat::md:
            write_compare_markdown(out, r);
            return;
        case OutputFormat::csv:
            write_compare_csv(out, r);
            return;
        case OutputFormat::json:
            out << dump_json(to_json(r), 2) << "\n";
            return;
        case OutputFormat::jsonl:
        case OutputFormat::html:
            break;
    }
    throw usage_error("-o must be md, csv or json, not '" + to_string(format) + "'");
}

}  // namespace sb
