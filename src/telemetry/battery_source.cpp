// Batteries: /sys/class/power_supply/*/ with type "Battery". Discharge power is reported
// positive (mW), charging negative.
//
// Calibration (the kernel says current_now is µA, negative while discharging, voltage_now µV;
// vendors differ):
// - voltage_now: > 100000 is µV, 1000..100000 is mV (no battery is 0.1 V or 100 V).
// - current_now unit: a magnitude >= 20000 can only be µA (20 A is beyond any battery-powered
//   device), and settles the unit for good. Below that, the first non-zero reading makes mA the
//   provisional unit: an awake device running a benchmark draws well over 20 mA, so a µA
//   device reads >= 20000 almost at once and corrects the guess. The rule can only be fooled by
//   a µA device idling below 20 mA for the whole run; CurrentUnit overrides it.
// - sign: while `status` is Discharging the magnitude is discharge, while Charging it is
//   charge, whatever sign the vendor uses (some flip it, ACPI reports magnitudes only). In other
//   states (Full, Not charging, Unknown) the sign seen while discharging is reused, the kernel
//   convention before any was seen. CurrentSign overrides all of this.
// - power_now (µW) is used when current_now is absent, with the sign from `status`.
// - temp is in tenths of °C.
// - charge_full (µAh, the full charge as the fuel gauge learned it) is read every sample like
//   the rest: it turns an energy into a share of the battery (analysis/sustained_summary.hpp).
// - the charge and energy left, for the drain (telemetry/battery_drain.hpp): charge_counter
//   (µAh, Android), charge_now (µAh) and energy_now with energy_full (µWh, ACPI laptops; kept in
//   µJ, × 3600, the unit of energy here). They are gauges, not counters: they fall as the battery
//   drains and rise when it charges.
#include <cmath>

#include "telemetry/discover.hpp"
#include "telemetry/sysfs_util.hpp"

namespace sb {
namespace {

constexpr double kMicroampThreshold = 20000;

class BatterySource : public Source {
  public:
    BatterySource(std::string dir, std::string supply, BatteryCalibration cal)
        : dir_(std::move(dir)), supply_(std::move(supply)), cal_(cal) {
        has_current_ = sysfs::exists(dir_ + "/current_now");
        has_voltage_ = sysfs::exists(dir_ + "/voltage_now");
        has_power_ = sysfs::exists(dir_ + "/power_now");
        has_status_ = sysfs::exists(dir_ + "/status");
        has_charge_ = sysfs::exists(dir_ + "/charge_counter");
        has_temp_ = sysfs::exists(dir_ + "/temp");
        has_capacity_ = sysfs::exists(dir_ + "/capacity");
        has_charge_full_ = sysfs::exists(dir_ + "/charge_full");
        has_charge_now_ = sysfs::exists(dir_ + "/charge_now");
        has_energy_now_ = sysfs::exists(dir_ + "/energy_now");
        has_energy_full_ = sysfs::exists(dir_ + "/energy_full");
        sensor_ = "battery." + supply_;
        auto add = [&](bool present, const std::string& field, Quantity q) {
            if (!present)
                return -1;
            Metric m;
            m.sensor = sensor_;
            m.name = sensor_ + "." + field;
            m.quantity = q;
            metrics_.push_back(m);
            return static_cast<int>(metrics_.size() - 1);
        };
        i_power_ = add((has_current_ && has_voltage_) || has_power_, "power_mw", Quantity::power);
        if (i_power_ >= 0) {
            metrics_[i_power_].system_total = true;
            metrics_[i_power_].refresh_ns = 1'000'000'000;  // typical fuel-gauge update
        }
        i_voltage_ = add(has_voltage_, "voltage_mv", Quantity::voltage);
        i_current_ = add(has_current_, "current_ma", Quantity::current);
        i_charge_ = add(has_charge_, "charge_counter_uah", Quantity::charge);
        i_temp_ = add(has_temp_, "temp_mc", Quantity::temperature);
        i_capacity_ = add(has_capacity_, "capacity_pct", Quantity::percent);
        i_charge_full_ = add(has_charge_full_, "charge_full_uah", Quantity::charge);
        i_discharging_ = add(has_status_, "discharging_flag", Quantity::flags);
        i_charge_now_ = add(has_charge_now_, "charge_now_uah", Quantity::charge);
        i_energy_now_ = add(has_energy_now_, "energy_now_uj", Quantity::energy);
        i_energy_full_ = add(has_energy_full_, "energy_full_uj", Quantity::energy);
    }

