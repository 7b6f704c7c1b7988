#pragma once
// The one reading path for documents a user hands back to stagebench (result documents of
// run, demo, hybrid, ops, decompose, sustained and import; compare documents): `report`,
// `compare`, `advise`, `trace` and the store all read through here, and a result document is
// read by its from_json (core/result.hpp; core/doc/json_in.hpp has the rules). A document that
// cannot be used is bad input, reported once, as one line naming the file and the field:
//   - a file that cannot be read, or is not JSON (a syntax error, a number out of range like
//     1e999): "'F' is not JSON: ..." with the byte offset;
//   - arrays and objects nested deeper than kMaxDocumentDepth (no document this build writes
//     nests a tenth as deep; every reader walks nesting by recursion, so a file nested 100,000
//     deep would overflow the stack): refused before the JSON is parsed;
//   - a document of the wrong shape: a field of the wrong type, a null where a value must be,
//     a number where an integer must be or outside its type: "'F': tests[2].config.n_prompt:
//     expected an integer, found a string";
//   - a document from a newer stagebench (schema_version above the one this build reads):
//     refused rather than half read.
// Fields a document does not carry are not errors (older documents lack newer fields; missing
// is not zero). Every failure throws sb::Error(ErrorKind::input); nothing else escapes.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/doc/json_in.hpp"

namespace sb {

struct ResultDocument;

// The newest version this build reads of each document kind's version field
// ("schema_version" of result documents, "compare_schema_version", "advise_schema_version"),
// or 0 for a field that is not a version field. The writers' constants must agree (a test in
// src/report checks it).
int max_readable_version(const std::string& version_field);

// The version field of the object doc, when present: an integer from 1 to
// max_readable_version(field). A newer one: "SOURCE was written by a newer stagebench
// (FIELD N; this build reads up to M): use a newer stagebench". Throws sb::Error(input).
void check_version_field(const JsonIn& doc, const char* field);

// How deep arrays and objects may nest in a document read back (the root object is depth 1).
// A result document nests 8 deep; members of newer builds and free-form sections leave room.
inline constexpr int kMaxDocumentDepth = 64;

// Throws sb::Error(input) "SOURCE nests arrays and objects more than 64 deep (at byte N): not
// WHAT" (WHAT: what the text should be) when text (JSON, or anything: brackets inside strings
// do not count) opens more than max_depth arrays or objects at once. One pass, no allocation.
void check_json_depth(std::string_view text, const std::string& source,
                      int max_depth = kMaxDocumentDepth,
                      std::string_view what = "a stagebench document");

// Parses text as JSON; source names it in the message ("'results.json'", "document #3 of
// store 'x.sqlite'"). Throws sb::Error(input) for any parse failure and for nesting deeper than
// kMaxDocumentDepth (check_json_depth).
nlohmann::json parse_document_text(const std::string& text, const std::string& source);

// Checks what every document has: a JSON object, its version fields (each one this build
// reads: check_version_field) and a string "schema". The rest is read, and checked, once, by
// the typed reader of its kind: from_json<ResultDocument> (load_result_document),
// read(JsonIn, CompareResult&) (analysis/compare.hpp) for a compare document; `report` keeps
// any other JSON object as it is. Throws sb::Error(input) naming source and the field.
void check_document(const nlohmann::json& doc, const std::string& source);

// Reads, parses and checks (check_document) the document at path (a regular file), for a
// reader that then reads it typed by its kind (report/html_data.hpp load_report_input). Throws
// sb::Error(input).
nlohmann::json load_document(const std::string& path);

// Reads and parses the result document at path (a regular file) into its typed form; one that
// is not a result document ("schema": "stagebench.result") is refused. Throws sb::Error(input).
ResultDocument load_result_document(const std::string& path);

}  // namespace sb
