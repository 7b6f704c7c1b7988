#include "telemetry/sampler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include "core/clock.hpp"
#include "core/error.hpp"

namespace sb {
namespace {

constexpr int64_t kDefaultCounterRefreshNs = 100'000'000;
// NVML clocks-event reasons that mean the GPU was slowed down (not idle or app settings):
// SW power cap, HW slowdown, SW thermal, HW thermal, HW power brake.
constexpr uint64_t kNvmlThrottleMask = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

using Point = std::pair<int64_t, double>;

bool is_energy_counter(const Metric& m) {
    return m.kind == MetricKind::counter && m.quantity == Quantity::energy;
}
// The operating frequency of a CPU policy or GPU (not its limits, not a memory clock).
bool is_current_frequency(const Metric& m) {
    auto ends_with = [&](std::string_view suffix) {
        return m.name.size() >= suffix.size() &&
               m.name.compare(m.name.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    return ends_with(".cur_freq_khz") || ends_with(".sm_freq_khz");
}
bool read_at_marks(const Metric& m) {
    return m.kind == MetricKind::counter || m.quantity == Quantity::power;
}

// Non-missing points from the last one at or before tb to the first one at or after te.
std::vector<Point> window_points(const std::vector<int64_t>& t,
                                 const std::vector<std::optional<double>>& v, int64_t tb,
                                 int64_t te) {
    std::vector<Point> out;
    if (t.empty())
        return out;
    auto ub = std::upper_bound(t.begin(), t.end(), tb);
    std::ptrdiff_t i = (ub - t.begin()) - 1;
    while (i >= 0 && !v[static_cast<std::size_t>(i)])
        --i;
    if (i < 0)
        i = 0;
    for (auto k = static_cast<std::size_t>(i); k < t.size(); ++k) {
        if (!v[k])
            continue;
        out.emplace_back(t[k], *v[k]);
        if (t[k] >= te)
            break;
    }
    return out;
}

// Linear interpolation of points at x; held constant outside their range.
double value_at(const std::vector<Point>& p, int64_t x) {
    if (x <= p.front().first)
        return p.front().second;
    if (x >= p.back().first)
        return p.back().second;
    auto it = std::lower_bound(p.begin(), p.end(), x,
                               [](const Point& a, int64_t b) { return a.first < b; });
    const Point& hi = *it;
    const Point& lo = *(it - 1);
    if (hi.first == lo.first)
        return hi.second;
    double f = static_cast<double>(x - lo.first) / static_cast<double>(hi.first - lo.first);
    return lo.second + f * (hi.second - lo.second);
}

// Trapezoid integral of the piecewise-linear points over [tb, te], in value·seconds.
double integrate(const std::vector<Point>& p, int64_t tb, int64_t te) {
    std::vector<Point> nodes;
    nodes.emplace_back(tb, value_at(p, tb));
    for (const auto& q : p) {
        if (q.first > tb && q.first < te)
            nodes.push_back(q);
    }
    nodes.emplace_back(te, value_at(p, te));
    double sum = 0;
    for (std::size_t i = 1; i < nodes.size(); ++i) {
        double dt = static_cast<double>(nodes[i].first - nodes[i - 1].first) * 1e-9;
        sum += 0.5 * (nodes[i].second + nodes[i - 1].second) * dt;
    }
    return sum;
}

// Sample-and-hold steps inside [tb, te]: the value in force at tb, then every reading.
std::vector<Point> steps(const std::vector<Point>& p, int64_t tb, int64_t te) {
    std::vector<Point> out;
    for (const auto& q : p) {
        if (q.first <= tb) {
            out.assign(1, {tb, q.second});
        } else if (q.first <= te) {
            out.push_back(q);
        }
    }
    return out;
}

std::string decode_rpi(uint64_t bits) {
    static const char* kNames[] = {"under-voltage", "frequency capped", "throttled",
                                   "soft temperature limit"};
    std::string out;
    for (int b = 0; b < 4; ++b) {
        if (bits & (1u << b))
            out += (out.empty() ? "" : ", ") + std::string(kNames[b]);
    }
    return out;
}

}  // namespace

Sampler::Sampler(Discovery discovery, SamplerOptions options)
    : sources_(std::move(discovery.sources)),
      classes_(std::move(discovery.classes)),
      discovery_warnings_(std::move(discovery.warnings)),
      options_(std::move(options)) {
    if (!(options_.hz > 0 && options_.hz <= 1000)) {
        throw usage_error(fmt::format("sampling rate {} Hz is outside (0, 1000]", options_.hz));
    }
    std::set<std::string> names;
    for (const auto& src : sources_) {
        first_metric_.push_back(metrics_.size());
        bool at_marks = false;
        for (auto m : src->describe()) {
            if (names.count(m.name)) {
                int k = 2;
                while (names.count(m.name + "#" + std::to_string(k)))
                    ++k;
                m.name += "#" + std::to_string(k);
            }
            names.insert(m.name);
            at_marks = at_marks || read_at_marks(m);
            metrics_.push_back(std::move(m));
        }
        boundary_source_.push_back(at_marks && !src->replayed());
        source_names_.push_back(src->name());
    }
    first_metric_.push_back(metrics_.size());
    series_.resize(metrics_.size());
    counters_.resize(metrics_.size());
}

Sampler::~Sampler() {
    stop();
}

int64_t Sampler::clock() const {
    return options_.clock ? options_.clock() : now_ns();
}

void Sampler::start() {
    std::lock_guard lk(run_mu_);
    if (thread_.joinable())
        return;
    stop_requested_ = false;
    thread_ = std::thread([this] { loop(); });
}

void Sampler::stop() {
    {
        std::lock_guard lk(run_mu_);
        if (!thread_.joinable())
            return;
        stop_requested_ = true;
    }
    cv_.notify_all();
    thread_.join();
}

bool Sampler::running() const {
    std::lock_guard lk(run_mu_);
    return thread_.joinable();
}

void Sampler::loop() {
    using namespace std::chrono;
    const auto period = nanoseconds(static_cast<int64_t>(1e9 / options_.hz));
    auto next = steady_clock::now();
    for (;;) {
        for (std::size_t s = 0; s < sources_.size(); ++s) {
            if (sources_[s]->boundary_only() || sources_[s]->replayed())
                continue;
            // One source per lock hold, so that a mark never waits for a whole sample.
            std::lock_guard lk(mu_);
            read_source_locked(s, clock(), false, nullptr);
        }
        next += period;
        auto now = steady_clock::now();
        if (next < now)
            next = now;  // after a stall, resume the rhythm instead of bursting
        std::unique_lock lk(run_mu_);
        if (cv_.wait_until(lk, next, [this] { return stop_requested_; }))
            return;
    }
}

void Sampler::sample_now() {
    std::lock_guard lk(mu_);
    for (std::size_t s = 0; s < sources_.size(); ++s) {
        if (!sources_[s]->boundary_only() && !sources_[s]->replayed())
            read_source_locked(s, clock(), false, nullptr);
    }
}

bool Sampler::clear_replayed(const std::string& source) {
    std::lock_guard lk(mu_);
    for (std::size_t s = 0; s < sources_.size(); ++s) {
        if (source_names_[s] != source || !sources_[s]->replayed())
            continue;
        for (std::size_t m = first_metric_[s]; m < first_metric_[s + 1]; ++m)
            series_[m] = {};
        return true;
    }
    return false;
}

bool Sampler::ingest(const std::string& source, int64_t t_ns,
                     const std::vector<std::optional<double>>& values) {
    std::lock_guard lk(mu_);
    for (std::size_t s = 0; s < sources_.size(); ++s) {
        if (source_names_[s] != source || !sources_[s]->replayed())
            continue;
        const std::size_t first = first_metric_[s], n = first_metric_[s + 1] - first;
        if (n > 0 && !series_[first].t_ns.empty() && t_ns <= series_[first].t_ns.back())
            return true;  // already have it (a log read again from its start)
        for (std::size_t k = 0; k < n; ++k) {
            auto& se = series_[first + k];
            se.t_ns.push_back(t_ns);
            se.raw.push_back(k < values.size() ? values[k] : std::nullopt);
        }
        return true;
    }
    return false;
}

void Sampler::read_source_locked(std::size_t s, int64_t t, bool boundary, MarkData* mark) {
    const std::size_t first = first_metric_[s], n = first_metric_[s + 1] - first;
    buf_.assign(n, std::nullopt);
    auto read_into = [&](std::vector<std::optional<double>>& out) {
        if (boundary) {
            sources_[s]->read_boundary(t, out);
        } else {
            sources_[s]->read(t, out);
        }
    };
    read_into(buf_);
    // A counter that reads empty or garbled is usually a file caught while being rewritten:
    // retry briefly, since a missing counter value costs a boundary (interpolation) or, with
    // several in a row, a wraparound. Counters that keep failing are not retried.
    auto wants_retry = [&] {
        for (std::size_t k = 0; k < n; ++k) {
            const std::size_t m = first + k;
            if (metrics_[m].kind == MetricKind::counter && !buf_[k] &&
                counters_[m].failed_reads < 3) {
                return true;
            }
        }
        return false;
    };
    if (wants_retry()) {
        const auto deadline =
            std::chrono::steady_clock::now() +
            (boundary ? std::chrono::milliseconds(20) : std::chrono::milliseconds(5));
        std::vector<std::optional<double>> again(n);
        while (wants_retry() && std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(std::chrono::microseconds(250));
            std::fill(again.begin(), again.end(), std::nullopt);
            read_into(again);
            for (std::size_t k = 0; k < n; ++k) {
                if (metrics_[first + k].kind == MetricKind::counter && !buf_[k])
                    buf_[k] = again[k];
            }
        }
    }
    for (std::size_t k = 0; k < n; ++k) {
        const std::size_t m = first + k;
        if (metrics_[m].kind != MetricKind::counter)
            continue;
        counters_[m].failed_reads = buf_[k] ? 0 : counters_[m].failed_reads + 1;
    }
    for (std::size_t k = 0; k < n; ++k) {
        const std::size_t m = first + k;
        const Metric& mt = metrics_[m];
        if (boundary && !read_at_marks(mt))
            continue;
        auto& se = series_[m];
        se.t_ns.push_back(t);
        se.raw.push_back(buf_[k]);
        std::optional<double> value = buf_[k];
        if (mt.kind == MetricKind::counter) {
            value = buf_[k] ? unwrap_locked(m, *buf_[k], t) : std::nullopt;
            se.unwrapped.push_back(value);
        }
        if (mark)
            mark->values[m] = value;
    }
}

std::optional<double> Sampler::unwrap_locked(std::size_t m, double raw, int64_t t) {
    auto& c = counters_[m];
    const Metric& mt = metrics_[m];
    if (!c.have) {
        c.have = true;
        c.prev_raw = c.acc = c.first = raw;
        c.prev_t = t;
        return c.acc;
    }
    double d = raw - c.prev_raw;
    bool plausible = true;
    if (d < 0) {
        if (mt.wrap_range) {
            d += *mt.wrap_range;
        } else {
            plausible = false;  // went backwards with no known wrap: a glitch or a reset
        }
    }
    if (plausible && mt.max_plausible_mw) {
        // A torn read ("12" of "123456") looks like a wrap or a jump; the refresh interval
        // bounds dt from below because a counter can advance a whole refresh in no time.
        int64_t dt = std::max(t - c.prev_t, mt.refresh_ns.value_or(kDefaultCounterRefreshNs));
        double mw = d / 1e3 / (static_cast<double>(dt) * 1e-9);
        plausible = mw <= *mt.max_plausible_mw;
    }
    if (!plausible) {
        if (++c.rejects < 3) {
            ++c.glitches;
            return std::nullopt;
        }
        // Implausible three times in a row: the counter restarted. Continue from the new value
        // without counting the jump.
        c.rejects = 0;
        ++c.resets;
        c.prev_raw = raw;
        c.prev_t = t;
        return c.acc;
    }
    c.rejects = 0;
    c.acc += d;
    c.prev_raw = raw;
    c.prev_t = t;
    return c.acc;
}

int64_t Sampler::mark(const std::string& stage, bool begin, std::optional<int64_t> tokens) {
    std::lock_guard lk(mu_);
    const int64_t t = clock();
    MarkData md;
    md.mark = {stage, begin, t, 0};
    md.tokens = tokens;
    md.values.assign(metrics_.size(), std::nullopt);
    for (std::size_t s = 0; s < sources_.size(); ++s) {
        if (boundary_source_[s])
            read_source_locked(s, t, true, &md);
    }
    md.mark.read_ns = clock() - t;
    marks_.push_back(std::move(md));
    return t;
}

void Sampler::measure_idle(int64_t duration_ns) {
    const bool was_running = running();
    if (!was_running)
        start();
    mark("idle", true);
    if (options_.pause)
        options_.pause(std::max<int64_t>(duration_ns, 0));
    else
        sleep_ns(duration_ns);
    mark("idle", false);
    if (!was_running)
        stop();
    set_idle_stage("idle");
}

bool Sampler::set_idle_stage(const std::string& stage) {
    std::lock_guard lk(mu_);
    auto all = summaries_locked(&stage);
    if (all.empty())
        return false;
    const auto& s = all.back();
    IdlePower b;
    b.duration_ns = s.duration_ns;
    for (const auto& e : s.energy) {
        if (e.mean_power_mw)
            b.power_mw[e.metric] = *e.mean_power_mw;
    }
    idle_ = std::move(b);
    return true;
}

std::optional<StageWindow> Sampler::stage_summary(const std::string& stage) const {
    auto all = stage_summaries(stage);
    if (all.empty())
        return std::nullopt;
    return std::move(all.back());
}

std::vector<StageWindow> Sampler::stage_summaries(const std::string& stage) const {
    std::lock_guard lk(mu_);
    return summaries_locked(&stage);
}

std::vector<StageWindow> Sampler::summaries_locked(const std::string* only) const {
    struct Pair {
        std::size_t b, e;
        int occurrence;
    };
    std::vector<Pair> pairs;
    std::map<std::string, std::size_t> open;
    std::map<std::string, int> count;
    for (std::size_t i = 0; i < marks_.size(); ++i) {
        const auto& mk = marks_[i].mark;
        if (only && mk.stage != *only)
            continue;
        if (mk.begin) {
            open[mk.stage] = i;  // an unfinished earlier begin is dropped
        } else if (auto it = open.find(mk.stage); it != open.end()) {
            pairs.push_back({it->second, i, count[mk.stage]++});
            open.erase(it);
        }
    }
    std::sort(pairs.begin(), pairs.end(), [](const Pair& a, const Pair& b) { return a.b < b.b; });
    std::vector<StageWindow> out;
    for (const auto& p : pairs) {
        out.push_back(summarize_locked(marks_[p.b].mark.stage, p.occurrence, p.b, p.e));
    }
    return out;
}

StageWindow Sampler::summarize_locked(const std::string& stage, int occurrence, std::size_t b,
                                      std::size_t e) const {
    const MarkData& mb = marks_[b];
    const MarkData& me = marks_[e];
    StageWindow st;
    st.stage = stage;
    st.occurrence = occurrence;
    st.begin_ns = mb.mark.t_ns;
    st.end_ns = me.mark.t_ns;
    st.duration_ns = st.end_ns - st.begin_ns;
    st.begin_read_ns = mb.mark.read_ns;
    st.end_read_ns = me.mark.read_ns;
    st.tokens = me.tokens ? me.tokens : mb.tokens;
    const int64_t tb = st.begin_ns, te = st.end_ns;
    const double dur_s = static_cast<double>(st.duration_ns) * 1e-9;
    const double period_ns = 1e9 / options_.hz;

    std::set<std::string> counter_sensors;
    for (const auto& m : metrics_) {
        if (is_energy_counter(m))
            counter_sensors.insert(m.sensor);
    }
    // Battery sensors that were not discharging at some point of the stage.
    std::set<std::string> not_discharging;
    std::vector<std::string> short_windows, missing_bounds, missing_samples;
    std::map<std::string, std::map<double, double>> tis;  // sensor -> kHz -> ms

    for (std::size_t m = 0; m < metrics_.size(); ++m) {
        const Metric& mt = metrics_[m];
        const SeriesData& se = series_[m];
        if (mt.quantity == Quantity::residency && mt.kind == MetricKind::counter) {
            auto vb = mb.values[m], ve = me.values[m];
            if (vb && ve && mt.bin_khz)
                tis[mt.sensor][*mt.bin_khz] = *ve - *vb;
            continue;
        }
        if (is_energy_counter(mt)) {
            StageEnergy es;
            es.metric = mt.name;
            es.sensor = mt.sensor;
            es.method = "counter";
            es.system_total = mt.system_total;
            es.within = mt.within;
            auto vb = mb.values[m], ve = me.values[m];
            if (!vb || !ve) {
                // The boundary read failed: fall back to the neighbouring samples.
                auto pts = window_points(se.t_ns, se.unwrapped, tb, te);
                if (!pts.empty()) {
                    if (!vb)
                        vb = value_at(pts, tb);
                    if (!ve)
                        ve = value_at(pts, te);
                }
                missing_bounds.push_back(mt.name);
            }
            if (vb && ve)
                es.energy_j = (*ve - *vb) * 1e-6;
            // Highest power between reads at least one refresh (and half a period) apart.
            auto pts = window_points(se.t_ns, se.unwrapped, tb, te);
            const double min_dt =
                std::max(static_cast<double>(mt.refresh_ns.value_or(0)), period_ns / 2);
            std::optional<Point> anchor;
            for (const auto& q : pts) {
                if (q.first < tb || q.first > te)
                    continue;
                if (!anchor) {
                    anchor = q;
                } else if (static_cast<double>(q.first - anchor->first) >= min_dt) {
                    double mw = (q.second - anchor->second) * 1e-3 /
                                (static_cast<double>(q.first - anchor->first) * 1e-9);
                    es.max_power_mw = std::max(es.max_power_mw.value_or(mw), mw);
                    anchor = q;
                }
            }
            es.below_refresh = mt.refresh_ns && st.duration_ns < *mt.refresh_ns;
            st.energy.push_back(std::move(es));
            continue;
        }
        auto pts = window_points(se.t_ns, se.raw, tb, te);
        if (mt.quantity == Quantity::power && !counter_sensors.count(mt.sensor)) {
            StageEnergy es;
            es.metric = mt.name;
            es.sensor = mt.sensor;
            es.method = "power_integral";
            es.system_total = mt.system_total;
            es.within = mt.within;
            if (!pts.empty()) {
                es.energy_j = integrate(pts, tb, te) * 1e-3;  // mW·s -> J
                for (const auto& q : pts) {
                    if (q.first >= tb && q.first <= te) {
                        es.max_power_mw = std::max(es.max_power_mw.value_or(q.second), q.second);
                    }
                }
            }
            es.below_refresh = mt.refresh_ns && st.duration_ns < *mt.refresh_ns;
            st.energy.push_back(std::move(es));
            continue;
        }
        // Gauges.
        StageGauge g;
        g.metric = mt.name;
        g.unit = unit_of(mt.quantity);
        auto lo = std::upper_bound(se.t_ns.begin(), se.t_ns.end(), tb) - se.t_ns.begin();
        auto hi = std::upper_bound(se.t_ns.begin(), se.t_ns.end(), te) - se.t_ns.begin();
        for (auto k = lo; k < hi; ++k) {
            ++g.samples;
            if (!se.raw[static_cast<std::size_t>(k)])
                ++g.missing;
        }
        if (g.missing > 0)
            missing_samples.push_back(mt.name);
        auto stp = steps(pts, tb, te);
        if (!stp.empty()) {
            g.start = stp.front().second;
            g.end = stp.back().second;
            double wsum = 0, wt = 0;
            uint64_t bits = 0;
            for (std::size_t i = 0; i < stp.size(); ++i) {
                double v = stp[i].second;
                g.min = std::min(g.min.value_or(v), v);
                g.max = std::max(g.max.value_or(v), v);
                int64_t until = i + 1 < stp.size() ? stp[i + 1].first : te;
                double w = static_cast<double>(until - stp[i].first);
                wsum += v * w;
                wt += w;
                if (mt.quantity == Quantity::flags)
                    bits |= static_cast<uint64_t>(v);
            }
            g.mean = wt > 0 ? wsum / wt : stp.back().second;
            if (mt.quantity == Quantity::flags)
                g.max = static_cast<double>(bits);
            if (mt.quantity == Quantity::flags && mt.name.size() >= 17 &&
                mt.name.compare(mt.name.size() - 17, 17, ".discharging_flag") == 0 && *g.min == 0) {
                not_discharging.insert(mt.sensor);
            }
            if (mt.name == "rpi.throttled_flags") {
                // Bits 0-3: now; bits 16-19: has occurred (catches events between samples).
                const uint64_t now_bits = bits & 0xF;
                const auto start_bits = static_cast<uint64_t>(*g.start);
                const auto end_bits = static_cast<uint64_t>(*g.end);
                const uint64_t new_sticky = ((end_bits & ~start_bits) >> 16) & 0xF;
                if (now_bits || new_sticky) {
                    st.warnings.push_back(
                        {"throttled",
                         fmt::format("Raspberry Pi throttling during stage '{}': {}", stage,
                                     decode_rpi(now_bits | new_sticky)),
                         "Improve cooling and use the official power supply; throttled "
                         "numbers do not describe the device's capability."});
                }
            }
            if (mt.quantity == Quantity::flags && mt.sensor.rfind("nvml.", 0) == 0 &&
                (bits & kNvmlThrottleMask)) {
                st.warnings.push_back(
                    {"gpu_throttled",
                     fmt::format("{}: clocks-event reasons 0x{:x} during stage '{}' (power or "
                                 "thermal slowdown)",
                                 mt.sensor, bits & kNvmlThrottleMask, stage),
                     "Check cooling and power limits (nvidia-smi -q -d PERFORMANCE)."});
            }
        }
        // Sampled residency for current-frequency gauges of sensors without time_in_state.
        if (mt.quantity == Quantity::frequency && is_current_frequency(mt) && !stp.empty()) {
            std::map<double, double> w;
            for (std::size_t i = 0; i < stp.size(); ++i) {
                int64_t until = i + 1 < stp.size() ? stp[i + 1].first : te;
                w[stp[i].second] += static_cast<double>(until - stp[i].first);
            }
            double total = 0;
            for (const auto& [f, x] : w)
                total += x;
            if (total > 0) {
                StageResidency r;
                r.sensor = mt.sensor;
                r.method = "sampled";
                for (const auto& [f, x] : w)
                    r.bins.push_back({f, x / total});
                st.residency.push_back(std::move(r));
            }
        }
        st.gauges.push_back(std::move(g));
    }

    // Kernel residency counters replace the sampled estimate for their policy.
    for (const auto& [sensor, bins] : tis) {
        double total = 0;
        for (const auto& [f, ms] : bins)
            total += std::max(ms, 0.0);
        if (total <= 0)
            continue;  // shorter than the 10 ms resolution
        std::erase_if(st.residency, [&](const StageResidency& r) { return r.sensor == sensor; });
        StageResidency r;
        r.sensor = sensor;
        r.method = "time_in_state";
        for (const auto& [f, ms] : bins)
            r.bins.push_back({f, std::max(ms, 0.0) / total});
        st.residency.push_back(std::move(r));
    }

    const StageEnergy* total = nullptr;
    for (auto& es : st.energy) {
        if (es.energy_j && dur_s > 0)
            es.mean_power_mw = *es.energy_j / dur_s * 1e3;
        if (idle_) {
            if (auto it = idle_->power_mw.find(es.metric); it != idle_->power_mw.end()) {
                es.idle_power_mw = it->second;
                if (es.energy_j) {
                    // Both terms come from the same meter; a difference within float
                    // rounding of their size (a constant meter) is no energy, not 1e-19 J.
                    const double idle_j = it->second * 1e-3 * dur_s;
                    const double net_j = *es.energy_j - idle_j;
                    es.net_energy_j =
                        std::abs(net_j) <= 1e-9 * std::max(std::abs(*es.energy_j), idle_j) ? 0.0
                                                                                           : net_j;
                }
            }
        }
        if (st.tokens && *st.tokens > 0) {
            const double n = static_cast<double>(*st.tokens);
            if (es.energy_j)
                es.j_per_token = *es.energy_j / n;
            if (es.net_energy_j)
                es.net_j_per_token = *es.net_energy_j / n;
        }
        if (es.below_refresh)
            short_windows.push_back(es.metric);
        bool battery_off = not_discharging.count(es.sensor) > 0;
        if (battery_off) {
            st.warnings.push_back(
                {"battery_not_discharging",
                 fmt::format("{} was not discharging during stage '{}': battery power does "
                             "not measure the device's consumption",
                             es.sensor, stage),
                 "Unplug the charger for energy measurements from the battery."});
        }
        if (es.system_total && es.energy_j && !battery_off) {
            // Prefer exact counters to integrated power; otherwise discovery order.
            if (!total || (total->method != "counter" && es.method == "counter"))
                total = &es;
        }
    }
    if (total) {
        st.total.metric = total->metric;
        st.total.energy_j = total->energy_j;
        st.total.net_energy_j = total->net_energy_j;
        st.total.j_per_token = total->j_per_token;
        st.total.net_j_per_token = total->net_j_per_token;
    }
    auto join = [](const std::vector<std::string>& v) {
        std::string s;
        for (const auto& x : v)
            s += (s.empty() ? "" : ", ") + x;
        return s;
    };
    if (!short_windows.empty()) {
        st.warnings.push_back(
            {"window_shorter_than_refresh",
             fmt::format("stage '{}' lasted {:.1f} ms, less than the refresh interval of: {}",
                         stage, static_cast<double>(st.duration_ns) * 1e-6, join(short_windows)),
             "Those energies are unreliable; measure longer stages (more tokens) or "
             "several repetitions."});
    }
    if (!missing_bounds.empty()) {
        st.warnings.push_back(
            {"boundary_read_missing",
             fmt::format("stage '{}': counters not readable at a boundary, interpolated "
                         "from samples: {}",
                         stage, join(missing_bounds)),
             "Check the sensors' warnings; a counter that fails intermittently is imprecise."});
    }
    if (!missing_samples.empty()) {
        st.warnings.push_back(
            {"missing_samples",
             fmt::format("stage '{}': some readings missing (unreadable or malformed) for: {}",
                         stage, join(missing_samples)),
             "See the telemetry warnings for the values that were rejected."});
    }
    return st;
}

TelemetryMetric metric_record(const Metric& m) {
    return {m.name,
            m.sensor,
            quantity_name(m.quantity),
            unit_of(m.quantity),
            m.kind,
            m.wrap_range,
            m.refresh_ns,
            m.system_total,
            m.within};
}

TelemetrySeries Sampler::series_locked(std::size_t m) const {
    TelemetrySeries se;
    se.metric = metrics_[m].name;
    se.unit = unit_of(metrics_[m].quantity);
    se.kind = metrics_[m].kind;
    se.t_ns = series_[m].t_ns;
    se.values = series_[m].raw;
    if (metrics_[m].kind == MetricKind::counter) {
        const double first = counters_[m].first;
        auto& cum = se.cumulative.emplace();
        cum.reserve(series_[m].unwrapped.size());
        for (const auto& u : series_[m].unwrapped)
            cum.push_back(u ? std::optional<double>(*u - first) : std::nullopt);
    }
    return se;
}

std::vector<TelemetrySeries> Sampler::series_of(Quantity q) const {
    std::lock_guard lk(mu_);
    std::vector<TelemetrySeries> out;
    for (std::size_t m = 0; m < metrics_.size(); ++m)
        if (metrics_[m].quantity == q)
            out.push_back(series_locked(m));
    return out;
}

TelemetrySection Sampler::record() const {
    std::lock_guard lk(mu_);
    TelemetrySection r;
    r.hz = options_.hz;
    for (const auto& c : classes_) {
        r.classes.push_back({c.source_class, c.found, c.note});
        if (c.found == 0)
            r.absent.push_back(c.source_class);
    }
    for (std::size_t s = 0; s < sources_.size(); ++s) {
        TelemetrySource si;
        si.name = source_names_[s];
        si.source_class = sources_[s]->source_class();
        si.properties = sources_[s]->properties();
        for (std::size_t m = first_metric_[s]; m < first_metric_[s + 1]; ++m) {
            si.metrics.push_back(metrics_[m].name);
        }
        r.sources.push_back(std::move(si));
    }
    auto& series = r.series.emplace();
    for (std::size_t m = 0; m < metrics_.size(); ++m) {
        r.metrics.push_back(metric_record(metrics_[m]));
        series.push_back(series_locked(m));
    }
    for (const auto& md : marks_)
        r.marks.push_back(md.mark);
    r.stages = summaries_locked(nullptr);
    r.idle = idle_;
    r.warnings = discovery_warnings_;
    for (const auto& src : sources_) {
        for (auto& w : src->warnings())
            r.warnings.push_back(std::move(w));
    }
    for (std::size_t m = 0; m < metrics_.size(); ++m) {
        const auto& c = counters_[m];
        if (c.glitches > 0) {
            r.warnings.push_back(
                {"counter_glitch",
                 fmt::format("{}: {} implausible counter reading(s) ignored (a jump or a "
                             "decrease beyond the wrap range)",
                             metrics_[m].name, c.glitches),
                 "Usually a torn read while the file was rewritten; if frequent, check the "
                 "driver."});
        }
        if (c.resets > 0) {
            r.warnings.push_back(
                {"counter_reset",
                 fmt::format("{}: counter restarted {} time(s); energy across a restart is not "
                             "counted",
                             metrics_[m].name, c.resets),
                 "A driver reload or suspend resets counters; repeat the measurement."});
        }
    }
    return r;
}

}  // namespace sb
