#include "store/testing/pg_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace sbtest {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

bool executable(const fs::path& p) {
    return ::access(p.c_str(), X_OK) == 0;
}

int free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
        if (fd >= 0)
            ::close(fd);
        throw std::runtime_error("no free port on 127.0.0.1");
    }
    ::close(fd);
    return ntohs(a.sin_port);
}

std::string random_hex(int n) {
    std::random_device rd;
    std::string s;
    for (int i = 0; i < n; ++i)
        s += "0123456789abcdef"[rd() % 16];
    return s;
}

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Forks argv with stdout and stderr appended to log, as uid/gid when drop_root; the child
// dies with this process when dies_with_us. Returns its pid.
pid_t spawn(const std::vector<std::string>& argv, const std::string& log, bool drop_root, uid_t uid,
            gid_t gid, bool dies_with_us) {
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0)
        throw std::runtime_error("fork failed");
    if (pid == 0) {
        const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd >= 0) {
            ::dup2(fd, 1);
            ::dup2(fd, 2);
        }
        const int null = ::open("/dev/null", O_RDONLY);
        if (null >= 0)
            ::dup2(null, 0);
        if (drop_root && (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0))
            ::_exit(126);
        // After the change of user, which clears it.
        if (dies_with_us && (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent))
            ::_exit(126);
        std::vector<char*> args;
        for (const auto& a : argv)
            args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        ::execv(args[0], args.data());
        ::_exit(127);
    }
    return pid;
}

// Waits for pid up to timeout_s (then kills it); its exit code, 128 + signal when killed.
int wait_for(pid_t pid, double timeout_s) {
    const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
    int status = 0;
    while (true) {
        const pid_t r = ::waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0)
            return -1;
        if (Clock::now() > deadline) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

std::string PgServer::bin_dir() {
    if (const char* e = std::getenv("SB_PG_BIN"); e && *e)
        return e;
    if (const char* path = std::getenv("PATH")) {
        std::istringstream in(path);
        for (std::string d; std::getline(in, d, ':');)
            if (!d.empty() && executable(fs::path(d) / "initdb") &&
                executable(fs::path(d) / "postgres"))
                return d;
    }
    // Debian keeps them out of PATH, per major version.
    std::vector<std::pair<int, std::string>> found;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/usr/lib/postgresql", ec)) {
        const fs::path bin = e.path() / "bin";
        const std::string v = e.path().filename().string();
        if (executable(bin / "initdb") && executable(bin / "postgres") &&
            v.find_first_not_of("0123456789") == std::string::npos && !v.empty())
            found.emplace_back(std::stoi(v), bin.string());
    }
    if (found.empty())
        return "";
    return std::max_element(found.begin(), found.end())->second;
}

PgServer::PgServer() {
    bin_ = bin_dir();
    if (bin_.empty())
        throw std::runtime_error("PostgreSQL is not installed (no initdb and postgres)");
    std::string templ = (fs::temp_directory_path() / "sb_pg_XXXXXX").string();
    if (!::mkdtemp(templ.data()))
        throw std::runtime_error("mkdtemp failed");
    dir_ = templ;
    password_ = random_hex(24);
    drop_root_ = ::geteuid() == 0;
    if (drop_root_) {
        const passwd* pw = ::getpwnam("nobody");
        if (!pw)
            throw std::runtime_error(
                "running as root and there is no user 'nobody' to run "
                "PostgreSQL as (initdb and postgres refuse root)");
        uid_ = pw->pw_uid;
        gid_ = pw->pw_gid;
    }
    const std::string pwfile = dir_ + "/pw";
    std::ofstream(pwfile) << password_ << "\n";
    if (drop_root_ &&
        (::chown(dir_.c_str(), uid_, gid_) != 0 || ::chown(pwfile.c_str(), uid_, gid_) != 0))
        throw std::runtime_error("cannot hand " + dir_ + " to user nobody");
    const std::string log = dir_ + "/initdb.log";
    const int rc =
        wait_for(spawn({bin_ + "/initdb", "-D", dir_ + "/data", "-U", kUser, "--pwfile=" + pwfile,
                        "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8",
                        "--locale=C", "--no-sync", "--no-instructions"},
                       log, drop_root_, uid_, gid_, false),
                 180);
    if (rc != 0) {
        const std::string out = read_text(log);
        std::error_code ec;
        fs::remove_all(dir_, ec);
        throw std::runtime_error("initdb failed (exit " + std::to_string(rc) + "): " + out);
    }
    start();
}

