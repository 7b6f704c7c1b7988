#pragma once
// Timelines as traces: converts a stagebench result document (what --out writes, read with
// from_json) into a Chrome Trace Event JSON trace that ui.perfetto.dev and chrome://tracing open. A
// pure function of the document, so `--trace` on any command and `stagebench trace RESULT.json`
// give the same file.
//
// What the trace holds (pid 1 "stagebench <command>", pid 2 "telemetry"):
//  * track "stages" (tid 1): tests (`run`), phases and rounds (`sustained`, with "cooldown"
//    slices), repetitions, prefill and decode, one slice per decoded token; for `ops` and
//    `decompose` the uninstrumented and the traced (node-by-node) runs of each stage; for
//    `sustained --trace-ops-rounds` a "traced pass after round k" slice after that round (inside
//    its phase), holding the pass's uninstrumented and traced stage runs.
//  * one track per backend ("ops on CPU", tid 10 + n): every traced op of the run whose
//    timeline the document keeps (ops[].start_ns/end_ns), with tensor name, layer, shapes,
//    types, op_ns, call_ns and backend as arguments (and "pass" for a sustained traced pass);
//    the copies of a split's inputs from other
//    backends as "copy to <backend>" slices with their bytes, on the destination's track.
//  * `serve`: each point a slice on "stages"; its requests on tracks "requests, lane k" (tid
//    100 + k; a request takes the first lane free at its send time, so a point of concurrency
//    C uses at most C lanes), each request a slice from send to its last token holding
//    "waiting for the first token" (its TTFT) and "streaming"; a failed request is named so,
//    with its error.
//  * one counter track per telemetry series, named by its metric (units in the name);
//    cumulative counters as their value since the first sample, and energy counters also as
//    derived power ("... power_mw (from energy_uj)").
// Fields read (a command gets the same trace by writing them):
// tests[].{config.test, config.devices, started_ns, finished_ns, reps_done,
// prefill|decode.{start_ns[], duration_ns[], tokens_per_s[], n_tokens, token_latency_ns[]}};
// sustained.phases[].rounds[].{round, start_ns, end_ns, cooldown_s, ops.{label, start_ns,
// end_ns, status, stages[] (as ops.stages[])}}; ops.stages[].{stage,
// timeline_rep, reconciliation.{plain|traced}_{start_ns,ns}[], ops[].{start_ns, end_ns, ...},
// splits[]}; telemetry.series[].{metric, kind, t_ns[], values[], cumulative[]};
// hybrid.points[].{tests.hybrid, transfer.{start_ns[], duration_ns[], bytes[]}}: a hybrid
// document gets a stages track per mode ("stages on <devices>", its modes' repetitions
// interleave in time) with the state transfers as slices on the hybrid mode's track;
// serve.points[].{start_ns, requests[].{index, send_ns, ttft_ns, e2e_ns, error}}.
// One clock for everything: the document's sb::now_ns timestamps. ts is in microseconds since
// the earliest timestamp of the trace, with nanosecond precision as fractional microseconds.
// Every ts and dur is written as (ns + 0.5) / 1000: readers that truncate ts x 1000 to integer
// nanoseconds (Perfetto's JSON importer does) then recover the exact nanosecond, so slices
// that end together still nest. Events are sorted by ts (longer first at equal ts), metadata
// first. Parts of the document that lack timestamps (older documents, imported logs) are left
// out, never invented.
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"

namespace sb {

struct TraceOptions {
    bool ops = true;       // a slice per traced op and copy (ops / decompose documents)
    bool tokens = true;    // a slice per decoded token inside each decode slice
    bool counters = true;  // telemetry series as counter tracks
};

// The trace of a result document: {"traceEvents": [...], "metadata": {...}}. Never throws for
// the document's content.
nlohmann::json chrome_trace(const ResultDocument& doc, const TraceOptions& opts = {});

// chrome_trace() written compactly to path, atomically (temporary file + rename). Throws
// sb::Error(runtime) when the file cannot be written.
void write_chrome_trace(const ResultDocument& doc, const std::string& path,
                        const TraceOptions& opts = {});

// A structural check of a Chrome Trace Event JSON trace, as Perfetto reads it: an object with
// a traceEvents array; every event has ph, ts, pid and tid; "X" slices have dur >= 0 and nest
// on each track (pid, tid) with no partial overlap (in integer ns, ts x 1000 truncated);
// counter ("C") events have numeric args and non-decreasing ts per counter; every track that
// has slices is named by thread_name metadata and every process by process_name.
struct TraceCheck {
    std::vector<std::string> errors;                    // empty: valid
    std::size_t n_events = 0;                           // all events, metadata included
    std::map<std::string, std::size_t> slices;          // per thread name ("stages", ...)
    std::map<std::string, std::size_t> counter_points;  // per counter name
};
TraceCheck check_chrome_trace(const nlohmann::json& trace);

}  // namespace sb
