#pragma once
// The arithmetic of `stagebench explain` (core/doc/explain_section.hpp): each measure's stage
// times over its rounds, the steps between levels, the gap between the bench and the server
// split into named parts, the findings a reader must see and one verdict per stage.
//
// Every measure ran once per round, the rounds interleaved (scenario/explain.hpp), so the
// measures of one round share the machine's state: differences are paired by round. A
// difference (or any sum of medians with signs) is the same sum of each measure's median over
// the rounds where every measure involved has a time, with a seeded percentile-bootstrap 95 %
// CI that resamples whole rounds (the same rounds for every measure of the sum). Point values
// therefore add up: the parts of the gap add up to it exactly, the remainder being what the
// named parts leave.
//
// The gap of a stage is server - graph. Its parts:
//   setting      graph+NAME - graph: the setting NAME as the server has it, alone;
//   interaction  (graph+all - graph) - Σ settings: what the settings do together beyond their
//                sum (only with two or more settings measured);
//   application  generation - graph: the chat template, tokenizing, sampling, detokenizing;
//   remainder    the gap less the parts above: the server's own overhead (HTTP, JSON, SSE, the
//                task queue) and whatever differs that no setting named.
// A part whose measure has no time in any round is left out (with a note) and falls into the
// remainder. Shares are of the gap. Times in ns.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/doc/explain_section.hpp"

namespace sb {

struct PairedSum {
    std::optional<double> value, ci95_lo, ci95_hi;  // null: no round has every value
    int n_rounds = 0;                               // rounds used
    bool no_difference = false;                     // the CI contains 0
};

// Σ coef[i] x median(x[i]) over the rounds k where every x[i][k] has a value, with the paired
// bootstrap CI described above (null with fewer than 2 such rounds). x[i] is indexed by round;
// shorter vectors lack the later rounds. Throws sb::Error(usage) when the sizes of x and coef
// differ or resamples is 0.
PairedSum paired_sum_of_medians(const std::vector<std::vector<std::optional<double>>>& x,
                                const std::vector<double>& coef, std::size_t resamples = 2000,
                                std::uint64_t seed = 42);

// Fills every measure's prefill and decode statistics and n_failed, s.steps, s.parts,
// s.findings (keeping those of kind "settings", which the scenario adds), s.verdicts and the
// notes it owns (the server's own timings). Idempotent: the same runs give the same section.
void summarize_explain(ExplainSection& s, std::size_t resamples = 2000, std::uint64_t seed = 42);

// "12.3 ms", "0.845 ms", "-1.20 ms": three significant digits.
std::string format_ms(double ns);

}  // namespace sb
