#include "report/ops_report.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "core/json_util.hpp"
#include "core/strings.hpp"
#include "profile/op_record.hpp"
#include "report/fields.hpp"

namespace sb {

namespace {

// What the load did to the weights' pages (ops --huge-pages), in one sentence.
std::string huge_pages_line(const HugePagesRecord& h) {
    if (!h.error.empty())
        return "Weights not advised onto transparent huge pages: " + h.error + ".";
    if (h.policy == "never")
        return "Weights on the kernel's base pages: its transparent huge pages are off "
               "(policy never).";
    if (h.policy == "unknown")
        return "Weights on the kernel's base pages: it has no transparent huge page policy to "
               "read.";
    if (h.advised_bytes == 0)
        return "Weights on the kernel's base pages: no buffer of 32 MiB or more to advise onto "
               "huge pages (policy " +
               h.policy + ").";
    return fmt::format(
        "Weights advised onto transparent huge pages as they loaded (policy {}): {:.0f} MiB in "
        "{} range(s); --huge-pages off loads them as llama.cpp does.",
        h.policy, static_cast<double>(h.advised_bytes) / (1 << 20), h.ranges);
}

std::string us(const std::optional<double>& ns) {
    if (!ns)
        return "-";
    const double v = *ns / 1000.0;
    if (v >= 100)
        return fmt::format("{:.0f}", v);
    if (v >= 10)
        return fmt::format("{:.1f}", v);
    return fmt::format("{:.2f}", v);
}

std::string ops_ms(const std::optional<double>& ns) {
    return ns ? fmt::format("{:.3f} ms", *ns / 1e6) : std::string("-");
}

std::string ops_pct(const std::optional<double>& f) {
    return f ? fmt::format("{:.1f} %", *f * 100.0) : std::string("-");
}

std::string ratio(const std::optional<double>& r) {
    if (!r)
        return "-";
    return *r >= 100 ? fmt::format("{:.0f}x", *r) : fmt::format("{:.1f}x", *r);
}

std::string bytes(const std::optional<uint64_t>& b) {
    if (!b)
        return "-";
    double v = static_cast<double>(*b);
    const char* units[] = {"B", "KiB", "MiB", "GiB"};
    int i = 0;
    while (v >= 1024 && i < 3) {
        v /= 1024;
        ++i;
    }
    return i == 0 ? fmt::format("{} B", *b) : fmt::format("{:.1f} {}", v, units[i]);
}

std::string md_cell(const std::string& s) {
    std::string o;
    for (char c : s) {
        if (c == '|')
            o += "\\|";
        else
            o += c;
    }
    return o;
}

void aggregate_table(std::ostream& out, const std::string& title, const std::string& key_name,
                     const std::vector<OpAggregate>& rows, bool have_stage) {
    if (rows.empty())
        return;
    out << "\n### " << title << "\n\n";
    out << "| " << key_name << " | count | op µs | call µs | call/op | "
        << (have_stage ? "op share of stage" : "op share") << " | call share |\n";
    out << "| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    for (const auto& a : rows) {
        std::string key = a.key;
        if (a.n_no_compute == a.count && a.count > 0)
            key += " (no compute)";
        out << "| " << md_cell(key) << " | " << a.count << " | " << us(a.op_ns) << " | "
            << us(a.call_ns) << " | " << ratio(a.call_op_ratio) << " | " << ops_pct(a.share)
            << " | " << ops_pct(a.call_share) << " |\n";
    }
}

void decomposition_table(const Decomposition& d, std::ostream& out) {
    std::string accel;
    for (const auto& a : d.accelerators)
        accel += (accel.empty() ? "" : "+") + a;
    out << "\n### Decomposition of the stage, probe model (accelerator path: " << accel << ")\n\n";
    out << "A probe: one no-work dispatch per split and a replay of the activation conversion, not "
           "the backend's own modes (for those: `decompose --mode`).\n\n";
    out << "| part | time | share of stage | how |\n| --- | ---: | ---: | --- |\n";
    for (const auto& part : d.parts) {
        std::string name = part.name;
        std::replace(name.begin(), name.end(), '_', ' ');
        out << "| " << name << " | " << ops_ms(part.ns) << " | " << ops_pct(part.share) << " | "
            << md_cell(part.note) << " |\n";
    }
    out << "\n";
    for (const auto& [b, ns] : d.dispatch_ns)
        out << "- one dispatch with no work on " << b << ": " << us(ns) << " µs\n";
    out << "- if each of the " << d.n_accel_ops
        << " accelerator ops were dispatched alone: " << ops_ms(d.per_op_dispatch_ns)
        << " of dispatch (traced node by node, call - op summed: " << ops_ms(d.traced_tax_ns)
        << ")\n";
}

// The trace events per op type (the study's Table V): each part's time and its share of the
// op's wall time, the kinds in the pipeline table's order, then the events no op holds.
void npu_op_table(const NpuPipeline& p, std::ostream& out) {
    if (p.by_op.empty() && !p.unattributed_ns)
        return;
    static const std::vector<std::string> known = {"activation_quantization",
                                                   "weight_preparation",
                                                   "attention_preparation",
                                                   "dma",
                                                   "compute",
                                                   "output_processing",
                                                   "other",
                                                   "untraced"};
    std::vector<std::string> cols;
    for (const auto& k : known)
        for (const auto& o : p.by_op)
            if (std::any_of(o.parts.begin(), o.parts.end(),
                            [&](const NpuPipelinePart& x) { return x.name == k; })) {
                cols.push_back(k);
                break;
            }
    for (const auto& o : p.by_op)
        for (const auto& x : o.parts)
            if (std::find(cols.begin(), cols.end(), x.name) == cols.end())
                cols.push_back(x.name);
    if (!p.by_op.empty()) {
        out << "\n#### Per op type (" << p.device
            << "): share of each op's wall time\n\n| op | nodes | wall time";
        std::string align = "| --- | ---: | ---:";
        for (const auto& c : cols) {
            std::string name = c;
            std::replace(name.begin(), name.end(), '_', ' ');
            out << " | " << name;
            align += " | ---:";
        }
        out << " |\n" << align << " |\n";
        for (const auto& o : p.by_op) {
            out << "| " << md_cell(o.op) << " | " << o.count << " | " << ops_ms(o.wall_ns);
            for (const auto& c : cols) {
                auto it = std::find_if(o.parts.begin(), o.parts.end(),
                                       [&](const NpuPipelinePart& x) { return x.name == c; });
                out << " | "
                    << (it == o.parts.end() ? std::string("-")
                                            : ops_ms(it->ns) + " (" + ops_pct(it->share) + ")");
            }
            out << " |\n";
        }
        out << "\nAn event belongs to the op whose window (its line's start and cycles) holds it "
               "from start to stop; within a node each kind is wall time over the threads, so "
               "kinds overlap and may add up to more than 100 %; untraced is the op's time with "
               "no event on any thread. The host's time is per batch, never per op: "
               "communication and queueing is in the table above.\n";
    }
    if (p.unattributed_ns)
        out << "\n"
            << p.n_unattributed << " trace event(s) (" << ops_ms(p.unattributed_ns)
            << " over threads) lie in no op's window: the batch's cache flushes and buffer "
               "set-up around its ops, an event across two ops, or events without a batch "
               "line; not attributed to any op.\n";
}

// An imported NPU profile's pipeline split, one table per session (never added up).
void npu_pipeline_table(const NpuPipeline& p, std::ostream& out) {
    out << "\n### The NPU's pipeline, from its own profile (" << p.device << ")\n\n";
    std::string line;
    auto add = [&](const std::string& x) { line += (line.empty() ? "" : " · ") + x; };
    if (p.host_batch_ns)
        add("host batch " + ops_ms(p.host_batch_ns));
    if (p.npu_batch_ns)
        add("NPU batch " + ops_ms(p.npu_batch_ns));
    if (p.ops_ns)
        add("ops " + ops_ms(p.ops_ns));
    add(std::to_string(p.n_batches) + " batch(es)");
    if (p.n_events > 0)
        add(std::to_string(p.n_events) + " trace events" +
            (p.n_unpaired > 0 ? " (" + std::to_string(p.n_unpaired) + " unpaired, not timed)"
                              : std::string()) +
            (p.n_no_clock > 0 ? " (" + std::to_string(p.n_no_clock) + " without a clock)"
                              : std::string()));
    if (p.traced_busy_ns)
        add("any event on any thread " + ops_ms(p.traced_busy_ns));
    out << line << "\n\n";
    if (p.parts.empty()) {
        npu_op_table(p, out);
        return;
    }
    out << "| part | time | share of " << (p.envelope.empty() ? "-" : p.envelope)
        << " | from |\n| --- | ---: | ---: | --- |\n";
    for (const auto& part : p.parts) {
        std::string name = part.name;
        std::replace(name.begin(), name.end(), '_', ' ');
        out << "| " << name << " | " << ops_ms(part.ns) << " | " << ops_pct(part.share) << " | "
            << md_cell(part.events) << " |\n";
    }
    out << "\nEach event kind is wall time over the NPU's threads; kinds run at once on different "
           "threads, so they may add up to more than the batch.\n";
    npu_op_table(p, out);
}

// An imported stage's reconciliation: only the rows its log defines (the backend's op times,
// the host's call times where the log has them), and in one line what it cannot reconcile.
void imported_reconciliation(const StageProfile& s, std::ostream& out) {
    const Reconciliation& r = s.rec;
    out << "\n| reconciliation | time |\n| --- | ---: |\n";
    out << "| Σ op time (the backend's own) | " << ops_ms(r.sum_op_ns) << " |\n";
    if (r.sum_call_compute_ns)
        out << "| Σ call time, ops that compute (call-usec) | " << ops_ms(r.sum_call_compute_ns)
            << " |\n";
    if (r.sum_call_ns && r.sum_call_ns != r.sum_call_compute_ns)
        out << "| Σ call time, all nodes (call-usec) | " << ops_ms(r.sum_call_ns) << " |\n";
    const bool batches = std::any_of(s.npu_pipeline.begin(), s.npu_pipeline.end(),
                                     [](const NpuPipeline& x) { return x.n_batches > 0; });
    out << "\nAn imported stage is not reconciled against its wall time: the log holds no run of "
           "the stage itself (uninstrumented or traced), and the backend profiles only its own "
           "ops, not the copies between backends, the scheduler or the host's work"
        << (batches ? "; its batches' time against their ops is in the NPU pipeline below.\n"
                    : ".\n");
}

void stage_section(const OpsProfile& p, const StageProfile& s, std::ostream& out, size_t top_n,
                   bool brief) {
    const Reconciliation& r = s.rec;
    if (s.stage == "log") {
        out << "\n## " << (p.source == "hexagon-profile" ? "Hexagon profile" : "log") << " — "
            << s.ops.size() << " ops\n";
    } else if (p.source == "hexagon-profile") {
        // A log says neither the KV depth nor the threads; its tokens are its graphs'.
        out << "\n## " << s.stage << " — " << s.n_tokens << " token(s) in " << s.n_graphs
            << " graph(s) · " << p.devices << "\n";
    } else {
        out << "\n## " << s.stage << " — " << s.n_tokens << " token(s) at KV depth " << s.kv_depth
            << " · " << p.devices << " · "
            << (p.n_threads > 0 ? std::to_string(p.n_threads) : std::string("default"))
            << " threads · " << s.n_graphs << " graph(s)\n";
    }
    const bool have_stage = r.plain_median_ns.has_value();
    if (s.stage != "log" && p.source == "hexagon-profile") {
        imported_reconciliation(s, out);
    } else if (s.stage != "log") {
        out << "\n| reconciliation | time | of stage |\n| --- | ---: | ---: |\n";
        out << "| uninstrumented stage (median of " << r.plain_ns.size() << ") | "
            << ops_ms(r.plain_median_ns) << " | 100 % |\n";
        const bool strided = s.isolation_stride && *s.isolation_stride > 1;
        out << "| traced stage, "
            << (strided ? "every " + ordinal(*s.isolation_stride) + " node alone in turn"
                        : std::string("node by node"))
            << (r.tracer_ns.empty() ? "" : ", less the tracer's own work") << " (median of "
            << r.traced_ns.size() << ") | " << ops_ms(r.traced_median_ns) << " | "
            << (r.overhead_ratio
                    ? fmt::format("tracing overhead {:+.0f} %", *r.overhead_ratio * 100.0)
                    : std::string("-"))
            << " |\n";
        // An imported profile's op times are the backend's own; a profile's are timed in situ or
        // replayed (documents from before in-situ op times count neither: all were replayed).
        const std::string how =
            p.source == "hexagon-profile" ? std::string("the backend's own")
            : r.n_op_in_situ + r.n_op_replayed + r.n_op_device_timer == 0 ? std::string("replayed")
            : r.n_op_device_timer > 0
                ? fmt::format("{} device timer, {} in situ, {} replayed", r.n_op_device_timer,
                              r.n_op_in_situ, r.n_op_replayed)
                : fmt::format("{} in situ, {} replayed", r.n_op_in_situ, r.n_op_replayed);
        out << "| Σ op time (" << how << ") | " << ops_ms(r.sum_op_ns) << " | "
            << ops_pct(r.op_fraction) << (r.op_within_stage ? "" : " **exceeds the stage**")
            << " |\n";
        std::optional<double> call_frac;
        if (r.sum_call_compute_ns && r.plain_median_ns && *r.plain_median_ns > 0)
            call_frac = *r.sum_call_compute_ns / *r.plain_median_ns;
        out << "| Σ call time, ops that compute | " << ops_ms(r.sum_call_compute_ns) << " | "
            << ops_pct(call_frac) << " |\n";
        out << "| Σ call time, all nodes (views dispatched too) | " << ops_ms(r.sum_call_ns)
            << " | - |\n";
        out << "| copies between backends (" << s.n_splits << " splits, " << s.n_copies
            << " tensors, " << bytes(s.copy_bytes) << ") | " << ops_ms(r.sum_copy_ns) << " | - |\n";
        out << "| scheduler between " << (strided ? "calls" : "nodes") << " | "
            << ops_ms(r.sched_gap_ns) << " | - |\n";
        // The host's part is what is left of the traced stage after its calls, copies and gaps:
        // below zero it is lost in the calls' noise, not a negative time.
        if (r.host_ns && *r.host_ns < 0)
            out << "| host: graph build, inputs, outputs | ≈ 0 (the rest of the traced stage is "
                << ops_ms(r.host_ns) << ": within the calls' noise) | - |\n";
        else
            out << "| host: graph build, inputs, outputs | " << ops_ms(r.host_ns) << " | - |\n";
        if (strided)
            out << "\nEach traced step dispatched every " << ordinal(*s.isolation_stride)
                << " node alone, in turn, and computed the others together between them: a "
                   "node's call time is the median of the steps that dispatched it alone, so Σ "
                   "call time is that of no one step.\n";
        if (!r.fit_cause.empty())
            out << "\nΣ op time is not within 5 % of the stage: " << r.fit_cause << ".\n";
    } else {
        out << "\n| total | time |\n| --- | ---: |\n";
        out << "| Σ op time (backend-reported) | " << ops_ms(r.sum_op_ns) << " |\n";
        // A log without call-usec (the asynchronous profiler's) has no call time to sum.
        if (r.sum_call_ns)
            out << "| Σ call time | " << ops_ms(r.sum_call_ns) << " |\n";
    }
    if (s.decomposition)
        decomposition_table(*s.decomposition, out);
    for (const auto& pipe : s.npu_pipeline)
        npu_pipeline_table(pipe, out);
    aggregate_table(out, "By op type", "op", s.by_op, have_stage);
    if (brief) {
        if (!s.notes.empty()) {
            out << "\n";
            for (const auto& n : s.notes)
                out << "- " << n << "\n";
        }
        return;
    }
    aggregate_table(out, "By layer", "layer", s.by_layer, have_stage);
    aggregate_table(out, "By backend", "backend", s.by_backend, have_stage);
    if (!s.top.empty()) {
        out << "\n### Top " << std::min(top_n, s.top.size()) << " ops\n\n";
        out << "| node | op | name | backend | shape | type | op µs | call µs | call/op |\n";
        out << "| ---: | --- | --- | --- | --- | --- | ---: | ---: | ---: |\n";
        for (size_t i = 0; i < s.top.size() && i < top_n; ++i) {
            const OpRecord& o = s.ops[s.top[i]];
            std::optional<double> rr;
            if (o.op_ns && o.call_ns && *o.op_ns > 0)
                rr = *o.call_ns / *o.op_ns;
            out << "| "
                << (s.n_graphs > 1 ? fmt::format("{}:{}", o.graph, o.node) : std::to_string(o.node))
                << " | " << o.op << " | " << md_cell(o.out.name) << " | " << o.backend << " | "
                << shape_text(o.out.ne) << " | " << o.out.type << " | " << us(o.op_ns) << " | "
                << us(o.call_ns) << " | " << ratio(rr) << " |\n";
        }
    }
    if (s.splits.size() > 1) {
        out << "\n### Splits and copies between backends\n\n";
        out << "| graph | split | backend | nodes | inputs copied | bytes | copy µs |\n";
        out << "| ---: | ---: | --- | ---: | ---: | ---: | ---: |\n";
        for (const auto& sp : s.splits)
            out << "| " << sp.graph << " | " << sp.index << " | " << md_cell(sp.backend) << " | "
                << sp.n_nodes << " | " << sp.n_inputs << " | " << bytes(sp.input_bytes) << " | "
                << us(sp.copy_ns) << " |\n";
    }
    if (!s.fallback.empty()) {
        out << "\n### Fallback: ops that ran off the requested backend, and what it costs\n\n";
        out << "| op | ran on | asked | count | call µs | op µs there | replayed there | "
               "op µs of those there | op µs of those asked | penalty | splits | split bytes | "
               "split µs | penalty µs | basis | note |\n";
        out << "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
               "| ---: | ---: | --- | --- |\n";
        for (const auto& f : s.fallback)
            out << "| " << f.op << " | " << f.backend << " | " << f.requested << " | " << f.count
                << " | " << us(f.call_ns) << " | " << us(f.op_ns) << " | " << f.n_replayed << " | "
                << us(f.op_ns_replayed) << " | " << us(f.op_ns_requested) << " | "
                << ratio(f.penalty) << " | " << f.n_splits << " | " << bytes(f.split_bytes) << " | "
                << us(f.split_ns) << " | " << us(f.penalty_ns) << " | " << md_cell(f.penalty_basis)
                << " | " << md_cell(f.note) << " |\n";
    }
    if (!s.coverage.empty()) {
        out << "\n### Op coverage: which device supports each op, where it ran\n\n| op | nodes";
        std::string align = "| --- | ---:";
        for (const auto& d : s.coverage_devices) {
            out << " | " << md_cell(d) << " supports";
            align += " | ---:";
        }
        out << " | ran on | why elsewhere |\n" << align << " | --- | --- |\n";
        for (const auto& c : s.coverage) {
            out << "| " << c.op << " | " << c.count;
            for (const auto& d : s.coverage_devices) {
                auto it = c.supported.find(d);
                out << " | " << (it == c.supported.end() ? 0 : it->second);
            }
            std::string ran;
            for (const auto& [be, n] : c.ran)
                ran += (ran.empty() ? "" : ", ") + be + " " + std::to_string(n);
            out << " | " << md_cell(ran) << " | " << md_cell(c.note) << " |\n";
        }
    }
    if (!s.notes.empty()) {
        out << "\n";
        for (const auto& n : s.notes)
            out << "- " << n << "\n";
    }
}

}  // namespace

