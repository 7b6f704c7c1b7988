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
    EXPECT_EQ(r.error_kind, ErrorKind::input);
    EXPECT_EQ(to_json(r)["error_kind"], "input");
    EXPECT_EQ(failed(std::logic_error("x")).error_kind, ErrorKind::runtime);
    EXPECT_TRUE(to_json(TestResult{})["error_kind"].is_null());
}

TEST(ExitRule, StatusAndStopReasonAreRecordedByOneFunctionEach) {
    TestResult r;
    record_failure(r, "llama.cpp stopped: RPC server gone", std::nullopt);
    EXPECT_EQ(r.status, Status::failed);
    EXPECT_EQ(r.stopped_by, StopReason::error);
    EXPECT_EQ(r.error, "llama.cpp stopped: RPC server gone");
    EXPECT_FALSE(r.error_kind);  // unknown kind: null, not "runtime"
    record_failure(r, "bad", ErrorKind::usage);
    EXPECT_EQ(r.error_kind, ErrorKind::usage);
    EXPECT_EQ(exit_code_for({r}, false), 2);

    TestResult i;
    record_interrupted(i);
    EXPECT_EQ(i.status, Status::interrupted);
    EXPECT_EQ(i.stopped_by, StopReason::interrupt);
    EXPECT_FALSE(i.error);
    record_interrupted(i, "transfer cut off");
    EXPECT_EQ(i.error, "transfer cut off");
    EXPECT_EQ(exit_code_for({i}, false), 1);

    TestResult s;
    record_stopped_at_target_ci(s);
    EXPECT_EQ(s.stopped_by, StopReason::target_ci);
    record_stopped_at_max_reps(s);
    EXPECT_EQ(s.stopped_by, StopReason::max_reps);
    record_stopped_at_reps(s);
    EXPECT_EQ(s.stopped_by, StopReason::reps);
    EXPECT_EQ(s.status, Status::ok);
}

}  // namespace
}  // namespace sb
