#include "profile/import_finish.hpp"

#include <fmt/format.h>

namespace sb {

void finish_import(ResultDocument& doc, ImportSection section,
                   const std::vector<std::string>& skipped, const SkippedWarning& warning,
                   const std::optional<std::string>& out_path) {
    if (!skipped.empty()) {
        std::string first_few;
        for (std::size_t i = 0; i < skipped.size() && i < 3; ++i)
            first_few += (first_few.empty() ? "" : "; ") + skipped[i];
        doc.warnings.push_back(
            {warning.code,
             fmt::format("{} {} skipped ({})", skipped.size(), warning.what, first_few),
             warning.why});
        section.notes.insert(section.notes.end(), skipped.begin(), skipped.end());
    }
    doc.imported = std::move(section);
    doc.finished_at = utc_timestamp();
    if (out_path)
        write_document(doc, *out_path);
}

}  // namespace sb
