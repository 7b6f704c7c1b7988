// The results store of the static agent (STAGEBENCH_AGENT=ON), which links neither SQLite nor
// libpq: opening a store is a usage error that says where documents go instead. The rest of
// the store (result_store.cpp, store_records.cpp, store_name.cpp, sha256.cpp) is built as for
// the host, so that any code of the full CLI links.
#include "core/error.hpp"
#include "store/store_backend.hpp"

namespace sb {
namespace {
[[noreturn]] void no_store() {
    throw usage_error(
        "not in the agent build: the results store (--db); write the document with --out, copy "
        "it to the host and run `stagebench db import --db FILE DOC.json` there");
}
}  // namespace

std::unique_ptr<StoreBackend> open_sqlite_backend(const std::string&, ResultStore::Mode,
                                                  StoreWait) {
    no_store();
}
std::unique_ptr<StoreBackend> open_pg_backend(const std::string&, ResultStore::Mode, StoreWait) {
    no_store();
}

}  // namespace sb
