#pragma once
// The fields of a test's measured stage (report/fields.hpp): one row per stage of a test (its
// prefill, its decode; "none" for a test that measured neither), as `--format csv` writes them,
// the run table of `--format md` shows them and the HTML report lists them. A field added to
// TestResult (core/result.hpp) reaches JSON through to_json; a line in stage_fields.cpp makes
// it a CSV column, a Markdown column (when it has one) and a column of the HTML table.
#include <vector>

#include "core/result.hpp"
#include "report/fields.hpp"

namespace sb {

// One measured stage of one test; pointers into the document, which outlives the row.
struct StageRow {
    const ResultDocument* doc = nullptr;
    const TestResult* test = nullptr;
    const char* stage = "none";               // prefill | decode | none
    const StageResult* result = nullptr;      // null for "none"
    const Summary* itl = nullptr;             // decode: inter-token latency
    const Stalls* token_stalls = nullptr;     // decode: stalled tokens
    const StageFidelity* fidelity = nullptr;  // --fidelity: the stage's distance
};

// The rows of a test: its prefill and its decode, or one "none" row when it has neither.
std::vector<StageRow> stage_rows(const ResultDocument& doc, const TestResult& test);

// The table, in CSV column order: model_path, devices, n_threads, n_gpu_layers, n_batch,
// n_ubatch, n_depth, flash_attn, type_k, type_v, test, stage, n_tokens, reps, status,
// tokens_per_s_{mean, stddev, cv, ci95_lo, ci95_hi}, duration_ns_median, itl_ns_{p50, p90, p99},
// robust_tokens_per_s, robust_ci95_{lo, hi}, stalled_reps, stalled_reps_excess_ns, stalled_tokens,
// stalled_tokens_excess_ns, error, and with --fidelity kl_mean, kl_p99, kl_max,
// top1_agreement, topk_overlap, max_abs_logit_error. Markdown: model, size, params, devices,
// threads, ngl (where the tests differ in it: markdown_stage_fields), test, t/s, ± sd, CV %,
// robust t/s, stalls, median ms, ITL p50 ms, ITL p99 ms.
const FieldTable<StageRow>& stage_fields();

// The run table's fields for a run of these tests: stage_fields(), less the Markdown column
// ngl when every test offloads the same number of layers (an -ngl sweep shows it; a run of
// one -ngl does not).
FieldTable<StageRow> markdown_stage_fields(const std::vector<TestConfig>& tests);

// The HTML report's table of every stage of every test (fields_json of stage_fields()); null
// without tests.
nlohmann::json stage_fields_json(const ResultDocument& doc);

}  // namespace sb
