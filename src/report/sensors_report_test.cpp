// The Markdown of `stagebench sensors`: exact for a report built here, and what a real run over
// the fixture trees prints.
#include "report/sensors_report.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "telemetry/test_util.hpp"

namespace sb {
namespace {

using sb::testing::FixtureCopy;

TEST(SensorsReport, MarkdownOfEverySection) {
    SensorsReport r;
    r.duration_ns = 2'000'000'000;
    r.hz = 20;
    TelemetrySource s;
    s.name = "battery|BAT0";
    s.source_class = "battery";
    s.metrics = {"battery.BAT0.power_mw", "battery.BAT0.temp_mc"};
    s.properties = {{"path", "/sys/class/power_supply/BAT0"}};
    r.sources.push_back(s);
    r.classes.push_back({"battery", 1, ""});
    r.classes.push_back({"nvml", 0, "no NVIDIA driver library"});
    r.current.push_back({"battery.BAT0.power_mw", "mW", 12500});
    r.current.push_back({"rpi.throttled_flags", "bits", 0x50005});
    r.window.push_back(SensorWindow{
        "battery.BAT0", "power_integral", 25.0, 12500.04, 12600, 30500, 31000, {}, {}, {}});
    r.warnings.push_back({"on_battery", "running on battery", "plug in"});
    std::ostringstream out;
    write_sensors_markdown(out, r);
    EXPECT_EQ(out.str(),
              "# Sensors\n\n"
              "| source | class | metrics | properties |\n| --- | --- | ---: | --- |\n"
              "| battery\\|BAT0 | battery | 2 | path: /sys/class/power_supply/BAT0 |\n\n"
              "Absent:\n\n- nvml: no NVIDIA driver library\n\n"
              "## Current values\n\n| metric | value | unit |\n| --- | ---: | --- |\n"
              "| battery.BAT0.power_mw | 12500.0 | mW |\n"
              "| rpi.throttled_flags | 327685 | bits |\n\n"
              "## Over 2.000 s at 20 Hz\n\n"
              "| sensor | energy (J) | mean power (mW) | max power (mW) | temp min (°C) | "
              "temp max (°C) | freq min (MHz) | freq max (MHz) | freq mean (MHz) |\n"
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
              "| battery.BAT0 | 25.0000 | 12500.0 | 12600.0 | 30.5 | 31.0 | - | - | - |\n\n"
              "Energy from counters read at the window's ends where a sensor has one, else "
              "integrated power. Nested RAPL domains overlap: do not add them.\n\n"
              "## Warnings\n\n- **on_battery**: running on battery — plug in\n");
}

TEST(SensorsReport, ARunWithoutAWindowHasNoWindowTable) {
    FixtureCopy fx("rpi5");
    SensorsOptions o;
    o.discover = discover_options_for_root(fx.root());
    o.duration_ns = 0;
    std::ostringstream log, md;
    write_sensors_markdown(md, run_sensors(o, log));
    EXPECT_NE(md.str().find("| rpi.throttled_flags | 327685 | bits |"), std::string::npos)
        << md.str();
    EXPECT_EQ(md.str().find("## Over"), std::string::npos) << md.str();
}

TEST(SensorsReport, AnEmptyTreeSaysNothingWasFound) {
    FixtureCopy fx("rpi5");
    std::filesystem::remove_all(fx.root());
    std::filesystem::create_directories(fx.root());
    SensorsOptions o;
    o.discover = discover_options_for_root(fx.root());
    o.discover.try_vcgencmd = false;
    o.duration_ns = 100'000'000;
    std::ostringstream log, md;
    write_sensors_markdown(md, run_sensors(o, log));
    EXPECT_NE(md.str().find("No telemetry sources found"), std::string::npos) << md.str();
}

}  // namespace
}  // namespace sb
