#include "report/reporter.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/json_util.hpp"
#include "report/explain_report.hpp"
#include "report/fidelity_report.hpp"
#include "report/hybrid_report.hpp"
#include "report/memory_report.hpp"
#include "report/serve_report.hpp"
#include "report/stage_fields.hpp"
#include "report/sustained_report.hpp"

namespace sb {
namespace {

using nlohmann::json;

std::string reporter_num(const std::optional<double>& v, const char* f = "{:.2f}") {
    return v ? fmt::format(fmt::runtime(f), *v) : std::string("-");
}

class MarkdownReporter : public Reporter {
  public:
    explicit MarkdownReporter(std::ostream& out) : out_(out) {}
    void plan(const std::vector<TestConfig>& tests) override { planned_ = tests; }
    void begin(const ResultDocument& doc) override {
        std::vector<TestConfig> tests = planned_;
        for (const auto& t : doc.tests)
            tests.push_back(t.config);
        fields_ = markdown_stage_fields(tests);
        ngl_varies_ = false;
        for (const auto& f : fields_)
            ngl_varies_ |= f.name == "n_gpu_layers" && f.markdown.has_value();
        write_markdown_header(out_, fields_);
        out_.flush();
    }
    // The battery's drain over each test, where a battery was read (nothing without one).
    void write_battery_table(const ResultDocument& doc) {
        bool any = false;
        for (const auto& t : doc.tests)
            any |= t.telemetry && t.telemetry->battery;
        if (!any)
            return;
        out_ << "\n| test | devices | battery drain % | drain %/h | from | capacity % | "
                "capacity %/h | s |\n"
             << "| --- | --- | ---: | ---: | --- | ---: | ---: | ---: |\n";
        for (const auto& t : doc.tests) {
            if (!t.telemetry || !t.telemetry->battery)
                continue;
            const BatteryDrain& b = *t.telemetry->battery;
            out_ << "| " << t.config.test_name() << " | " << devices(t) << " | "
                 << reporter_num(b.drain_pct, "{:.3f}") << " | " << reporter_num(b.drain_pct_per_h)
                 << " | " << b.from << " | "
                 << (b.capacity_start_pct && b.capacity_end_pct
                         ? fmt::format("{:.0f} → {:.0f}", *b.capacity_start_pct,
                                       *b.capacity_end_pct)
                         : std::string("-"))
                 << " | " << reporter_num(b.capacity_drain_pct_per_h) << " | "
                 << fmt::format("{:.2f}", b.span_s) << " |\n";
        }
        out_ << "\nbattery drain: over each test, from its first measured stage's start to its "
                "last one's end, in % of a full charge; from a charge or energy counter against "
                "its full value where the battery has one (finer), else from the capacity "
                "(whole percent)\n";
    }

