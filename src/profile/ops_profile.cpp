#include "profile/ops_profile.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/stats.hpp"

namespace sb {

namespace {

constexpr double kFitTolerance = 0.05;  // |sum of ops / stage - 1| beyond this names a cause

std::string pct(double f) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f%%", f * 100.0);
    return buf;
}

std::string ms(double ns) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f ms", ns / 1e6);
    return buf;
}

// What the difference between the summed op time and the uninstrumented stage is made of,
// from the stage's own figures.
std::string fit_cause_of(const Reconciliation& r) {
    const double plain = *r.plain_median_ns, sum = *r.sum_op_ns;
    std::vector<std::string> parts;
    if (sum < plain) {
        double left = plain - sum;
        std::string head = ms(left) + " of the stage is in no op";
        if (r.host_ns && *r.host_ns > 0) {
            parts.push_back("the host's work around the graph (graph build, inputs, outputs) " +
                            ms(*r.host_ns) + " in the traced runs");
            left -= *r.host_ns;
        }
        if (r.sum_copy_ns && *r.sum_copy_ns > 0) {
            parts.push_back("copies between backends " + ms(*r.sum_copy_ns) + " (traced)");
            left -= *r.sum_copy_ns;
        }
        if (left > 0)
            parts.push_back(ms(left) +
                            " that only the whole graph pays: the threads' synchronisation "
                            "between ops, and ops that ran slower inside it than alone");
        std::string text = head + ": ";
        for (size_t i = 0; i < parts.size(); ++i)
            text += (i ? "; " : "") + parts[i];
        return text;
    }
    std::string text = ms(sum - plain) + " more op time than the stage: ops timed " +
                       (r.n_op_device_timer > 0 ? "on their own or in the device timer's pass "
                                                : "on their own ") +
                       "ran slower than inside the graph";
    if (r.sum_op_in_situ_ns)
        text += " (" + ms(*r.sum_op_in_situ_ns) +
                " of the op time is traced calls less their "
                "dispatch, " +
                ms(sum - *r.sum_op_in_situ_ns) + " replayed alone)";
    if (r.plain_ns.size() > 1) {
        const auto [lo, hi] = std::minmax_element(r.plain_ns.begin(), r.plain_ns.end());
        if (*lo > 0 && static_cast<double>(*hi) > 1.2 * static_cast<double>(*lo))
            text += "; the uninstrumented repetitions ranged from " + ms(static_cast<double>(*lo)) +
                    " to " + ms(static_cast<double>(*hi)) + ": other load on the machine";
    }
    return text;
}

}  // namespace

void finalize_stage(StageProfile& s, size_t top_n) {
    Reconciliation& r = s.rec;
    r.plain_median_ns = median_ns(r.plain_ns);
    std::vector<int64_t> traced = r.traced_ns;
    if (r.tracer_ns.size() == traced.size())
        for (size_t i = 0; i < traced.size(); ++i)
            traced[i] -= r.tracer_ns[i];
    r.traced_median_ns = median_ns(traced);
    r.sum_op_ns = sum_op_ns(s.ops);
    r.sum_call_ns = sum_call_ns(s.ops, false);
    r.sum_call_compute_ns = sum_call_ns(s.ops, true);

    s.n_splits = static_cast<int>(s.splits.size());
    s.n_copies = 0;
    s.copy_bytes.reset();
    s.copy_ns.reset();
    for (const auto& sp : s.splits) {
        s.n_copies += sp.n_inputs;
        if (sp.input_bytes)
            s.copy_bytes = s.copy_bytes.value_or(0) + *sp.input_bytes;
        if (sp.copy_ns)
            s.copy_ns = s.copy_ns.value_or(0) + *sp.copy_ns;
    }
    r.sum_copy_ns = s.copy_ns;
    // A stage whose runs dispatched only some nodes alone has its host time from each run
    // (profile/trace_stage.hpp); the calls of the others sum to a run's.
    if (!r.host_ns && r.traced_median_ns && r.sum_call_ns)
        r.host_ns = *r.traced_median_ns - *r.sum_call_ns - r.sum_copy_ns.value_or(0) -
                    r.sched_gap_ns.value_or(0);
    if (r.traced_median_ns && r.plain_median_ns && *r.plain_median_ns > 0) {
        r.overhead_ns = *r.traced_median_ns - *r.plain_median_ns;
        r.overhead_ratio = *r.traced_median_ns / *r.plain_median_ns - 1.0;
    }
    r.op_within_stage = true;
    r.fit_cause.clear();
    if (r.sum_op_ns && r.plain_median_ns && *r.plain_median_ns > 0) {
        r.op_fraction = *r.sum_op_ns / *r.plain_median_ns;
        r.op_within_stage = *r.sum_op_ns <= *r.plain_median_ns;
        if (std::abs(*r.op_fraction - 1.0) > kFitTolerance)
            r.fit_cause = fit_cause_of(r);
        if (!r.op_within_stage)
            s.notes.push_back("summed op time is " + pct(*r.op_fraction) +
                              " of the uninstrumented stage time: " + fit_cause_of(r) +
                              "; treat op times of this stage as upper bounds");
    }
    const std::optional<double> denom = r.plain_median_ns ? r.plain_median_ns : r.sum_op_ns;
    s.by_op = aggregate(s.ops, GroupBy::op, denom);
    s.by_layer = aggregate(s.ops, GroupBy::layer, denom);
    s.by_backend = aggregate(s.ops, GroupBy::backend, denom);
    s.top = top_records(s.ops, top_n);
}

