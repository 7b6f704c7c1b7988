#include "telemetry/sysfs_util.hpp"

#include <gtest/gtest.h>

#include "telemetry/test_util.hpp"

namespace sb::sysfs {
namespace {

TEST(ParseNumber, AcceptsDecimalNumbersWithWhitespace) {
    EXPECT_EQ(parse_number("123\n"), 123.0);
    EXPECT_EQ(parse_number(" -5 "), -5.0);
    EXPECT_EQ(parse_number("+7"), 7.0);
    EXPECT_EQ(parse_number("1e3"), 1000.0);
    EXPECT_EQ(parse_number("262143328850"), 262143328850.0);
    EXPECT_DOUBLE_EQ(*parse_number("0.5"), 0.5);
}

TEST(ParseNumber, RejectsPlaceholdersAndGarbage) {
    for (const char* s : {"N/A", "", "   ", "12abc", "nan", "inf", "-inf", "0x10", "1 2", "--1"}) {
        EXPECT_FALSE(parse_number(s).has_value()) << '"' << s << '"';
    }
}

TEST(ParseLeadingNumber, ReadsValueBeforeUnit) {
    EXPECT_EQ(parse_leading_number("37 %\n"), 37.0);
    EXPECT_FALSE(parse_leading_number("% 37").has_value());
}

TEST(Sanitize, KeepsNamesFreeOfDots) {
    EXPECT_EQ(sanitize("3d00000.qcom,kgsl-3d0"), "3d00000_qcom_kgsl-3d0");
    EXPECT_EQ(sanitize("Package id 0"), "Package_id_0");
    EXPECT_EQ(sanitize(""), "_");
}

TEST(ListDir, NaturalOrderAndPrefix) {
    sb::testing::FixtureCopy fx("x86-laptop-rapl");
    for (int i : {10, 2, 1}) {
        std::filesystem::create_directories(fx.path("class/test/zone" + std::to_string(i)));
    }
    std::filesystem::create_directories(fx.path("class/test/other"));
    auto v = list_dir(fx.path("class/test"), "zone");
    ASSERT_EQ(v.size(), 3u);
    EXPECT_EQ(v[0], "zone1");
    EXPECT_EQ(v[1], "zone2");
    EXPECT_EQ(v[2], "zone10");
    EXPECT_TRUE(list_dir(fx.path("class/absent")).empty());
}

TEST(ReadText, MissingFileGivesErrno) {
    auto r = read_text("/nonexistent/sb/file");
    EXPECT_FALSE(r.text.has_value());
    EXPECT_EQ(r.err, ENOENT);
}

TEST(FileReader, ReopensFilesOutsideSysfs) {
    sb::testing::FixtureCopy fx("rpi5");
    const std::string f = fx.path("class/thermal/thermal_zone0/temp");
    FileReader r(f);
    EXPECT_EQ(r.read().text, "52650\n");
    EXPECT_FALSE(r.kept_open());  // a fixture writer may replace the file
    sb::testing::write_atomic(f, "60000\n");
    EXPECT_EQ(r.read().text, "60000\n");
    std::filesystem::remove(f);
    EXPECT_EQ(r.read().err, ENOENT);
}

TEST(FileReader, KeepsSysfsFilesOpenAndRereadsThem) {
    const std::string f = "/sys/devices/system/cpu/online";
    if (!exists(f))
        GTEST_SKIP() << "no " << f;
    FileReader r(f);
    auto a = r.read();
    ASSERT_TRUE(a.text);
    EXPECT_TRUE(r.kept_open());
    for (int i = 0; i < 3; ++i)
        EXPECT_EQ(r.read().text, a.text);  // pread from offset 0
    EXPECT_EQ(read_text(f).text, a.text);
}

}  // namespace
}  // namespace sb::sysfs
