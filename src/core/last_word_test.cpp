#include "core/last_word.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

namespace sb {
namespace {

TEST(LastWord, InnermostSpeaksFirstAndGivesTheLine) {
    std::vector<std::string> order;
    LastWordScope outer([&](const std::string& m) -> std::optional<std::string> {
        order.push_back("outer:" + m);
        return "outer line";
    });
    std::optional<std::string> line;
    {
        LastWordScope inner([&](const std::string& m) -> std::optional<std::string> {
            order.push_back("inner:" + m);
            return "inner line";
        });
        line = say_last_words("x");
    }
    EXPECT_EQ(line, "inner line");
    EXPECT_EQ(order, (std::vector<std::string>{"inner:x", "outer:x"}));
    // The inner scope is gone: only the outer one speaks now.
    order.clear();
    EXPECT_EQ(say_last_words("y"), "outer line");
    EXPECT_EQ(order, (std::vector<std::string>{"outer:y"}));
}

TEST(LastWord, AThrowingWordDoesNotSilenceTheOthers) {
    bool outer_spoke = false;
    LastWordScope outer([&](const std::string&) -> std::optional<std::string> {
        outer_spoke = true;
        return std::nullopt;
    });
    LastWordScope inner(
        [&](const std::string&) -> std::optional<std::string> { throw std::runtime_error("x"); });
    EXPECT_EQ(say_last_words("m"), std::nullopt);
    EXPECT_TRUE(outer_spoke);
}

TEST(LastWord, AStopInsideALastWordDoesNotRecurse) {
    int calls = 0;
    std::optional<std::string> nested = "not called";
    LastWordScope w([&](const std::string&) -> std::optional<std::string> {
        ++calls;
        nested = say_last_words("again");
        return "first";
    });
    EXPECT_EQ(say_last_words("m"), "first");
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(nested, std::nullopt);
}

// From the former core/last_words: every registered word speaks, newest first, with the
// message; a scope that has ended does not; a word that throws does not stop the older ones.
TEST(LastWord, AllRegisteredSpeakNewestFirstAndOnlyWhileRegistered) {
    std::vector<std::string> said;
    auto word = [&](std::string name) {
        return [&said, name](const std::string& m) -> std::optional<std::string> {
            said.push_back(name + " " + m);
            return std::nullopt;
        };
    };
    LastWordScope oldest(word("oldest"));
    {
        LastWordScope outer(word("outer"));
        LastWordScope inner([&](const std::string&) -> std::optional<std::string> {
            said.push_back("inner");
            throw std::runtime_error("ignored");
        });
        { LastWordScope ended(word("ended")); }
        EXPECT_EQ(say_last_words("abort"), std::nullopt);
    }
    EXPECT_EQ(said, (std::vector<std::string>{"inner", "outer abort", "oldest abort"}));
}

TEST(LastWord, StripsGgmlSourceLocation) {
    EXPECT_EQ(strip_source_location("/src/ggml-rpc.cpp:566: Remote RPC server crashed"),
              "Remote RPC server crashed");
    EXPECT_EQ(strip_source_location("no location: here"), "no location: here");
    EXPECT_EQ(strip_source_location("plain"), "plain");
}

}  // namespace
}  // namespace sb
