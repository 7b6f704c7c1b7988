// The JUnit view of each kind of document (report/junit.hpp): which figures become which
// properties, which outcomes become failures, errors or skips. Figures are picked, never
// computed: a property exists only where the document holds the value (missing is not zero).
#include <fmt/format.h>

#include <filesystem>
#include <set>

#include "core/stats_bootstrap.hpp"
#include "report/gate_report.hpp"
#include "report/junit.hpp"
#include "report/stage_fields.hpp"

namespace sb {

namespace {

// The workload fields of stage_fields(): a test's configuration, given once per case.
const std::set<std::string> kConfigFields = {"model_path", "devices",  "n_threads", "n_gpu_layers",
                                             "n_batch",    "n_ubatch", "n_depth",   "flash_attn",
                                             "type_k",     "type_v"};
// Fields that are the row's identity or outcome, said elsewhere in the case.
const std::set<std::string> kIdentityFields = {"test",   "stage_test", "stage",
                                               "status", "error",      "reps"};

std::optional<std::string> value_text(const FieldValue& v) {
    if (const auto* s = std::get_if<std::string>(&v))
        return *s;
    if (const auto* i = std::get_if<int64_t>(&v))
        return std::to_string(*i);
    if (const auto* d = std::get_if<double>(&v))
        return fmt::format("{}", *d);
    if (const auto* b = std::get_if<bool>(&v))
        return std::string(*b ? "true" : "false");
    return std::nullopt;
}

void add(std::vector<JunitProperty>& ps, const std::string& name, const std::optional<double>& v) {
    if (v)
        ps.push_back(junit_number(name, *v));
}

void add(std::vector<JunitProperty>& ps, const std::string& name, const std::optional<int64_t>& v) {
    if (v)
        ps.push_back({name, std::to_string(*v)});
}

void add(std::vector<JunitProperty>& ps, const std::string& name, const std::string& v) {
    if (!v.empty())
        ps.push_back({name, v});
}

std::string file_name(const std::string& path) {
    const std::string name = std::filesystem::path(path).filename().string();
    return name.empty() ? path : name;
}

std::string lines(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v)
        s += x + "\n";
    return s;
}

// The configuration fields whose CSV text differs among the document's tests: they join the
// case names, so that two tests never share a name.
std::vector<std::string> varying_config(const ResultDocument& doc) {
    std::vector<std::string> names;
    for (const auto& f : stage_fields()) {
        if (!kConfigFields.count(f.name) || f.name == "model_path" || f.name == "devices")
            continue;
        std::set<std::string> seen;
        for (const auto& t : doc.tests)
            seen.insert(csv_cell(f.get(StageRow{&doc, &t})));
        if (seen.size() > 1)
            names.push_back(f.name);
    }
    return names;
}

JunitCase test_case(const ResultDocument& doc, const TestResult& t,
                    const std::vector<std::string>& varying) {
    JunitCase c;
    const auto& cfg = t.config;
    c.classname = "stagebench." + doc.command;
    c.name = file_name(cfg.model_path) + " " + cfg.devices.str() + " " + cfg.test_name();
    if (t.started_ns > 0 && t.finished_ns >= t.started_ns)
        c.time_s = static_cast<double>(t.finished_ns - t.started_ns) / 1e9;
    const auto rows = stage_rows(doc, t);
    for (const auto& f : stage_fields()) {
        if (!f.csv || !kConfigFields.count(f.name))
            continue;
        const auto text = value_text(f.get(rows.front()));
        if (!text)
            continue;
        c.properties.push_back({f.name, *text});
        if (std::find(varying.begin(), varying.end(), f.name) != varying.end())
            c.name += " " + f.name + "=" + *text;
    }
    c.properties.push_back({"status", to_string(t.status)});
    add(c.properties, "reps", static_cast<std::optional<int64_t>>(t.reps_done));
    for (const auto& row : rows) {
        if (!row.result)
            continue;
        const std::string stage = row.stage;
        for (const auto& f : stage_fields()) {
            if (!f.csv || kConfigFields.count(f.name) || kIdentityFields.count(f.name))
                continue;
            if (const auto text = value_text(f.get(row)))
                c.properties.push_back({stage + "_" + f.name, *text});
        }
        if (!t.telemetry)
            continue;
        const auto it = t.telemetry->summary.find(stage);
        if (it == t.telemetry->summary.end())
            continue;
        const StageEnergySummary& e = it->second;
        add(c.properties, stage + "_j_per_token_median", e.j_per_token.median);
        add(c.properties, stage + "_net_j_per_token_median", e.net_j_per_token.median);
        add(c.properties, stage + "_energy_j_median", e.energy_j.median);
        add(c.properties, stage + "_mean_power_mw_median", e.mean_power_mw.median);
        if (e.total_metric)
            add(c.properties, stage + "_energy_meter", *e.total_metric);
    }
    if (t.status == Status::failed) {
        c.outcome = JunitOutcome::error;
        c.message = t.error.value_or("failed");
        c.type = t.error_kind ? error_kind_name(*t.error_kind) : "error";
        c.text = c.message;
    } else if (t.status == Status::interrupted) {
        c.outcome = JunitOutcome::error;
        c.message = t.error.value_or("interrupted (Ctrl-C)");
        c.type = "interrupted";
        c.text = c.message;
    }
    c.system_out = lines(t.notes);
    return c;
}

JunitCase round_case(const std::string& phase, const SustainedRound& r) {
    JunitCase c;
    c.classname = "stagebench.sustained." + phase;
    c.name = "round " + std::to_string(r.round);
    if (r.end_ns > r.start_ns)
        c.time_s = static_cast<double>(r.end_ns - r.start_ns) / 1e9;
    auto& p = c.properties;
    p.push_back({"status", to_string(r.status)});
    add(p, "ttft_ms", r.ttft_ms);
    add(p, "prefill_tokens_per_s", r.prefill_tps);
    add(p, "decode_tokens_per_s", r.decode_tps);
    add(p, "itl_p50_ms", r.itl_p50_ms);
    add(p, "itl_p99_ms", r.itl_p99_ms);
    add(p, "decode_s", r.decode_s);
    add(p, "prefill_energy_j", r.prefill_energy_j);
    add(p, "decode_energy_j", r.decode_energy_j);
    add(p, "decode_j_per_token", r.decode_j_per_token);
    add(p, "prefill_net_energy_j", r.prefill_net_energy_j);
    add(p, "decode_net_energy_j", r.decode_net_energy_j);
    add(p, "decode_net_j_per_token", r.decode_net_j_per_token);
    add(p, "e2e_s", r.e2e_s);
    add(p, "prompt_tokens", r.prompt_tokens);
    add(p, "generated_tokens", r.generated_tokens);
    add(p, "combined_tokens_per_s", r.combined_tps);
    add(p, "energy_j", r.energy_j);
    add(p, "power_w", r.power_w);
    add(p, "j_per_token", r.j_per_token);
    add(p, "temp_start_c", r.temp_start_c);
    add(p, "temp_end_c", r.temp_end_c);
    add(p, "temp_max_c", r.temp_max_c);
    add(p, "cpu_freq_mean_khz", r.cpu_freq_mean_khz);
    add(p, "cooldown_s", std::optional<double>(r.cooldown_s));
    if (r.status != Status::ok) {
        c.outcome = JunitOutcome::error;
        c.type = r.status == Status::interrupted ? "interrupted" : "error";
        c.message =
            r.error.value_or(r.status == Status::interrupted ? "interrupted (Ctrl-C)" : "failed");
        c.text = c.message;
    }
    return c;
}

JunitCase phase_case(const SustainedPhase& ph) {
    JunitCase c;
    c.classname = "stagebench.sustained." + ph.name;
    c.name = "verdict";
    const AcrossRounds& a = ph.across;
    auto& p = c.properties;
    add(p, "verdict", a.verdict);
    add(p, "background", ph.background);
    add(p, "rounds", static_cast<std::optional<int64_t>>(ph.rounds.size()));
    add(p, "prefill_tokens_per_s_median", a.prefill_tps.median);
    add(p, "decode_tokens_per_s_median", a.decode_tps.median);
    add(p, "ttft_ms_median", a.ttft_ms.median);
    add(p, "decode_j_per_token_median", a.decode_j_per_token.median);
    add(p, "decode_net_j_per_token_median", a.decode_net_j_per_token.median);
    add(p, "first_last_change", a.first_last_change);
    if (a.throttle_onset_round)
        add(p, "throttle_onset_round", std::optional<int64_t>(*a.throttle_onset_round));
    if (a.drop_round)
        add(p, "drop_round", std::optional<int64_t>(*a.drop_round));
    add(p, "steady_decode_tokens_per_s", a.steady_decode_tps);
    add(p, "peak_to_steady", a.peak_to_steady);
    add(p, "battery_drain_capacity_pct", a.battery_drain_capacity_pct);
    c.system_out = lines(a.throttle_evidence);
    return c;
}

void add_latency(std::vector<JunitProperty>& p, const std::string& name, const LatencyStats& s) {
    add(p, name + "_median_ms", s.median);
    if (s.median_ci) {
        p.push_back(junit_number(name + "_median_ci95_lo_ms", s.median_ci->lo));
        p.push_back(junit_number(name + "_median_ci95_hi_ms", s.median_ci->hi));
    }
    add(p, name + "_p90_ms", s.p90);
    add(p, name + "_p99_ms", s.p99);
}

JunitCase point_case(const ServePoint& pt) {
    JunitCase c;
    c.classname = "stagebench.serve";
    c.name = pt.label();
    c.time_s = static_cast<double>(pt.duration_ns) / 1e9;
    auto& p = c.properties;
    add(p, "requests", static_cast<std::optional<int64_t>>(pt.requests.size()));
    add(p, "ok", static_cast<std::optional<int64_t>>(pt.ok));
    add(p, "errors", static_cast<std::optional<int64_t>>(pt.errors));
    add(p, "interrupted", static_cast<std::optional<int64_t>>(pt.interrupted));
    add(p, "request_per_s", std::optional<double>(pt.request_per_s));
    add(p, "output_tokens_per_s", std::optional<double>(pt.output_tokens_per_s));
    add(p, "total_tokens_per_s", std::optional<double>(pt.total_tokens_per_s));
    add(p, "goodput_per_s", pt.goodput_per_s);
    add(p, "slo_attainment", pt.slo_attainment);
    add_latency(p, "ttft", pt.ttft);
    add_latency(p, "tpot", pt.tpot);
    add_latency(p, "itl", pt.itl);
    add_latency(p, "e2e", pt.e2e);
    if (const auto& e = pt.energy) {
        add(p, "energy_j", e->energy_j);
        add(p, "net_energy_j", e->net_energy_j);
        add(p, "mean_power_mw", e->mean_power_mw);
        add(p, "j_per_request", e->j_per_request);
        add(p, "j_per_output_token", e->j_per_output_token);
        add(p, "net_j_per_output_token", e->net_j_per_output_token);
        add(p, "energy_meter", e->metric);
    }
    std::string first_error;
    for (const auto& r : pt.requests)
        if (r.error) {
            first_error = *r.error;
            break;
        }
    if (pt.stopped_by) {
        c.outcome = JunitOutcome::failure;
        c.type = *pt.stopped_by;
        c.message = fmt::format("stopped by --max-error-rate: {} of {} requests failed", pt.errors,
                                pt.requests.size());
        c.text = c.message + (first_error.empty() ? "" : "; the first: " + first_error);
    } else if (pt.ok == 0 && pt.errors > 0) {
        c.outcome = JunitOutcome::error;
        c.type = "runtime";
        c.message = first_error.empty() ? "every request failed" : first_error;
        c.text = fmt::format("every request failed ({}); the first: {}", pt.errors, c.message);
    } else if (pt.errors > 0) {
        c.system_out = fmt::format("{} of {} requests failed; the first: {}\n", pt.errors,
                                   pt.requests.size(), first_error);
    }
    return c;
}

JunitSuite document_suite(const ResultDocument& doc, const std::string& name) {
    JunitSuite s;
    s.name = name;
    s.timestamp = doc.started_at;
    const MachineView m = machine_view(doc);
    s.hostname = m.hostname.value_or("");
    auto& p = s.properties;
    add(p, "command", doc.command);
    add(p, "tool_version", doc.tool_version);
    if (doc.llama.is_object()) {
        if (const auto it = doc.llama.find("commit"); it != doc.llama.end() && it->is_string())
            add(p, "llama_commit", it->get<std::string>());
    }
    add(p, "llama_tag", m.llama_tag.value_or(""));
    add(p, "cpu", m.cpu_model.value_or(""));
    add(p, "os", m.os.value_or(""));
    add(p, "started_at", doc.started_at);
    add(p, "finished_at", doc.finished_at);
    std::string argv;
    for (const auto& a : doc.argv)
        argv += (argv.empty() ? "" : " ") + a;
    add(p, "argv", argv);
    for (const auto& w : doc.warnings)
        s.system_out +=
            "warning: " + w.message + (w.hint.empty() ? "" : " (" + w.hint + ")") + "\n";
    const auto varying = varying_config(doc);
    for (const auto& t : doc.tests)
        s.cases.push_back(test_case(doc, t, varying));
    if (doc.serve) {
        for (const auto& pt : doc.serve->points)
            s.cases.push_back(point_case(pt));
        s.system_out += lines(doc.serve->notes);
    }
    return s;
}

void add_document(JunitReport& r, const ResultDocument& doc, const std::string& name) {
    r.suites.push_back(document_suite(doc, name));
    if (doc.sustained)
        for (const auto& ph : doc.sustained->phases) {
            JunitSuite s;
            s.name = name + " " + ph.name;
            s.timestamp = doc.started_at;
            s.hostname = r.suites.front().hostname;
            for (const auto& round : ph.rounds)
                s.cases.push_back(round_case(ph.name, round));
            s.cases.push_back(phase_case(ph));
            r.suites.push_back(std::move(s));
        }
}

std::string check_name(const GateCheck& c) {
    return c.test + " " + c.stage + " " + c.metric + " " + c.label;
}

}  // namespace

