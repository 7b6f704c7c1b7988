#pragma once
// A real PostgreSQL server for tests, never a stand-in: Debian's `postgresql` package
// (scripts/setup-deps.sh installs it), a new cluster made by initdb in a temporary folder and
// its postmaster listening on a free 127.0.0.1 port, with password (SCRAM) logins over TCP, as
// a lab's server would take them. initdb and postgres refuse to run as root: as root (CI, this
// machine) both run as the unprivileged user "nobody", the folder handed to it. The postmaster
// is this process's child and dies with it (PR_SET_PDEATHSIG), so a test binary that crashes
// or is killed by a timeout leaves no server behind. Each server is stopped and its folder
// removed when the PgServer is destroyed.
#include <sys/types.h>

#include <string>

namespace sbtest {

class PgServer {
  public:
    // The folder of initdb and postgres: $SB_PG_BIN, else initdb on PATH, else the newest
    // /usr/lib/postgresql/<version>/bin; "" when none has them (PostgreSQL is not installed:
    // the only reason a PostgreSQL test may skip).
    static std::string bin_dir();

    // initdb, then start() on a free port. Throws std::runtime_error, with the end of the
    // server's log, when the binaries are there but the server cannot be made or started.
    PgServer();
    ~PgServer();
    PgServer(const PgServer&) = delete;
    PgServer& operator=(const PgServer&) = delete;

    int port() const { return port_; }
    // The superuser initdb made, and its password.
    static constexpr const char* kUser = "sbadmin";
    const std::string& password() const { return password_; }

    // postgresql://USER@127.0.0.1:PORT/DB (no password: tests pass it as a user would, in
    // PGPASSWORD or a password file).
    std::string url(const std::string& db, const std::string& user = kUser) const;

    // Runs sql (one or more statements) as the superuser in database db; the first column of
    // the first row of the last statement, "" when it returns none. Throws std::runtime_error
    // with the server's message.
    std::string sql(const std::string& db, const std::string& sql) const;

    // A new empty database (owned by the superuser) and its name: one per test.
    std::string create_database();

    // Starts the postmaster (again, after stop() or kill()) on port() and waits until it
    // accepts logins (60 s at most).
    void start();
    // A fast shutdown (SIGINT to the postmaster, as `pg_ctl stop -m fast`): connections are
    // ended and the server exits; waits for it.
    void stop();
    // SIGKILL to the postmaster (a server that dies): its backends end when they notice.
    void kill();
    bool running() const { return pid_ > 0; }

    // The last lines of the server's log (for failure messages).
    std::string log_tail() const;

  private:
    std::string dir_, bin_, password_;
    int port_ = 0;
    pid_t pid_ = -1;
    uid_t uid_ = 0;
    gid_t gid_ = 0;
    bool drop_root_ = false;
    int n_databases_ = 0;
};

// One server for the whole test binary, started on first use (several seconds), stopped at
// exit. Tests that stop or kill a server start their own PgServer.
PgServer& shared_pg_server();

// Sets PGPASSWORD for the duration of a scope (and restores what was there).
class ScopedEnv {
  public:
    ScopedEnv(const char* name, const std::string& value);
    ~ScopedEnv();
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

  private:
    std::string name_, old_;
    bool had_ = false;
};

}  // namespace sbtest
