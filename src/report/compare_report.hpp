#pragma once
// Formats a compare result (analysis/compare.hpp) for `stagebench compare`; never computes.
// md: the inputs, one table row per matched test and stage with each side's median and its 95%
// CI (a row of totals: "Σ total"), CV, and where the rows have them (run documents) each side's
// robust rate with its CI and stall count, beside each other; each ratio with its 95% CI and
// verdict; then unmatched tests and notes.
// csv: one line per matched test, stage and non-baseline side (the field table of
// report/fields.hpp). json: the compare document.
#include <ostream>
#include <string>

#include "analysis/compare.hpp"
#include "core/enums.hpp"
#include "report/fields.hpp"

namespace sb {

// A row of a comparison against one other side: row.sides[side], row.ratios[side - 1]
// (side >= 1); the row outlives this.
struct CompareSideRow {
    const CompareRow* row = nullptr;
    std::size_t side = 1;
};

// test, key, stage, metric, higher_is_better, baseline, baseline_median, baseline_cv,
// baseline_n, label, median, cv, n, ratio, ci_low, ci_high, verdict, differs ("name: a / b;
// ..." as the Markdown shows it), then baseline_median_ci_{low, high}, baseline_total,
// median_ci_{low, high}, total, baseline_robust_{tokens_per_s, ci_low, ci_high},
// baseline_stalls, baseline_stalls_of, robust_{tokens_per_s, ci_low, ci_high}, stalls,
// stalls_of, stalls_unit, op, role, shape (ops documents' rows).
const FieldTable<CompareSideRow>& compare_fields();

// "n_threads: 4 / 8; host: a / b": the row's differing fields, by name.
std::string differs_text(const CompareRow& r);

void write_compare_markdown(std::ostream& out, const CompareResult& r);
void write_compare_csv(std::ostream& out, const CompareResult& r);

// md, csv or json. Throws sb::Error(usage) for another format.
void write_compare(std::ostream& out, const CompareResult& r, OutputFormat format);

}  // namespace sb
