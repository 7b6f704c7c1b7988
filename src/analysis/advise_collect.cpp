#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "analysis/advise_steps.hpp"
#include "analysis/fidelity_of_tests.hpp"
#include "core/error.hpp"
#include "core/json_util.hpp"
#include "core/result.hpp"

namespace sb {
namespace {

bool is_hybrid_devices(const std::string& d) {
    return d.find('>') != std::string::npos;
}

// The tests of a document (run, demo, hybrid alone modes). Hybrid device sets are measured by
// their own section; other engines than the in-process one are not a device's time model.
void collect_tests(const ResultDocument& doc, std::size_t index, std::vector<AdviseSample>& out) {
    for (const auto& t : doc.tests) {
        if (t.status != Status::ok)
            continue;
        const TestConfig& c = t.config;
        AdviseSample s;
        s.doc = index;
        s.devices = c.devices.str();
        if (is_hybrid_devices(s.devices) || c.engine != EngineKind::llama)
            continue;
        s.model = std::filesystem::path(c.model_path).filename().string();
        s.n_gpu_layers = c.n_gpu_layers;
        s.n_threads = c.n_threads;
        s.kv = to_string(c.type_k) + "/" + to_string(c.type_v);
        s.n_prompt = c.n_prompt;
        s.n_gen = c.n_gen;
        // An imported llama-bench tg test decoded from the depth it names, not after the prompt.
        s.kv_depth = t.imported && t.decode ? t.decode->kv_depth_start : c.n_depth + s.n_prompt;
        if (t.prefill) {
            s.prefill_tps = t.prefill->tokens_per_s;
            s.prefill_ns = t.prefill->duration.median;
        }
        if (t.decode && s.n_gen > 0) {
            s.decode_tps = t.decode->tokens_per_s;
            if (auto d = t.decode->duration.median)
                s.decode_ns_per_token = *d / s.n_gen;
        }
        if (t.telemetry) {
            const auto& sm = t.telemetry->summary;
            if (auto it = sm.find("prefill"); it != sm.end())
                s.prefill_j_per_token = it->second.j_per_token.median;
            if (auto it = sm.find("decode"); it != sm.end())
                s.decode_j_per_token = it->second.j_per_token.median;
        }
        out.push_back(std::move(s));
    }
}

void collect_hybrid(const HybridSection& h, std::size_t index, std::vector<HybridPointFacts>& out) {
    for (const auto& pt : h.points) {
        HybridPointFacts p;
        p.doc = index;
        p.prefill = h.prefill_device.str();
        p.decode = h.decode_device.str();
        p.n_prompt = pt.n_prompt;
        p.transfer_ns = pt.transfer.duration.median;
        if (p.transfer_ns)
            p.bytes_per_token = pt.transfer.bytes_per_token;
        if (auto it = pt.e2e.find("hybrid"); it != pt.e2e.end())
            p.measured_ns = it->second.summary.median;
        if (p.measured_ns)
            p.n_gen = pt.n_gen;
        out.push_back(std::move(p));
    }
}

OpsStageFacts collect_ops_stage(const StageProfile& st, const std::vector<std::string>& requested) {
    OpsStageFacts s;
    s.stage = st.stage;
    for (const auto& c : st.coverage) {
        for (const auto& d : requested) {
            auto it = c.supported.find(d);
            if (d == "CPU" || it == c.supported.end() || it->second >= c.count)
                continue;
            CoverageGap g{c.op,         d,           c.count, c.count - it->second, c.ran,
                          std::nullopt, std::nullopt};
            for (const auto& r : st.ops) {
                if (r.op != c.op || r.no_compute || r.backend == d)
                    continue;
                if (r.call_ns)
                    g.call_ns = g.call_ns.value_or(0) + *r.call_ns;
                if (r.op_ns)
                    g.op_ns = g.op_ns.value_or(0) + *r.op_ns;
            }
            s.gaps.push_back(std::move(g));
        }
    }
    std::stable_sort(s.gaps.begin(), s.gaps.end(), [](const CoverageGap& a, const CoverageGap& b) {
        const double x = a.call_ns ? *a.call_ns : a.op_ns.value_or(0);
        const double y = b.call_ns ? *b.call_ns : b.op_ns.value_or(0);
        return x > y;
    });
    for (const auto& f : st.fallback)
        s.fallback.push_back({f.op, f.backend, f.requested, f.count, f.call_ns, f.penalty, f});
    if (st.decomposition)
        for (const auto& part : st.decomposition->parts)
            s.parts.push_back({part.name, part.ns, part.share, part.note});
    for (const auto& r : st.ops)
        s.ops.push_back({r.op, r.backend, r.no_compute, r.call_ns, r.op_ns});
    return s;
}

OpsFacts collect_ops(const OpsSection& ops, const std::string& source) {
    OpsFacts o;
    o.source = source;
    for (const auto& st : ops.stages)
        o.stages.push_back(collect_ops_stage(st, ops.requested));
    o.devices = ops.devices.empty() ? "?" : ops.devices;
    return o;
}

SustainedFacts collect_sustained(const SustainedResult& sus, const std::string& source) {
    SustainedFacts s;
    s.source = source;
    s.devices = sus.config.devices.empty() ? "CPU" : sus.config.devices;
    for (const auto& ph : sus.phases) {
        // Under background load the steady state is the load's, not the device's.
        if (!ph.background.empty())
            continue;
        SustainedPhaseFacts p;
        p.steady_decode_tps = ph.across.steady_decode_tps;
        if (p.steady_decode_tps) {
            p.peak_to_steady = ph.across.peak_to_steady;
            p.verdict = ph.across.verdict;
            p.name = ph.name;
        }
        s.phases.push_back(std::move(p));
    }
    return s;
}

std::string text_field(const nlohmann::json& j, const char* key) {
    const auto& v = json_field(j, key);
    return v.is_string() ? v.get<std::string>() : std::string();
}

std::string joined(const std::set<std::string>& v) {
    std::string s;
    for (const auto& x : v)
        s += (s.empty() ? "" : ",") + x;
    return s;
}

}  // namespace

AdviceConditions conditions_of(const ResultDocument& doc, const std::string& source) {
    AdviceConditions c;
    c.source = source;
    c.host = text_field(doc.system, "hostname");
    // Another tool's results, measured on a machine the file does not name.
    if (doc.imported && c.host.empty())
        c.host = "imported from " + doc.imported->tool;
    std::set<std::string> governors;
    const auto& g = json_field(doc.system, "governors");
    if (g.is_array())
        for (const auto& x : g)
            if (x.is_string())
                governors.insert(x.get<std::string>());
    c.governor = joined(governors);
    // Loaded as the run's own other_load warning says (a load average above a quarter of the
    // CPUs when it started).
    const auto& load = json_field(doc.system, "loadavg_1m");
    const auto& cpus = json_field(doc.system, "cores_logical");
    bool loaded = std::any_of(doc.warnings.begin(), doc.warnings.end(),
                              [](const Warning& w) { return w.code == "other_load"; });
    if (load.is_number() && cpus.is_number_integer() && cpus.get<int64_t>() > 0) {
        loaded = loaded || load.get<double>() > 0.25 * static_cast<double>(cpus.get<int64_t>());
        c.load = fmt::format("{} (load {:.2f} on {} CPUs)", loaded ? "loaded" : "quiet",
                             load.get<double>(), cpus.get<int64_t>());
    } else if (loaded) {
        c.load = "loaded";
    }
    std::set<int> threads;
    for (const auto& t : doc.tests)
        if (t.config.n_threads > 0)
            threads.insert(t.config.n_threads);
    if (doc.ops && doc.ops->n_threads > 0)
        threads.insert(doc.ops->n_threads);
    std::string th;
    for (int t : threads)
        th += (th.empty() ? "" : ",") + std::to_string(t);
    c.threads = th;
    c.llama = text_field(doc.llama, "tag");
    if (c.llama.empty())
        c.llama = text_field(doc.llama, "commit");
    return c;
}

std::vector<AdviceConditions> used_conditions(const AdviseFacts& facts) {
    std::set<std::size_t> used;
    for (const auto& s : facts.samples)
        used.insert(s.doc);
    for (const auto& p : facts.hybrid_points)
        used.insert(p.doc);
    std::vector<AdviceConditions> out;
    for (std::size_t i : used)
        if (i < facts.conditions.size())
            out.push_back(facts.conditions[i]);
    return out;
}

std::optional<Warning> mixed_conditions_warning(const std::vector<AdviceConditions>& cs) {
    if (cs.size() < 2)
        return std::nullopt;
    struct Field {
        const char* name;
        std::string AdviceConditions::*member;
    };
    static const Field fields[] = {{"host", &AdviceConditions::host},
                                   {"load", &AdviceConditions::load},
                                   {"governor", &AdviceConditions::governor},
                                   {"threads", &AdviceConditions::threads},
                                   {"llama.cpp", &AdviceConditions::llama}};
    std::string what;
    for (const auto& f : fields) {
        std::set<std::string> values;
        for (const auto& c : cs)
            if (!(c.*f.member).empty())
                values.insert(c.*f.member);
        // For the load only quiet against loaded counts, not the load averages themselves.
        if (std::string(f.name) == "load") {
            std::set<std::string> kinds;
            for (const auto& v : values)
                kinds.insert(v.substr(0, v.find(' ')));
            if (kinds.size() < 2)
                continue;
        } else if (values.size() < 2) {
            continue;
        }
        std::string each;
        for (const auto& c : cs)
            each += (each.empty() ? "" : ", ") + c.source + " " +
                    ((c.*f.member).empty() ? std::string("unknown") : c.*f.member);
        what += (what.empty() ? "" : "; ") + std::string(f.name) + ": " + each;
    }
    if (what.empty())
        return std::nullopt;
    return Warning{"mixed_conditions",
                   "the documents the ranking and predictions combine were measured under "
                   "different conditions (" +
                       what +
                       "): a device set's times may differ by its conditions, not by the device",
                   "Measure the device sets in one run (run --device A,B, hybrid) on a quiet "
                   "machine, or compare each against a baseline measured alongside it."};
}

AdviseFacts collect_facts(const std::vector<AdviseInput>& inputs) {
    AdviseFacts f;
    bool used_any = false;
    for (const auto& in : inputs) {
        const ResultDocument& d = in.doc;
        f.sources.push_back({in.source, d.command});
        f.conditions.push_back(conditions_of(d, in.source));
        const std::size_t index = f.sources.size() - 1;
        const std::size_t before = f.samples.size();
        collect_tests(d, index, f.samples);
        bool used = f.samples.size() > before;
        if (d.hybrid) {
            collect_hybrid(*d.hybrid, index, f.hybrid_points);
            used = true;
        }
        if (d.ops) {
            f.ops.push_back(collect_ops(*d.ops, in.source));
            used = true;
        }
        if (d.sustained) {
            f.sustained.push_back(collect_sustained(*d.sustained, in.source));
            used = true;
        }
        if (d.fidelity) {
            f.fidelity.push_back({in.source, *d.fidelity});
            used = true;
        } else {
            // run --fidelity, hybrid --fidelity: the tests' own distances.
            for (auto& s : fidelity_of_tests(d)) {
                f.fidelity.push_back({in.source, std::move(s)});
                used = true;
            }
        }
        if (!used)
            f.notes.push_back(in.source + ": a '" + d.command +
                              "' document with nothing the advisor uses");
        used_any = used_any || used;
    }
    if (!used_any)
        throw input_error(
            "nothing to advise on: give result documents of run, hybrid, ops, sustained or "
            "fidelity");
    label_samples(f.samples);
    return f;
}

}  // namespace sb
