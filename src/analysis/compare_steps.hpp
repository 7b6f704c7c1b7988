#pragma once
// The steps of compare_documents() (analysis/compare.hpp), for its tests:
//   collecting    (compare_collect.cpp): each document's tests as CompareTests, a sustained
//                 document's rounds pooled into one; the only step that reads documents;
//   matching      (compare_match.cpp): the key of every test, from the match fields, the
//                 model aliases and the fields that vary within a document;
//   per-row stats (compare_rows.cpp): a stage's samples, each side's median and CV, each
//                 other side's ratio to the baseline and its verdict;
//   assembling    (compare.cpp): rows, unmatched tests and notes per matched test.
// Values are in each row's unit (tokens/s, ms, J/token, mW). Nothing here does I/O.
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/compare.hpp"
#include "core/doc/fidelity_section.hpp"

namespace sb {

// ---- collecting ----

// A configuration field a key can hold, with the short name `--match` also accepts. "model"
// is derived from model_path (CompareMatcher::model); the others are CompareTest::config's.
struct CompareKeyField {
    const char* name;
    const char* short_name;  // "" when none
};
extern const std::vector<CompareKeyField> kCompareKeyFields;

// The whole-system reading of one repetition's stage window; absent values are nullopt.
struct CompareWindow {
    std::optional<double> duration_ns;
    std::optional<double> energy_j, j_per_token, net_j_per_token;
    std::optional<std::string> metric;  // the meter read
};

// One test as compare sees it.
struct CompareTest {
    std::string name;  // "pp32+tg8"; a sustained document's pooled rounds: "... rounds"
    // Every field of kCompareKeyFields but "model", by name, as the document writes it.
    std::map<std::string, CompareValue> config;
    std::optional<std::string> status, error;
    std::vector<double> prefill_tps, decode_tps;                 // per repetition
    std::vector<double> ttft_ns;                                 // per repetition
    std::vector<CompareWindow> prefill_windows, decode_windows;  // per repetition
    // The battery's drain per repetition (a sustained document: per round's request), in % of a
    // full charge and %/h, all from one source (drain_from: the test's, "charge_counter",
    // "capacity"...; telemetry/battery_drain.hpp); empty without a battery.
    std::vector<double> drain_pct, drain_pct_per_h;
    std::optional<std::string> drain_from;
    // A sustained document's rounds: each ok round's request end to end (s) and combined
    // tokens/s ((prompt + generated) / E2E); empty for other documents.
    std::vector<double> e2e_s, combined_tps;
    // The stages' stall-robust rates and stalls as the test recorded them; null for a sustained
    // document's pooled rounds and a fidelity variant.
    std::optional<CompareRobust> prefill_robust, decode_robust;
    // A variant of a fidelity document (its speed pass's repetitions above): its distance from
    // the document's reference, per stage, and that reference; null for a test of a run.
    std::optional<StageFidelity> fidelity_prefill, fidelity_decode;
    std::optional<std::string> fidelity_reference;
};

// One input as compare sees it.
struct CompareDoc {
    CompareInputInfo info;  // info.host, info.cpu: the machine (null: absent)
    // The server behind the document's http engine ("llama-server", "ollama"); null: absent.
    std::optional<std::string> http_server;
    std::vector<CompareTest> tests;  // never empty
};

// What the compare document says of an input: its label and source, the document's command,
// machine (core/result.hpp machine_view) and start; null where the document lacks them.
CompareInputInfo compare_input_info(const CompareInput& in);

// Reads every input (notes: a sustained document's rounds are its samples). Throws
// sb::Error(input) as compare_documents() describes.
std::vector<CompareDoc> collect_compare_docs(const std::vector<CompareInput>& inputs,
                                             std::vector<std::string>& notes);

// ---- matching ----

// How tests are told apart: the match fields and the model aliases.
struct CompareMatcher {
    std::vector<std::string> match;
    const std::map<std::string, std::string>* alias;  // not owned; outlives the matcher

