#include "analysis/compare_inputs.hpp"

#include "core/document.hpp"
#include "core/error.hpp"
#include "store/result_store.hpp"

namespace sb {

std::vector<CompareInput> load_compare_inputs(const std::vector<std::string>& operands,
                                              const std::optional<std::string>& db_path,
                                              const std::vector<std::string>& labels) {
    if (labels.size() > operands.size())
        throw usage_error(std::to_string(labels.size()) + " labels for " +
                          std::to_string(operands.size()) + " inputs");
    std::vector<std::string> names = default_compare_labels(operands.size());
    std::copy(labels.begin(), labels.end(), names.begin());

    std::optional<ResultStore> store;
    std::vector<CompareInput> out;
    for (std::size_t i = 0; i < operands.size(); ++i) {
        const std::string& op = operands[i];
        if (const auto id = parse_db_operand(op)) {
            if (!db_path)
                throw usage_error("'" + op + "' reads a results store: add --db FILE");
            if (!store)
                store = ResultStore::open(*db_path, ResultStore::Mode::existing);
            out.push_back({names[i], op, store->get(*id)});
        } else {
            out.push_back({names[i], op, load_result_document(op)});
        }
    }
    return out;
}

}  // namespace sb