void write_ops_markdown(const OpsProfile& p, std::ostream& out, size_t top_n, bool brief) {
    if (p.source == "trace") {
        out << "# Per-op profile: " << p.model_path << "\n\n" << p.method << "\n";
        if (p.duration_ns) {
            out << "\nThe profile took " << fmt::format("{:.2f}", *p.duration_ns / 1e9) << " s";
            std::string phases;
            for (const auto& [name, ns] : p.phase_ns)
                phases += (phases.empty() ? "" : ", ") + name + " " +
                          fmt::format("{:.2f}", static_cast<double>(ns) / 1e9) + " s";
            out << (phases.empty() ? "" : " (" + phases + ")") << ".\n";
        }
        if (p.huge_pages)
            out << "\n" << huge_pages_line(*p.huge_pages) << "\n";
    } else {
        out << "# Imported profile (" << p.source << ")\n\n" << p.method << "\n";
    }
    for (const auto& s : p.stages)
        stage_section(p, s, out, top_n, brief);
    out.flush();
}

const FieldTable<OpRow>& op_fields() {
    static const FieldTable<OpRow> table = [] {
        using R = OpRow;
        auto real = [](const std::optional<double>& v) {
            return v ? FieldValue(*v) : FieldValue();
        };
        // Times with a tenth of a nanosecond: replayed op times are averages.
        const char* ns = "{:.1f}";
        return FieldTable<OpRow>{
            {"stage", [](const R& r) { return FieldValue(r.stage->stage); }},
            {"graph", [](const R& r) { return FieldValue(int64_t{r.op->graph}); }},
            {"node", [](const R& r) { return FieldValue(int64_t{r.op->node}); }},
            {"op", [](const R& r) { return FieldValue(r.op->op); }},
            {"name", [](const R& r) { return FieldValue(r.op->out.name); }},
            {"layer",
             [](const R& r) {
                 return r.op->layer ? FieldValue(int64_t{*r.op->layer}) : FieldValue();
             }},
            {"backend", [](const R& r) { return FieldValue(r.op->backend); }},
            {"type", [](const R& r) { return FieldValue(r.op->out.type); }},
            {"shape", [](const R& r) { return FieldValue(shape_text(r.op->out.ne)); }},
            {"no_compute",
             [](const R& r) { return FieldValue(int64_t{r.op->no_compute ? 1 : 0}); }},
            {"op_ns", [real](const R& r) { return real(r.op->op_ns); }, ns},
            {"call_ns", [real](const R& r) { return real(r.op->call_ns); }, ns},
            {"isolated_call_ns", [real](const R& r) { return real(r.op->isolated_call_ns); }, ns}};
    }();
    return table;
}

