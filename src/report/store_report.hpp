#pragma once
// Formats the results store for `stagebench db`; never computes. Documents come typed (the
// store reads them with from_json, so documents of any schema version and any command can be
// shown); absent fields print as "-".
#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <vector>

#include "store/result_store.hpp"

namespace sb {

// `db list`: one markdown row per stored document.
void write_store_list_markdown(std::ostream& out, const std::vector<StoredEntry>& entries);

// `db list -o json`: [{"id", "stored_at", "command", "started_at", "host", "cpu",
// "tool_version", "models", "n_tests", "device", "llama_commit", "content_hash"}], absent
// values null.
nlohmann::json store_list_json(const std::vector<StoredEntry>& entries);

// `db show`: the document's command, times, system, tool and models, then one row per test
// with its status, per stage the tokens/s median, the stall-robust rate with its median's CI and
// the stalls, and the TTFT median, as the document recorded them.
void write_document_summary_markdown(std::ostream& out, int64_t id, const ResultDocument& doc);

}  // namespace sb
