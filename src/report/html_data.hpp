#pragma once
// The data preparation of the HTML report: result documents (any command) and compare
// documents in, one JSON "view" out that the page's script draws without further arithmetic
// beyond layout. Display units are fixed here: times in ms, temperatures in degrees C,
// frequencies in MHz, power in W, throughput in tokens/s, telemetry time in s from the first
// sample. Missing values stay null. Documents come typed (ResultDocument, CompareResult: their
// shape was checked where they were read); what a document lacks or this report does not know
// becomes a note in the view ("notes" of that document).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/compare.hpp"
#include "core/result.hpp"

namespace sb {

// One input of the report and where it came from (a path or a label): a result document, a
// compare document (both typed), or something else (shown as unknown).
struct ReportInput {
    std::string source;
    std::optional<ResultDocument> result;
    std::optional<CompareResult> compare;
    nlohmann::json other;  // anything else; null for a result or compare document

    static ReportInput of(std::string source, ResultDocument doc);
    static ReportInput of(std::string source, CompareResult doc);
    // A parsed document: one with "schema": "stagebench.result" is read with its from_json, one
    // with "command": "compare" with read(JsonIn, CompareResult&) (analysis/compare.hpp; both
    // sb::Error(input) naming source when it cannot be), anything else is kept as it is.
    static ReportInput of(std::string source, nlohmann::json doc);
};

// Reads, parses and checks path (core/document.hpp load_document), then ReportInput::of.
// Throws sb::Error(input) with one line when the file is missing, unreadable, not JSON or a
// document of the wrong shape.
ReportInput load_report_input(const std::string& path);

// The view of every input, in order:
//   {"documents": [{"id", "source", "kind": "result"|"compare"|"unknown", "command", "header",
//     "notes", "summary", "throughput", "ops", "telemetry", "sustained", "hybrid", "serve",
//     "fidelity", "warnings", "stages", "compare"}]}
// "stages" is every field of every measured stage of the tests, as `--format csv` writes them
// (report/stage_fields.hpp stage_fields_json: {"columns", "rows"}).
// A section is present only when the document has its data.
nlohmann::json report_view(const std::vector<ReportInput>& inputs);

// The sections, one document at a time (report_view calls these; exposed for tests).
// Each returns null when the document has nothing for it and adds to notes what it skipped.
// summary_view: per test its configuration, status and, per stage, the stall-robust rate
// {median, lo, hi, n, stalls: {count, of, unit}} (core/result.hpp RobustRate, its interval the
// median's), the TTFT median {median, lo, hi, n} in ms with the median's seeded bootstrap CI,
// and the ITL median and p99. Every interval printed beside a median is that median's.
nlohmann::json summary_view(const ResultDocument& doc);
// Per test the prefill and decode stall-robust rates as summary_view gives them.
nlohmann::json throughput_view(const ResultDocument& doc);
// Per test and buffer type, what llama.cpp allocated (tests[].memory) in MiB: {test, devices,
// n_gpu_layers, buffer, weights_mib, context_mib, compute_mib, total_mib}; null when no test
// says.
nlohmann::json memory_view(const ResultDocument& doc);
nlohmann::json ops_view(const ResultDocument& doc, std::vector<std::string>& notes);
nlohmann::json telemetry_view(const ResultDocument& doc, std::vector<std::string>& notes,
                              std::size_t max_points = 2000);
nlohmann::json sustained_view(const ResultDocument& doc);
// A hybrid document's points: per mode the median prefill, transfer and decode times (ms),
// TTFT and end-to-end medians with their medians' CIs; the hybrid's speedups with bootstrap
// CIs.
nlohmann::json hybrid_view(const ResultDocument& doc);
// A pipeline-modes document (core/doc/modes_section.hpp): per mode its environment (or log) and
// stage times with CIs (ms), and the parts (ms, CIs, share of the last mode).
nlohmann::json modes_view(const ResultDocument& doc);
// A serve document's points: label, ok, errors, request_per_s, output_tps, goodput_per_s and
// per stage (ttft, tpot, itl, e2e) {mean, p50, p90, p99, n} in ms; the SLOs in ms.
nlohmann::json serve_view(const ResultDocument& doc);
// A fidelity document (core/doc/fidelity_section.hpp): per variant its labels (label, short_label:
// what tells it from the others), devices, weights (the model's file type), KV types, reference,
// frontier, error; decode_tps and prefill_tps {median, min, max, n} (the speed pass's median and
// the range of its repetitions); decode_kl_mean, decode_kl_p99, decode_top1, prefill_kl_mean
// (the prompt stage's with --prompt-logits: prefill_kl_stage), perplexity; null where the
// variant failed. kl_floor: where the charts' log axis draws KL 0.
nlohmann::json fidelity_view(const ResultDocument& doc);
nlohmann::json warnings_view(const ResultDocument& doc);
// A compare document: its inputs, rows (with the unit of each metric, differs as text, each
// side's median with the median's CI "lo"/"hi" or its "total", its robust rate {median, lo, hi,
// stalls: {count, of, unit}} where the row has one, and for ops documents the row's "op" and
// "signature" {op, role, shape}), unmatched tests and notes.
nlohmann::json compare_view(const CompareResult& doc);

// Stage intervals from telemetry marks: each begin paired with the next end of the same stage;
// unmatched marks are dropped. Times in s after t0_ns. kind is the stage name's last
// '/'-separated part ("test0/prefill" -> "prefill").
// [{"stage", "kind", "begin_s", "end_s"}] in begin order.
nlohmann::json stage_spans(const std::vector<TelemetryMark>& marks, int64_t t0_ns);

// At most max_points points of a time series, in time order: when longer, the series is cut
// into max_points / 2 buckets and each keeps its lowest and highest value (so spikes survive);
// null values are kept as gaps. Points are [t, v|null].
std::vector<std::pair<double, std::optional<double>>> reduce_points(
    const std::vector<std::pair<double, std::optional<double>>>& points, std::size_t max_points);

}  // namespace sb