    // The model's name for matching: an alias of its whole path or of its file name, else its
    // file name; null without a model_path.
    CompareValue model(const CompareTest& t) const;
    // The configuration field name ("model": the model's name for matching); null when absent.
    CompareValue value(const CompareTest& t, const std::string& name) const;
    // "n_prompt=32,n_gen=8,...": the match fields' values (compare_value_text).
    std::string base_key(const CompareTest& t) const;
};

// The configuration fields left out of the match that vary among the tests of one key in any
// document, in kCompareKeyFields order; they join every key (model_path is left out when the
// model's name is already among them).
std::vector<std::string> compare_split_fields(const CompareMatcher& m,
                                              const std::vector<CompareDoc>& docs);

// One test of one input, as matched.
struct CompareEntry {
    const CompareTest* test;  // into its CompareDoc; not owned
    std::string key;   // base key, then ",field=value" of each split field, then ",#k" for the
                       // k-th (k > 1) test of an identical key
    std::string name;  // the test's name, then " [field=value, ...]" and " #k" likewise
};

// The entries of every input, in the order of their tests.
std::vector<std::vector<CompareEntry>> compare_entries(const std::vector<CompareDoc>& docs,
                                                       const CompareMatcher& m,
                                                       const std::vector<std::string>& split);

// ---- assembling ----

// A compare document begun for inputs: the tool's version, the time, the match fields. Throws
// sb::Error(usage) with fewer than two inputs or a label given to two of them.
CompareResult begin_compare(const std::vector<CompareInput>& inputs, const CompareOptions& opts,
                            std::vector<std::string> match);

// values under name in into, when they are not all equal (CompareRow::differs).
void add_if_differing(std::vector<CompareValue> values, CompareDiffers& into,
                      const std::string& name);

// ---- per-row statistics ----

// One row kind: a stage, its metric and the words of its verdicts.
struct CompareStage {
    const char* name;    // prefill | decode | ttft | request | battery
    const char* metric;  // see CompareRow::metric
    bool higher_is_better;
    const char* better;  // the verdicts' words
    const char* worse;
};
// tokens/s, TTFT, and a sustained document's request: E2E s and combined tokens/s
extern const std::vector<CompareStage> kCompareStages;
// J, J/token, net J/token, mean power
extern const std::vector<CompareStage> kCompareEnergyStages;
// The battery's drain: % and %/h (stage "battery")
extern const std::vector<CompareStage> kCompareBatteryStages;
// A fidelity variant's KL (mean, p99) and top-1 agreement per stage. Each is one deterministic
// value, not a sample: its ratio has no CI and its verdict compares the values exactly ("the
// same" when equal).
extern const std::vector<CompareStage> kCompareFidelityStages;

// The raw per-repetition samples of a stage in the row's unit; none when not measured.
std::vector<double> compare_samples(const CompareTest& test, const CompareStage& st);

// The meter a test's stage energy was read from (its first repetition's), null without one.
// Stage "battery": where its drain came from (CompareTest::drain_from).
CompareValue compare_energy_meter(const CompareTest& test, const std::string& stage);

// Why an entry of input i found no counterpart in the inputs `others` (the baseline for the
// other inputs; every other input for the baseline): the first match or split field whose value
// no test of those inputs has, with what they have ("-ngl 99 only in B (A: -ngl 0)"); else its
// place among identical configurations ("#3 of an identical configuration: A has 2"); else the
// combination of its values that none has: of the swept fields where the others have its
// workload ("this combination (-t 2, -ngl 0) only in A"), else of the match fields. Flags are
// run's where the field has one.
std::string compare_unmatched_reason(const std::vector<CompareDoc>& docs,
                                     const std::vector<std::vector<CompareEntry>>& entries,
                                     std::size_t i, const CompareEntry& e,
                                     const std::vector<std::size_t>& others,
                                     const CompareMatcher& m,
                                     const std::vector<std::string>& split);

// A row of one stage: each side's summary (labels[i] with samples[i], the baseline first: the
// median with its median_ci, the CV, n) and each other side's ratio to the baseline. test, key,
// differs and the sides' robust rates are left to the caller.
CompareRow compare_row(const CompareStage& st, const std::vector<std::string>& labels,
                       const std::vector<std::vector<double>>& samples, const CompareOptions& opts);

// A row of one value per side (a throughput, a p99, a share): values[i] as labels[i]'s median
// with n[i], and each other side's ratio to the baseline's with no CI (verdict "no CI: " + why),
// "no data" unless both values are positive. test, key and differs are left to the caller.
CompareRow one_value_row(const std::string& stage, const std::string& metric, bool higher_is_better,
                         const std::vector<std::string>& labels,
                         const std::vector<std::optional<double>>& values,
                         const std::vector<std::size_t>& n, const std::string& why);

// Notes (naming row.test) of the sides whose CV is more than opts.cv_note_factor times the
// baseline's, or the baseline's more than that times theirs, where the higher of the two is at
// least opts.cv_note_floor.
std::vector<std::string> compare_cv_notes(const CompareRow& row, const CompareOptions& opts);

}  // namespace sb
