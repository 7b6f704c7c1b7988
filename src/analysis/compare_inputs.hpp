#pragma once
// Loads the operands of `stagebench compare`: result document files, or "db:ID" documents of a
// results store.
#include <optional>
#include <string>
#include <vector>

#include "analysis/compare.hpp"

namespace sb {

// One CompareInput per operand, in order: a path is read typed (core/document.hpp
// load_result_document), "db:ID" is document ID of the store at db_path. labels override the
// default labels (A, B, ...) of the first inputs. Throws sb::Error(usage) for a db:ID without
// db_path or more labels than operands, and sb::Error(input), one line, for a file that is
// missing, not JSON, not a result document or of the wrong shape (naming the file and the
// field), a store that cannot be opened, or an ID not in the store.
std::vector<CompareInput> load_compare_inputs(const std::vector<std::string>& operands,
                                              const std::optional<std::string>& db_path,
                                              const std::vector<std::string>& labels);

}  // namespace sb
