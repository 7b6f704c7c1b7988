#pragma once
// `stagebench compare`: result documents side by side, test by test. The first input is the
// baseline. Tests are matched by the configuration fields of CompareOptions::match, by default
// their workload (model file name, n_prompt, n_gen, n_depth, n_batch, n_ubatch, type_k, type_v,
// flash_attn, engine); when one document holds several tests of one key, the other
// configuration fields that vary among them (devices, n_threads, n_gpu_layers, model_path, and
// any workload field left out of the match) join the key of every document. For each matched
// test and stage (prefill tokens/s, decode tokens/s, TTFT ms; a sustained document's request
// E2E s and combined tokens/s; where the baseline and another side measured energy, prefill and
// decode J, J/token gross and net of the idle baseline and mean power; where they read a
// battery, its drain in % and %/h per repetition or round) each
// side's median, CV and n are given, and each other side's ratio of medians to the baseline
// with a seeded bootstrap 95% CI (sb::ratio_of_medians: each side's raw per-repetition samples
// resampled independently). Computation only; formatting lives in report/compare_report.hpp.
// The steps (matching, per-row statistics) are in analysis/compare_steps.hpp.
// Serve documents (`stagebench serve`) compare point by point instead: analysis/serve_compare.hpp.
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "analysis/compare_gate.hpp"
#include "core/doc/json_in.hpp"
#include "core/result.hpp"

