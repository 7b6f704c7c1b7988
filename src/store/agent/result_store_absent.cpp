// The results store of the static agent (STAGEBENCH_AGENT=ON), which links no SQLite: opening
// a store is a usage error that says where documents go instead. Nothing else can be reached
// (there is never a ResultStore), but every member is defined so that any code of the full
// CLI links.
#include "store/result_store.hpp"

namespace sb {
namespace {
[[noreturn]] void no_store() {
    throw usage_error(
        "not in the agent build: the results store (--db); write the document with --out, copy "
        "it to the host and run `stagebench db import --db FILE DOC.json` there");
}
}  // namespace

struct ResultStore::Db {};

ResultStore ResultStore::open(const std::string&, Mode, StoreWait) {
    no_store();
}
ResultStore::ResultStore(std::string path, std::unique_ptr<Db> db)
    : path_(std::move(path)), db_(std::move(db)) {}
ResultStore::ResultStore(ResultStore&&) noexcept = default;
ResultStore& ResultStore::operator=(ResultStore&&) noexcept = default;
ResultStore::~ResultStore() = default;
bool ResultStore::read_only() const {
    no_store();
}
int64_t ResultStore::append(const ResultDocument&) {
    no_store();
}
int64_t ResultStore::last_id() const {
    no_store();
}
std::vector<StoredEntry> ResultStore::list() const {
    no_store();
}
std::string ResultStore::get_text(int64_t) const {
    no_store();
}
int64_t ResultStore::append_fleet_run(const FleetRun&) {
    no_store();
}
std::vector<FleetRun> ResultStore::fleet_runs(const std::optional<std::string>&) const {
    no_store();
}
ResultDocument ResultStore::get(int64_t) const {
    no_store();
}
std::vector<StoredTest> ResultStore::tests(int64_t) const {
    no_store();
}
int ResultStore::schema_version() const {
    no_store();
}
std::optional<int64_t> parse_db_operand(const std::string&) {
    no_store();
}

}  // namespace sb
