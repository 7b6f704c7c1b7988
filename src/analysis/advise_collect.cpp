#include "analysis/advise_steps.hpp"
#include "core/error.hpp"
#include "core/json_reader.hpp"

namespace sb {
namespace {

bool is_hybrid_devices(const std::string& d) {
    return d.find('>') != std::string::npos;
}

// The tests of a document (run, demo, hybrid alone modes). Hybrid device sets are measured by
// their own section; other engines than the in-process one are not a device's time model.
void collect_tests(const JsonAt& doc, std::size_t index, std::vector<AdviseSample>& out) {
    for (const auto& t : doc["tests"].objects()) {
        if (t["status"].string_or("") != "ok")
            continue;
        const JsonAt c = t["config"].object();
        AdviseSample s;
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

void collect_hybrid(const JsonAt& h, std::size_t index, std::vector<HybridPointFacts>& out) {
    const std::string a = h["prefill_device"].string_or(""), b = h["decode_device"].string_or("");
    for (const auto& pt : h["points"].objects()) {
        HybridPointFacts p;
        p.doc = index;
        p.prefill = a;
        p.decode = b;
        p.n_prompt = pt["n_prompt"].integer_or(0);
        const JsonAt tr = pt["transfer"];
        p.transfer_ns = tr["duration"]["median"].number();
        if (p.transfer_ns)
            p.bytes_per_token = tr["bytes_per_token"].number();
        p.measured_ns = pt["e2e"]["hybrid"]["summary"]["median"].number();
        if (p.measured_ns)
            p.n_gen = pt["n_gen"].integer_or(0);
        out.push_back(std::move(p));
    }
}

OpsStageFacts collect_ops_stage(const JsonAt& st) {
    OpsStageFacts s;
    s.stage = st["stage"].string_or("");
    for (const auto& f : st["fallback"].objects()) {
        OpFallback x;
        x.row = f.raw();
        x.count = f["count"].integer_or(0);
        x.op = f["op"].string_or("");
        x.requested = f["requested"].string_or("");
        x.backend = f["backend"].string_or("");
        x.call_ns = f["call_ns"].number();
        x.penalty = f["penalty"].number();
        s.fallback.push_back(std::move(x));
    }
    const JsonAt dec = st["decomposition"];
    for (const auto& part : dec["parts"].objects()) {
        PipelinePart p;
        p.share = part["share"].number();
        if (p.share)
            p.name = part["name"].string_or("");
        s.parts.push_back(std::move(p));
    }
    s.parts_row = dec["parts"].raw();
    for (const auto& r : st["ops"].objects()) {
        OpCall c;
        c.no_compute = r["no_compute"].boolean_or(false);
        if (!c.no_compute) {
            c.call_ns = r["call_ns"].number();
            c.op_ns = r["op_ns"].number();
            if (c.call_ns && c.op_ns) {
                c.op = r["op"].string_or("");
                c.backend = r["backend"].string_or("");
            }
        }
        s.ops.push_back(std::move(c));
    }
    return s;
}

OpsFacts collect_ops(const JsonAt& ops) {
    OpsFacts o;
    o.source = ops.source();
    for (const auto& st : ops["stages"].objects())
        o.stages.push_back(collect_ops_stage(st));
    o.devices = ops["devices"].string_or("?");
    return o;
}

SustainedFacts collect_sustained(const JsonAt& sus) {
    SustainedFacts s;
    s.source = sus.source();
    s.devices = sus["config"]["devices"].string_or("CPU");
    for (const auto& ph : sus["phases"].objects()) {
        // Under background load the steady state is the load's, not the device's.
        if (!ph["background"].string_or("").empty())
            continue;
        const JsonAt ac = ph["across"];
        SustainedPhaseFacts p;
        p.steady_decode_tps = ac["steady_decode_tps"].number();
        if (p.steady_decode_tps) {
            p.peak_to_steady = ac["peak_to_steady"].number();
            p.verdict = ac["verdict"].string_or("");
            p.name = ph["name"].string_or("");
        }
        s.phases.push_back(std::move(p));
    }
    return s;
}

}  // namespace

AdviseFacts collect_facts(const std::vector<AdviseInput>& inputs) {
    AdviseFacts f;
    bool used_any = false;
    for (const auto& in : inputs) {
        // Every read goes through JsonAt: a document of the wrong shape is one line naming the
        // file and the field, an sb::Error(input), never a nlohmann type error.
        const JsonAt d(in.doc, in.source);
        if (!d.is_object())
            d.fail("an object (a stagebench result document)");
        const std::string cmd = d["command"].string_or("");
        f.sources.push_back({in.source, cmd});
        const std::size_t index = f.sources.size() - 1;
        const std::size_t before = f.samples.size();
        collect_tests(d, index, f.samples);
        bool used = f.samples.size() > before;
        // Sections of other scenarios sit at the top level of a document.
        if (const JsonAt h = d["hybrid"].object(); h.is_object()) {
            collect_hybrid(h, index, f.hybrid_points);
            used = true;
        }
        if (const JsonAt ops = d["ops"].object(); ops.is_object()) {
            f.ops.push_back(collect_ops(ops));
            used = true;
        }
        if (const JsonAt sus = d["sustained"].object(); sus.is_object()) {
            f.sustained.push_back(collect_sustained(sus));
            used = true;
        }
        if (!used)
            f.notes.push_back(in.source + ": a '" + cmd +
                              "' document with nothing the advisor uses");
        used_any = used_any || used;
    }
    if (!used_any)
        throw input_error(
            "nothing to advise on: give result documents of run, hybrid, ops or sustained");
    return f;
}

}  // namespace sb