namespace sb {

inline constexpr int kCompareSchemaVersion = 1;

// One operand: a result document, read typed where it came from (analysis/compare_inputs.hpp:
// a file through core/document.hpp's reader, or the store), so its shape was checked there.
struct CompareInput {
    std::string label;   // "A", "B", ... (see default_compare_labels)
    std::string source;  // the file path or "db:ID"
    ResultDocument doc;  // run, demo, sustained, fidelity, serve or ops
};

struct CompareOptions {
    std::size_t resamples = 5000;  // bootstrap resamples per ratio
    std::uint64_t seed = 42;       // the same seed gives the same intervals everywhere
    double cv_note_factor = 2.0;   // a note when one side's CV is more than this times another's
    // ... and only when the higher CV is at least this: 0.01 % against 0.04 % is no finding
    // (both print as 0.0 %), the repetitions agree to well within any ratio's interval.
    double cv_note_floor = 0.01;
    std::string tool_version;  // written into the compare document
    // The configuration fields two tests must agree on to be compared, by their names in the
    // document ("n_prompt", "engine", "model" = the model's file name; see
    // parse_compare_match). Empty: the workload (kCompareDefaultMatch).
    std::vector<std::string> match;
    // Model names matched as another: a test whose model (its whole model_path, or its file
    // name, or the model name asked of a server) is a key here is matched as the value, so that
    // one model under two names (a GGUF file and an Ollama tag) meets itself.
    std::map<std::string, std::string> model_alias;
};

// The default match: model, n_prompt, n_gen, n_depth, n_batch, n_ubatch, type_k, type_v,
// flash_attn, engine.
extern const std::vector<std::string> kCompareDefaultMatch;

// "p,n,d" -> {"n_prompt", "n_gen", "n_depth"}: a comma list of configuration field names or
// their flag letters (m/model, p, n, d, b, ub, ctk, ctv, fa, engine, dev/devices, t, ngl,
// model_path). Throws sb::Error(usage) naming the valid names for an unknown or repeated one or
// an empty list.
std::vector<std::string> parse_compare_match(const std::string& text);

// "NAME=ALIAS" -> {NAME, ALIAS}. Throws sb::Error(usage) when either side is empty.
std::pair<std::string, std::string> parse_model_alias(const std::string& text);

struct CompareInputInfo {
    std::string label, source;
    std::optional<std::string> command, host, cpu, started_at;  // null when the doc lacks them
    bool operator==(const CompareInputInfo&) const = default;
};

// A configuration or machine value as compare lists it: absent (null), text or an integer.
using CompareValue = std::variant<std::monostate, std::string, int64_t>;

// A text the document may lack: the text, or null when absent.
inline CompareValue text_or_null(const std::optional<std::string>& s) {
    return s ? CompareValue(*s) : CompareValue();
}

// Text for keys and tables: a string bare, an integer in decimal, absent "null".
std::string compare_value_text(const CompareValue& v);

// Field name -> one value per side (CompareRow::differs).
using CompareDiffers = std::map<std::string, std::vector<CompareValue>>;

// A stage's stall-robust rate (core/result.hpp RobustRate: 1e9 / the median ns per token, with
// the median's seeded bootstrap 95% CI) and its stalls (core/stats.hpp detect_stalls: slow
// repetitions of prefill, stalled tokens of decode), as the side's test recorded them.
struct CompareRobust {
    std::optional<double> tokens_per_s, ci_low, ci_high;
    std::size_t stalls = 0;
    std::size_t of = 0;  // repetitions (prefill) or tokens (decode) examined
    std::string unit;    // "reps" | "tokens"
    bool operator==(const CompareRobust&) const = default;
};

// One side of a row, in the row's metric; null when undefined. median is the median of the
// samples, median_ci_low/high its seeded percentile-bootstrap 95% CI (core/stats.hpp
// median_ci; null with fewer than 2 samples), cv a fraction. Rows of totals (an ops
// document's op type rolled up, metrics *_total*) have total instead, and median, its CI and
// cv null.
struct CompareSide {
    std::string label;
    std::optional<double> median, cv;
    std::size_t n = 0;  // samples (repetitions; op records)
    std::optional<double> median_ci_low, median_ci_high;
    std::optional<double> total;
    // tokens_per_s rows of run and demo documents: the side's robust rate and stalls; null for
    // other rows and for sides without them (a sustained document's rounds).
    std::optional<CompareRobust> robust;
    bool operator==(const CompareSide&) const = default;
};

// One other side against the baseline ("B/A"). verdict: "no difference" (the CI contains 1),
// "faster" or "slower" (worded by the metric's direction, so a TTFT ratio above 1 is "slower"),
// "too few samples" (a side has fewer than 2: median ratio only, no CI), or "no data" (a side
// has no sample or the baseline median is 0: all numbers null).
struct CompareRatio {
    std::string label;
    std::optional<double> median, ci_low, ci_high;
    std::string verdict;
    bool operator==(const CompareRatio&) const = default;
};

// What an ops document's per-shape row compares: the op type, the tensor's role where the
// node's or its weight's name gives it ("attn_q", "ffn_down", "output"; "" when neither
// does), and the types and shapes of its inputs and output ("q4_0 64×64, f32 64×32 → f32
// 64×32": ggml order, trailing 1s left out).
struct CompareOpSignature {
    std::string op, role, shape;
    bool operator==(const CompareOpSignature&) const = default;
};

struct CompareRow {
    std::string test;   // the baseline test's name, e.g. "pp32+tg8"
    std::string key;    // the matching key
    std::string stage;  // prefill | decode | ttft
    // tokens_per_s | ttft_ms | e2e_s, combined_tps (stage "request": a sustained document's
    // rounds) | energy_j | j_per_token | net_j_per_token (of the idle baseline) | mean_power_mw
    // (over the stage) | drain_pct, drain_pct_per_h (stage "battery": the battery's drain over
    // each repetition or round, telemetry/battery_drain.hpp). The energy metrics use the
    // whole-system meter each side recorded per repetition; energy and drain rows exist only
    // where the baseline and another side both have readings (missing is not zero), and their
    // verdicts are "less energy" / "more energy", "lower power" / "higher power" and
    // "less drain" / "more drain".
    std::string metric;
    bool higher_is_better = true;
    // Configuration or machine fields that differ between the sides: name -> one value per
    // side, in the order of `sides` (empty when nothing differs). Besides the configuration
    // fields left out of the match: "server" (the server behind an http engine), "host", "cpu",
    // on energy rows "energy_meter" (the metric the energy was read from) and on drain rows
    // "drain_from" (charge_counter, energy_now, capacity...).
    CompareDiffers differs;
    std::vector<CompareSide> sides;    // the baseline first, then each input having the test
    std::vector<CompareRatio> ratios;  // one per side after the first
    // Ops documents: the op type (rows of one shape and the type's rolled-up rows) and the
    // signature (rows of one shape only); null for other documents.
    std::optional<std::string> op;
    std::optional<CompareOpSignature> signature;
    // Ops documents, rows of an op some side ran fused (one node, the Hexagon backend's
    // "MUL_MAT+ADD"): which sides' values are the ops it fuses summed ("A: MUL_MAT + ADD
    // summed"), or "one node on every side"; null for other rows.
    std::optional<std::string> fused;
    bool operator==(const CompareRow&) const = default;
};

// A test of one input that no other input matched, and why ("-ngl 99 only in B (A: -ngl 0)";
// compare_steps.hpp compare_unmatched_reason); why is "" in documents from before it.
struct CompareUnmatched {
    std::string label, test, why;
    bool operator==(const CompareUnmatched&) const = default;
};

struct CompareResult {
    std::string tool_version, created_at;
    std::vector<std::string> match;  // the fields tests were matched by
    std::map<std::string, std::string> model_alias;
    std::vector<CompareInputInfo> inputs;
    std::vector<CompareRow> rows;
    std::vector<CompareUnmatched> unmatched;  // tests with no counterpart in the baseline (or,
                                              // for the baseline, in any other input)
    std::vector<std::string> notes;
    // --fail-if-slower, --fail-if-energy: the gates over the rows (analysis/compare_gate.hpp);
    // empty when none was asked.
    std::vector<CompareGate> gates;
    bool operator==(const CompareResult&) const = default;
};

// "A", "B", ..., "Z", then "A2", "B2", ...
std::vector<std::string> default_compare_labels(std::size_t n);

// Compares inputs[1..] with inputs[0]. Throws sb::Error(usage) for fewer than 2 inputs or
// repeated labels, sb::Error(input) naming the input ("A (r.json)") when a document has no tests
// (an ops document beside run documents). When the baseline is an ops document,
// compare_ops_documents() compares all of them instead; serve documents compare point by point
// (analysis/serve_compare.hpp). A sustained document compares as one test whose samples are its
// baseline rounds (its CV is then the variation across rounds; a note says so); one without a
// completed baseline round is an sb::Error(input).
CompareResult compare_documents(const std::vector<CompareInput>& inputs,
                                const CompareOptions& opts = {});

// True for a document whose section is `ops` (ops, decompose, import hexagon-profile) and that
// has no tests.
bool is_ops_document(const ResultDocument& doc);

// Ops documents node by node (compare_documents() hands them here when the baseline is one).
// Per stage of the baseline (stages matched by name: prefill, decode, log), the computing
// records (views excluded) are grouped by signature (compare_op_signature: op, role, shapes,
// types); a signature of the baseline meets the other side's equal one, else, when one side
// has no role for it, the other's only signature of that op and shape. Per op type (largest
// time first):
//  - rolled up over its matched signatures (test: the op type): "op_total_us" (summed op time
//    per stage, µs), "call_total_us" (summed call time) and "call_per_op_total" (summed call
//    over summed op time); each side's total, the ratio of totals with a stratified bootstrap
//    95% CI (core/stats_bootstrap.hpp ratio_of_totals: records resampled within each
//    signature);
//  - then per signature (largest baseline op time first; test: "OP role: shape"): "op_us",
//    "call_us" and "call_per_op" (call over op time per record), each side's median of its
//    records of that signature with the median's CI, the ratio of medians with compare_row's
//    bootstrap CI (verdicts "faster"/"slower", for call/op "lower"/"higher").
// A row exists where the baseline has the metric (a log without call times has no call rows).
// differs names the sides' devices, sources and stage n_tokens when they differ. Signatures,
// op types and stages only one side has are listed in unmatched, with their node count and op
// time ("decode GET_ROWS token_embd: q4_0 64×32000, i32 1 → f32 64 (1 node, 5.0 µs op)",
// "prefill (stage)"), never dropped. Fused ops: where one side ran ops as one node whose name
// joins them with '+' ("MUL_MAT+ADD", "RMS_NORM+MUL"), each other side's nodes of those ops that
// feed each other in that order (the consumer among the next 4 computing nodes of the graph,
// taking the producer's output by name, else by shape and type) are summed into one record of
// the fused op (the first part's inputs, then each later part's other inputs; the last part's
// output; times summed, null where a part has none) where its signature is one the fused side
// ran; rows of a fused op carry `fused`. Decode totals are per decode step (each side's totals
// over its n_graphs); other stages' totals, where the sides' n_tokens differ, per token (each
// side's totals over its n_tokens); notes say which. A side's fallback rows (ops that ran off
// its requested device, StageProfile::fallback) are priced against a side whose `requested`
// is only the device they fell back to (the CPU-only run): one row per fallback row, metric
// "fallback_us", test "RMS_NORM on CPU (asked BLAS)": the fallback side's total is its nodes'
// time there (op time, else call time) plus their share of the splits (split_ns), the other's
// the op time of the same node shapes in its run (else the op type's mean per node times the
// node count; a note says which), scaled as the Σ rows; ratio of the totals, no CI. Where no
// side ran there alone, a note says the row stays priced by its splits only. r.match is
// {"stage", "op", "signature"}.
// Throws sb::Error(input) naming the input when one is not an ops document, sb::Error(usage) as
// compare_documents().
CompareResult compare_ops_documents(const std::vector<CompareInput>& inputs,
                                    const CompareOptions& opts = {});

// The signature an op record is matched by across ops documents. The role: the name of the
// record's weight ("blk.3.ffn_down.weight" -> "ffn_down", "output.weight" -> "output"), else
// the node's own name without its layer suffix and annotations ("Qcur-3" -> "Qcur",
// "kq-0 (reshaped)" -> "kq"); "" for ggml's default names ("node_12", "leaf_3") and none.
CompareOpSignature compare_op_signature(const OpRecord& r);
// "MUL_MAT attn_q: q4_0 64×64, f32 64×32 → f32 64×32" (no role: "MUL_MAT: ...").
std::string compare_signature_text(const CompareOpSignature& s);

// The compare document: {"command": "compare", "compare_schema_version": 1, "tool_version",
// "created_at", "match": {"fields", "model_alias"}, "inputs": [{"label", "source", "command",
// "host", "cpu", "started_at"}], "rows": [{"test", "key", "stage", "metric", "higher_is_better",
// "differs": {name: [value per side]}, "sides": [{"label", "median", "median_ci_low",
// "median_ci_high", "cv", "n", "total", "robust": {"tokens_per_s", "ci_low", "ci_high",
// "stalls", "of", "unit"}}], "ratios": [{"label", "median", "ci_low", "ci_high", "verdict"}],
// "op", "signature": {"op", "role", "shape"}, "fused"}], "unmatched": [{"label", "test",
// "why"}], "notes"}, and "gates" (analysis/compare_gate.hpp to_json) only when gates were asked;
// absent values are null.
nlohmann::json to_json(const CompareResult& r);

// The inverse (core/doc/json_in.hpp rules): read(to_json(r)) == r. "command" must be "compare"
// and "compare_schema_version" present and readable (core/document.hpp check_version_field:
// a newer one is refused); a differs value is a string, an integer or null. Throws
// sb::Error(input) naming the source and the field.
void read(const JsonIn& in, CompareResult& r);
// Its parts, each the inverse of its part of to_json(CompareResult).
void read(const JsonIn& in, CompareValue& v);
void read(const JsonIn& in, CompareInputInfo& i);
void read(const JsonIn& in, CompareRobust& r);
void read(const JsonIn& in, CompareSide& s);
void read(const JsonIn& in, CompareOpSignature& s);
void read(const JsonIn& in, CompareRatio& q);
void read(const JsonIn& in, CompareRow& row);
void read(const JsonIn& in, CompareUnmatched& u);

}  // namespace sb
