#include "cli/junit_option.hpp"

#include <sstream>

#include "cli/store_hook.hpp"
#include "core/file_io.hpp"
#include "core/json_file.hpp"

namespace sb::cli {

void JunitOutput::add_option(CLI::App* cmd) {
    cmd->add_option("--junit", path_,
                    "also write JUnit XML here (CI runners: a case per test, the figures as "
                    "properties, failed tests and gates as errors and failures)");
}

void JunitOutput::check() const {
    if (path_)
        check_output_path(*path_, "the JUnit file (--junit)");
}

void JunitOutput::write(const JunitReport& r) {
    if (!path_)
        return;
    std::ostringstream xml;
    write_junit(xml, r);
    write_text_file(*path_, xml.str(), "the JUnit file (--junit)");
    written_ = true;
}

std::function<void(const ResultDocument&)> JunitOutput::on_last_word(
    std::function<void(const ResultDocument&)> inner) const {
    return [path = path_, inner = std::move(inner)](const ResultDocument& doc) {
        if (path) {
            try {
                std::ostringstream xml;
                write_junit(xml, junit_of_document(doc));
                write_text_file(*path, xml.str(), "the JUnit file (--junit)");
            } catch (...) {
                // The process is going down; the document itself is kept by inner.
            }
        }
        if (inner)
            inner(doc);
    };
}

void finish_run_with_junit(Context& ctx, const RunResult& r, JunitOutput& junit) {
    std::optional<Error> junit_error;
    try {
        junit.write(junit_of_document(r.doc));
    } catch (const Error& e) {
        junit_error = e;
    }
    finish_run(ctx, r);
    if (junit_error)
        throw *junit_error;
}

}  // namespace sb::cli
