#pragma once
// Reporters format one result document to an injected stream; they never compute. Rows are
// streamed as tests complete (md, csv, jsonl) so a long sweep shows progress and an
// interrupted one has printed what it measured; json prints the whole document at the end.
//
// This is the one place an output format (core/enums.hpp OutputFormat, parsed once by the
// command line) becomes what writes a result document: make_reporter() while a run streams,
// print_document() for a finished document.
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "core/enums.hpp"
#include "core/result.hpp"

namespace sb {

class Reporter {
  public:
    virtual ~Reporter() = default;
    // The tests the run will measure, before begin (optional): columns shown only where tests
    // differ (ngl) are decided from them and the document's tests.
    virtual void plan(const std::vector<TestConfig>& tests) {}
    virtual void begin(const ResultDocument& doc) {}
    virtual void test_done(const ResultDocument& doc, const TestResult& test) {}
    virtual void end(const ResultDocument& doc) {}
};

// md, csv, json or jsonl. Throws sb::Error(usage) for html (`stagebench report` writes it). The
// stream must outlive the reporter.
std::unique_ptr<Reporter> make_reporter(OutputFormat format, std::ostream& out);

// The finished document in format, as the command that made it prints it: md is the test table,
// or for a hybrid or sustained document its own tables (hybrid_report.hpp,
// sustained_report.hpp); csv and jsonl the tests; json the document. Throws sb::Error(usage)
// for html.
void print_document(OutputFormat format, const ResultDocument& doc, std::ostream& out);

}  // namespace sb