    bool usable() const { return !metrics_.empty(); }
    std::string name() const override { return sensor_; }
    std::string source_class() const override { return "battery"; }
    std::vector<Metric> describe() const override { return metrics_; }

    std::map<std::string, std::string> properties() const override {
        std::map<std::string, std::string> p;
        if (has_current_) {
            if (cal_.unit) {
                p["current_unit"] = *cal_.unit == CurrentUnit::milliamp ? "mA (set)" : "uA (set)";
            } else if (!unit_) {
                p["current_unit"] = "undetermined (no non-zero reading yet)";
            } else if (*unit_ == CurrentUnit::microamp) {
                p["current_unit"] = "uA (detected: abs(current_now) >= 20000)";
            } else {
                p["current_unit"] = "mA (detected: abs(current_now) < 20000, provisional)";
            }
            if (cal_.sign) {
                p["current_sign"] = *cal_.sign == CurrentSign::negative_discharge
                                        ? "negative = discharging (set)"
                                        : "positive = discharging (set)";
            } else if (!learned_sign_) {
                p["current_sign"] = "from status; kernel convention otherwise";
            } else {
                p["current_sign"] = *learned_sign_ == CurrentSign::negative_discharge
                                        ? "from status; seen negative while discharging"
                                        : "from status; seen positive while discharging";
            }
        } else if (has_power_) {
            p["power_from"] = "power_now (sign from status)";
        }
        return p;
    }

    void read(int64_t, std::vector<std::optional<double>>& out) override {
        std::optional<std::string> status;
        if (has_status_) {
            if (auto r = read_file(dir_ + "/status"); r.text) {
                status = std::string(sb::trim(*r.text));
            }
        }
        const bool discharging = status && *status == "Discharging";
        const bool charging = status && *status == "Charging";
        if (i_discharging_ >= 0) {
            out[i_discharging_] =
                status ? std::optional<double>(discharging ? 1 : 0) : std::nullopt;
        }

        std::optional<double> volt_mv;
        if (has_voltage_) {
            if (auto raw = read_raw("voltage_mv", "voltage_now")) {
                double v = *raw;
                if (v > 1e5 && v <= 1e8) {
                    volt_mv = v / 1000.0;
                } else if (v >= 1000 && v <= 1e5) {
                    volt_mv = v;
                } else {
                    note_malformed(sensor_ + ".voltage_mv", std::to_string(v));
                }
            }
            out[i_voltage_] = volt_mv;
        }

        std::optional<double> cur_ma;  // discharge positive
        if (has_current_) {
            if (auto raw = read_raw("current_ma", "current_now")) {
                double i = *raw;
                if (std::fabs(i) > 1e8) {
                    note_malformed(sensor_ + ".current_ma", std::to_string(i));
                } else {
                    CurrentUnit unit = unit_for(i);
                    double mag = std::fabs(i) / (unit == CurrentUnit::microamp ? 1000.0 : 1.0);
                    cur_ma = signed_discharge(i, mag, discharging, charging);
                }
            }
            out[i_current_] = cur_ma;
        }

        if (i_power_ >= 0) {
            std::optional<double> p;
            if (has_current_ && has_voltage_) {
                if (cur_ma && volt_mv)
                    p = *cur_ma * *volt_mv / 1000.0;
            } else if (auto raw = read_raw("power_mw", "power_now")) {
                if (std::fabs(*raw) > 1e10) {
                    note_malformed(sensor_ + ".power_mw", std::to_string(*raw));
                } else {
                    double mag = std::fabs(*raw) / 1000.0;
                    p = charging ? -mag : mag;
                }
            }
            out[i_power_] = p;
        }
        if (i_charge_ >= 0) {
            out[i_charge_] = read_number_file(dir_ + "/charge_counter",
                                              sensor_ + ".charge_counter_uah", 1, 0, 1e9);
        }
        if (i_temp_ >= 0) {
            out[i_temp_] =
                read_number_file(dir_ + "/temp", sensor_ + ".temp_mc", 100, -60'000, 250'000);
        }
        if (i_capacity_ >= 0) {
            out[i_capacity_] =
                read_number_file(dir_ + "/capacity", sensor_ + ".capacity_pct", 1, 0, 100);
        }
        if (i_charge_full_ >= 0) {
            // 0 is a gauge that has not learned it yet: not a charge.
            out[i_charge_full_] =
                read_number_file(dir_ + "/charge_full", sensor_ + ".charge_full_uah", 1, 1, 1e9);
        }
        if (i_charge_now_ >= 0) {
            out[i_charge_now_] =
                read_number_file(dir_ + "/charge_now", sensor_ + ".charge_now_uah", 1, 0, 1e9);
        }
        // µWh -> µJ; 1e9 µWh (1 MWh) is beyond any battery, as 1e9 µAh is for the charges.
        if (i_energy_now_ >= 0) {
            out[i_energy_now_] = read_number_file(dir_ + "/energy_now", sensor_ + ".energy_now_uj",
                                                  3600, 0, 3600 * 1e9);
        }
        if (i_energy_full_ >= 0) {
            out[i_energy_full_] = read_number_file(
                dir_ + "/energy_full", sensor_ + ".energy_full_uj", 3600, 3600, 3600 * 1e9);
        }
    }

