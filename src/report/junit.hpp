#pragma once
// JUnit XML (`--junit FILE` on run, sustained, serve, compare and fleet run), the schema CI
// runners read (Jenkins' junit step, GitHub Actions' test reporters, GitLab's
// artifacts:reports:junit): <testsuites> of <testsuite>s of <testcase>s, each with its
// <properties> (the figures, named with their units), and a <failure> (a gate whose 95% CI lies
// wholly beyond its threshold), an <error> (a test that failed or was interrupted: its error
// text kept) or a <skipped> element; <system-out> for notes and warnings.
//
// Text from anywhere (model paths, error texts, a server's words) is written so that every
// XML 1.0 parser reads it back: ill-formed UTF-8 becomes U+FFFD (core/utf8.hpp), & < > " '
// are entities, a tab, line feed or carriage return in an attribute is a character reference
// (so that attribute normalisation keeps it), and the characters XML 1.0 cannot hold at all
// (C0 controls other than tab, LF and CR; U+FFFE, U+FFFF) are written as the text "\xNN" /
// "\uFFFE". Numbers are locale-independent: the shortest text that reads back as the same
// double; times in seconds with millisecond digits.
//
// The writer formats; the builders (junit_documents.cpp) only pick figures the document
// already holds (report/stage_fields.hpp's field table for a test's stages), never compute.
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/compare.hpp"
#include "core/result.hpp"
#include "store/result_store.hpp"

namespace sb {

struct JunitProperty {
    std::string name, value;
    bool operator==(const JunitProperty&) const = default;
};

enum class JunitOutcome { passed, failure, error, skipped };

struct JunitCase {
    std::string name, classname;
    std::optional<double> time_s;  // the attribute is left out when unknown
    std::vector<JunitProperty> properties;
    JunitOutcome outcome = JunitOutcome::passed;
    // The <failure>, <error> or <skipped> element's message and type attributes and its text.
    std::string message, type, text;
    std::string system_out;  // "" : no element
};

struct JunitSuite {
    std::string name;
    std::string timestamp;  // ISO 8601 ("" : left out)
    std::string hostname;   // ("" : left out)
    std::vector<JunitProperty> properties;
    std::vector<JunitCase> cases;
    std::string system_out;  // "" : no element
};

struct JunitReport {
    std::string name;
    std::vector<JunitSuite> suites;
};

// s as XML character data (text between tags): see the top of this file.
std::string xml_text(std::string_view s);
// s as the value of an attribute in double quotes.
std::string xml_attribute(std::string_view s);

// The whole file: the XML declaration, <testsuites> with the counts of its suites (tests,
// failures, errors, skipped; time: the sum of the cases' known times), each <testsuite> with
// its own counts.
void write_junit(std::ostream& out, const JunitReport& r);

// A property of a number: the shortest text that reads back as v ("61.5", "0.0123").
JunitProperty junit_number(std::string name, double v);

// A measuring command's document (run, sustained, serve; any result document): one suite
// "stagebench COMMAND" with the document's identity as properties (tool version, llama.cpp
// commit, host, CPU, the command line) and its warnings as system-out; one case per test
// (its name: the model file, devices and test, e.g. "tiny.gguf CPU pp32+tg8"), the config and
// each measured stage's figures as properties ("prefill_tokens_per_s_mean",
// "prefill_tokens_per_s_ci95_lo", "decode_itl_ns_p50", "prefill_robust_tokens_per_s", ...: the
// CSV columns of report/stage_fields.hpp prefixed by the stage; where energy was measured the
// medians "prefill_j_per_token_median", "prefill_net_j_per_token_median",
// "prefill_energy_j_median", "prefill_mean_power_mw_median"), an <error> for a failed test
// (its error text; type its error kind) or an interrupted one (type "interrupted"). A
// sustained document adds a suite per phase ("stagebench sustained rounds", "... loaded"), a
// case per round ("round 3", classname "stagebench.sustained.PHASE": its figures, its error)
// and a case "verdict" (the phase's verdict, onset and steady state); a serve document a case
// per point
// ("concurrency 4": throughput, latency percentiles, errors; a point stopped by
// --max-error-rate is a failure, a point whose every request failed an error).
JunitReport junit_of_document(const ResultDocument& doc);

// A command that stopped before it measured anything (bad input, a refused option): one
// suite "stagebench COMMAND" with one case "COMMAND" in error with the error's text.
JunitReport junit_of_error(const std::string& command, const std::string& error,
                           const std::string& error_kind);

// compare: a suite "stagebench compare" with a case per row and other side ("pp32+tg8 prefill
// tokens_per_s B/A": the sides' medians, the ratio and its CI, the verdict), then a suite per
// gate ("gate fail-if-slower 5%") with a case per check (a <failure> when the check failed, its
// text saying the CI and the limit; inconclusive checks pass with the reason as system-out),
// or one <skipped> case when the gate had no row of its metrics.
JunitReport junit_of_compare(const CompareResult& r);

// What fleet run reports of one device: its row of fleet_runs and the document it stored (when
// the store gave it back).
struct FleetJunitDevice {
    FleetRun run;
    std::optional<ResultDocument> doc;
};

// fleet run: a suite per device ("fleet NAME: DEVICE"): the document's cases (as
// junit_of_document) when it stored one, and a case "fleet run" with the device's outcome (an
// <error> with the fleet's one-line error when it failed, <skipped> when --resume skipped it).
JunitReport junit_of_fleet(const std::string& fleet, const std::vector<FleetJunitDevice>& devices);

}  // namespace sb
