// A build without libpq (libpq-dev absent when it was configured): a PostgreSQL store is a
// usage error that says what the build lacks; SQLite stores work as ever.
#include "core/error.hpp"
#include "store/store_backend.hpp"
#include "store/store_name.hpp"

namespace sb {

std::unique_ptr<StoreBackend> open_pg_backend(const std::string& url, ResultStore::Mode,
                                              StoreWait) {
    throw usage_error("results store '" + printable_store_name(url) +
                      "': PostgreSQL stores are not in this build (it needs libpq, Debian's "
                      "libpq-dev, when it is built)");
}

}  // namespace sb