std::vector<CoverageRow> coverage_rows(const std::vector<OpRecord>& records,
                                       const std::vector<std::string>& devices,
                                       const std::vector<uint32_t>& supports,
                                       const std::vector<uint32_t>& usable) {
    if (supports.size() != records.size() || usable.size() != records.size())
        throw usage_error("coverage_rows: one support mask per record expected");
    if (devices.size() > 32)
        throw usage_error("coverage_rows: at most 32 devices");
    struct Why {
        int not_supported = 0, weights = 0;
        std::map<std::string, int> placed;  // supported and usable, ran on this backend instead
    };
    std::vector<CoverageRow> rows;
    std::map<std::string, size_t> index;
    std::map<std::string, std::vector<Why>> why;
    for (size_t i = 0; i < records.size(); ++i) {
        const OpRecord& r = records[i];
        if (r.no_compute)
            continue;
        auto [it, fresh] = index.emplace(r.op, rows.size());
        if (fresh) {
            CoverageRow row;
            row.op = r.op;
            for (const auto& d : devices)
                row.supported[d] = 0;
            rows.push_back(row);
            why[r.op].resize(devices.size());
        }
        CoverageRow& row = rows[it->second];
        row.count++;
        row.ran[r.backend]++;
        for (size_t k = 0; k < devices.size(); ++k) {
            const bool sup = supports[i] >> k & 1u;
            const bool use = usable[i] >> k & 1u;
            if (sup)
                row.supported[devices[k]]++;
            if (devices[k] == "CPU" || r.backend == devices[k])
                continue;
            Why& w = why[r.op][k];
            if (!sup)
                w.not_supported++;
            else if (!use)
                w.weights++;
            else
                w.placed[r.backend]++;
        }
    }
    for (auto& row : rows) {
        std::string note;
        for (size_t k = 0; k < devices.size(); ++k) {
            const Why& w = why[row.op][k];
            std::string parts;
            auto add = [&](const std::string& t) { parts += (parts.empty() ? "" : "; ") + t; };
            if (w.not_supported > 0)
                add(std::to_string(w.not_supported) + " not supported");
            if (w.weights > 0)
                add(std::to_string(w.weights) + " supported, weights in buffers it cannot use");
            for (const auto& [be, n] : w.placed)
                add(std::to_string(n) + " supported, placed on " + be + " by the scheduler");
            if (!parts.empty())
                note += (note.empty() ? "" : " · ") + devices[k] + ": " + parts;
        }
        row.note = note;
    }
    return rows;
}