void write_ops_csv(const OpsProfile& p, std::ostream& out) {
    write_csv_header(out, op_fields());
    for (const auto& s : p.stages)
        for (const auto& o : s.ops)
            write_csv_row(out, op_fields(), OpRow{&s, &o});
    out.flush();
}

void check_ops_format(OutputFormat format) {
    if (format != OutputFormat::md && format != OutputFormat::csv && format != OutputFormat::json)
        throw usage_error("output format must be md, csv or json, not '" + to_string(format) + "'");
}

void print_ops_document(const ResultDocument& doc, OutputFormat format, std::ostream& out,
                        size_t top_n, bool brief) {
    check_ops_format(format);
    if (format == OutputFormat::json) {
        out << dump_json(to_json(doc), 2) << "\n";
    } else if (!doc.ops) {
        // nothing measured: no tables
    } else if (format == OutputFormat::csv) {
        write_ops_csv(*doc.ops, out);
    } else {
        write_ops_markdown(*doc.ops, out, top_n, brief);
        if (!doc.warnings.empty()) {
            out << "\n### Warnings\n\n";
            for (const auto& w : doc.warnings)
                out << "- " << w.message << (w.hint.empty() ? "" : " (" + w.hint + ")") << "\n";
        }
    }
    out.flush();
}

}  // namespace sb
