#pragma once
// The steps of advise() (analysis/advise.hpp), each on typed values, so that each is tested on
// small inputs with exact values:
//   collect_facts   documents -> AdviseFacts: what the documents measured, nothing derived;
//   fit_advice      facts -> AdviseFit: per-stage ranking, the time model of every device set,
//                   the state-transfer lines, dispatch overhead, the sustained checks;
//   predict_advice  facts + fit -> AdvisePredictions: every prefill/decode assignment at the
//                   asked lengths, crossovers over prompt length, the measured hybrids next to
//                   their predictions;
//   *_sentence      the wording (advise_sentences.cpp); advise() assembles the Advice.
// Durations are nanoseconds, rates tokens per second. Nothing here does I/O; only
// collect_facts reads the (typed) documents.
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/advise.hpp"
#include "core/doc/fidelity_section.hpp"
#include "core/stats.hpp"

namespace sb {

// ---- collect ----

struct AdviseSource {
    std::string source;   // as given in AdviseInput
    std::string command;  // the document's "command", "" when absent
};

// What one successful test of the in-process engine says about its device set (tests of hybrid
// device sets "A>B" and of other engines are not samples).
struct AdviseSample {
    std::size_t doc = 0;  // index into AdviseFacts::sources
    std::string devices;  // as the test's config spells them
    // What else sets a device set's speed: the model file's name, -ngl, threads, the KV cache
    // types ("f16/f16"). Samples of one device set that differ in any of them are ranked apart.
    std::string model, kv;
    int n_gpu_layers = 0, n_threads = 0;
    // devices, and what differs among the inputs' samples of those devices ("BLAS (-ngl 2)",
    // "CPU (model f16.gguf, -t 4)"); empty: devices alone (label_samples).
    std::string label;
    int n_prompt = 0, n_gen = 0;
    int kv_depth = 0;                                               // n_depth + n_prompt
    std::vector<double> prefill_tps, decode_tps;                    // raw, per repetition
    std::optional<double> prefill_ns, decode_ns_per_token;          // medians
    std::optional<double> prefill_j_per_token, decode_j_per_token;  // telemetry medians
};

// One point of a document's hybrid section (prefill on one device set, decode on another).
struct HybridPointFacts {
    std::size_t doc = 0;          // index into AdviseFacts::sources
    std::string prefill, decode;  // the device sets
    int n_prompt = 0, n_gen = 0;
    std::optional<double> transfer_ns;      // median state transfer
    std::optional<double> bytes_per_token;  // of the transfer; only with transfer_ns
    std::optional<double> measured_ns;      // median end to end of the hybrid itself
};

// An operator the profiler found running on another backend than the one asked for.
struct OpFallback {
    std::string op, backend, requested;
    int count = 0;
    std::optional<double> call_ns;  // in all, per stage
    std::optional<double> penalty;  // its op time there over that on the requested backend
    FallbackRow row;                // the document's row, copied into the advice
};

// A part of a stage's pipeline decomposition (`decompose`).
struct PipelinePart {
    std::string name;  // accelerator_compute | conversion | communication | copies | ...
    std::optional<double> ns;
    std::optional<double> share;  // fraction of the stage
    std::string note;
};

// One profiled operator call.
struct OpCall {
    std::string op, backend;
    bool no_compute = false;  // a view or reshape: no work, its overhead is not dispatch
    std::optional<double> call_ns, op_ns;
};

// An op type that a device asked for does not support on some or all of its nodes, from the
// ops document's coverage (the backend's supports-op answer per node): the study's third
// guideline, implement the key ops natively on the accelerator.
struct CoverageGap {
    std::string op, device;
    int count = 0;                         // computing nodes of the op in the stage
    int unsupported = 0;                   // of them, not supported by the device
    std::map<std::string, int> ran;        // where the op's nodes ran
    std::optional<double> call_ns, op_ns;  // the op's nodes off the device, summed per stage
};

struct OpsStageFacts {
    std::string stage;
    std::vector<OpFallback> fallback;
    std::vector<CoverageGap> gaps;    // largest call time (else op time) first
    std::vector<PipelinePart> parts;  // of the pipeline decomposition, in order; none without
    std::vector<OpCall> ops;
};

// The ops section of one document.
struct OpsFacts {
    std::string source;
    std::string devices;  // "?" when the section does not say
    std::vector<OpsStageFacts> stages;
};

// A phase of a sustained document without background load ("rounds", or "baseline" beside a
// "loaded" one); phases under background load are not collected.
struct SustainedPhaseFacts {
    std::string name;
    std::optional<double> steady_decode_tps;  // decode tokens/s in the steady state
    std::optional<double> peak_to_steady;
    std::string verdict;
};

struct SustainedFacts {
    std::string source;
    std::string devices;  // "CPU" when the section does not say
    std::vector<SustainedPhaseFacts> phases;
};

// The fidelity section of one document.
struct FidelityFacts {
    std::string source;
    FidelitySection section;
};

struct AdviseFacts {
    std::vector<AdviseSource> sources;  // one per input, in order
    // The conditions of every input (core's system section and its tests), parallel to sources.
    std::vector<AdviceConditions> conditions;
    std::vector<AdviseSample> samples;  // in document order
    std::vector<HybridPointFacts> hybrid_points;
    std::vector<OpsFacts> ops;
    std::vector<SustainedFacts> sustained;
    std::vector<FidelityFacts> fidelity;
    std::vector<std::string> notes;  // documents with nothing the advisor uses
};

// What every input measured, in input order. Throws sb::Error(input) when no input has anything
// to advise on.
AdviseFacts collect_facts(const std::vector<AdviseInput>& inputs);

// The conditions a document was measured under (AdviceConditions), named by source.
AdviceConditions conditions_of(const ResultDocument& doc, const std::string& source);

// The conditions of the inputs whose tests or hybrid points feed the ranking and predictions.
std::vector<AdviceConditions> used_conditions(const AdviseFacts& facts);

// mixed_conditions when the conditions differ in host, governor, load, threads or llama.cpp
// version (a field one input does not record is not compared): the message names each field
// that differs with each input's value; null when they agree or fewer than two inputs count.
std::optional<Warning> mixed_conditions_warning(const std::vector<AdviceConditions>& c);

// ---- fit ----

struct StageCandidate {
    std::string devices;               // the samples' label: the device set and what else differs
    std::string device_set;            // the device set alone
    std::vector<std::size_t> docs;     // the inputs its samples came from (AdviseFacts::sources)
    std::vector<double> tokens_per_s;  // every repetition of every matching test
    double median_tokens_per_s = 0;    // percentile 0.5 of tokens_per_s
    Summary summary;                   // of tokens_per_s
    // The median's seeded percentile-bootstrap 95% CI (core/stats.hpp median_ci, each
    // repetition resampled whole): within the repetitions' range, so never below 0.
    MedianCi median_ci;
    std::optional<double> j_per_token;  // median over the tests that measured energy
};

// One stage ranked at one measured workload.
struct StageChoice {
    std::string stage;                          // prefill | decode
    std::string workload;                       // "pp512" or "tg128@d512"
    std::vector<StageCandidate> candidates;     // fastest median first; never empty
    std::optional<RatioCi> ratio_to_runner_up;  // candidates[0] over [1]; null with one
    std::optional<std::size_t> most_efficient;  // index of the lowest J/token; null: none
};

// The time model of one device set.
struct DeviceModel {
    std::vector<std::pair<double, double>> prefill;           // (n_prompt, median ns), by x
    std::vector<std::pair<double, double>> decode_per_token;  // (kv depth mid, median ns/token)
    bool can_prefill() const { return !prefill.empty(); }
    bool can_decode() const { return !decode_per_token.empty(); }
};
using DeviceModels = std::map<std::string, DeviceModel>;

// State transfer time from one device set's prefill to another's decode over prompt length.
struct TransferFit {
    std::string prefill, decode;
    double intercept_ns = 0, ns_per_token = 0;
    std::optional<double> bytes_per_token;
    int n_points = 0;
    // The measured (n_prompt, median ns) the line was fitted to, sorted by n_prompt.
    std::vector<std::pair<double, double>> points;
    // The line at n_prompt, bounded by what was measured: within the measured prompts between
    // n_prompt x the smallest and x the largest measured ns per token; below them between
    // n_prompt x the smallest ns per token and the first measured transfer (a fixed cost makes
    // short prompts dearer per token), above them between the last measured transfer and
    // n_prompt x the largest ns per token.
    Interpolated at_bounded(int n_prompt) const;
    double at(int n_prompt) const { return at_bounded(n_prompt).value; }
};

// Dispatch overhead (call - op time) of one operator on one backend.
struct DispatchOverhead {
    std::string op, backend;
    std::size_t count = 0;  // calls
    double median_overhead_ns = 0, total_overhead_ns = 0;
};

// The dispatch overhead of one profiled stage.
struct DispatchFit {
    std::vector<DispatchOverhead> above_budget;  // median above the budget, largest total first
    std::size_t n_measured = 0;                  // operator/backend pairs with both times
};

// Whether the decode choice holds at a sustained phase's steady state.
struct SustainedCheck {
    std::string source, devices, phase, verdict;
    double steady_decode_tps = 0;
    std::optional<double> peak_to_steady;
    // The fastest other device set's median decode tokens/s in the stage ranking; null when
    // no other device set's decode was ranked.
    std::optional<std::pair<std::string, double>> best_other;
};

struct AdviseFit {
    std::vector<StageChoice> stages;  // prefill, then decode; a stage without samples is left out
    DeviceModels models;              // from every document
    std::vector<TransferFit> transfers;              // by (prefill, decode)
    std::vector<std::vector<DispatchFit>> dispatch;  // [i][j]: facts.ops[i].stages[j]
    std::vector<SustainedCheck> sustained;           // phases with a steady state, in order
};

AdviseFit fit_advice(const AdviseFacts& facts, const AdviseOptions& opts);

// The pieces of fit_advice, for tests.
// Every measured workload of the stage, ranked apart: prompt lengths (decode: generated tokens,
// then KV depth) in increasing order; empty when no sample has the stage.
std::vector<StageChoice> rank_stage(const std::vector<AdviseSample>& samples,
                                    const std::string& stage);
// Sets each sample's label: its devices, with what differs among the samples of those devices
// (model, -ngl, threads, KV types) in parentheses.
void label_samples(std::vector<AdviseSample>& samples);
// The models of the samples of one document (doc), or of all (nullopt).
DeviceModels fit_models(const std::vector<AdviseSample>& samples,
                        std::optional<std::size_t> doc = std::nullopt);
// Least squares over (n_prompt, ns) points; with one distinct length, proportional.
TransferFit fit_transfer(const std::string& prefill, const std::string& decode,
                         const std::vector<std::pair<double, double>>& points,
                         std::optional<double> bytes_per_token);
std::vector<TransferFit> fit_transfers(const std::vector<HybridPointFacts>& points);
DispatchFit fit_dispatch(const OpsStageFacts& stage, double budget_ns);

// ---- predict ----

struct Prediction {
    std::string prefill, decode;  // equal: the device set alone
    double prefill_ns = 0, transfer_ns = 0, decode_ns = 0;
    // Each part predicted beyond the measured lengths, with the measured range (AdviceAssignment)
    std::vector<std::string> extrapolated{};
    double e2e() const { return prefill_ns + transfer_ns + decode_ns; }
};

// Every assignment the models and the measured transfers allow at (n_prompt, n_gen), fastest
// first. Prefill time interpolates over prompt length (Scaling::per_unit), decode time per token
// over the KV depth at the middle of the generation (Scaling::level), the transfer along its
// fitted line (TransferFit::at_bounded); each part extrapolated is named.
std::vector<Prediction> predict_all(const DeviceModels& models,
                                    const std::vector<TransferFit>& transfers, int n_prompt,
                                    int n_gen);

struct LengthPrediction {
    int n_prompt = 0, n_gen = 0;
    std::vector<Prediction> assignments;  // fastest first; never empty
};

struct CrossoverRange {
    int from_n_prompt = 1;
    std::optional<int> to_n_prompt;  // null: and longer
    std::string best;                // assignment_name of the fastest
};

struct Crossover {
    int n_gen = 0;
    std::vector<CrossoverRange> ranges;
    // The prompt lengths the models measured (prefill); beyond them the grid is extrapolated.
    std::optional<int> measured_from{}, measured_to{};
};

// A measured hybrid point next to its prediction.
struct Validation {
    HybridPointFacts point;  // measured_ns present
    std::string source;
    std::optional<Prediction> predicted;  // null: a part was not measured
    bool own_basis = false;  // the parts came from the hybrid document's own modes alone
    double error() const { return predicted->e2e() / *point.measured_ns - 1; }
};

struct AdvisePredictions {
    std::vector<std::pair<int, int>> lengths;  // (n_prompt, n_gen) asked for, sorted, unique
    std::vector<LengthPrediction> predictions;
    std::vector<Crossover> crossovers;
    std::vector<Validation> validation;
};

AdvisePredictions predict_advice(const AdviseFacts& facts, const AdviseFit& fit,
                                 const AdviseOptions& opts);

// The pieces of predict_advice, for tests.
std::vector<std::pair<int, int>> prediction_lengths(const std::vector<HybridPointFacts>& points,
                                                    const AdviseOptions& opts);
// Where the best assignment changes over prompt length, on a grid from 1 to 4x the longest
// measured prompt (at least 16); empty with fewer than two device sets.
std::vector<Crossover> find_crossovers(const AdviseFit& fit,
                                       const std::vector<std::pair<int, int>>& lengths);
Validation validate(const HybridPointFacts& point, const AdviseFacts& facts, const AdviseFit& fit);

// ---- sentences ----

// "CPU alone" or "CPU → RPC0".
std::string assignment_name(const std::string& prefill, const std::string& decode);

std::string stage_sentence(const StageChoice& s);
std::string prediction_sentence(const LengthPrediction& p);
std::string crossover_sentence(const Crossover& c);
// The sentence of a predicted validation, the note of one without a prediction.
std::string validation_sentence(const Validation& v);
std::string fallback_sentence(const std::string& stage, const OpFallback& f);
std::string coverage_sentence(const std::string& stage, const CoverageGap& g);
// Null when no part has a share.
std::optional<std::string> decomposition_sentence(const std::string& stage,
                                                  const std::string& devices,
                                                  const std::vector<PipelinePart>& parts);
std::vector<std::string> dispatch_sentences(const std::string& stage, const std::string& source,
                                            const DispatchFit& d, double budget_ns);
std::string sustained_sentence(const SustainedCheck& c);
// The (at most three) costliest fallbacks of every ops document (fallback_cost_ns), costliest
// first; null when no fallback's cost was measured.
std::optional<std::string> costliest_fallback_sentence(const AdviseFacts& facts);
// Per variant that ran, against the reference variant: how much faster or slower per stage
// (a stage counts when the bootstrap 95% CI of the ratio of medians excludes 1; with fewer
// than two repetitions, by the medians) and its distance ("its KL to CPU is 3e-7", or the
// share of top-1 tokens it flips); then the frontier. The decode stage's distance, the
// prefill's when there are no decode positions (advise_fidelity.cpp).
std::vector<std::string> fidelity_sentences(const FidelitySection& s);

struct AdviceText {
    std::vector<std::string> sentences, notes;
};

// Every sentence and note of the advice, in the order advise() writes them.
AdviceText advice_text(const AdviseFacts& facts, const AdviseFit& fit,
                       const AdvisePredictions& pred, const AdviseOptions& opts);

}  // namespace sb
