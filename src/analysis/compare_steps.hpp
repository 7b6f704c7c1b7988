#pragma once
// The steps of compare_documents() (analysis/compare.hpp), for its tests:
//   matching      (compare_match.cpp): the key of every test, from the match fields, the
//                 model aliases and the fields that vary within a document;
//   per-row stats (compare_rows.cpp): a stage's samples, each side's median and CV, each
//                 other side's ratio to the baseline and its verdict;
//   assembling    (compare.cpp): rows, unmatched tests and notes per matched test.
// Values are in each row's unit (tokens/s, ms, J/token, mW). Nothing here does I/O.
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/compare.hpp"

namespace sb {

// ---- matching ----

// A configuration field a key can hold, with the short name `--match` also accepts.
struct CompareKeyField {
    const char* name;
    const char* short_name;  // "" when none
};
extern const std::vector<CompareKeyField> kCompareKeyFields;

// How tests are told apart: the match fields and the model aliases.
struct CompareMatcher {
    std::vector<std::string> match;
    const std::map<std::string, std::string>* alias;  // not owned; outlives the matcher

    // The model's name for matching: an alias of its whole path or of its file name, else its
    // file name; null without a model_path.
    nlohmann::json model(const nlohmann::json& config) const;
    // The configuration field name ("model": the model's name for matching); null when absent.
    nlohmann::json value(const nlohmann::json& config, const std::string& name) const;
    // "n_prompt=32,n_gen=8,...": the match fields' values, strings bare, the rest as JSON.
    std::string base_key(const nlohmann::json& config) const;
};

// A config value as key text: strings bare, numbers and the rest as JSON.
std::string compare_key_text(const nlohmann::json& v);

// The configuration fields left out of the match that vary among the tests of one key in any
// document, in kCompareKeyFields order; they join every key (model_path is left out when the
// model's name is already among them).
std::vector<std::string> compare_split_fields(const CompareMatcher& m,
                                              const std::vector<CompareInput>& inputs);

// One test of one input, as matched.
struct CompareEntry {
    const nlohmann::json* test;  // into the input's document; not owned
    std::string key;   // base key, then ",field=value" of each split field, then ",#k" for the
                       // k-th (k > 1) test of an identical key
    std::string name;  // the test's name, then " [field=value, ...]" and " #k" likewise
};

// The entries of every input, in the order of their tests.
std::vector<std::vector<CompareEntry>> compare_entries(const std::vector<CompareInput>& inputs,
                                                       const CompareMatcher& m,
                                                       const std::vector<std::string>& split);

// ---- per-row statistics ----

// One row kind: a stage, its metric and the words of its verdicts.
struct CompareStage {
    const char* name;    // prefill | decode | ttft
    const char* metric;  // see CompareRow::metric
    bool higher_is_better;
    const char* better;  // the verdicts' words
    const char* worse;
};
extern const std::vector<CompareStage> kCompareStages;        // tokens/s and TTFT
extern const std::vector<CompareStage> kCompareEnergyStages;  // J/token, net, mean power

// The raw per-repetition samples of a stage in the row's unit; none when not measured.
std::vector<double> compare_samples(const nlohmann::json& test, const CompareStage& st);

// The meter a test's stage energy was read from (its first repetition's), null without one.
nlohmann::json compare_energy_meter(const nlohmann::json& test, const std::string& stage);

// A row of one stage: each side's summary (labels[i] with samples[i], the baseline first) and
// each other side's ratio to the baseline. test, key and differs are left to the caller.
CompareRow compare_row(const CompareStage& st, const std::vector<std::string>& labels,
                       const std::vector<std::vector<double>>& samples, const CompareOptions& opts);

// Notes (naming row.test) of the sides whose CV is more than opts.cv_note_factor times the
// baseline's, or the baseline's more than that times theirs.
std::vector<std::string> compare_cv_notes(const CompareRow& row, const CompareOptions& opts);

}  // namespace sb
