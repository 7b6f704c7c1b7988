#pragma once
// `--junit FILE` on run, sustained, serve, compare and fleet run: the command's outcome as JUnit
// XML (report/junit.hpp) for CI runners. The file is checked before anything is measured and
// written whatever happens after: at the end (failed and interrupted tests included), by the
// last word when llama.cpp stops the process mid-run (what was measured, the running test
// in error), and, when the command stops on an error before it has a document, as one case in
// error with that error's line.
#include <CLI/CLI.hpp>
#include <functional>
#include <optional>
#include <ostream>
#include <string>

#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/result.hpp"
#include "report/junit.hpp"
#include "scenario/run_context.hpp"

namespace sb::cli {

class JunitOutput {
  public:
    // command: the case and suite name of an error report ("run", "compare", "fleet run").
    explicit JunitOutput(std::string command) : command_(std::move(command)) {}

    // Adds --junit FILE to cmd.
    void add_option(CLI::App* cmd);
    bool asked() const { return path_.has_value(); }

    // Before the run: throws sb::Error(input) when the file cannot be written.
    void check() const;

    // Writes r (when --junit was given). Throws sb::Error when the file cannot be written.
    void write(const JunitReport& r);

    // The last word's companion: writes the document's report (never throws), then calls inner
    // (may be empty).
    std::function<void(const ResultDocument&)> on_last_word(
        std::function<void(const ResultDocument&)> inner) const;

    // Runs f; should it throw sb::Error before a report was written, the error is the report
    // (junit_of_error), then it is rethrown.
    template <class F>
    void run(F&& f) {
        try {
            f();
        } catch (const Error& e) {
            if (path_ && !written_) {
                try {
                    write(junit_of_error(command_, e.what(), error_kind_name(e.kind())));
                } catch (const Error&) {
                }
            }
            throw;
        }
    }

    // A command's callback f as run(f) does it (the JUnit output must outlive the callback: keep
    // it in a shared_ptr the callback captures).
    std::function<void()> wrap(std::function<void()> f) {
        return [this, f = std::move(f)] { run(f); };
    }

  private:
    std::string command_;
    std::optional<std::string> path_;
    bool written_ = false;
};

// The end of a measuring command with --junit: the report of r.doc written, then finish_run
// (the store, the exit code, r.error); a JUnit file that cannot be written is reported after
// the document reached the store.
void finish_run_with_junit(Context& ctx, const RunResult& r, JunitOutput& junit);

}  // namespace sb::cli
