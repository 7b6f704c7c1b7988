#pragma once
// A battery's drain over stage windows (core/doc/telemetry_section.hpp BatteryDrain), from the
// gauges the battery source records in every window (telemetry/battery_source.cpp):
// `capacity_pct`, and the counters `charge_counter_uah` / `charge_now_uah` (against
// `charge_full_uah`) or `energy_now_uj` (against `energy_full_uj`). Pure functions of the
// document's types: `run`, `sustained` and `compare` compute it the same way.
#include <optional>
#include <vector>

#include "core/doc/telemetry_section.hpp"

namespace sb {

// The drain from windows.front()'s start to windows.back()'s end (the windows in time order),
// of the first battery whose gauges the first window holds. The values in force at the start
// and end are the gauges' start and end; the full value the last window's. A counter is used
// where its start, end and full value are all read (charge_counter first, then charge_now, then
// energy_now). Null with no window, no battery, or neither a capacity nor a counter read at both
// ends.
std::optional<BatteryDrain> battery_drain(const std::vector<const StageWindow*>& windows);

// The drain from first's start to last's end (two drains of one battery, first earlier): a
// phase of rounds from its first round's drain and its last's. Capacity and counter are each
// given where both have them (the counter only when it is the same counter). Null when the
// batteries differ or nothing is left to compare.
std::optional<BatteryDrain> battery_drain_across(const BatteryDrain& first,
                                                 const BatteryDrain& last);

}  // namespace sb
