// The exit rule of commands that measure tests, and what a failed test records.
#include "core/result.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

#include "core/error.hpp"

namespace sb {
namespace {

TestResult failed(const std::exception& e) {
    TestResult r;
    record_failure(r, e);
    return r;
}

TEST(ExitRule, BadInputOutranksAFailureWhichOutranksSuccess) {
    TestResult ok;
    EXPECT_EQ(exit_code_for({}, false), 0);
    EXPECT_EQ(exit_code_for({ok, ok}, false), 0);
    EXPECT_EQ(exit_code_for({ok}, true), 1);
    const TestResult runtime = failed(runtime_error("llama_decode failed"));
    const TestResult other = failed(std::runtime_error("bad_alloc"));
    const TestResult input = failed(input_error("m.gguf: not GGUF"));
    const TestResult usage = failed(usage_error("unknown KV cache type"));
    EXPECT_EQ(exit_code_for({ok, runtime}, false), 1);
    EXPECT_EQ(exit_code_for({other}, false), 1);
    EXPECT_EQ(exit_code_for({ok, input, ok}, false), 2);
    EXPECT_EQ(exit_code_for({runtime, usage}, true), 2);
    TestResult interrupted;
    interrupted.status = Status::interrupted;
    EXPECT_EQ(exit_code_for({ok, interrupted}, false), 1);
}

TEST(ExitRule, AFailureRecordsItsKind) {
    const TestResult r = failed(input_error("m.gguf: no such file"));
    EXPECT_EQ(r.status, Status::failed);
    EXPECT_EQ(r.stopped_by, StopReason::error);
    EXPECT_EQ(to_json(r)["status"], "failed");
    EXPECT_EQ(to_json(r)["stopped_by"], "error");
    EXPECT_EQ(r.error, "m.gguf: no such file");
    EXPECT_EQ(r.error_kind, "input");
    EXPECT_EQ(to_json(r)["error_kind"], "input");
    EXPECT_EQ(failed(std::logic_error("x")).error_kind, "runtime");
    EXPECT_TRUE(to_json(TestResult{})["error_kind"].is_null());
}

}  // namespace
}  // namespace sb
