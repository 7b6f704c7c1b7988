// compare of `ops` documents (ops, decompose, import hexagon-profile): op by op, per stage.
#include <algorithm>
#include <set>

#include "analysis/compare.hpp"
#include "analysis/compare_steps.hpp"
#include "core/error.hpp"
#include "core/result.hpp"

namespace sb {

namespace {

struct OpsMetric {
    const char* metric;
    const char* better;
    const char* worse;
};

// Op time and call time in µs; call/op the dispatch tax (call time over op time per op).
const std::vector<OpsMetric> kOpsMetrics = {{"op_us", "faster", "slower"},
                                            {"call_us", "faster", "slower"},
                                            {"call_per_op", "lower", "higher"}};

const StageProfile* stage_of(const OpsProfile& p, const std::string& name) {
    for (const auto& s : p.stages)
        if (s.stage == name)
            return &s;
    return nullptr;
}

std::vector<double> op_samples(const StageProfile* s, const std::string& op,
                               const std::string& metric) {
    std::vector<double> v;
    if (!s)
        return v;
    for (const auto& r : s->ops) {
        if (r.op != op || r.no_compute)
            continue;
        if (metric == "op_us" && r.op_ns)
            v.push_back(*r.op_ns / 1e3);
        else if (metric == "call_us" && r.call_ns)
            v.push_back(*r.call_ns / 1e3);
        else if (metric == "call_per_op" && r.call_ns && r.op_ns && *r.op_ns > 0)
            v.push_back(*r.call_ns / *r.op_ns);
    }
    return v;
}

// The op types of a stage, those of the largest time first (by_op's order), else by name.
std::vector<std::string> op_types(const StageProfile& s) {
    std::vector<std::string> out;
    std::set<std::string> seen;
    for (const auto& a : s.by_op)
        if (seen.insert(a.key).second)
            out.push_back(a.key);
    for (const auto& r : s.ops)
        if (seen.insert(r.op).second)
            out.push_back(r.op);
    return out;
}

}  // namespace

bool is_ops_document(const ResultDocument& doc) {
    return doc.ops && doc.tests.empty();
}

CompareResult compare_ops_documents(const std::vector<CompareInput>& inputs,
                                    const CompareOptions& opts) {
    if (inputs.size() < 2)
        throw usage_error(
            "compare needs at least two result documents (the first is the "
            "baseline)");
    std::set<std::string> labels_seen;
    for (const auto& in : inputs)
        if (!labels_seen.insert(in.label).second)
            throw usage_error("label '" + in.label + "' is given to two inputs");
    CompareResult r;
    r.tool_version = opts.tool_version;
    r.created_at = utc_timestamp();
    r.match = {"stage", "op"};
    std::vector<OpsProfile> profiles;
    std::vector<std::string> labels;
    for (const auto& in : inputs) {
        const std::string who = in.label + " (" + in.source + ")";
        if (!is_ops_document(in.doc))
            throw input_error(who +
                              ": not an ops document, and the baseline is one; compare reads "
                              "ops documents (ops, decompose, import hexagon-profile) against "
                              "each other, and run documents against each other");
        profiles.push_back(*in.doc.ops);
        labels.push_back(in.label);
        r.inputs.push_back(compare_input_info(in));
    }

    std::vector<CompareValue> devices, sources;
    for (const auto& p : profiles) {
        devices.push_back(p.devices);
        sources.push_back(p.source);
    }
    for (const auto& base_stage : profiles[0].stages) {
        std::vector<const StageProfile*> stages;
        for (const auto& p : profiles)
            stages.push_back(stage_of(p, base_stage.stage));
        std::vector<CompareValue> tokens;
        for (const auto* s : stages)
            tokens.push_back(s ? CompareValue(int64_t{s->n_tokens}) : CompareValue());
        for (std::size_t i = 1; i < profiles.size(); ++i)
            if (!stages[i])
                r.notes.push_back(labels[i] + " has no stage " + base_stage.stage);
        for (const auto& op : op_types(base_stage)) {
            for (const auto& m : kOpsMetrics) {
                std::vector<std::vector<double>> samples;
                for (const auto* s : stages)
                    samples.push_back(op_samples(s, op, m.metric));
                if (samples[0].empty())
                    continue;  // the baseline has no such time (no call times in a log)
                const CompareStage st{base_stage.stage.c_str(), m.metric, false, m.better, m.worse};
                CompareRow row = compare_row(st, labels, samples, opts);
                row.test = op;
                row.key = base_stage.stage + "/" + op;
                add_if_differing(devices, row.differs, "devices");
                add_if_differing(sources, row.differs, "source");
                add_if_differing(tokens, row.differs, "n_tokens");
                for (auto& n : compare_cv_notes(row, opts))
                    r.notes.push_back(std::move(n));
                r.rows.push_back(std::move(row));
            }
        }
        // Op types a side ran that the baseline did not.
        const auto base_ops = op_types(base_stage);
        for (std::size_t i = 1; i < stages.size(); ++i) {
            if (!stages[i])
                continue;
            for (const auto& op : op_types(*stages[i]))
                if (std::find(base_ops.begin(), base_ops.end(), op) == base_ops.end())
                    r.unmatched.push_back({labels[i], base_stage.stage + " " + op});
        }
    }
    for (std::size_t i = 1; i < profiles.size(); ++i)
        for (const auto& s : profiles[i].stages)
            if (!stage_of(profiles[0], s.stage))
                r.unmatched.push_back({labels[i], s.stage + " (stage)"});
    r.notes.push_back(
        "ops documents: per stage and op type, each side's samples are its op records of that "
        "type (one per node; views excluded): op_us the op time, call_us the call time (µs), "
        "call_per_op their ratio per op (the dispatch tax); the ratio is of medians with a "
        "bootstrap 95% CI over the records");
    return r;
}

}  // namespace sb