  private:
    std::optional<double> read_raw(const std::string& field, const std::string& file) {
        auto r = read_file(dir_ + "/" + file);
        if (!r.text) {
            note_read_error(sensor_ + "." + field, r.err);
            return std::nullopt;
        }
        auto v = sysfs::parse_number(*r.text);
        if (!v)
            note_malformed(sensor_ + "." + field, *r.text);
        return v;
    }

    CurrentUnit unit_for(double raw) {
        if (cal_.unit)
            return *cal_.unit;
        if (std::fabs(raw) >= kMicroampThreshold) {
            unit_ = CurrentUnit::microamp;
            unit_final_ = true;
        } else if (!unit_final_ && raw != 0) {
            unit_ = CurrentUnit::milliamp;
        }
        return unit_.value_or(CurrentUnit::microamp);
    }

    double signed_discharge(double raw, double mag, bool discharging, bool charging) {
        if (mag == 0)
            return 0.0;
        if (cal_.sign) {
            bool neg = *cal_.sign == CurrentSign::negative_discharge;
            return (neg ? raw < 0 : raw > 0) ? mag : -mag;
        }
        if (discharging) {
            if (raw != 0) {
                learned_sign_ =
                    raw < 0 ? CurrentSign::negative_discharge : CurrentSign::positive_discharge;
            }
            return mag;
        }
        if (charging)
            return -mag;
        auto sign = learned_sign_.value_or(CurrentSign::negative_discharge);
        bool is_discharge = sign == CurrentSign::negative_discharge ? raw < 0 : raw > 0;
        return is_discharge ? mag : -mag;
    }

    std::string dir_, supply_, sensor_;
    BatteryCalibration cal_;
    bool has_current_ = false, has_voltage_ = false, has_power_ = false, has_status_ = false,
         has_charge_ = false, has_temp_ = false, has_capacity_ = false, has_charge_full_ = false,
         has_charge_now_ = false, has_energy_now_ = false, has_energy_full_ = false;
    int i_power_ = -1, i_voltage_ = -1, i_current_ = -1, i_charge_ = -1, i_temp_ = -1,
        i_capacity_ = -1, i_discharging_ = -1, i_charge_full_ = -1, i_charge_now_ = -1,
        i_energy_now_ = -1, i_energy_full_ = -1;
    std::vector<Metric> metrics_;
    std::optional<CurrentUnit> unit_;
    bool unit_final_ = false;
    std::optional<CurrentSign> learned_sign_;
};

}  // namespace

void discover_battery(const std::string& root, const BatteryCalibration& cal, Discovery& d) {
    const std::string dir = root + "/class/power_supply";
    SourceClassStatus st{"battery", 0, ""};
    for (const auto& ps : sysfs::list_dir(dir)) {
        std::string p = dir + "/" + ps;
        auto type = sysfs::read_trimmed(p + "/type");
        if (!type || *type != "Battery")
            continue;
        // Peripherals (a wireless mouse, a stylus) are batteries of scope "Device".
        if (auto scope = sysfs::read_trimmed(p + "/scope"); scope && *scope == "Device")
            continue;
        auto src = std::make_unique<BatterySource>(p, sysfs::sanitize(ps), cal);
        if (!src->usable())
            continue;
        d.sources.push_back(std::move(src));
        ++st.found;
    }
    if (st.found == 0)
        st.note = "no power_supply of type Battery under " + dir;
    d.classes.push_back(st);
}

}  // namespace sb