JunitReport junit_of_document(const ResultDocument& doc) {
    JunitReport r;
    r.name = "stagebench " + doc.command;
    add_document(r, doc, r.name);
    return r;
}

JunitReport junit_of_error(const std::string& command, const std::string& error,
                           const std::string& error_kind) {
    JunitCase c;
    c.classname = "stagebench." + command;
    c.name = command;
    c.outcome = JunitOutcome::error;
    c.type = error_kind;
    c.message = error;
    c.text = error;
    JunitSuite s;
    s.name = "stagebench " + command;
    s.cases.push_back(std::move(c));
    return {s.name, {s}};
}

JunitReport junit_of_compare(const CompareResult& r) {
    JunitReport out;
    out.name = "stagebench compare";
    JunitSuite s;
    s.name = "stagebench compare";
    s.timestamp = r.created_at;
    add(s.properties, "tool_version", r.tool_version);
    for (const auto& in : r.inputs)
        add(s.properties, "input_" + in.label, in.source);
    for (const auto& row : r.rows) {
        const CompareSide& base = row.sides.front();
        for (std::size_t k = 1; k < row.sides.size() && k <= row.ratios.size(); ++k) {
            const CompareSide& side = row.sides[k];
            const CompareRatio& q = row.ratios[k - 1];
            JunitCase c;
            c.classname = "stagebench.compare";
            c.name = row.test + " " + row.stage + " " + row.metric + " " + q.label;
            auto& p = c.properties;
            add(p, "baseline", base.label);
            add(p, "baseline_" + row.metric + "_median", base.median);
            add(p, "baseline_" + row.metric + "_median_ci95_lo", base.median_ci_low);
            add(p, "baseline_" + row.metric + "_median_ci95_hi", base.median_ci_high);
            add(p, "baseline_" + row.metric + "_total", base.total);
            add(p, row.metric + "_median", side.median);
            add(p, row.metric + "_median_ci95_lo", side.median_ci_low);
            add(p, row.metric + "_median_ci95_hi", side.median_ci_high);
            add(p, row.metric + "_total", side.total);
            add(p, "ratio", q.median);
            add(p, "ratio_ci95_lo", q.ci_low);
            add(p, "ratio_ci95_hi", q.ci_high);
            add(p, "verdict", q.verdict);
            s.cases.push_back(std::move(c));
        }
    }
    s.system_out = lines(r.notes);
    out.suites.push_back(std::move(s));
    for (const auto& g : r.gates) {
        JunitSuite gs;
        gs.name = "gate " + g.gate + " " + threshold_text(g.threshold);
        gs.timestamp = r.created_at;
        add(gs.properties, "gate", g.gate);
        gs.properties.push_back(junit_number("threshold", g.threshold));
        add(gs.properties, "verdict", g.verdict);
        if (g.checks.empty()) {
            JunitCase c;
            c.classname = "stagebench.gate." + g.gate;
            c.name = g.gate;
            c.outcome = JunitOutcome::skipped;
            c.message = gate_summary(g);
            gs.cases.push_back(std::move(c));
        }
        for (const auto& ck : g.checks) {
            JunitCase c;
            c.classname = "stagebench.gate." + g.gate;
            c.name = check_name(ck);
            auto& p = c.properties;
            p.push_back(junit_number("threshold", g.threshold));
            p.push_back(junit_number("limit", gate_limit(ck, g.threshold)));
            add(p, "ratio", ck.ratio);
            add(p, "ratio_ci95_lo", ck.ci_low);
            add(p, "ratio_ci95_hi", ck.ci_high);
            add(p, "verdict", ck.verdict);
            const std::string text = gate_check_text(ck, g.threshold);
            if (ck.verdict == "failed") {
                c.outcome = JunitOutcome::failure;
                c.type = "gate";
                c.message = g.gate + " " + threshold_text(g.threshold) + ": " + text;
                c.text = c.message;
            } else {
                c.system_out = text + "\n";
            }
            gs.cases.push_back(std::move(c));
        }
        out.suites.push_back(std::move(gs));
    }
    return out;
}

