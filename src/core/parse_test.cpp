// The one parser of numbers, lists and durations: decimal only, whatever strtol, strtod or
// CLI11 would also read.
#include "core/parse.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace sb {
namespace {

TEST(Parse, DecimalIntegersOnly) {
    EXPECT_EQ(parse_decimal_int("16"), 16);
    EXPECT_EQ(parse_decimal_int("-1"), -1);
    EXPECT_EQ(parse_decimal_int("+7"), 7);
    EXPECT_EQ(parse_decimal_int("010"), 10);  // not octal 8
    EXPECT_EQ(parse_decimal_int("9223372036854775807"), std::numeric_limits<int64_t>::max());
    EXPECT_EQ(parse_decimal_int("-9223372036854775808"), std::numeric_limits<int64_t>::min());
    for (const char* bad : {"", "0x10", "0X10", "1e3", "1.0", " 1", "1 ", "+", "-", "+-1", "--1",
                            "9223372036854775808", "nan", "inf", "1,2", "0b1", "١"})
        EXPECT_EQ(parse_decimal_int(bad), std::nullopt) << bad;
}

TEST(Parse, DecimalUnsignedIntegersOnly) {
    EXPECT_EQ(parse_decimal_uint("0"), 0u);
    EXPECT_EQ(parse_decimal_uint("18446744073709551615"), std::numeric_limits<uint64_t>::max());
    for (const char* bad :
         {"", "-1", "+1", "18446744073709551616", "10000000000000000000000", "0x1", "1e22", " 5"})
        EXPECT_EQ(parse_decimal_uint(bad), std::nullopt) << bad;
}

TEST(Parse, FiniteDecimalNumbersOnly) {
    EXPECT_EQ(parse_decimal("2.5"), 2.5);
    EXPECT_EQ(parse_decimal("-.5"), -0.5);
    EXPECT_EQ(parse_decimal("+3"), 3.0);
    EXPECT_EQ(parse_decimal("1e-3"), 1e-3);
    EXPECT_EQ(parse_decimal("5."), 5.0);
    for (const char* bad : {"", "nan", "NaN", "inf", "-inf", "infinity", "0x10", "0x1p4", "1e999",
                            "-1e999", "e5", ".", "1e", "1.2.3", "2%", " 1", "+-1", "1,5"})
        EXPECT_EQ(parse_decimal(bad), std::nullopt) << bad;
}

TEST(Parse, ListsKeepTheirEmptyItems) {
    EXPECT_EQ(split_list("CPU,,BLAS"), (std::vector<std::string>{"CPU", "", "BLAS"}));
    EXPECT_EQ(split_list(""), (std::vector<std::string>{""}));
    EXPECT_EQ(split_list("a+b", '+'), (std::vector<std::string>{"a", "b"}));
}

TEST(Parse, Durations) {
    EXPECT_EQ(parse_duration("5s"), 5'000'000'000);
    EXPECT_EQ(parse_duration("500ms"), 500'000'000);
    EXPECT_EQ(parse_duration("1m"), 60'000'000'000);
    EXPECT_EQ(parse_duration("0s"), 0);  // a zero duration is a duration; deadlines refuse it
    for (const char* bad : {"", "-1s", "nan", "inf", "0x10", "5 parsecs", "1e999"})
        EXPECT_EQ(parse_duration(bad), std::nullopt) << bad;
}

}  // namespace
}  // namespace sb
