#include "report/reporter.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "core/error.hpp"
#include "core/json_util.hpp"
#include "report/fidelity_report.hpp"
#include "report/hybrid_report.hpp"
#include "report/serve_report.hpp"
#include "report/sustained_report.hpp"

namespace sb {
namespace {

using nlohmann::json;

std::string model_name(const ResultDocument& doc, const std::string& path) {
    if (const auto m = model_of(doc, path)) {
        // A GGUF without general.name (null in the document) is shown by its file name.
        std::string n = m->name.value_or(std::filesystem::path(path).filename().string());
        if (m->synthetic && n.find("synthetic") == std::string::npos)
            n += " (synthetic)";
        return n;
    }
    return path;
}

std::string human_bytes(double b) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    while (b >= 1024 && i < 4) {
        b /= 1024;
        ++i;
    }
    return fmt::format("{:.2f} {}", b, units[i]);
}

std::string num(const std::optional<double>& v, const char* f = "{:.2f}") {
    return v ? fmt::format(fmt::runtime(f), *v) : std::string("-");
}

std::string stage_test(const TestConfig& c, bool decode) {
    std::string s = decode ? "tg" + std::to_string(c.n_gen) : "pp" + std::to_string(c.n_prompt);
    const int depth = decode ? c.n_depth + c.n_prompt : c.n_depth;
    if (depth > 0)
        s += " @ d" + std::to_string(depth);
    return s;
}

class MarkdownReporter : public Reporter {
  public:
    explicit MarkdownReporter(std::ostream& out) : out_(out) {}
    void begin(const ResultDocument&) override {
        out_ << "| model | size | params | devices | threads | test | t/s | ± sd | CV % | "
                "robust t/s | stalls | median ms | ITL p50 ms | ITL p99 ms |\n"
             << "| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
                "| ---: | ---: |\n";
        out_.flush();
    }
    void test_done(const ResultDocument& doc, const TestResult& t) override {
        const TestConfig& c = t.config;
        std::string size = "-", params = "-";
        if (const auto m = model_of(doc, c.model_path)) {
            if (m->file_bytes)
                size = human_bytes(static_cast<double>(*m->file_bytes));
            if (m->n_params) {
                const double p = static_cast<double>(*m->n_params);
                params =
                    p >= 1e9 ? fmt::format("{:.2f} B", p / 1e9) : fmt::format("{:.2f} M", p / 1e6);
            }
        }
        // 0 only for a server stagebench did not start: its threads are its own.
        const std::string threads = c.n_threads > 0 ? std::to_string(c.n_threads) : "server's";
        const std::string lead =
            fmt::format("| {} | {} | {} | {} | {} ", model_name(doc, c.model_path), size, params,
                        c.devices.str(), threads);
        if (t.status == Status::failed && !t.prefill && !t.decode) {
            out_ << lead << "| " << c.test_name() << " | FAILED: " << t.error.value_or("")
                 << " | | | | | | | |\n";
            out_.flush();
            return;
        }
        // Robust: the median-based rate and its CI half-width; stalls: slow repetitions of
        // prefill, stalled tokens of decode (count of samples).
        auto row = [&](const StageResult& s, bool decode, const Summary* itl, const Stalls& st) {
            const double ms = 1e-6;
            std::string robust = num(s.robust.tokens_per_s);
            if (s.robust.ci95_half_rel)
                robust += fmt::format(" ± {:.1f} %", *s.robust.ci95_half_rel * 100);
            const std::string stalls =
                fmt::format("{}/{} {}", st.count(), st.n, decode ? "tokens" : "reps");
            out_ << lead << "| " << stage_test(c, decode) << " | " << num(s.throughput.mean)
                 << " | " << num(s.throughput.stddev) << " | "
                 << (s.throughput.cv ? fmt::format("{:.2f}", *s.throughput.cv * 100) : "-") << " | "
                 << robust << " | " << stalls << " | "
                 << (s.duration.median ? fmt::format("{:.2f}", *s.duration.median * ms) : "-")
                 << " | " << (itl && itl->median ? fmt::format("{:.3f}", *itl->median * ms) : "-")
                 << " | " << (itl && itl->p99 ? fmt::format("{:.3f}", *itl->p99 * ms) : "-")
                 << " |\n";
        };
        if (t.prefill)
            row(*t.prefill, false, nullptr, t.prefill->stalls);
        if (t.decode)
            row(*t.decode, true, &t.decode->itl, t.decode->token_stalls);
        if (t.status != Status::ok)
            out_ << lead << "| " << c.test_name() << " | " << to_string(t.status) << ": "
                 << t.error.value_or("") << " | | | | | | | |\n";
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
                out_ << "| " << t.config.test_name() << " | " << t.config.devices.str() << " | "
                     << (t.ttft.median ? fmt::format("{:.2f}", *t.ttft.median * 1e-6) : "-")
                     << " | " << num(t.roofline.decode_bandwidth_gbps) << " | "
                     << (t.roofline.decode_bandwidth_fraction
                             ? fmt::format("{:.0f} %", *t.roofline.decode_bandwidth_fraction * 100)
                             : "-")
                     << " | " << num(t.roofline.prefill_gflops, "{:.1f}") << " |\n";
            }
        }
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
                    out_ << "| " << t.config.test_name() << " | " << t.config.devices.str() << " | "
                         << stage << " | " << med(s.j_per_token, 1, "{:.4f}") << " | "
                         << med(s.net_j_per_token, 1, "{:.4f}") << " | "
                         << med(s.mean_power_mw, 1e-3, "{:.2f}") << " | "
                         << s.total_metric.value_or("-") << " |\n";
                }
            }
        }
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
                    "| {} | {} | {}/{} | {} ", t.config.test_name(), t.config.devices.str(),
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
    std::ostream& out_;
};

