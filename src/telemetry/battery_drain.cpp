#include "telemetry/battery_drain.hpp"

#include <string>
#include <string_view>

namespace sb {

namespace {

constexpr std::string_view kCapacity = ".capacity_pct";

struct CounterKind {
    const char* name;  // BatteryDrain::counter
    const char* now;   // the metric's field
    const char* full;
};
// Charge first: a fuel gauge counts charge (coulombs); an energy is its estimate times voltage.
constexpr CounterKind kCounters[] = {{"charge_counter", ".charge_counter_uah", ".charge_full_uah"},
                                     {"charge_now", ".charge_now_uah", ".charge_full_uah"},
                                     {"energy_now", ".energy_now_uj", ".energy_full_uj"}};

bool ends_with(const std::string& s, std::string_view suffix) {
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The battery sensor ("battery.BAT0") of a gauge of a battery's drain, if it is one.
std::optional<std::string> battery_of(const std::string& metric) {
    if (metric.rfind("battery.", 0) != 0)
        return std::nullopt;
    for (std::string_view suffix :
         {kCapacity, std::string_view(".charge_counter_uah"), std::string_view(".charge_now_uah"),
          std::string_view(".energy_now_uj")})
        if (ends_with(metric, suffix))
            return metric.substr(0, metric.size() - suffix.size());
    return std::nullopt;
}

const StageGauge* gauge(const StageWindow& w, const std::string& metric) {
    for (const auto& g : w.gauges)
        if (g.metric == metric)
            return &g;
    return nullptr;
}

std::optional<double> per_hour(const std::optional<double>& pct, double span_s) {
    if (!pct || span_s <= 0)
        return std::nullopt;
    return *pct / span_s * 3600.0;
}

// Fills the percentages and picks the finer of the two: the counter where there is one.
std::optional<BatteryDrain> finish(BatteryDrain d) {
    d.span_s = static_cast<double>(d.end_ns - d.begin_ns) * 1e-9;
    if (d.capacity_start_pct && d.capacity_end_pct) {
        d.capacity_drain_pct = *d.capacity_start_pct - *d.capacity_end_pct;
        d.capacity_drain_pct_per_h = per_hour(d.capacity_drain_pct, d.span_s);
    }
    if (d.counter && d.counter_start && d.counter_end && d.counter_full && *d.counter_full > 0) {
        d.counter_drain_pct = (*d.counter_start - *d.counter_end) / *d.counter_full * 100.0;
        d.counter_drain_pct_per_h = per_hour(d.counter_drain_pct, d.span_s);
    } else {
        d.counter.reset();
        d.counter_start.reset();
        d.counter_end.reset();
        d.counter_full.reset();
    }
    if (d.counter_drain_pct) {
        d.from = *d.counter;
        d.drain_pct = d.counter_drain_pct;
        d.drain_pct_per_h = d.counter_drain_pct_per_h;
    } else if (d.capacity_drain_pct) {
        d.from = "capacity";
        d.drain_pct = d.capacity_drain_pct;
        d.drain_pct_per_h = d.capacity_drain_pct_per_h;
    } else {
        return std::nullopt;
    }
    return d;
}

}  // namespace

std::optional<BatteryDrain> battery_drain(const std::vector<const StageWindow*>& windows) {
    if (windows.empty())
        return std::nullopt;
    const StageWindow& first = *windows.front();
    const StageWindow& last = *windows.back();
    std::optional<std::string> battery;
    for (const auto& g : first.gauges)
        if ((battery = battery_of(g.metric)))
            break;
    if (!battery)
        return std::nullopt;
    BatteryDrain d;
    d.battery = *battery;
    d.begin_ns = first.begin_ns;
    d.end_ns = last.end_ns;
    if (const StageGauge* g = gauge(first, *battery + std::string(kCapacity)))
        d.capacity_start_pct = g->start;
    if (const StageGauge* g = gauge(last, *battery + std::string(kCapacity)))
        d.capacity_end_pct = g->end;
    for (const auto& c : kCounters) {
        const StageGauge* start = gauge(first, *battery + c.now);
        const StageGauge* end = gauge(last, *battery + c.now);
        const StageGauge* full = gauge(last, *battery + c.full);
        if (!start || !end || !full || !start->start || !end->end || !(full->end || full->start))
            continue;
        d.counter = c.name;
        d.counter_start = start->start;
        d.counter_end = end->end;
        d.counter_full = full->end ? full->end : full->start;
        break;
    }
    return finish(std::move(d));
}

std::optional<BatteryDrain> battery_drain_across(const BatteryDrain& first,
                                                 const BatteryDrain& last) {
    if (first.battery != last.battery)
        return std::nullopt;
    BatteryDrain d;
    d.battery = first.battery;
    d.begin_ns = first.begin_ns;
    d.end_ns = last.end_ns;
    d.capacity_start_pct = first.capacity_start_pct;
    d.capacity_end_pct = last.capacity_end_pct;
    if (first.counter && first.counter == last.counter) {
        d.counter = first.counter;
        d.counter_start = first.counter_start;
        d.counter_end = last.counter_end;
        d.counter_full = last.counter_full;
    }
    return finish(std::move(d));
}

}  // namespace sb
