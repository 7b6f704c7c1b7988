#pragma once
// Reporters format one result document to an injected stream; they never compute. Rows are
// streamed as tests complete (md, csv, jsonl) so a long sweep shows progress and an
// interrupted one has printed what it measured; json prints the whole document at the end.
#include <memory>
#include <ostream>
#include <string>

#include "core/result.hpp"

namespace sb {

class Reporter {
  public:
    virtual ~Reporter() = default;
    virtual void begin(const ResultDocument& doc) {}
    virtual void test_done(const ResultDocument& doc, const TestResult& test) {}
    virtual void end(const ResultDocument& doc) {}
};

// format: md | csv | json | jsonl. Throws sb::Error(usage) for anything else. The stream must
// outlive the reporter.
std::unique_ptr<Reporter> make_reporter(const std::string& format, std::ostream& out);

}  // namespace sb
