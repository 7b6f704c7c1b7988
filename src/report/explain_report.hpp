#pragma once
// Markdown of an explain document (doc.explain, core/doc/explain_section.hpp): the verdicts;
// per stage the levels with their medians, CIs and the step from the level before, and the
// waterfall of the gap between the bench and the server (the graph level, each part with its
// CI and share, the server), a bar per row drawn with characters; the settings of the two
// harnesses side by side with what each measured alone added; the findings, the notes and the
// document's warnings. Formats only: every number comes from the section. Missing values print
// as "-".
#include <ostream>

#include <nlohmann/json.hpp>

#include "core/result.hpp"

namespace sb {

void write_explain_markdown(const ExplainSection& s, const Warnings& warnings, std::ostream& out);

// The waterfall bar of a part that runs from start_ns to end_ns on a scale whose widest value
// is max_ns, width characters wide: '·' up to the bar, then '█' (growing) or '░' (shrinking).
// Empty when max_ns is not above 0.
std::string waterfall_bar(double start_ns, double end_ns, double max_ns, int width = 40);

// The explain section as the HTML report draws it (report/html_data.cpp, renderExplain in
// report/html/report.js), in ms: {verdicts, findings, notes, settings: [{label, bench, server,
// source, alone}], stages: [{stage, title, levels: [{label, ms, lo_ms, hi_ms, n, runs,
// step_ms, step_lo_ms, step_hi_ms}], gap: {ms, lo_ms, hi_ms} | null, waterfall: [{label,
// short, kind ("total" | a part's kind), start_ms, end_ms, ms, lo_ms, hi_ms, share,
// value_label}]}]}. Null when doc has no explain section.
nlohmann::json explain_html_view(const ResultDocument& doc);

}  // namespace sb
