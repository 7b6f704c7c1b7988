#include "core/subprocess.hpp"

#include "core/interrupt.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "temp_dir.hpp"

namespace sb {
namespace {

TEST(Process, CapturesOutputAndExitCode) {
    ProcessResult r = run_process({"sh", "-c", "echo out; echo err >&2; exit 3"});
    EXPECT_EQ(r.exit_code, 3);
    EXPECT_EQ(r.out, "out\n");
    EXPECT_EQ(r.err, "err\n");
    EXPECT_EQ(r.last_line(), "err");
    EXPECT_FALSE(r.ok());
}

TEST(Process, MissingProgramIsNotStarted) {
    ProcessResult r = run_process({"/nonexistent/program"});
    EXPECT_FALSE(r.started);
    EXPECT_NE(r.last_line().find("cannot start /nonexistent/program"), std::string::npos);
}

// The deadline ends the whole process group, grandchildren included.
TEST(Process, DeadlineKillsTheGroup) {
    ProcessOptions o;
    o.timeout_s = 0.3;
    const auto t0 = std::chrono::steady_clock::now();
    ProcessResult r = run_process({"sh", "-c", "sleep 30 & sleep 30; wait"}, o);
    EXPECT_TRUE(r.timed_out);
    EXPECT_FALSE(r.ok());
    // Bounded by the deadline plus the SIGTERM grace (2 s) and the pipes' give-up (3 s), far
    // below the 30 s the command asked for.
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
}

// A program that closes its output and keeps running is not waited for past the deadline
// (before, the wait for its exit had none: `sensors` hung on such a vcgencmd for ever).
TEST(Process, ClosedOutputAndStillRunningEndsAtTheDeadline) {
    ProcessOptions o;
    o.timeout_s = 0.5;
    o.kill_grace_s = 0;
    const auto t0 = std::chrono::steady_clock::now();
    ProcessResult r = run_process({"sh", "-c", "echo partial; exec >&- 2>&-; sleep 60"}, o);
    EXPECT_TRUE(r.timed_out);
    EXPECT_EQ(r.signal, SIGKILL);
    EXPECT_EQ(r.out, "partial\n");
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

// A program that floods its output while ignoring SIGPIPE: what is kept is capped, the rest
// is read and dropped, and the deadline ends it.
TEST(Process, AFloodIgnoringSigpipeIsCappedAndEndsAtTheDeadline) {
    ProcessOptions o;
    o.timeout_s = 0.5;
    o.kill_grace_s = 0;
    o.max_capture = 1000;
    const auto t0 = std::chrono::steady_clock::now();
    ProcessResult r = run_process({"sh", "-c", "trap '' PIPE; yes flood"}, o);
    EXPECT_TRUE(r.timed_out);
    EXPECT_EQ(r.out.size(), 1000u);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

// SIGTERM ignored: SIGKILL after the grace; the whole group, so a grandchild that ignores it
// too is gone as well.
TEST(Process, TermIgnoredGetsKillAfterTheGrace) {
    ProcessOptions o;
    o.timeout_s = 0.3;
    o.kill_grace_s = 0.3;
    const auto t0 = std::chrono::steady_clock::now();
    ProcessResult r = run_process({"sh", "-c", "trap '' TERM; sleep 30 & wait; sleep 30"}, o);
    EXPECT_TRUE(r.timed_out);
    EXPECT_TRUE(r.reaped);
    EXPECT_EQ(r.signal, SIGKILL);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

// No deadline asked for is a day's, not none; a program that ends first ends the wait.
TEST(Process, ZeroTimeoutStillReturnsWhenTheProgramEnds) {
    ProcessOptions o;
    o.timeout_s = 0;
    ProcessResult r = run_process({"sh", "-c", "exit 4"}, o);
    EXPECT_EQ(r.exit_code, 4);
    EXPECT_FALSE(r.timed_out);
}

TEST(Process, StdinAndStdoutFiles) {
    const sbtest::TempDir tmp;
    const auto& dir = tmp.path;
    { std::ofstream(dir / "in") << "hello\n"; }
    ProcessOptions o;
    o.stdin_path = (dir / "in").string();
    o.stdout_path = (dir / "out").string();
    ProcessResult r = run_process({"cat"}, o);
    EXPECT_TRUE(r.ok());
    EXPECT_TRUE(r.out.empty());
    std::ifstream f(dir / "out");
    std::string line;
    std::getline(f, line);
    EXPECT_EQ(line, "hello");
}

// A limit on the stdout file: a program that keeps writing is stopped at it, the file holds
// exactly the first bytes, and the result says so; one that stays within writes all it has.
TEST(Process, StdoutToAFileStopsAtItsLimit) {
    const auto dir =
        std::filesystem::temp_directory_path() / ("sb_process_limit_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    ProcessOptions o;
    o.stdout_path = (dir / "out").string();
    o.max_stdout_file = 100000;
    o.timeout_s = 30;
    const auto t0 = std::chrono::steady_clock::now();
    ProcessResult r =
        run_process({"sh", "-c", "trap '' TERM; while :; do echo 0123456789; done"}, o);
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_TRUE(r.over_limit);
    EXPECT_FALSE(r.timed_out);
    EXPECT_FALSE(r.interrupted);
    EXPECT_FALSE(r.ok());
    EXPECT_LT(took, 20);  // stopped at the limit (SIGKILL after the grace), not at the deadline
    EXPECT_EQ(std::filesystem::file_size(dir / "out"), 100000u);
    std::ifstream f(dir / "out");
    std::string line;
    std::getline(f, line);
    EXPECT_EQ(line, "0123456789");

    o.max_stdout_file = 11;
    r = run_process({"sh", "-c", "echo 0123456789"}, o);
    EXPECT_TRUE(r.ok());
    EXPECT_FALSE(r.over_limit);
    EXPECT_EQ(std::filesystem::file_size(dir / "out"), 11u);
    o.max_stdout_file = 10;
    r = run_process({"sh", "-c", "echo 0123456789"}, o);
    EXPECT_TRUE(r.over_limit);
    EXPECT_EQ(std::filesystem::file_size(dir / "out"), 10u);
    std::filesystem::remove_all(dir);
}

// A file that cannot take the output (a full disk: /dev/full) is a failed run even when the
// program itself exits 0, with the reason; without a limit the program sees the error itself.
TEST(Process, StdoutToAFullDiskIsAFailureWithItsReason) {
    ProcessOptions o;
    o.stdout_path = "/dev/full";
    o.max_stdout_file = 1 << 20;
    o.timeout_s = 30;
    ProcessResult r = run_process({"sh", "-c", "echo 0123456789"}, o);
    EXPECT_FALSE(r.ok());
    EXPECT_FALSE(r.over_limit);
    EXPECT_EQ(r.output_error, "cannot write /dev/full: " + std::string(std::strerror(ENOSPC)));
    o.max_stdout_file = 0;
    r = run_process({"sh", "-c", "echo 0123456789"}, o);
    EXPECT_FALSE(r.ok());
    EXPECT_TRUE(r.output_error.empty());
}

TEST(Process, ShellQuoting) {
    EXPECT_EQ(shell_quote("plain-1.0/x"), "plain-1.0/x");
    EXPECT_EQ(shell_quote(""), "''");
    EXPECT_EQ(shell_quote("a b"), "'a b'");
    EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
    EXPECT_EQ(shell_quote("$(rm -rf /)"), "'$(rm -rf /)'");
    ProcessResult r =
        run_process({"sh", "-c", "printf '%s|' " + shell_join({"a b", "it's", "$HOME", "*", ""})});
    EXPECT_EQ(r.out, "a b|it's|$HOME|*||");
}

TEST(Process, CtrlCStopsAProgramUnlessItIsAClosingStep) {
    request_interrupt();
    ProcessOptions o;
    o.timeout_s = 20;
    o.kill_grace_s = 0;
    const ProcessResult stopped = run_process({"sh", "-c", "sleep 0.3; echo done"}, o);
    EXPECT_TRUE(stopped.interrupted);
    EXPECT_EQ(stopped.out, "");
    o.after_interrupt = true;
    const ProcessResult ran = run_process({"sh", "-c", "sleep 0.3; echo done"}, o);
    clear_interrupt();
    EXPECT_FALSE(ran.interrupted);
    EXPECT_EQ(ran.exit_code, 0);
    EXPECT_EQ(ran.out, "done\n");
}

}  // namespace
}  // namespace sb