Decomposition decompose_stage(const StageProfile& s, const std::vector<std::string>& accelerators,
                              const std::map<std::string, double>& dispatch_ns,
                              const std::vector<std::optional<double>>& conversion_ns) {
    Decomposition d;
    d.accelerators = accelerators;
    d.dispatch_ns = dispatch_ns;
    auto is_accel = [&](const std::string& b) {
        return std::find(accelerators.begin(), accelerators.end(), b) != accelerators.end();
    };
    std::optional<double> accel, conv, fallback, comm, tax;
    int n_conv_capped = 0;
    for (size_t i = 0; i < s.ops.size(); ++i) {
        const OpRecord& r = s.ops[i];
        if (r.no_compute)
            continue;
        const bool on_accel = is_accel(r.backend);
        if (on_accel) {
            d.n_accel_ops++;
            if (r.op_ns)
                accel = accel.value_or(0) + *r.op_ns;
            if (r.op_ns && r.call_ns)
                tax = tax.value_or(0) + (*r.call_ns - *r.op_ns);
            if (r.op == "MUL_MAT" || r.op == "MUL_MAT_ID") {
                if (i < conversion_ns.size() && conversion_ns[i]) {
                    d.n_conversion_ops++;
                    // The conversion is part of the op: two replays subtracted (op_replay)
                    // can exceed the op's own time under load, which is noise, not time.
                    double c = *conversion_ns[i];
                    if (r.op_ns && c > *r.op_ns) {
                        c = *r.op_ns;
                        n_conv_capped++;
                    }
                    conv = conv.value_or(0) + c;
                } else {
                    d.n_conversion_missing++;
                }
            }
        } else if (r.op_ns) {
            fallback = fallback.value_or(0) + *r.op_ns;
        }
    }
    for (const auto& sp : s.splits) {
        if (!is_accel(sp.backend))
            continue;
        d.n_dispatches++;
        if (auto it = dispatch_ns.find(sp.backend); it != dispatch_ns.end())
            comm = comm.value_or(0) + it->second;
    }
    if (!accelerators.empty())
        if (auto it = dispatch_ns.find(accelerators.front()); it != dispatch_ns.end())
            d.per_op_dispatch_ns = d.n_accel_ops * it->second;
    d.traced_tax_ns = tax;
    std::optional<double> compute = accel;
    if (compute && conv)
        compute = std::max(0.0, *compute - *conv);
    const std::optional<double> stage = s.rec.plain_median_ns;
    std::optional<double> host;
    if (stage)
        host = *stage - compute.value_or(0) - conv.value_or(0) - comm.value_or(0) -
               s.rec.sum_copy_ns.value_or(0) - fallback.value_or(0);
    auto part = [&](const std::string& name, std::optional<double> ns, const std::string& note) {
        DecompositionPart p;
        p.name = name;
        p.ns = ns;
        if (ns && stage && *stage > 0)
            p.share = *ns / *stage;
        p.note = note;
        // A part larger than the whole: measured on its own (replayed, no-work dispatches), it
        // ran slower than inside the stage (cold caches, a stall of the machine).
        if (ns && stage && *ns > *stage)
            p.note +=
                "; exceeds the uninstrumented stage time: measured on its own, it ran slower "
                "than inside the stage, so read it as an upper bound";
        d.parts.push_back(p);
    };
    std::string accel_names;
    for (const auto& a : accelerators)
        accel_names += (accel_names.empty() ? "" : "+") + a;
    part("accelerator_compute", compute,
         "op times of the " + std::to_string(d.n_accel_ops) + " computing ops on " + accel_names +
             (conv ? ", less conversion" : ""));
    part("conversion", conv,
         std::to_string(d.n_conversion_ops) +
             " mat-mul(s): F32 activations vs already converted (vec-dot type)" +
             (d.n_conversion_missing
                  ? "; " + std::to_string(d.n_conversion_missing) + " not separable"
                  : std::string()) +
             (n_conv_capped ? "; " + std::to_string(n_conv_capped) +
                                  " capped at the op's own time (measured apart, the "
                                  "conversion came out larger than the op: noise)"
                            : std::string()));
    part("communication", comm,
         std::to_string(d.n_dispatches) + " dispatch(es) of a split, each one no-work round trip");
    part("copies", s.rec.sum_copy_ns,
         std::to_string(s.n_copies) + " tensor(s) copied between backends (traced)");
    part("fallback_ops", fallback, "op times of computing ops on other backends");
    part("host", host,
         host && *host < 0
             ? "negative: the parts, each measured on its own, overlap in the real run (e.g. "
               "asynchronous sends)"
             : "the rest of the stage: graph build, inputs, outputs, synchronisation");
    return d;
}

Warnings profile_warnings(const OpsProfile& p) {
    Warnings w;
    if (const auto& d = p.device_timer) {
        if (!d->error.empty())
            w.push_back({"device_timer_failed",
                         d->device + ": no op times from the device's own timer: " + d->error,
                         "its ops keep the traced call less the no-work round trip (op_method "
                         "says so)"});
        if (d->n_rejected > 0)
            w.push_back({"device_timer_unreadable_lines",
                         fmt::format("{}: {} line(s) or block(s) of the device timer's output "
                                     "could not be read or cannot be true, and were not used; "
                                     "the first: {}",
                                     d->device, d->n_rejected,
                                     d->rejected.empty() ? std::string() : d->rejected.front()),
                         "see ops.device_timer.rejected in the document"});
    }
    for (const auto& s : p.stages) {
        if (!s.rec.op_within_stage && s.rec.op_fraction) {
            w.push_back({"op_time_exceeds_stage",
                         s.stage + ": summed op time is " + pct(*s.rec.op_fraction) +
                             " of the uninstrumented stage time",
                         "rerun on an idle machine; raise --replay for steadier op times"});
        }
        if (p.replay_copies == 0)
            continue;  // op times were not asked for
        int failed = 0;
        for (const auto& r : s.ops)
            if (!r.no_compute && !r.op_ns)
                ++failed;
        if (failed > 0)
            w.push_back({"op_replay_incomplete",
                         s.stage + ": " + std::to_string(failed) +
                             " op(s) have no op time (replay unsupported or failed)",
                         "see op_method in the per-op records"});
    }
    return w;
}

}  // namespace sb
