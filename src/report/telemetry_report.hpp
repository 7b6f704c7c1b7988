#pragma once
// Markdown for an imported telemetry record (`stagebench import tegrastats`): the source and
// how its times were found, then one row per metric over the whole series (rows, missing, min,
// the mean of the rows, max, first, last) in the units people read (°C, MHz, mW, MB, %), and
// the warnings. Formats only; missing values print as "-". JSON is the document itself.
#include <ostream>

#include "core/enums.hpp"
#include "core/result.hpp"

namespace sb {

void write_telemetry_markdown(const TelemetrySection& t, const Warnings& warnings,
                              std::ostream& out);

// md or json (the document); any other format is sb::Error(usage).
void print_telemetry_document(const ResultDocument& doc, OutputFormat format, std::ostream& out);

}  // namespace sb