JunitReport junit_of_fleet(const std::string& fleet, const std::vector<FleetJunitDevice>& devices) {
    JunitReport out;
    out.name = "stagebench fleet " + fleet;
    for (const auto& d : devices) {
        const std::string name = "fleet " + fleet + ": " + d.run.device;
        JunitReport one;
        if (d.doc) {
            add_document(one, *d.doc, name);
            for (auto& s : one.suites)
                for (auto& c : s.cases)
                    // "stagebench.run" -> "stagebench.fleet.DEVICE.run"
                    c.classname = "stagebench.fleet." + d.run.device + "." +
                                  c.classname.substr(std::string("stagebench.").size());
        } else {
            one.suites.push_back(JunitSuite{name, d.run.started_at, "", {}, {}, ""});
        }
        JunitSuite& s = one.suites.front();
        add(s.properties, "device", d.run.device);
        add(s.properties, "transport", d.run.transport);
        add(s.properties, "fleet_status", d.run.status);
        if (d.run.document_id)
            add(s.properties, "document_id", std::optional<int64_t>(*d.run.document_id));
        JunitCase c;
        c.classname = "stagebench.fleet." + d.run.device;
        c.name = "fleet run";
        add(c.properties, "command", d.run.command);
        add(c.properties, "started_at", d.run.started_at);
        add(c.properties, "finished_at", d.run.finished_at);
        if (d.run.status == "failed") {
            c.outcome = JunitOutcome::error;
            c.type = d.run.error_kind.value_or("runtime");
            c.message = d.run.error.value_or("failed");
            c.text = c.message;
        } else if (d.run.status == "skipped") {
            c.outcome = JunitOutcome::skipped;
            c.message = "already in the store (--resume)";
        }
        s.cases.insert(s.cases.begin(), std::move(c));
        for (auto& x : one.suites)
            out.suites.push_back(std::move(x));
    }
    return out;
}

}  // namespace sb