PgServer::~PgServer() {
    if (running())
        stop();
    std::error_code ec;
    fs::remove_all(dir_, ec);
}

void PgServer::start() {
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    const std::string log = dir_ + "/server.log";
    if (port_ == 0)
        port_ = free_port();
    while (true) {
        const std::size_t log_before = fs::exists(log) ? fs::file_size(log) : 0;
        // Small and fast: a test server's data need not survive the machine.
        pid_ = spawn({bin_ + "/postgres", "-D", dir_ + "/data", "-p", std::to_string(port_), "-k",
                      dir_, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c",
                      "shared_buffers=16MB", "-c", "max_connections=40"},
                     log, drop_root_, uid_, gid_, true);
        const std::string conninfo = "host=127.0.0.1 port=" + std::to_string(port_) +
                                     " dbname=postgres connect_timeout=5 user=" + kUser;
        bool exited = false;
        while (Clock::now() < deadline) {
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                exited = true;
                pid_ = -1;
                break;
            }
            if (PQping(conninfo.c_str()) == PQPING_OK)
                return;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        if (!exited) {
            kill();
            throw std::runtime_error("PostgreSQL did not accept connections within 60 s: " +
                                     log_tail());
        }
        const std::string said = read_text(log).substr(log_before);
        // The port was taken meanwhile: another. Backends of a killed server still hold its
        // shared memory for a moment: again.
        if (said.find("could not bind") != std::string::npos ||
            said.find("Address already in use") != std::string::npos)
            port_ = free_port();
        else if (said.find("still in use") == std::string::npos &&
                 said.find("another server") == std::string::npos)
            throw std::runtime_error("PostgreSQL did not start: " + log_tail());
        if (Clock::now() >= deadline)
            throw std::runtime_error("PostgreSQL did not start within 60 s: " + log_tail());
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
}

void PgServer::stop() {
    if (pid_ <= 0)
        return;
    ::kill(pid_, SIGINT);
    wait_for(pid_, 30);  // SIGKILL after 30 s
    pid_ = -1;
}

void PgServer::kill() {
    if (pid_ <= 0)
        return;
    ::kill(pid_, SIGKILL);
    wait_for(pid_, 30);
    pid_ = -1;
}

std::string PgServer::url(const std::string& db, const std::string& user) const {
    return "postgresql://" + user + "@127.0.0.1:" + std::to_string(port_) + "/" + db;
}

std::string PgServer::sql(const std::string& db, const std::string& sql) const {
    const std::string conninfo = "host=127.0.0.1 port=" + std::to_string(port_) + " dbname=" + db +
                                 " user=" + kUser + " password=" + password_ +
                                 " connect_timeout=10";
    PGconn* c = PQconnectdb(conninfo.c_str());
    if (PQstatus(c) != CONNECTION_OK) {
        const std::string m = PQerrorMessage(c);
        PQfinish(c);
        throw std::runtime_error("cannot connect to the test server: " + m);
    }
    PGresult* r = PQexec(c, sql.c_str());
    const auto st = PQresultStatus(r);
    std::string out;
    if (st == PGRES_TUPLES_OK && PQntuples(r) > 0 && PQnfields(r) > 0)
        out = PQgetvalue(r, 0, 0);
    const std::string err = PQresultErrorMessage(r);
    PQclear(r);
    PQfinish(c);
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK)
        throw std::runtime_error("test server: " + sql + ": " + err);
    return out;
}

std::string PgServer::create_database() {
    const std::string name =
        "sb_" + std::to_string(::getpid()) + "_" + std::to_string(++n_databases_);
    sql("postgres", "CREATE DATABASE " + name);
    return name;
}

std::string PgServer::log_tail() const {
    const std::string all = read_text(dir_ + "/server.log");
    return all.size() > 2000 ? all.substr(all.size() - 2000) : all;
}

PgServer& shared_pg_server() {
    static PgServer server;
    return server;
}

ScopedEnv::ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* v = std::getenv(name)) {
        had_ = true;
        old_ = v;
    }
    ::setenv(name, value.c_str(), 1);
}

ScopedEnv::~ScopedEnv() {
    if (had_)
        ::setenv(name_.c_str(), old_.c_str(), 1);
    else
        ::unsetenv(name_.c_str());
}

}  // namespace sbtest
