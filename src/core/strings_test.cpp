#include "core/strings.hpp"

#include <gtest/gtest.h>

namespace sb {
namespace {

TEST(Strings, Ordinals) {
    EXPECT_EQ(ordinal(1), "1st");
    EXPECT_EQ(ordinal(2), "2nd");
    EXPECT_EQ(ordinal(3), "3rd");
    EXPECT_EQ(ordinal(4), "4th");
    EXPECT_EQ(ordinal(8), "8th");
    EXPECT_EQ(ordinal(11), "11th");
    EXPECT_EQ(ordinal(12), "12th");
    EXPECT_EQ(ordinal(13), "13th");
    EXPECT_EQ(ordinal(21), "21st");
    EXPECT_EQ(ordinal(22), "22nd");
    EXPECT_EQ(ordinal(111), "111th");
    EXPECT_EQ(ordinal(102), "102nd");
}

TEST(Strings, Trim) {
    EXPECT_EQ(trim("  a b \n"), "a b");
    EXPECT_EQ(trimmed(""), "");
}

}  // namespace
}  // namespace sb
