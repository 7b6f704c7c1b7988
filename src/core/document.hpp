#pragma once
// The one reading path for documents a user hands back to stagebench (result documents of
// run, demo, hybrid, ops, decompose, sustained and import; compare documents): `report`,
// `compare`, `advise`, `trace` and the store all read through here, and a result document is
// read by its from_json (core/result.hpp; core/doc/json_in.hpp has the rules). A document that
// cannot be used is bad input, reported once, as one line naming the file and the field:
//   - a file that cannot be read, or is not JSON (a syntax error, a number out of range like
//     1e999): "'F' is not JSON: ..." with the byte offset;
//   - a document of the wrong shape: a field of the wrong type, a null where a value must be,
//     a number where an integer must be or outside its type: "'F': tests[2].config.n_prompt:
//     expected an integer, found a string";
//   - a document from a newer stagebench (schema_version above the one this build reads):
//     refused rather than half read.
// Fields a document does not carry are not errors (older documents lack newer fields; missing
// is not zero). Every failure throws sb::Error(ErrorKind::input); nothing else escapes.
#include <nlohmann/json.hpp>
#include <string>

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

// Parses text as JSON; source names it in the message ("'results.json'", "document #3 of
// store 'x.sqlite'"). Throws sb::Error(input) for any parse failure.
nlohmann::json parse_document_text(const std::string& text, const std::string& source);

// Checks a parsed document's shape as described above. Result documents ("schema":
// "stagebench.result") are read whole with from_json; compare documents ("command": "compare")
// are checked by version and their rows; any other JSON object is left to the reader (a reader
// that needs a result document says so). Throws sb::Error(input) naming source and the field.
void check_document(const nlohmann::json& doc, const std::string& source);

// Reads, parses and checks the document at path (a regular file). Throws sb::Error(input).
nlohmann::json load_document(const std::string& path);

// Reads and parses the result document at path (a regular file) into its typed form; one that
// is not a result document ("schema": "stagebench.result") is refused. Throws sb::Error(input).
ResultDocument load_result_document(const std::string& path);

}  // namespace sb