    void test_done(const ResultDocument& doc, const TestResult& t) override {
        if (t.status == Status::failed && !t.prefill && !t.decode) {
            message_row(doc, t, "FAILED: " + t.error.value_or(""));
            out_.flush();
            return;
        }
        for (const auto& row : stage_rows(doc, t))
            if (row.result)
                write_markdown_row(out_, fields_, row);
        if (t.status != Status::ok)
            message_row(doc, t, to_string(t.status) + ": " + t.error.value_or(""));
        out_.flush();
    }
    void end(const ResultDocument& doc) override {
        bool any_ttft = false;
        for (const auto& t : doc.tests)
            any_ttft |= t.ttft.median.has_value();
        if (any_ttft) {
            out_ << "\n| test | devices | TTFT median ms | decode GB/s | of machine | prefill "
                    "GFLOP/s |\n"
                 << "| --- | --- | ---: | ---: | ---: | ---: |\n";
            for (const auto& t : doc.tests) {
                out_ << "| " << t.config.test_name() << " | " << devices(t) << " | "
                     << (t.ttft.median ? fmt::format("{:.2f}", *t.ttft.median * 1e-6) : "-")
                     << " | " << reporter_num(t.roofline.decode_bandwidth_gbps) << " | "
                     << (t.roofline.decode_bandwidth_fraction
                             ? fmt::format("{:.0f} %", *t.roofline.decode_bandwidth_fraction * 100)
                             : "-")
                     << " | " << reporter_num(t.roofline.prefill_gflops, "{:.1f}") << " |\n";
            }
        }
        write_memory_markdown(doc, out_, [this](const TestResult& t) { return devices(t); });
        bool any_energy = false;
        for (const auto& t : doc.tests)
            any_energy |= t.telemetry && !t.telemetry->summary.empty();
        if (any_energy) {
            out_
                << "\n| test | devices | stage | J/token | net J/token | mean W | energy source |\n"
                << "| --- | --- | --- | ---: | ---: | ---: | --- |\n";
            auto med = [](const Summary& s, double scale, const char* f) {
                return s.median ? fmt::format(fmt::runtime(f), *s.median * scale)
                                : std::string("-");
            };
            for (const auto& t : doc.tests) {
                if (!t.telemetry)
                    continue;
                for (const auto& [stage, s] : t.telemetry->summary) {
                    out_ << "| " << t.config.test_name() << " | " << devices(t) << " | " << stage
                         << " | " << med(s.j_per_token, 1, "{:.4f}") << " | "
                         << med(s.net_j_per_token, 1, "{:.4f}") << " | "
                         << med(s.mean_power_mw, 1e-3, "{:.2f}") << " | "
                         << s.total_metric.value_or("-") << " |\n";
                }
            }
        }
        write_battery_table(doc);
        int top_k = 0;
        for (const auto& t : doc.tests)
            if (t.fidelity && !top_k)
                top_k = t.fidelity->top_k;
        if (top_k) {
            out_ << "\n| test | devices | KV | reference | stage | KL mean | KL p99 | KL max | "
                    "top-1 % | top-k % | max abs |\n"
                 << "| --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n";
            for (const auto& t : doc.tests) {
                if (!t.fidelity)
                    continue;
                const TestFidelity& f = *t.fidelity;
                const std::string lead = fmt::format(
                    "| {} | {} | {}/{} | {} ", t.config.test_name(), devices(t),
                    to_string(t.config.type_k), to_string(t.config.type_v), f.reference);
                if (f.error) {
                    out_ << lead << "| FAILED: " << *f.error << " | | | | | | |\n";
                    continue;
                }
                auto row = [&](const char* stage, const StageFidelity& s) {
                    out_ << lead
                         << fmt::format(
                                "| {} | {:.3g} | {:.3g} | {:.3g} | {:.1f} | {:.1f} | "
                                "{:.3g} |\n",
                                stage, s.kl_mean, s.kl_p99, s.kl_max, 100 * s.top1_agreement,
                                100 * s.topk_overlap, s.max_abs);
                };
                if (f.prefill)
                    row("prefill", *f.prefill);
                if (f.decode)
                    row("decode", *f.decode);
            }
            out_ << "\nfidelity: KL(reference || test) in nats over the teacher-forced sequence "
                    "(prefill: the prompt's last position; decode: each forced token), top-k "
                    "overlap with k = "
                 << top_k << "; captured untimed after each test's repetitions\n";
        }
        std::vector<std::string> notes;
        for (const auto& t : doc.tests)
            for (const auto& n : t.notes)
                if (std::find(notes.begin(), notes.end(), n) == notes.end())
                    notes.push_back(n);
        for (const auto& n : notes)
            out_ << "\nnote: " << n << "\n";
        for (const auto& w : doc.warnings)
            out_ << "\nwarning: " << w.message << (w.hint.empty() ? "" : " (" + w.hint + ")")
                 << "\n";
        out_.flush();
    }

  private:
    // A test's devices in the tables after the run table, with the layers offloaded where the
    // run's tests differ in them ("Vulkan0 (ngl 99)").
    std::string devices(const TestResult& t) const {
        return t.config.devices.str() +
               (ngl_varies_ ? " (ngl " + std::to_string(t.config.n_gpu_layers) + ")" : "");
    }

