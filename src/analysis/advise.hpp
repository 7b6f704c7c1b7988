#pragma once
// The advisor behind `stagebench advise`: turns a device's own result documents (run, ops,
// decompose, sustained, hybrid) into advice on which backend should run which stage. Pure
// computation on typed result documents (as written by --out); no engine, no I/O.
//
// What it derives, each with the numbers behind it:
//  - per stage, the fastest and the most energy-efficient device set, with the ratio to the
//    runner-up and its bootstrap 95% CI (from the tests' raw per-repetition samples);
//  - a time model per device set (prefill time over prompt length, decode time per token over
//    KV depth, both interpolated between measured points) and per device pair the state
//    transfer (a line fitted over prompt length to the hybrid runs' medians), giving the
//    predicted end-to-end time of every prefill/decode assignment, the crossover lengths, and
//    for every measured hybrid point the prediction next to the measurement (its parts taken
//    from the hybrid run's own modes alone, measured interleaved with it, when it has them);
//  - operators that fall back from an accelerator, with their cost; operators whose dispatch
//    overhead (call - op time, median per call) exceeds a budget;
//  - under sustained load (the phase without background load of a `sustained` document:
//    "rounds", or "baseline" beside a "loaded" one), whether the per-stage choice still holds
//    at the throttled steady state.
// advise() runs the steps of analysis/advise_steps.hpp: collect the facts, fit, predict, word,
// and returns the Advice (typed; report/advise_report.hpp formats it, to_json writes it).
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/doc/json_in.hpp"
#include "core/doc/ops_section.hpp"
#include "core/result.hpp"
#include "core/warning.hpp"