// One row per measured stage; numbers unformatted (full precision, '.' decimal point).
class CsvReporter : public Reporter {
  public:
    explicit CsvReporter(std::ostream& out) : out_(out) {}
    void begin(const ResultDocument&) override {
        out_ << "model_path,devices,n_threads,n_batch,n_ubatch,n_depth,flash_attn,type_k,type_v,"
                "test,stage,n_tokens,reps,status,tokens_per_s_mean,tokens_per_s_stddev,"
                "tokens_per_s_cv,tokens_per_s_ci95_lo,tokens_per_s_ci95_hi,duration_ns_median,"
                "itl_ns_p50,itl_ns_p90,itl_ns_p99,robust_tokens_per_s,robust_ci95_lo,"
                "robust_ci95_hi,stalled_reps,stalled_reps_excess_ns,stalled_tokens,"
                "stalled_tokens_excess_ns,error,kl_mean,kl_p99,kl_max,top1_agreement,"
                "topk_overlap,max_abs_logit_error\n";
    }
    void test_done(const ResultDocument&, const TestResult& t) override {
        const TestConfig& c = t.config;
        auto v = [](const std::optional<double>& x) {
            return x ? fmt::format("{}", *x) : std::string();
        };
        auto quote = [](std::string s) {
            std::string q = "\"";
            for (char ch : s)
                q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
            return q + "\"";
        };
        auto row = [&](const char* stage, const StageResult* s, const Summary* itl,
                       const Stalls* tokens) {
            out_ << quote(c.model_path) << ',' << quote(c.devices.str()) << ',' << c.n_threads
                 << ',' << c.n_batch << ',' << c.n_ubatch << ',' << c.n_depth << ','
                 << to_string(c.flash_attn) << ',' << to_string(c.type_k) << ','
                 << to_string(c.type_v) << ',' << quote(c.test_name()) << ',' << stage << ','
                 << (s ? s->n_tokens : 0) << ',' << t.reps_done << ',' << to_string(t.status) << ','
                 << (s ? v(s->throughput.mean) : "") << ',' << (s ? v(s->throughput.stddev) : "")
                 << ',' << (s ? v(s->throughput.cv) : "") << ','
                 << (s ? v(s->throughput.ci95_lo) : "") << ','
                 << (s ? v(s->throughput.ci95_hi) : "") << ',' << (s ? v(s->duration.median) : "")
                 << ',' << (itl ? v(itl->median) : "") << ',' << (itl ? v(itl->p90) : "") << ','
                 << (itl ? v(itl->p99) : "") << ',' << (s ? v(s->robust.tokens_per_s) : "") << ','
                 << (s ? v(s->robust.ci95_lo) : "") << ',' << (s ? v(s->robust.ci95_hi) : "") << ','
                 << (s ? std::to_string(s->stalls.count()) : "") << ','
                 << (s ? v(s->stalls.excess) : "") << ','
                 << (tokens ? std::to_string(tokens->count()) : "") << ','
                 << (tokens ? v(tokens->excess) : "") << ',' << quote(t.error.value_or(""));
            // --fidelity: the stage's distance from the reference (empty without).
            const std::optional<StageFidelity>* f = nullptr;
            if (t.fidelity && s)
                f = t.prefill && s == &*t.prefill ? &t.fidelity->prefill : &t.fidelity->decode;
            if (f && *f) {
                const StageFidelity& d = **f;
                out_ << fmt::format(",{},{},{},{},{},{}\n", d.kl_mean, d.kl_p99, d.kl_max,
                                    d.top1_agreement, d.topk_overlap, d.max_abs);
            } else {
                out_ << ",,,,,,\n";
            }
        };
        if (t.prefill)
            row("prefill", &*t.prefill, nullptr, nullptr);
        if (t.decode)
            row("decode", &*t.decode, &t.decode->itl, &t.decode->token_stalls);
        if (!t.prefill && !t.decode)
            row("none", nullptr, nullptr, nullptr);
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
    if (format == OutputFormat::md && doc.fidelity) {
        write_fidelity_markdown(out, *doc.fidelity);
    } else if (format == OutputFormat::md && doc.hybrid) {
        write_hybrid_markdown(doc, out);
    } else if (format == OutputFormat::md && doc.serve) {
        write_serve_markdown(*doc.serve, doc.warnings, out);
    } else if (format == OutputFormat::md && doc.sustained) {
        write_sustained_markdown(*doc.sustained, doc.warnings, out);
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
