// The results store's one interface over its two implementations (store_backend.hpp): what is
// the same for SQLite and PostgreSQL (the rows of a document, its hash, copying) is done here.
#include "store/result_store.hpp"

#include <map>

#include "core/document.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "store/store_backend.hpp"
#include "store/store_name.hpp"

namespace sb {

ResultStore::ResultStore(std::string name, std::unique_ptr<StoreBackend> backend)
    : name_(std::move(name)), backend_(std::move(backend)) {}
ResultStore::ResultStore(ResultStore&&) noexcept = default;
ResultStore& ResultStore::operator=(ResultStore&&) noexcept = default;
ResultStore::~ResultStore() = default;

ResultStore ResultStore::open(const std::string& name, Mode mode, StoreWait wait) {
    // Meant for PostgreSQL but not a URI: SQLite would make a file of that name.
    if (const std::string why = unusable_store_name(name); !why.empty())
        throw input_error(why);
    std::unique_ptr<StoreBackend> backend;
    try {
        backend = is_postgres_url(name) ? open_pg_backend(name, mode, std::move(wait))
                                        : open_sqlite_backend(name, mode, std::move(wait));
    } catch (const StoreLocked& e) {
        throw StoreLocked(scrub_store_secrets(e.what(), name));
    } catch (const Error& e) {
        // The backends name the store without its password, and pass on what libpq says
        // scrubbed; once more here, whatever quoted the name.
        throw Error(e.kind(), scrub_store_secrets(e.what(), name));
    }
    return ResultStore(printable_store_name(name), std::move(backend));
}

bool ResultStore::read_only() const {
    return backend_->read_only();
}

bool ResultStore::is_postgres() const {
    return backend_->is_postgres();
}

int64_t ResultStore::append(const ResultDocument& doc) {
    return backend_->insert_document(record_of(doc), false).id;
}

Appended ResultStore::append_once(const ResultDocument& doc) {
    return backend_->insert_document(record_of(doc), true);
}

int64_t ResultStore::last_id() const {
    return backend_->last_id();
}

std::vector<StoredEntry> ResultStore::list() const {
    return backend_->list();
}

std::string ResultStore::get_text(int64_t id) const {
    auto text = backend_->text(id);
    if (!text)
        throw input_error("no document #" + std::to_string(id) + " in results store '" + name_ +
                          "'");
    return std::move(*text);
}

ResultDocument ResultStore::get(int64_t id) const {
    const std::string source =
        "document #" + std::to_string(id) + " in results store '" + name_ + "'";
    return from_json<ResultDocument>(parse_document_text(get_text(id), source), source);
}

std::vector<StoredTest> ResultStore::tests(int64_t id) const {
    return backend_->tests(id);
}

std::vector<int64_t> ResultStore::latest_per_device(const std::string& command) const {
    return backend_->latest_per_device(command);
}

int64_t ResultStore::append_fleet_run(const FleetRun& run) {
    const std::string doc_hash =
        run.document_id ? backend_->document_hash(*run.document_id).value_or("") : "";
    return backend_->insert_fleet_run(run, fleet_run_hash(run, doc_hash), false).id;
}

std::vector<FleetRun> ResultStore::fleet_runs(const std::optional<std::string>& fleet) const {
    return backend_->fleet_runs(fleet);
}

int ResultStore::schema_version() const {
    return backend_->schema_version();
}

CopySummary copy_store(const ResultStore& from, ResultStore& to,
                       const std::function<void(const CopySummary&)>& progress) {
    CopySummary sum;
    auto check_interrupt = [&] {
        if (interrupt_requested())
            throw runtime_error("db copy interrupted (Ctrl-C) after " +
                                std::to_string(sum.documents_added) + " new document(s) and " +
                                std::to_string(sum.fleet_runs_added) +
                                " new fleet run(s); run it again to copy the rest");
    };
    std::map<int64_t, std::string> hash_of;   // a document of from -> its hash
    std::map<std::string, int64_t> id_in_to;  // a hash -> the document in to
    for (const StoredEntry& e : from.list()) {
        check_interrupt();
        const std::string source =
            "document #" + std::to_string(e.id) + " in results store '" + from.path() + "'";
        const std::string text = from.get_text(e.id);
        DocumentRecord r;
        try {
            // What `db show` refuses is not copied either (but a newer stagebench's document).
            r = record_of_text(text, e.content_hash, e.stored_at, source, true);
        } catch (const Error& err) {
            if (err.kind() != ErrorKind::input)
                throw;
            sum.skipped.push_back(err.what());
            if (progress)
                progress(sum);
            continue;
        }
        const Appended a = to.backend_->insert_document(r, true);
        hash_of[e.id] = r.content_hash;
        id_in_to[r.content_hash] = a.id;
        ++(a.added ? sum.documents_added : sum.documents_present);
        if (progress)
            progress(sum);
    }
    for (FleetRun run : from.fleet_runs()) {
        check_interrupt();
        std::string doc_hash;
        if (run.document_id) {
            auto it = hash_of.find(*run.document_id);
            if (it != hash_of.end())
                doc_hash = it->second;
        }
        const std::string hash = fleet_run_hash(run, doc_hash);
        run.document_id =
            doc_hash.empty() ? std::nullopt : std::optional<int64_t>(id_in_to.at(doc_hash));
        const Appended a = to.backend_->insert_fleet_run(run, hash, true);
        ++(a.added ? sum.fleet_runs_added : sum.fleet_runs_present);
        if (progress)
            progress(sum);
    }
    return sum;
}

std::optional<int64_t> parse_db_operand(const std::string& s) {
    const std::string prefix = "db:";
    if (s.compare(0, prefix.size(), prefix) != 0)
        return std::nullopt;
    const std::string rest = s.substr(prefix.size());
    const bool digits = !rest.empty() && rest.size() <= 18 &&
                        rest.find_first_not_of("0123456789") == std::string::npos;
    const int64_t id = digits ? std::stoll(rest) : 0;
    if (id <= 0)
        throw usage_error("'" + s + "': expected db:ID with ID a positive integer");
    return id;
}

}  // namespace sb
