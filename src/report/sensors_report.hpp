#pragma once
// Markdown for `stagebench sensors` (telemetry/sensors.hpp run_sensors): the sources found,
// the families absent, current values, the window's table per sensor (energy, mean and max
// power, temperature range, frequency range and mean), warnings. Formats only; missing values
// print as "-". The JSON is telemetry/sensors.hpp to_json.
#include <ostream>

#include "telemetry/sensors.hpp"

namespace sb {

void write_sensors_markdown(std::ostream& out, const SensorsReport& report);

}  // namespace sb
