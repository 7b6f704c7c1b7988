#pragma once
// The arithmetic of a pipeline-modes experiment (core/doc/modes_section.hpp): each mode's stage
// time over its runs and the parts of the pipeline as the differences between consecutive
// modes. Part 0 of a stage is the first mode's median, part i its mode's median less the
// previous mode's, so the parts add up to the last mode's median; share = part / that median.
// CIs: the mode's median_ci (part 0) or difference_of_medians (core/stats.hpp, seeded: the same
// runs give the same intervals). Times in ns.
#include "core/doc/modes_section.hpp"

namespace sb {

// Fills every mode's times (one per s.stages, from its runs' stage_ns), n_failed, and s.parts
// (stage by stage, mode by mode). A mode without a time for a stage leaves that stage's parts
// next to it null, with a note naming the mode.
void summarize_modes(ModesSection& s);

}  // namespace sb
