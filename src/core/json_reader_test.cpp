#include "core/json_reader.hpp"

#include <gtest/gtest.h>

#include <functional>

#include "core/error.hpp"

namespace sb {
namespace {

using nlohmann::json;

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input);
        return e.what();
    }
    ADD_FAILURE() << "no sb::Error";
    return "";
}

TEST(JsonAt, ReadsPresentValuesAndAbsentOnes) {
    const json d = json::parse(
        R"({"a": {"s": "x", "n": 2.5, "i": 3, "b": true, "v": [1, null, 2], "z": null}})");
    const std::string src = "d.json";
    const JsonAt at(d, src);
    EXPECT_EQ(at["a"]["s"].string(), "x");
    EXPECT_EQ(at["a"]["n"].number(), 2.5);
    EXPECT_EQ(at["a"]["i"].integer(), 3);
    EXPECT_EQ(at["a"]["b"].boolean(), true);
    EXPECT_EQ(at["a"]["v"].numbers(), (std::vector<double>{1, 2}));
    // Missing and null are absent, at any depth.
    EXPECT_TRUE(at["a"]["z"].absent());
    EXPECT_FALSE(at["a"].has("z"));
    EXPECT_TRUE(at["a"].has("s"));
    EXPECT_EQ(at["a"]["missing"]["deeper"].string_or("d"), "d");
    EXPECT_TRUE(at["a"]["z"].elements().empty());
    EXPECT_EQ(at["a"]["z"].integer_or(7), 7);
    EXPECT_EQ(at["a"]["v"].elements()[2].path(), ".a.v[2]");
    EXPECT_EQ(at.path(), ".");
}

TEST(JsonAt, WrongTypesNameTheFileAndThePath) {
    const json d =
        json::parse(R"({"tests": [{"config": {"devices": 5, "n": 1.5}}, null], "x": 1})");
    const std::string src = "r.json";
    const JsonAt at(d, src);
    EXPECT_EQ(error_of([&] { at["tests"].elements()[0]["config"]["devices"].string(); }),
              "r.json: .tests[0].config.devices is a number, expected a string");
    EXPECT_EQ(error_of([&] { at["tests"].elements()[0]["config"]["n"].integer(); }),
              "r.json: .tests[0].config.n is a number, expected an integer");
    EXPECT_EQ(error_of([&] { at["tests"].objects(); }),
              "r.json: .tests[1] is null, expected an object");
    EXPECT_EQ(error_of([&] { at["x"]["y"]; }), "r.json: .x is a number, expected an object");
    EXPECT_EQ(error_of([&] { at["x"].elements(); }), "r.json: .x is a number, expected an array");
    EXPECT_EQ(error_of([&] { at["tests"].object(); }),
              "r.json: .tests is an array, expected an object");
    const json arr = json::array({1});
    EXPECT_EQ(error_of([&] { JsonAt(arr, src)["command"]; }),
              "r.json: . is an array, expected an object");
}

}  // namespace
}  // namespace sb
