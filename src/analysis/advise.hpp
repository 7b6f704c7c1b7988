#pragma once
// The advisor behind `stagebench advise`: turns a device's own result documents (run, ops,
// decompose, sustained, hybrid) into advice on which backend should run which stage. Pure
// computation on result documents (as written by --out, read typed); no engine, no I/O.
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
// advise() runs the steps of analysis/advise_steps.hpp: collect the facts, fit, predict, word.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sb {

struct AdviseOptions {
    double dispatch_budget_ns = 10'000;  // the study's guideline: light ops under 10 us
    // Lengths to predict for; empty: every measured hybrid point, else 512 / 128.
    std::optional<int> n_prompt, n_gen;
};

// One input: a result document and where it came from (for the advice's sources).
struct AdviseInput {
    std::string source;
    nlohmann::json doc;
};

// The advice as JSON:
//  {"advise_schema_version": 1, "sources": [...],
//   "stages": [{"stage", "workload", "candidates": [{"devices", "median_tokens_per_s",
//               "ci95_lo", "ci95_hi", "n", "j_per_token"}], "fastest", "ratio_to_runner_up":
//               {"runner_up", "ratio", "ci95_lo", "ci95_hi", "decisive"}, "most_efficient"}],
//   "model": {"devices": {name: {"prefill": [[p, ns]...], "decode_per_token": [[depth, ns]...]}},
//             "transfer": [{"prefill_device", "decode_device", "intercept_ns", "ns_per_token",
//                           "bytes_per_token", "n_points"}]},
//   "predictions": [{"n_prompt", "n_gen", "assignments": [{"prefill", "decode", "prefill_ns",
//                    "transfer_ns", "decode_ns", "e2e_ns"}], "best"}],
//   "crossover": [{"n_gen", "ranges": [{"from_n_prompt", "to_n_prompt", "best"}]}],
//   "validation": [{"source", "prefill", "decode", "n_prompt", "n_gen", "predicted_ns",
//                   "measured_ns", "error", "basis"}],
//   "fallback": [...], "dispatch": [...], "decomposition": [{"stage", "source", "parts"}],
//   "coverage": [{"stage", "op", "device", "count", "unsupported", "ran", "call_ns", "op_ns",
//                 "source"}]  (op types a device asked for does not support, from the ops
//                 document's coverage; costliest first per stage),
//   "sustained": [...],
//   "sentences": ["plain sentences with the numbers"], "notes": [...]}
// Every input is read whole with from_json<ResultDocument> (core/result.hpp), its source naming
// it. Documents it cannot use are named in notes. Throws sb::Error(input) when no input has
// anything to advise on, and for an input that is not a result document or has a value of the
// wrong shape (from_json's one line naming the source and the field, e.g. "r.json:
// tests[0].config: expected an object, found a string"); absent values are not measured.
nlohmann::json advise(const std::vector<AdviseInput>& inputs, const AdviseOptions& opts);

// Piecewise-linear interpolation through points sorted by x (at least one); beyond the ends
// the nearest segment is extended (never below 0), and with one point y scales with x
// through the origin.
double interpolate(const std::vector<std::pair<double, double>>& points, double x);

}  // namespace sb
