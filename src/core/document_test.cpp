// The one reading path's first step: text that is not a document is one sb::Error(input) line,
// however it is built (nested 100,000 deep included), before anything walks it.
#include "core/document.hpp"

#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "core/result.hpp"

namespace sb {
namespace {

std::string error_of(const std::string& text) {
    try {
        const nlohmann::json j = parse_document_text(text, "'d.json'");
        check_document(j, "'d.json'");
        from_json<ResultDocument>(j, "'d.json'");
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input) << e.what();
        return e.what();
    }
    return "";
}

// {"schema": "stagebench.result", "x": [[[...1...]]]}: an unknown member, depth levels down.
std::string nested(int depth, char open = '[', char close = ']') {
    return R"({"schema": "stagebench.result", "tests": [], "x": )" + std::string(depth, open) +
           (open == '[' ? "1" : R"("k": 1)") + std::string(depth, close) + "}";
}

TEST(Document, NestingIsBoundedBeforeParsing) {
    // The root object is depth 1: 63 more levels are the most a document may hold.
    EXPECT_EQ(error_of(nested(kMaxDocumentDepth - 1)), "");
    const std::string deep = error_of(nested(kMaxDocumentDepth));
    EXPECT_NE(deep.find("'d.json' nests arrays and objects more than 64 deep"), std::string::npos)
        << deep;
    EXPECT_EQ(deep.find('\n'), std::string::npos);
    // The reproducer of the crash: 100,000 arrays (every reader used to overflow its stack).
    EXPECT_NE(error_of(nested(100000)).find("more than 64 deep"), std::string::npos);
    // Objects nest as arrays do; brackets inside strings do not count.
    std::string objects = "{";
    for (int i = 0; i < 200; ++i)
        objects += R"("k": {)";
    EXPECT_NE(error_of(objects).find("more than 64 deep"), std::string::npos);
    const std::string in_strings = R"({"schema": "stagebench.result", "tests": [], "x": ")" +
                                   std::string(1000, '[') + "\\\"" + std::string(1000, '{') + "\"}";
    EXPECT_EQ(error_of(in_strings), "");
}

TEST(Document, AValueBelowZeroIsRefusedNamingTheField) {
    const std::string doc = R"({"schema": "stagebench.result", "tests": [{"config": {"n_prompt": 8},
        "prefill": {"n_tokens": 8, "duration_ns": [100, -5], "tokens_per_s": [1.5, 2.5]}}]})";
    EXPECT_EQ(error_of(doc),
              "'d.json': tests[0].prefill.duration_ns[1]: expected at least 0, "
              "found -5");
}

}  // namespace
}  // namespace sb
