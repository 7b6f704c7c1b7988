#pragma once
// The common end of an importer's command (import llama-bench, import llama-server-log): what it
// skipped as one warning (its count and the first three) and as the section's notes, the
// section put into the document, its finish time, and the document written to --out.
#include <optional>
#include <string>
#include <vector>

#include "core/doc/import_section.hpp"
#include "core/result.hpp"

namespace sb {

struct SkippedWarning {
    std::string code;  // "import_rows_skipped"
    std::string what;  // "row(s) of the llama-bench output": "N {what} skipped (first; ...)"
    std::string why;   // the warning's hint
};

void finish_import(ResultDocument& doc, ImportSection section,
                   const std::vector<std::string>& skipped, const SkippedWarning& warning,
                   const std::optional<std::string>& out_path);

}  // namespace sb