    // The test's leading columns (model to test name), the message, and empty cells for the
    // rest of the stage columns.
    void message_row(const ResultDocument& doc, const TestResult& t, const std::string& message) {
        const StageRow none{&doc, &t, "none"};
        std::vector<std::string> cells;
        std::size_t after = 0;
        bool past = false;
        for (const auto& f : fields_) {
            if (!f.markdown)
                continue;
            if (past) {
                ++after;
                continue;
            }
            cells.push_back(markdown_cell(f.markdown->text(none)));
            past = f.name == "stage_test";
        }
        cells.push_back(markdown_cell(message));
        out_ << '|';
        for (const auto& c : cells)
            out_ << ' ' << c << " |";
        for (std::size_t i = 1; i < after; ++i)
            out_ << " |";
        out_ << '\n';
    }

    std::ostream& out_;
    std::vector<TestConfig> planned_;
    FieldTable<StageRow> fields_ = stage_fields();
    bool ngl_varies_ = false;
};

// One row per measured stage (report/stage_fields.hpp); numbers unformatted (full precision, '.'
// decimal point).
class CsvReporter : public Reporter {
  public:
    explicit CsvReporter(std::ostream& out) : out_(out) {}
    void begin(const ResultDocument&) override { write_csv_header(out_, stage_fields()); }
    void test_done(const ResultDocument& doc, const TestResult& t) override {
        for (const auto& row : stage_rows(doc, t))
            write_csv_row(out_, stage_fields(), row);
        out_.flush();
    }

  private:
    std::ostream& out_;
};

class JsonReporter : public Reporter {
  public:
    explicit JsonReporter(std::ostream& out) : out_(out) {}
    void end(const ResultDocument& doc) override { out_ << dump_json(to_json(doc), 2) << '\n'; }

  private:
    std::ostream& out_;
};

class JsonlReporter : public Reporter {
  public:
    explicit JsonlReporter(std::ostream& out) : out_(out) {}
    void test_done(const ResultDocument&, const TestResult& t) override {
        out_ << dump_json(to_json(t)) << '\n';
        out_.flush();
    }

  private:
    std::ostream& out_;
};

}  // namespace

std::unique_ptr<Reporter> make_reporter(OutputFormat format, std::ostream& out) {
    switch (format) {
        case OutputFormat::md:
            return std::make_unique<MarkdownReporter>(out);
        case OutputFormat::csv:
            return std::make_unique<CsvReporter>(out);
        case OutputFormat::json:
            return std::make_unique<JsonReporter>(out);
        case OutputFormat::jsonl:
            return std::make_unique<JsonlReporter>(out);
        case OutputFormat::html:
            break;
    }
    throw usage_error("a result document is printed as md, csv, json or jsonl, not " +
                      to_string(format) + " (`stagebench report` writes HTML)");
}

void print_document(OutputFormat format, const ResultDocument& doc, std::ostream& out) {
    if (format == OutputFormat::md && doc.explain) {
        write_explain_markdown(*doc.explain, doc.warnings, out);
    } else if (format == OutputFormat::md && doc.fidelity) {
        write_fidelity_markdown(out, *doc.fidelity);
    } else if (format == OutputFormat::md && doc.hybrid) {
        write_hybrid_markdown(doc, out);
    } else if (format == OutputFormat::md && doc.serve) {
        write_serve_markdown(*doc.serve, doc.warnings, out);
    } else if (format == OutputFormat::md && doc.sustained) {
        write_sustained_markdown(*doc.sustained, out);
        if (write_memory_markdown(doc, out) && !doc.warnings.empty())
            out << "\n";
        write_sustained_warnings(doc.warnings, out);
    } else {
        auto r = make_reporter(format, out);
        r->begin(doc);
        for (const auto& t : doc.tests)
            r->test_done(doc, t);
        r->end(doc);
    }
    out.flush();
}

}  // namespace sb
