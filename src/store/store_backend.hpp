#pragma once
// The interface a results store is made of (one implementation per database: sqlite_store.cpp,
// pg/pg_store.cpp), and the rows they store, built here once for both (store_records.cpp), so
// that both keep the same columns of the same document. Internal to src/store: callers use
// ResultStore (result_store.hpp).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/result_store.hpp"

namespace sb {

// One document as a store keeps it.
struct DocumentRecord {
    std::string text;          // the JSON, indented by 2
    std::string content_hash;  // content_hash() of the document
    std::string stored_at;     // UTC, ISO 8601
    std::optional<std::string> command, started_at, host, cpu, tool_version, device, llama_commit;
    std::vector<std::string> models;
    int64_t n_tests = 0;
    std::vector<StoredTest> tests;  // document_id unset
};

// The record of doc, stored now.
DocumentRecord record_of(const ResultDocument& doc);
// The record of a stored JSON text (a migration or a copy), with its hash and stored_at when
// known: read with from_json when this build can; otherwise (a document of a newer stagebench)
// with the columns a plain look at the JSON gives and no tests. hash: when empty, computed.
// Throws sb::Error(input) naming source when text is not JSON. readable_or_newer: also when
// from_json cannot read it for any reason but a newer schema_version (what `db show` refuses:
// null, [], a document of the wrong shape), with from_json's message.
DocumentRecord record_of_text(const std::string& text, std::string hash, std::string stored_at,
                              const std::string& source, bool readable_or_newer = false);

// The hash that identifies a fleet run: SHA-256 over its fields but its id, with its document
// named by that document's content hash (doc_hash; empty when it has none), so that the same
// run is recognised in another store, where its document has another id.
std::string fleet_run_hash(const FleetRun& run, const std::string& doc_hash);

// A store's rows, read and written. Every member may throw as ResultStore's members say.
class StoreBackend {
  public:
    virtual ~StoreBackend() = default;
    virtual bool is_postgres() const = 0;
    virtual bool read_only() = 0;
    virtual int schema_version() = 0;
    // Appends r with its tests, in one transaction. once: first looks for a document of r's
    // content hash, in the same transaction, and returns it (added = false) when there is one.
    virtual Appended insert_document(const DocumentRecord& r, bool once) = 0;
    virtual int64_t last_id() = 0;
    virtual std::vector<StoredEntry> list() = 0;
    // The stored JSON of id (any formatting); nullopt when there is no such document.
    virtual std::optional<std::string> text(int64_t id) = 0;
    // The content hash of document id; nullopt when there is no such document.
    virtual std::optional<std::string> document_hash(int64_t id) = 0;
    virtual std::vector<StoredTest> tests(int64_t id) = 0;
    virtual std::vector<int64_t> latest_per_device(const std::string& command) = 0;
    // Appends r (its id ignored) with its hash; once: as insert_document's.
    virtual Appended insert_fleet_run(const FleetRun& r, const std::string& hash, bool once) = 0;
    virtual std::vector<FleetRun> fleet_runs(const std::optional<std::string>& fleet) = 0;
};

// The two implementations; name is the file or the URI as given (the URI with its password:
// the connection needs it; messages use printable_store_name()).
std::unique_ptr<StoreBackend> open_sqlite_backend(const std::string& path, ResultStore::Mode mode,
                                                  StoreWait wait);
std::unique_ptr<StoreBackend> open_pg_backend(const std::string& url, ResultStore::Mode mode,
                                              StoreWait wait);

}  // namespace sb
