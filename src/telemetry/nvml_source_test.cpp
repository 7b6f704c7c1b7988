// The NVML reader against tests/fixtures/nvml/nvml_standin.c, a stand-in for NVIDIA's
// libnvidia-ml.so.1 with NVML's signatures that answers from a file (no NVIDIA GPU or driver
// here): every field in its canonical unit, the properties read once, a field the GPU does not
// support left out, an implausible answer refused with a warning, and the reasons a library that
// loads still gives no source.
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "telemetry/discover.hpp"

namespace sb {
namespace {

const std::string kLib = std::string(SB_NVML_STANDIN_DIR) + "/libnvidia-ml.so.1";

// The stand-in's answers for the scope of one test ($SB_NVML_STANDIN, read by nvmlInit_v2).
class StandIn {
  public:
    explicit StandIn(const std::string& config)
        : path_(std::filesystem::temp_directory_path() /
                ("sb_nvml_" + std::to_string(::getpid()) + ".conf")) {
        std::ofstream(path_) << config;
        ::setenv("SB_NVML_STANDIN", path_.c_str(), 1);
    }
    ~StandIn() {
        ::unsetenv("SB_NVML_STANDIN");
        std::filesystem::remove(path_);
    }

  private:
    std::filesystem::path path_;
};

const char* kH100 =
    "name=NVIDIA H100 80GB HBM3\ndriver=580.65.06\npower_limit_mw=700000\npower_mw=50000\n"
    "energy_base_mj=1000000\ntemp_c=67\nsm_mhz=1980\nmem_mhz=2619\nutil_gpu=93\nreasons=4\n"
    "mem_total_mib=81559\nmem_used_mib=4721\n";

double mono_s() {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

TEST(Nvml, EveryFieldInItsUnitAndThePropertiesReadOnce) {
    StandIn s(kH100);
    Discovery d;
    discover_nvml(kLib, d);
    ASSERT_EQ(d.classes.size(), 1u);
    EXPECT_EQ(d.classes[0].source_class, "nvml");
    EXPECT_EQ(d.classes[0].found, 1) << d.classes[0].note;
    ASSERT_EQ(d.sources.size(), 1u);
    Source& src = *d.sources[0];
    EXPECT_EQ(src.name(), "nvml.gpu0");
    EXPECT_EQ(src.source_class(), "nvml");
    const auto m = src.describe();
    std::vector<std::string> names;
    for (const auto& x : m)
        names.push_back(x.name);
    EXPECT_EQ(names, (std::vector<std::string>{
                         "nvml.gpu0.energy_uj", "nvml.gpu0.power_mw", "nvml.gpu0.temp_mc",
                         "nvml.gpu0.sm_freq_khz", "nvml.gpu0.mem_freq_khz", "nvml.gpu0.busy_pct",
                         "nvml.gpu0.mem_used_mb", "nvml.gpu0.throttle_flags"}));
    EXPECT_EQ(m[0].kind, MetricKind::counter);
    EXPECT_EQ(m[6].quantity, Quantity::memory);
    EXPECT_EQ(m[0].refresh_ns, 100'000'000);
    EXPECT_EQ(m[1].kind, MetricKind::gauge);

    std::vector<std::optional<double>> a(m.size()), b(m.size());
    const double t0 = mono_s();
    src.read(0, a);
    const double t1 = mono_s();
    ::usleep(50'000);
    const double t2 = mono_s();
    src.read(0, b);
    const double t3 = mono_s();
    EXPECT_EQ(a[1], 50'000.0);             // mW
    EXPECT_EQ(a[2], 67'000.0);             // m°C
    EXPECT_EQ(a[3], 1'980'000.0);          // kHz
    EXPECT_EQ(a[4], 2'619'000.0);          // kHz
    EXPECT_EQ(a[5], 93.0);                 // %
    EXPECT_DOUBLE_EQ(*a[6], 4950.327296);  // MB: 4721 MiB in bytes / 10^6
    EXPECT_EQ(a[7], 4.0);                  // the reason bits as NVML gives them
    ASSERT_TRUE(a[0] && b[0]);
    EXPECT_GE(*a[0], 1e9);  // 1e6 mJ at nvmlInit_v2, in µJ
    // The counter grows at 50 W: between the two reads, bracketed by this clock.
    const double joules = (*b[0] - *a[0]) * 1e-6;
    EXPECT_GE(joules, 50 * (t2 - t1) - 1e-3);
    EXPECT_LE(joules, 50 * (t3 - t0) + 1e-3);

    // At a stage boundary: the energy counter and the power only.
    std::vector<std::optional<double>> c(m.size());
    src.read_boundary(0, c);
    EXPECT_TRUE(c[0].has_value());
    EXPECT_EQ(c[1], 50'000.0);
    for (std::size_t i = 2; i < c.size(); ++i)
        EXPECT_FALSE(c[i].has_value()) << names[i];

    const auto p = src.properties();
    EXPECT_EQ(p.at("model"), "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(p.at("power_limit_mw"), "700000");
    EXPECT_EQ(p.at("driver"), "580.65.06");
    EXPECT_EQ(p.at("memory_total_mb"), "85520.8");  // 81559 MiB
    EXPECT_TRUE(src.warnings().empty());
}

TEST(Nvml, UnsupportedFieldsAreLeftOutAndImplausibleAnswersRefused) {
    StandIn s(std::string(kH100) +
              "unsupported=nvmlDeviceGetTemperature\nunsupported=nvmlDeviceGetUtilizationRates\n"
              "unsupported=nvmlDeviceGetEnforcedPowerLimit\nsm_mhz=4294967295\ngpus=2\n"
              "mem_used_mib=90000\n");
    Discovery d;
    discover_nvml(kLib, d);
    ASSERT_EQ(d.sources.size(), 2u);
    EXPECT_EQ(d.sources[1]->name(), "nvml.gpu1");
    Source& src = *d.sources[0];
    const auto m = src.describe();
    std::vector<std::string> names;
    for (const auto& x : m)
        names.push_back(x.name);
    EXPECT_EQ(names,
              (std::vector<std::string>{"nvml.gpu0.energy_uj", "nvml.gpu0.power_mw",
                                        "nvml.gpu0.sm_freq_khz", "nvml.gpu0.mem_freq_khz",
                                        "nvml.gpu0.mem_used_mb", "nvml.gpu0.throttle_flags"}));
    std::vector<std::optional<double>> v(m.size());
    src.read(0, v);
    EXPECT_FALSE(v[2].has_value());  // 4294967295 MHz: not a clock
    EXPECT_EQ(v[3], 2'619'000.0);
    EXPECT_FALSE(v[4].has_value());  // 90000 MiB used of 81559: not the GPU's memory
    const auto w = src.warnings();
    ASSERT_EQ(w.size(), 2u);
    const std::string both = w[0].message + "\n" + w[1].message;
    EXPECT_NE(both.find("nvml.gpu0.sm_freq_khz"), std::string::npos) << both;
    EXPECT_NE(both.find("nvml.gpu0.mem_used_mb"), std::string::npos) << both;
    EXPECT_EQ(src.properties().count("power_limit_mw"), 0u);
}

TEST(Nvml, ALibraryThatLoadsButGivesNoGpuSaysWhy) {
    {
        StandIn s("init_error=999\n");
        Discovery d;
        discover_nvml(kLib, d);
        EXPECT_TRUE(d.sources.empty());
        ASSERT_EQ(d.classes.size(), 1u);
        EXPECT_EQ(d.classes[0].note, "nvmlInit_v2 failed (NVML error 999)");
    }
    {
        StandIn s("gpus=0\n");
        Discovery d;
        discover_nvml(kLib, d);
        EXPECT_TRUE(d.sources.empty());
        EXPECT_EQ(d.classes.at(0).note, "NVML reports no GPU");
    }
}

}  // namespace
}  // namespace sb
