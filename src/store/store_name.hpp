#pragma once
// What `--db` names: a SQLite file (a path) or a PostgreSQL database (a libpq connection URI,
// postgresql://[user@]host[:port]/dbname[?param=value&...], or postgres://...). Credentials
// belong in libpq's own places (PGPASSWORD, ~/.pgpass, a PGSERVICE entry); a password given in
// the URI works but is never written anywhere by stagebench: every name shown in a message or
// kept in a document goes through printable_store_name().
#include <string>
#include <string_view>
#include <vector>

namespace sb {

// True when name is a PostgreSQL connection URI (it starts with "postgresql://" or
// "postgres://", as libpq reads them); anything else is a SQLite file path.
bool is_postgres_url(std::string_view name);

// name without its password: for a URI, "user:secret@" becomes "user@" and a "password"
// parameter is dropped ("?password=x&sslmode=require" -> "?sslmode=require"; so is any
// parameter whose name holds "pass" or is not valid percent-encoding); a name that starts with a
// PostgreSQL scheme but is no URI ("postgresql:u:pw@h") is read as one; in a libpq key=value
// string each password keyword is dropped with its value; a path is returned as it is. Never
// throws (but std::bad_alloc).
std::string printable_store_name(std::string_view name);

// True when name is a URI that carries a password (printable_store_name would change it).
bool store_name_has_password(std::string_view name);

// Why name cannot be a store although it was meant for PostgreSQL, as one line ("" when it
// can be: a URI, or a path that does not look like a connection string): a name that starts
// with a PostgreSQL scheme but is no URI libpq reads ("postgresql:", "postgresql:/db",
// "POSTGRES://h/d"), or a libpq key=value connection string ("host=db dbname=bench"), which
// SQLite would otherwise take for file names. The line shows the name as
// printable_store_name() does, a key=value string not at all (the words around its password
// may be the password's own).
std::string unusable_store_name(std::string_view name);

// message with every secret that name carries replaced: name itself by
// printable_store_name(name), then each password it holds (URI user information, a password
// parameter, a password= keyword; as written and percent-decoded, and the pieces libpq may
// quote of one it cannot parse) by "***". For text that may quote the name: libpq's messages.
std::string scrub_store_secrets(std::string_view message, std::string_view name);

// The command line with every PostgreSQL URI in it (a whole argument, or the value of
// --db=URI) printable: what a result document may keep of it.
std::vector<std::string> printable_argv(std::vector<std::string> argv);

// Where a document the store could not take is written instead, before ".json" (see
// write_fallback_document): beside a SQLite file ("<path>.<UTC time>"); for a PostgreSQL
// database, which has no "beside", in the current folder ("<dbname>.<UTC time>", the
// database's name made a safe file name, "postgresql" when the URI names none).
// utc_stamp is e.g. "20261129T093000Z".
std::string fallback_document_base(const std::string& store, const std::string& utc_stamp);

// Writes text to a file that did not exist: base + ".json", else base + "-2.json", "-3.json"
// and so on (created exclusively, so two runs that fall back in the same second, even at once,
// write two files and neither replaces the other), and syncs it. Returns the path written.
// Throws sb::Error(runtime) when none can be created or written (a partial file is removed).
std::string write_fallback_document(const std::string& base, const std::string& text);

}  // namespace sb