namespace sb {

inline constexpr int kAdviseSchemaVersion = 1;

struct AdviseOptions {
    double dispatch_budget_ns = 10'000;  // the study's guideline: light ops under 10 us
    // Lengths to predict for; empty: every measured hybrid point, else 512 / 128.
    std::optional<int> n_prompt, n_gen;
};

// One input: a result document, read typed where it came from, and that place (for the
// advice's sources).
struct AdviseInput {
    std::string source;
    ResultDocument doc;
};

// ---- the advice ----
// Durations in ns, rates in tokens/s, energy in J/token; absent values were not measured.

struct AdviceSource {
    std::string source;
    std::string command;  // the document's, "" when absent
    bool operator==(const AdviceSource&) const = default;
};

// A device set at a stage's workload: the median of every repetition of the matching tests,
// with the median's seeded bootstrap 95% CI (core/stats.hpp median_ci; within the repetitions'
// range, never below 0; null with fewer than two repetitions).
struct AdviceCandidate {
    // The device set, with what else differs among the inputs' tests of it in parentheses
    // (model, -ngl, threads, KV types): "BLAS (-ngl 2)".
    std::string devices;
    std::optional<double> median_tokens_per_s, ci95_lo, ci95_hi;
    std::size_t n = 0;  // repetitions
    std::optional<double> j_per_token;
    std::vector<std::string> documents;  // the inputs its tests came from
    bool operator==(const AdviceCandidate&) const = default;
};

// The fastest over the runner-up: a ratio of medians with its bootstrap 95% CI; decisive when
// the CI excludes 1.
struct AdviceRunnerUp {
    std::string runner_up;
    double ratio = 0, ci95_lo = 0, ci95_hi = 0;
    bool decisive = false;
    bool operator==(const AdviceRunnerUp&) const = default;
};

struct AdviceEfficient {
    std::string devices;
    double j_per_token = 0;
    bool operator==(const AdviceEfficient&) const = default;
};

// One stage ranked at the workload measured on the most device sets.
struct AdviceStage {
    std::string stage;                                 // prefill | decode
    std::string workload;                              // "pp512" or "tg128@d512"
    std::vector<AdviceCandidate> candidates;           // fastest median first; never empty
    std::string fastest;                               // candidates[0].devices
    std::optional<AdviceRunnerUp> ratio_to_runner_up;  // absent with one candidate
    std::optional<AdviceEfficient> most_efficient;     // null: no candidate measured energy
    bool operator==(const AdviceStage&) const = default;
};

// A device set's time model: (n_prompt, median prefill ns) and (KV depth mid, median decode ns
// per token), sorted by x.
struct AdviceDeviceModel {
    std::vector<std::pair<double, double>> prefill, decode_per_token;
    bool operator==(const AdviceDeviceModel&) const = default;
};

// State transfer from one device set's prefill to another's decode: intercept_ns + ns_per_token
// x n_prompt, fitted to n_points hybrid medians.
struct AdviceTransfer {
    std::string prefill_device, decode_device;
    double intercept_ns = 0, ns_per_token = 0;
    std::optional<double> bytes_per_token;
    int n_points = 0;
    bool operator==(const AdviceTransfer&) const = default;
};

struct AdviceModel {
    std::map<std::string, AdviceDeviceModel> devices;
    std::vector<AdviceTransfer> transfer;
    bool operator==(const AdviceModel&) const = default;
};

// Prefill on one device set, decode on another (equal: the device set alone), predicted. Every
// part is positive when what it was predicted from was (interpolate). extrapolated names each
// part predicted beyond the lengths measured, with the measured range ("prefill on CPU at 2048
// tokens, beyond the measured prompts 32–512"); empty when every part lies within them.
struct AdviceAssignment {
    std::string prefill, decode;
    double prefill_ns = 0, transfer_ns = 0, decode_ns = 0;
    double e2e_ns = 0;  // their sum
    std::vector<std::string> extrapolated;
    bool operator==(const AdviceAssignment&) const = default;
};

struct AdvicePrediction {
    int n_prompt = 0, n_gen = 0;
    std::vector<AdviceAssignment> assignments;  // fastest first; never empty
    AdviceAssignment best;                      // assignments[0]
    bool operator==(const AdvicePrediction&) const = default;
};

struct AdviceCrossoverRange {
    int from_n_prompt = 1;
    std::optional<int> to_n_prompt;  // null: and longer
    std::string best;                // "CPU alone", "CPU → RPC0"
    bool operator==(const AdviceCrossoverRange&) const = default;
};

// Where the best assignment changes over prompt length at one n_gen.
struct AdviceCrossover {
    int n_gen = 0;
    std::vector<AdviceCrossoverRange> ranges;
    bool operator==(const AdviceCrossover&) const = default;
};

// A measured hybrid point next to its prediction; error = predicted / measured - 1.
struct AdviceValidation {
    std::string source, prefill, decode;
    int n_prompt = 0, n_gen = 0;
    double measured_ns = 0, predicted_ns = 0, error = 0;
    std::string basis;  // "the hybrid run's own modes alone" or "every document"
    bool operator==(const AdviceValidation&) const = default;
};

// Operators that ran off the backend asked for: the ops document's row, with its stage and
// source. What the fallback costs per stage (fallback_cost_ns): the time its nodes spent off
// the device asked for (their call time there, else their op time); null when neither was
// measured.
struct AdviceFallback {
    std::string stage, source;
    FallbackRow row;
    bool operator==(const AdviceFallback& o) const;
};
std::optional<double> fallback_cost_ns(const FallbackRow& row);

// An op type a device asked for does not support on some or all of its nodes (the ops
// document's coverage); call_ns and op_ns: its nodes off the device, summed per stage.
struct AdviceCoverage {
    std::string stage, op, device, source;
    int count = 0, unsupported = 0;
    std::map<std::string, int> ran;  // where the op's nodes ran
    std::optional<double> call_ns, op_ns;
    bool operator==(const AdviceCoverage&) const = default;
};

// An operator whose dispatch overhead (call - op time, median per call) exceeds the budget.
struct AdviceDispatch {
    std::string stage, op, backend, source;
    std::size_t count = 0;  // calls
    double median_overhead_ns = 0, total_overhead_ns = 0;
    bool operator==(const AdviceDispatch&) const = default;
};

struct AdvicePart {
    std::string name;  // accelerator_compute | conversion | communication | copies | ...
    std::optional<double> ns;
    std::optional<double> share;  // fraction of the stage
    std::string note;
    bool operator==(const AdvicePart&) const = default;
};

// A stage's pipeline decomposition (`decompose`), where a part has a share.
struct AdviceDecomposition {
    std::string stage, source;
    std::vector<AdvicePart> parts;
    bool operator==(const AdviceDecomposition&) const = default;
};

struct AdviceComparedWith {
    std::string devices;
    double tokens_per_s = 0;
    bool operator==(const AdviceComparedWith&) const = default;
};

// Whether the decode choice holds at a sustained phase's throttled steady state.
struct AdviceSustained {
    std::string source, devices, phase, verdict;
    double steady_decode_tps = 0;
    std::optional<double> peak_to_steady;
    // Against the fastest other device set's decode in the ranking (compared_with); null and
    // absent when no other device set's decode was ranked.
    std::optional<bool> still_fastest_decode;
    std::optional<AdviceComparedWith> compared_with;
    bool operator==(const AdviceSustained&) const = default;
};

// The conditions a document was measured under, as its system section and tests recorded
// them; "" where the document does not say.
struct AdviceConditions {
    std::string source;
    std::string host;      // system.hostname
    std::string governor;  // the cpufreq governors, ','-joined when they differ by policy
    // "quiet" or "loaded" (a load average above a quarter of the CPUs, or an other_load
    // warning), with the 1-minute load average and the CPU count: "loaded (load 3.40 on 2 CPUs)"
    std::string load;
    std::string threads;  // the thread counts of its tests (or its ops profile), ','-joined
    std::string llama;    // the llama.cpp tag (else commit) it ran
    bool operator==(const AdviceConditions&) const = default;
};

// The advice: what the documents say about which device set should run which stage, each
// conclusion with the numbers behind it, and the same in sentences.
struct Advice {
    std::vector<AdviceSource> sources;  // one per input, in order
    // Of the inputs whose tests or hybrid points feed the ranking and the predictions, in order.
    std::vector<AdviceConditions> conditions;
    // mixed_conditions: those inputs were measured under different conditions (host, governor,
    // load, threads, llama.cpp version), named before anything predicted from them together.
    Warnings warnings;
    std::vector<AdviceStage> stages;  // prefill, then decode; a stage without samples left out
    AdviceModel model;
    std::vector<AdvicePrediction> predictions;
    std::vector<AdviceCrossover> crossover;
    std::vector<AdviceValidation> validation;  // the predicted ones
    std::vector<AdviceFallback> fallback;      // costliest first (fallback_cost_ns)
    std::vector<AdviceCoverage> coverage;      // costliest first per stage
    std::vector<AdviceDispatch> dispatch;      // largest total first per stage
    std::vector<AdviceDecomposition> decomposition;
    std::vector<AdviceSustained> sustained;
    std::vector<std::string> sentences;  // plain sentences with the numbers
    std::vector<std::string> notes;  // documents it could not use, predictions it could not make
    bool operator==(const Advice&) const = default;
};

// Runs the steps of analysis/advise_steps.hpp on the inputs. Documents it cannot use are named
// in notes. Throws sb::Error(input) when no input has anything to advise on.
Advice advise(const std::vector<AdviseInput>& inputs, const AdviseOptions& opts);

// The advice document:
//  {"advise_schema_version": 1, "sources": [{"source", "command"}],
//   "conditions": [{"source", "host", "governor", "load", "threads", "llama"}],
//   "warnings": [{"code", "message", "hint"}],
//   "stages": [{"stage", "workload", "candidates": [{"devices", "median_tokens_per_s",
//               "ci95_lo", "ci95_hi", "n", "j_per_token"}], "fastest", "ratio_to_runner_up":
//               {"runner_up", "ratio", "ci95_lo", "ci95_hi", "decisive"}, "most_efficient":
//               {"devices", "j_per_token"}}],
//   "model": {"devices": {name: {"prefill": [[p, ns]...], "decode_per_token": [[depth, ns]...]}},
//             "transfer": [{"prefill_device", "decode_device", "intercept_ns", "ns_per_token",
//                           "bytes_per_token", "n_points"}]},
//   "predictions": [{"n_prompt", "n_gen", "assignments": [{"prefill", "decode", "prefill_ns",
//                    "transfer_ns", "decode_ns", "e2e_ns", "extrapolated": [...]}], "best"}],
//   "crossover": [{"n_gen", "ranges": [{"from_n_prompt", "to_n_prompt", "best"}]}],
//   "validation": [{"source", "prefill", "decode", "n_prompt", "n_gen", "predicted_ns",
//                   "measured_ns", "error", "basis"}],
//   "fallback": [the ops document's fallback row with "stage" and "source"],
//   "dispatch": [{"stage", "op", "backend", "count", "median_overhead_ns",
//                 "total_overhead_ns", "source"}],
//   "decomposition": [{"stage", "source", "parts": [{"name", "ns", "share", "note"}]}]
//                    (absent when empty),
//   "coverage": [{"stage", "op", "device", "count", "unsupported", "ran", "call_ns", "op_ns",
//                 "source"}],
//   "sustained": [{"source", "devices", "phase", "verdict", "steady_decode_tps",
//                  "peak_to_steady", "still_fastest_decode", "compared_with": {"devices",
//                  "tokens_per_s"}}],
//   "sentences": [...], "notes": [...]}
// Absent values are null.
nlohmann::json to_json(const Advice& a);

// The inverse (core/doc/json_in.hpp rules): read(to_json(a)) == a. "advise_schema_version"
// must be present and readable (core/document.hpp check_version_field: a newer one is refused).
// Throws sb::Error(input) naming the source and the field.
void read(const JsonIn& in, Advice& a);

// How a modelled time behaves beyond the lengths measured.
enum class Scaling {
    // A time over a length (prefill time over prompt tokens, a state transfer over the
    // prompt): it grows with the length, and per unit of length it stays within what was
    // measured.
    per_unit,
    // A level over a length (decode time per token over KV depth): it stays within what was
    // measured.
    level,
};

struct Interpolated {
    double value = 0;
    bool extrapolated = false;  // x lies outside [from, to]
    double from = 0, to = 0;    // the measured x range
};

// Piecewise-linear interpolation through points sorted by x (at least one; else sb::Error,
// input). Within the measured range, the line between the neighbouring points. Beyond it the
// nearest segment is extended and then bounded by what was measured, so that a prediction
// never leaves the measurements' range of rates (two documents measured under different load
// can make a segment fall steeply, and its extension reach 0):
//   per_unit: at x below the range, between x times the smallest measured y/x and the y at the
//     first point; above it, between the y at the last point and x times the largest y/x;
//     with one point, y scaled by x / x0;
//   level: between the smallest and the largest measured y; with one point, that y.
// So the value is positive whenever every measured y is.
Interpolated interpolate_bounded(const std::vector<std::pair<double, double>>& points, double x,
                                 Scaling scaling);
// interpolate_bounded(points, x, scaling).value.
double interpolate(const std::vector<std::pair<double, double>>& points, double x,
                   Scaling scaling = Scaling::per_unit);

}  // namespace sb
