#include "core/doc/ops_section.hpp"

#include "core/json_util.hpp"

namespace sb {

using nlohmann::json;

json to_json(const HugePagesRecord& h) {
    return json{{"policy", h.policy},
                {"advised_bytes", h.advised_bytes},
                {"ranges", h.ranges},
                {"error", h.error}};
}

json to_json(const DeviceTimerRecord& d) {
    return json{{"device", d.device},         {"source", d.source},
                {"error", d.error},           {"n_blocks", d.n_blocks},
                {"n_sections", d.n_sections}, {"rejected", d.rejected},
                {"n_rejected", d.n_rejected}, {"duration_ns", opt(d.duration_ns)}};
}

json to_json(const TensorInfo& t) {
    return json{{"name", t.name}, {"type", t.type}, {"ne", t.ne}, {"contiguous", t.contiguous}};
}

json to_json(const OpRecord& r) {
    json srcs = json::array();
    for (const auto& s : r.srcs)
        srcs.push_back(to_json(s));
    json j{{"graph", r.graph},
           {"node", r.node},
           {"op", r.op},
           {"name", r.out.name},
           {"layer", opt(r.layer)},
           {"backend", r.backend},
           {"type", r.out.type},
           {"ne", r.out.ne},
           {"srcs", srcs},
           {"no_compute", r.no_compute},
           {"op_ns", opt(r.op_ns)},
           {"call_ns", opt(r.call_ns)},
           {"isolated_call_ns", opt(r.isolated_call_ns)},
           {"op_method", opt(r.op_method)},
           {"start_ns", opt(r.start_ns)},
           {"end_ns", opt(r.end_ns)},
           {"cycles", opt(r.cycles)},
           {"mhz", opt(r.mhz)},
           {"pkts", opt(r.pkts)},
           {"start_cycles", opt(r.start_cycles)}};
    // Written only when the backend reported them (Hexagon logs), so that documents without
    // them keep their exact form.
    if (r.pmu)
        j["pmu"] = *r.pmu;
    if (r.kernel)
        j["kernel"] = *r.kernel;
    return j;
}

json to_json(const OpAggregate& a, GroupBy by) {
    json j{{"count", a.count},
           {"n_no_compute", a.n_no_compute},
           {"op_ns", opt(a.op_ns)},
           {"call_ns", opt(a.call_ns)},
           {"share", opt(a.share)},
           {"call_share", opt(a.call_share)},
           {"call_op_ratio", opt(a.call_op_ratio)}};
    switch (by) {
        case GroupBy::op:
            j["op"] = a.key;
            break;
        case GroupBy::backend:
            j["backend"] = a.key;
            break;
        case GroupBy::layer:
            j["layer"] = opt(a.layer);
            break;
    }
    return j;
}

json to_json(const SplitRecord& s) {
    return json{{"graph", s.graph},
                {"index", s.index},
                {"backend", s.backend},
                {"first_node", s.first_node},
                {"n_nodes", s.n_nodes},
                {"n_inputs", s.n_inputs},
                {"input_bytes", opt(s.input_bytes)},
                {"inputs", s.inputs},
                {"copy_ns", opt(s.copy_ns)}};
}

json to_json(const CoverageRow& c) {
    return json{{"op", c.op},
                {"count", c.count},
                {"supported", c.supported},
                {"ran", c.ran},
                {"note", c.note}};
}

json to_json(const FallbackRow& f) {
    return json{{"op", f.op},
                {"backend", f.backend},
                {"requested", f.requested},
                {"count", f.count},
                {"call_ns", opt(f.call_ns)},
                {"op_ns", opt(f.op_ns)},
                {"n_replayed", f.n_replayed},
                {"op_ns_replayed", opt(f.op_ns_replayed)},
                {"op_ns_requested", opt(f.op_ns_requested)},
                {"penalty", opt(f.penalty)},
                {"n_splits", f.n_splits},
                {"split_bytes", opt(f.split_bytes)},
                {"split_ns", opt(f.split_ns)},
                {"penalty_ns", opt(f.penalty_ns)},
                {"penalty_basis", f.penalty_basis},
                {"note", f.note}};
}

json to_json(const Reconciliation& r) {
    return json{{"plain_ns", r.plain_ns},
                {"plain_start_ns", r.plain_start_ns},
                {"traced_start_ns", r.traced_start_ns},
                {"plain_median_ns", opt(r.plain_median_ns)},
                {"traced_ns", r.traced_ns},
                {"tracer_ns", r.tracer_ns},
                {"traced_median_ns", opt(r.traced_median_ns)},
                {"sum_op_ns", opt(r.sum_op_ns)},
                {"sum_call_ns", opt(r.sum_call_ns)},
                {"sum_call_compute_ns", opt(r.sum_call_compute_ns)},
                {"sum_copy_ns", opt(r.sum_copy_ns)},
                {"sched_gap_ns", opt(r.sched_gap_ns)},
                {"host_ns", opt(r.host_ns)},
                {"overhead_ns", opt(r.overhead_ns)},
                {"overhead_ratio", opt(r.overhead_ratio)},
                {"op_fraction", opt(r.op_fraction)},
                {"op_within_stage", r.op_within_stage},
                {"fit_cause", r.fit_cause},
                {"node_dispatch_ns", r.node_dispatch_ns},
                {"n_op_in_situ", r.n_op_in_situ},
                {"n_op_replayed", r.n_op_replayed},
                {"n_op_device_timer", r.n_op_device_timer},
                {"sum_op_in_situ_ns", opt(r.sum_op_in_situ_ns)}};
}

json to_json(const Decomposition& d) {
    json parts = json::array();
    for (const auto& p : d.parts)
        parts.push_back(
            {{"name", p.name}, {"ns", opt(p.ns)}, {"share", opt(p.share)}, {"note", p.note}});
    return json{{"parts", parts},
                {"accelerators", d.accelerators},
                {"dispatch_ns", d.dispatch_ns},
                {"n_dispatches", d.n_dispatches},
                {"n_accel_ops", d.n_accel_ops},
                {"per_op_dispatch_ns", opt(d.per_op_dispatch_ns)},
                {"traced_tax_ns", opt(d.traced_tax_ns)},
                {"n_conversion_ops", d.n_conversion_ops},
                {"n_conversion_missing", d.n_conversion_missing}};
}

json to_json(const NpuPipelinePart& x) {
    return json{{"name", x.name}, {"ns", x.ns}, {"share", opt(x.share)}, {"events", x.events}};
}

json to_json(const NpuOpSplit& o) {
    json parts = json::array();
    for (const auto& x : o.parts)
        parts.push_back(to_json(x));
    return json{{"op", o.op},
                {"count", o.count},
                {"wall_ns", o.wall_ns},
                {"n_events", o.n_events},
                {"parts", parts}};
}

json to_json(const NpuPipeline& p) {
    json parts = json::array();
    for (const auto& x : p.parts)
        parts.push_back(to_json(x));
    json j{{"device", p.device},
           {"n_batches", p.n_batches},
           {"host_batch_ns", opt(p.host_batch_ns)},
           {"npu_batch_ns", opt(p.npu_batch_ns)},
           {"ops_ns", opt(p.ops_ns)},
           {"envelope", p.envelope},
           {"envelope_ns", opt(p.envelope_ns)},
           {"parts", parts},
           {"n_events", p.n_events},
           {"n_unpaired", p.n_unpaired},
           {"n_no_clock", p.n_no_clock},
           {"traced_busy_ns", opt(p.traced_busy_ns)}};
    // Only logs with timed trace events in a batch split them per op.
    if (!p.by_op.empty() || p.unattributed_ns) {
        json by_op = json::array();
        for (const auto& o : p.by_op)
            by_op.push_back(to_json(o));
        j["by_op"] = by_op;
        j["n_unattributed"] = p.n_unattributed;
        j["unattributed_ns"] = opt(p.unattributed_ns);
    }
    return j;
}

json to_json(const StageProfile& s) {
    json ops = json::array(), by_op = json::array(), by_layer = json::array(),
         by_backend = json::array(), top = json::array(), splits = json::array(),
         fallback = json::array();
    for (const auto& r : s.ops)
        ops.push_back(to_json(r));
    for (const auto& a : s.by_op)
        by_op.push_back(to_json(a, GroupBy::op));
    for (const auto& a : s.by_layer)
        by_layer.push_back(to_json(a, GroupBy::layer));
    for (const auto& a : s.by_backend)
        by_backend.push_back(to_json(a, GroupBy::backend));
    for (size_t i : s.top)
        top.push_back(i);
    for (const auto& sp : s.splits)
        splits.push_back(to_json(sp));
    for (const auto& f : s.fallback)
        fallback.push_back(to_json(f));
    json coverage = json::array();
    for (const auto& c : s.coverage)
        coverage.push_back(to_json(c));
    json j{{"stage", s.stage},
           {"n_tokens", s.n_tokens},
           {"kv_depth", s.kv_depth},
           {"n_graphs", s.n_graphs},
           {"traced_reps", s.traced_reps},
           {"isolation_stride", opt(s.isolation_stride)},
           {"timeline_rep", opt(s.timeline_rep)},
           {"reconciliation", to_json(s.rec)},
           {"by_op", by_op},
           {"by_layer", by_layer},
           {"by_backend", by_backend},
           {"top", top},
           {"n_splits", s.n_splits},
           {"n_copies", s.n_copies},
           {"copy_bytes", opt(s.copy_bytes)},
           {"copy_ns", opt(s.copy_ns)},
           {"splits", splits},
           {"fallback", fallback},
           {"decomposition", s.decomposition ? to_json(*s.decomposition) : json(nullptr)},
           {"notes", s.notes},
           {"ops", ops}};
    // Only imports with NPU batches or trace events have a pipeline.
    if (!s.npu_pipeline.empty()) {
        json pipes = json::array();
        for (const auto& p : s.npu_pipeline)
            pipes.push_back(to_json(p));
        j["npu_pipeline"] = pipes;
    }
    // Only `ops` traces have coverage; other documents keep their exact form.
    if (!s.coverage.empty() || !s.coverage_devices.empty()) {
        j["coverage_devices"] = s.coverage_devices;
        j["coverage"] = coverage;
    }
    return j;
}

json to_json(const OpsProfile& p) {
    json stages = json::array();
    for (const auto& s : p.stages)
        stages.push_back(to_json(s));
    json j{{"source", p.source},
           {"model_path", p.model_path},
           {"devices", p.devices},
           {"requested", p.requested},
           {"backends", p.backends},
           {"n_threads", p.n_threads},
           {"n_prompt", p.n_prompt},
           {"n_depth", p.n_depth},
           {"replay_copies", p.replay_copies},
           {"method", p.method},
           {"stages", stages}};
    if (p.source == "trace") {
        j["duration_ns"] = opt(p.duration_ns);
        j["phase_ns"] = p.phase_ns;
        j["llc_bytes"] = opt(p.llc_bytes);
        j["cold_weight_bytes"] = opt(p.cold_weight_bytes);
        j["huge_pages"] = p.huge_pages ? to_json(*p.huge_pages) : json(nullptr);
        j["device_timer"] = p.device_timer ? to_json(*p.device_timer) : json(nullptr);
    }
    if (!p.import_info.is_null())
        j["import"] = p.import_info;
    return j;
}

void read(const JsonIn& in, HugePagesRecord& h) {
    ObjectIn o(in);
    o("policy", h.policy)("advised_bytes", h.advised_bytes)("ranges", h.ranges)("error", h.error);
    o.non_negative({"ranges"});
}

void read(const JsonIn& in, DeviceTimerRecord& d) {
    ObjectIn o(in);
    o("device", d.device)("source", d.source)("error", d.error)("n_blocks", d.n_blocks)(
        "n_sections", d.n_sections)("rejected", d.rejected)("n_rejected", d.n_rejected)(
        "duration_ns", d.duration_ns);
    o.non_negative({"n_blocks", "n_sections", "n_rejected", "duration_ns"});
}

void read(const JsonIn& in, TensorInfo& t) {
    ObjectIn{in}("name", t.name)("type", t.type)("ne", t.ne)("contiguous", t.contiguous);
}

void read(const JsonIn& in, OpRecord& r) {
    ObjectIn{in}("graph", r.graph)("node", r.node)("op", r.op)("name", r.out.name)(
        "layer", r.layer)("backend", r.backend)("type", r.out.type)("ne", r.out.ne)("srcs", r.srcs)(
        "no_compute", r.no_compute)("op_ns", r.op_ns)("call_ns", r.call_ns)(
        "isolated_call_ns", r.isolated_call_ns)("op_method", r.op_method)("start_ns", r.start_ns)(
        "end_ns", r.end_ns)("cycles", r.cycles)("mhz", r.mhz)("pkts", r.pkts)(
        "start_cycles", r.start_cycles)("pmu", r.pmu)("kernel", r.kernel)
        .non_negative({"op_ns", "call_ns", "isolated_call_ns"});
}

void read(const JsonIn& in, OpAggregate& a, GroupBy by) {
    ObjectIn o(in);
    o("count", a.count)("n_no_compute", a.n_no_compute)("op_ns", a.op_ns)("call_ns", a.call_ns)(
        "share", a.share)("call_share", a.call_share)("call_op_ratio", a.call_op_ratio)
        .non_negative({"count", "n_no_compute", "op_ns", "call_ns", "share", "call_share"});
    switch (by) {
        case GroupBy::op:
            o("op", a.key);
            break;
        case GroupBy::backend:
            o("backend", a.key);
            break;
        case GroupBy::layer:
            o("layer", a.layer);
            a.key = a.layer ? std::to_string(*a.layer) : "none";
            break;
    }
}

void read(const JsonIn& in, SplitRecord& s) {
    ObjectIn{in}("graph", s.graph)("index", s.index)("backend", s.backend)(
        "first_node", s.first_node)("n_nodes", s.n_nodes)("n_inputs", s.n_inputs)(
        "input_bytes", s.input_bytes)("inputs", s.inputs)("copy_ns", s.copy_ns);
}

void read(const JsonIn& in, FallbackRow& f) {
    ObjectIn{in}("op", f.op)("backend", f.backend)("requested", f.requested)("count", f.count)(
        "call_ns", f.call_ns)("op_ns", f.op_ns)("n_replayed", f.n_replayed)(
        "op_ns_replayed", f.op_ns_replayed)("op_ns_requested", f.op_ns_requested)(
        "penalty", f.penalty)("n_splits", f.n_splits)("split_bytes", f.split_bytes)(
        "split_ns", f.split_ns)("penalty_ns", f.penalty_ns)("penalty_basis", f.penalty_basis)(
        "note", f.note)
        // penalty_ns may be negative: the op ran faster off the device, splits included.
        .non_negative({"count", "call_ns", "op_ns", "n_replayed", "op_ns_replayed",
                       "op_ns_requested", "penalty", "n_splits", "split_bytes", "split_ns"});
}

void read(const JsonIn& in, CoverageRow& c) {
    ObjectIn{in}("op", c.op)("count", c.count)("supported", c.supported)("ran", c.ran)("note",
                                                                                       c.note);
}

void read(const JsonIn& in, Reconciliation& r) {
    ObjectIn{in}("plain_ns", r.plain_ns)("plain_start_ns", r.plain_start_ns)(
        "traced_start_ns", r.traced_start_ns)("plain_median_ns", r.plain_median_ns)(
        "traced_ns", r.traced_ns)("tracer_ns", r.tracer_ns)("traced_median_ns", r.traced_median_ns)(
        "sum_op_ns", r.sum_op_ns)("sum_call_ns", r.sum_call_ns)(
        "sum_call_compute_ns", r.sum_call_compute_ns)("sum_copy_ns", r.sum_copy_ns)(
        "sched_gap_ns", r.sched_gap_ns)("host_ns", r.host_ns)("overhead_ns", r.overhead_ns)(
        "overhead_ratio", r.overhead_ratio)("op_fraction", r.op_fraction)(
        "op_within_stage", r.op_within_stage)("fit_cause", r.fit_cause)(
        "node_dispatch_ns", r.node_dispatch_ns)("n_op_in_situ", r.n_op_in_situ)(
        "n_op_replayed", r.n_op_replayed)("n_op_device_timer", r.n_op_device_timer)(
        "sum_op_in_situ_ns", r.sum_op_in_situ_ns)
        // overhead_ns and overhead_ratio are signed: a traced stage can run faster under load.
        .non_negative({"plain_ns", "traced_ns", "tracer_ns", "plain_median_ns", "traced_median_ns",
                       "sum_op_ns", "sum_call_ns", "sum_call_compute_ns", "sum_copy_ns",
                       "node_dispatch_ns", "n_op_in_situ", "n_op_replayed", "n_op_device_timer",
                       "sum_op_in_situ_ns"});
}

void read(const JsonIn& in, DecompositionPart& p) {
    ObjectIn{in}("name", p.name)("ns", p.ns)("share", p.share)("note", p.note);
}

void read(const JsonIn& in, NpuPipelinePart& p) {
    ObjectIn{in}("name", p.name)("ns", p.ns)("share", p.share)("events", p.events)
        .non_negative({"ns", "share"});
}

void read(const JsonIn& in, NpuOpSplit& o) {
    ObjectIn{in}("op", o.op)("count", o.count)("wall_ns", o.wall_ns)("n_events", o.n_events)(
        "parts", o.parts)
        .non_negative({"count", "wall_ns", "n_events"});
}

void read(const JsonIn& in, NpuPipeline& p) {
    ObjectIn{in}("device", p.device)("n_batches", p.n_batches)("host_batch_ns", p.host_batch_ns)(
        "npu_batch_ns", p.npu_batch_ns)("ops_ns", p.ops_ns)("envelope", p.envelope)(
        "envelope_ns", p.envelope_ns)("parts", p.parts)("n_events", p.n_events)(
        "n_unpaired", p.n_unpaired)("n_no_clock", p.n_no_clock)("traced_busy_ns", p.traced_busy_ns)(
        "by_op", p.by_op)("n_unattributed", p.n_unattributed)("unattributed_ns", p.unattributed_ns)
        .non_negative({"n_batches", "host_batch_ns", "npu_batch_ns", "ops_ns", "envelope_ns",
                       "n_events", "n_unpaired", "n_no_clock", "traced_busy_ns", "n_unattributed",
                       "unattributed_ns"});
}

void read(const JsonIn& in, Decomposition& d) {
    ObjectIn{in}("parts", d.parts)("accelerators", d.accelerators)("dispatch_ns", d.dispatch_ns)(
        "n_dispatches", d.n_dispatches)("n_accel_ops", d.n_accel_ops)(
        "per_op_dispatch_ns", d.per_op_dispatch_ns)("traced_tax_ns", d.traced_tax_ns)(
        "n_conversion_ops", d.n_conversion_ops)("n_conversion_missing", d.n_conversion_missing);
}

namespace {

// An array of aggregates grouped by `by` (their key member depends on it).
void read_aggregates(ObjectIn& o, const char* key, std::vector<OpAggregate>& out, GroupBy by) {
    const JsonIn a = o.at(key);
    if (a.is_null() && !o.has(key))
        return;
    if (!a.raw().is_array())
        a.fail_type("an array");
    out.assign(a.raw().size(), OpAggregate{});
    for (std::size_t i = 0; i < out.size(); ++i)
        read(a.element(i), out[i], by);
}

}  // namespace

void read(const JsonIn& in, StageProfile& s) {
    ObjectIn o(in);
    o("stage", s.stage)("n_tokens", s.n_tokens)("kv_depth", s.kv_depth)("n_graphs", s.n_graphs)(
        "traced_reps", s.traced_reps)("isolation_stride", s.isolation_stride)(
        "timeline_rep", s.timeline_rep)("reconciliation", s.rec)("top", s.top)(
        "n_splits", s.n_splits)("n_copies", s.n_copies)("copy_bytes", s.copy_bytes)(
        "copy_ns", s.copy_ns)("splits", s.splits)("fallback", s.fallback)(
        "coverage_devices", s.coverage_devices)("coverage", s.coverage)(
        "decomposition", s.decomposition)("npu_pipeline", s.npu_pipeline)("notes", s.notes)("ops",
                                                                                            s.ops)
        .non_negative({"n_tokens", "kv_depth", "n_graphs", "traced_reps", "n_splits", "n_copies",
                       "copy_bytes", "copy_ns"});
    if (s.isolation_stride && *s.isolation_stride < 1)
        o.at("isolation_stride")
            .fail("expected at least 1, found " + std::to_string(*s.isolation_stride));
    read_aggregates(o, "by_op", s.by_op, GroupBy::op);
    read_aggregates(o, "by_layer", s.by_layer, GroupBy::layer);
    read_aggregates(o, "by_backend", s.by_backend, GroupBy::backend);
}

void read(const JsonIn& in, OpsProfile& p) {
    ObjectIn o(in);
    o("source", p.source)("model_path", p.model_path)("devices", p.devices)(
        "requested", p.requested)("backends", p.backends)("n_threads", p.n_threads)(
        "n_prompt", p.n_prompt)("n_depth", p.n_depth)("replay_copies", p.replay_copies)(
        "method", p.method)("stages", p.stages)("duration_ns", p.duration_ns)(
        "phase_ns", p.phase_ns)("llc_bytes", p.llc_bytes)("cold_weight_bytes", p.cold_weight_bytes)(
        "huge_pages", p.huge_pages)("device_timer", p.device_timer);
    o.non_negative({"n_threads", "n_prompt", "n_depth", "replay_copies", "duration_ns", "phase_ns",
                    "llc_bytes", "cold_weight_bytes"});
    read_object_or_null(o.at("import"), p.import_info);
}

}  // namespace sb
