#include "fleet/transport.hpp"

#include <cstdlib>
#include <filesystem>

#include "core/error.hpp"

namespace sb {

namespace fs = std::filesystem;

std::vector<std::string> ssh_argv(const DeviceSpec& d) {
    std::vector<std::string> a = {"ssh",
                                  "-o",
                                  "BatchMode=yes",
                                  "-o",
                                  "ConnectTimeout=10",
                                  "-o",
                                  "ServerAliveInterval=5",
                                  "-o",
                                  "ServerAliveCountMax=3",
                                  "-o",
                                  "LogLevel=ERROR",
                                  "-p",
                                  std::to_string(d.port)};
    if (d.identity) {
        a.insert(a.end(), {"-i", *d.identity, "-o", "IdentitiesOnly=yes"});
    }
    a.insert(a.end(), d.ssh_options.begin(), d.ssh_options.end());
    a.push_back(d.user.empty() ? d.host : d.user + "@" + d.host);
    a.push_back("--");
    return a;
}

std::string transport_error(const DeviceSpec& d, const std::string& what, const ProcessResult& r) {
    std::string why;
    if (!r.started)
        why = r.err.empty() ? "could not start" : r.last_line();
    else if (r.timed_out)
        why = "no answer before the deadline";
    else if (r.interrupted)
        why = "interrupted";
    else if (r.signal)
        why = "killed by signal " + std::to_string(r.signal);
    else
        why = r.last_line().empty() ? "exit code " + std::to_string(r.exit_code) : r.last_line();
    return d.name + " (" + d.transport + "): " + what + ": " + why;
}

namespace {

class SshTransport : public Transport {
  public:
    explicit SshTransport(DeviceSpec d) : d_(std::move(d)) {}
    ProcessResult shell(const std::string& cmd, double timeout_s,
                        const std::string& stdout_path) override {
        auto argv = ssh_argv(d_);
        argv.push_back(cmd);
        ProcessOptions o;
        o.timeout_s = timeout_s;
        o.stdout_path = stdout_path;
        return run_process(argv, o);
    }
    void push(const std::string& local, const std::string& remote, double timeout_s) override {
        auto argv = ssh_argv(d_);
        const std::string part = remote + ".part";
        argv.push_back("cat > " + shell_quote(part) + " && mv -f " + shell_quote(part) + " " +
                       shell_quote(remote));
        ProcessOptions o;
        o.timeout_s = timeout_s;
        o.stdin_path = local;
        auto r = run_process(argv, o);
        if (!r.ok())
            throw runtime_error(transport_error(d_, "copying " + local + " there", r));
    }
    void pull(const std::string& remote, const std::string& local, double timeout_s) override {
        auto argv = ssh_argv(d_);
        argv.push_back("cat " + shell_quote(remote));
        ProcessOptions o;
        o.timeout_s = timeout_s;
        o.stdout_path = local;
        auto r = run_process(argv, o);
        if (!r.ok())
            throw runtime_error(transport_error(d_, "copying " + remote + " back", r));
    }

  private:
    DeviceSpec d_;
};

std::string adb_program() {
    const char* a = std::getenv("STAGEBENCH_ADB");
    return a && *a ? a : "adb";
}

class AdbTransport : public Transport {
  public:
    explicit AdbTransport(DeviceSpec d) : d_(std::move(d)) {}
    ProcessResult shell(const std::string& cmd, double timeout_s,
                        const std::string& stdout_path) override {
        ProcessOptions o;
        o.timeout_s = timeout_s;
        o.stdout_path = stdout_path;
        return run_process({adb_program(), "-s", d_.serial, "shell", cmd}, o);
    }
    void push(const std::string& local, const std::string& remote, double timeout_s) override {
        ProcessOptions o;
        o.timeout_s = timeout_s;
        auto r = run_process({adb_program(), "-s", d_.serial, "push", local, remote}, o);
        if (!r.ok())
            throw runtime_error(transport_error(d_, "pushing " + local, r));
    }
    void pull(const std::string& remote, const std::string& local, double timeout_s) override {
        ProcessOptions o;
        o.timeout_s = timeout_s;
        auto r = run_process({adb_program(), "-s", d_.serial, "pull", remote, local}, o);
        if (!r.ok())
            throw runtime_error(transport_error(d_, "pulling " + remote, r));
    }

  private:
    DeviceSpec d_;
};

class LocalTransport : public Transport {
  public:
    explicit LocalTransport(DeviceSpec d) : d_(std::move(d)) {}
    ProcessResult shell(const std::string& cmd, double timeout_s,
                        const std::string& stdout_path) override {
        ProcessOptions o;
        o.timeout_s = timeout_s;
        o.stdout_path = stdout_path;
        return run_process({"sh", "-c", cmd}, o);
    }
    void push(const std::string& local, const std::string& remote, double) override {
        copy(local, remote, "copying " + local);
    }
    void pull(const std::string& remote, const std::string& local, double) override {
        copy(remote, local, "copying " + remote + " back");
    }
    std::vector<std::string> run_prefix() const override { return d_.prefix; }
    bool is_this_machine() const override { return true; }

  private:
    void copy(const std::string& from, const std::string& to, const std::string& what) {
        std::error_code ec;
        fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
        if (ec)
            throw runtime_error(d_.name + " (" + d_.transport + "): " + what + ": " + ec.message());
    }
    DeviceSpec d_;
};

}  // namespace

std::unique_ptr<Transport> make_transport(const DeviceSpec& d) {
    switch (d.kind) {
        case TransportKind::ssh:
            return std::make_unique<SshTransport>(d);
        case TransportKind::adb:
            return std::make_unique<AdbTransport>(d);
        case TransportKind::local:
        case TransportKind::exec:
            return std::make_unique<LocalTransport>(d);
    }
    return nullptr;
}

}  // namespace sb
