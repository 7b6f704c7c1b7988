#include "fleet/transport.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>

#include "core/error.hpp"
#include "core/strings.hpp"

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

std::string transport_error(const DeviceSpec& d, const std::string& what, const ProcessResult& r,
                            std::uint64_t max_bytes) {
    std::string why;
    if (r.over_limit)
        why = "it sent more than the " + std::to_string(max_bytes) +
              " bytes expected (stopped there)";
    else if (!r.output_error.empty())
        why = r.output_error;
    else if (!r.started)
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

void Transport::pull_files(const std::string& remote_dir, const std::vector<std::string>& names,
                           const std::string& local_dir, double timeout_s,
                           std::uint64_t max_bytes) {
    for (const auto& n : names)
        pull(remote_dir + "/" + n, (fs::path(local_dir) / n).string(), timeout_s, max_bytes);
}

namespace {

// The octal number of a tar header's field ("0000644 ", NUL or space ended).
std::optional<std::uint64_t> tar_octal(const char* field, std::size_t size) {
    std::uint64_t v = 0;
    std::size_t i = 0;
    while (i < size && field[i] == ' ')
        ++i;
    bool any = false;
    for (; i < size && field[i] >= '0' && field[i] <= '7'; ++i, any = true) {
        if (v > (std::uint64_t{1} << 60))
            return std::nullopt;
        v = v * 8 + static_cast<std::uint64_t>(field[i] - '0');
    }
    if (!any || (i < size && field[i] != ' ' && field[i] != '\0'))
        return std::nullopt;
    return v;
}

}  // namespace

std::string untar_files(const std::string& tar_path, const std::vector<std::string>& names,
                        const std::string& dir) {
    std::ifstream in(tar_path, std::ios::binary);
    if (!in)
        return "cannot read " + tar_path;
    std::set<std::string> wanted(names.begin(), names.end()), seen;
    char h[512];
    while (in.read(h, sizeof h)) {
        if (std::all_of(h, h + sizeof h, [](char c) { return c == 0; }))
            break;  // the end
        const auto size = tar_octal(h + 124, 12);
        if (!size)
            return "a damaged tar header";
        std::string name(h, strnlen(h, 100));
        // POSIX ustar's name prefix; in GNU's own format those bytes are other fields.
        const bool posix = std::memcmp(h + 257, "ustar\0", 6) == 0;
        const std::string prefix = posix ? std::string(h + 345, strnlen(h + 345, 155)) : "";
        if (!prefix.empty())
            name = prefix + "/" + name;
        if (name.rfind("./", 0) == 0)
            name.erase(0, 2);
        const char type = h[156];
        const std::uint64_t padded = (*size + 511) / 512 * 512;
        if (type == 'x' || type == 'g') {  // pax attributes: the names are plain ones
            in.seekg(static_cast<std::streamoff>(padded), std::ios::cur);
            continue;
        }
        if ((type != '0' && type != '\0') || !wanted.count(name))
            return "'" + name + "' in it is not one of the files asked for";
        std::ofstream out(fs::path(dir) / name, std::ios::binary | std::ios::trunc);
        std::vector<char> buf(64 << 10);
        for (std::uint64_t left = *size; left > 0;) {
            const auto n = static_cast<std::streamsize>(std::min<std::uint64_t>(left, buf.size()));
            if (!in.read(buf.data(), n))
                return "it ends inside " + name;
            out.write(buf.data(), n);
            left -= static_cast<std::uint64_t>(n);
        }
        if (!out)
            return "cannot write " + (fs::path(dir) / name).string();
        in.seekg(static_cast<std::streamoff>(padded - *size), std::ios::cur);
        seen.insert(name);
    }
    for (const auto& n : wanted)
        if (!seen.count(n))
            return n + " is not in it";
    return "";
}

bool ssh_options_share(const std::vector<std::string>& ssh_options) {
    for (std::size_t i = 0; i < ssh_options.size(); ++i) {
        const std::string& w = ssh_options[i];
        std::string option;
        if (w == "-o" && i + 1 < ssh_options.size())
            option = ssh_options[++i];
        else if (w.rfind("-o", 0) == 0)
            option = w.substr(2);
        else if (w == "-M" || w.rfind("-S", 0) == 0)
            return true;
        option.erase(0, option.find_first_not_of(" \t"));
        std::transform(option.begin(), option.end(), option.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        if (option.rfind("control", 0) == 0)
            return true;
    }
    return false;
}

namespace {

// The longest control path: a socket's path holds 107 bytes, and ssh binds the master first to
// the path with a random suffix of 17 characters.
constexpr std::size_t kMaxControlPath = 88;

}  // namespace

SshSharing::SshSharing() {
    std::error_code ec;
    std::vector<std::string> bases;
    const fs::path tmp = fs::temp_directory_path(ec);
    if (!ec)
        bases.push_back(tmp.string());
    bases.push_back("/tmp");
    for (const auto& base : bases) {
        std::string tmpl = (fs::path(base) / "sb-ssh-XXXXXX").string();
        // Room for "/NNNN" after it.
        if (tmpl.size() + 5 > kMaxControlPath)
            continue;
        if (::mkdtemp(tmpl.data())) {  // mode 0700
            dir_ = tmpl;
            return;
        }
    }
}

SshSharing::~SshSharing() {
    if (dir_.empty())
        return;
    std::error_code ec;
    fs::remove_all(dir_, ec);
}

std::string SshSharing::control_path(std::size_t index) const {
    if (dir_.empty() || index > 9999)
        return "";
    return dir_ + "/" + std::to_string(index);
}

namespace {

class SshTransport : public Transport {
  public:
    SshTransport(DeviceSpec d, std::string control_path)
        : d_(std::move(d)), control_path_(std::move(control_path)) {}
    ~SshTransport() override {
        // The connection this device's calls shared, closed now rather than when idle.
        std::error_code ec;
        if (!control_path_.empty() && fs::exists(control_path_, ec)) {
            // After Ctrl-C too: it closes what this run opened. Output and failure are of no
            // use here (ControlPersist ends a master nobody closed).
            ProcessOptions o;
            o.timeout_s = 10;
            o.after_interrupt = true;
            try {
                run_process({"ssh", "-F", "/dev/null", "-o", "ControlPath=" + control_path_, "-O",
                             "exit", d_.host},
                            o);
            } catch (...) {
            }
        }
    }
    ProcessResult shell(const std::string& cmd, double timeout_s,
                        const std::string& stdout_path) override {
        auto argv = argv_();
        argv.push_back(cmd);
        ProcessOptions o;
        o.timeout_s = timeout_s;
        o.stdout_path = stdout_path;
        o.max_stdout_file = stdout_path.empty() ? 0 : kMaxUnlistedFileBytes;
        return run_process(argv, o);
    }
    void push(const std::string& local, const std::string& remote, double timeout_s) override {
        auto argv = argv_();
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
    void pull(const std::string& remote, const std::string& local, double timeout_s,
              std::uint64_t max_bytes) override {
        auto argv = argv_();
        argv.push_back("cat " + shell_quote(remote));
        ProcessOptions o;
        o.timeout_s = timeout_s;
        o.stdout_path = local;
        o.max_stdout_file = max_bytes;
        auto r = run_process(argv, o);
        if (!r.ok())
            throw runtime_error(transport_error(d_, "copying " + remote + " back", r, max_bytes));
    }

    void pull_files(const std::string& remote_dir, const std::vector<std::string>& names,
                    const std::string& local_dir, double timeout_s,
                    std::uint64_t max_bytes) override {
        if (names.empty())
            return;
        for (const auto& n : names)
            if (n.empty() || n.find('/') != std::string::npos || n[0] == '-')
                return Transport::pull_files(remote_dir, names, local_dir, timeout_s, max_bytes);
        auto argv = argv_();
        std::string cmd = "cd " + shell_quote(remote_dir) + " && tar -cf -";
        for (const auto& n : names)
            cmd += " " + shell_quote(n);
        argv.push_back(cmd);
        const std::string tar = (fs::path(local_dir) / ".files.tar").string();
        ProcessOptions o;
        o.timeout_s = timeout_s;
        o.stdout_path = tar;
        // The files' bytes, and the tar's own: a header and padding per file, a pax header
        // each where the device's tar writes one, the end blocks and a 10 KiB record's padding.
        const std::uint64_t framing = names.size() * 2048 + 20480;
        o.max_stdout_file = max_bytes > UINT64_MAX - framing ? UINT64_MAX : max_bytes + framing;
        auto r = run_process(argv, o);
        const std::string what = "copying " + remote_dir + " back";
        std::string why = r.ok() ? untar_files(tar, names, local_dir) : "";
        std::error_code ec;
        fs::remove(tar, ec);
        if (!r.ok())
            throw runtime_error(transport_error(d_, what, r, o.max_stdout_file));
        if (!why.empty())
            throw runtime_error(d_.name + " (" + d_.transport + "): " + what + ": " + why);
    }

  private:
    // ssh_argv, with the shared connection's options before the user's (ssh takes an option's
    // first value): a connection opened by the first call and left open, reused by the others.
    std::vector<std::string> argv_() const {
        auto argv = ssh_argv(d_);
        if (!control_path_.empty()) {
            const auto user = argv.end() - static_cast<long>(d_.ssh_options.size()) - 2;
            argv.insert(user, {"-o", "ControlMaster=auto", "-o", "ControlPath=" + control_path_,
                               "-o", "ControlPersist=60"});
        }
        return argv;
    }
    DeviceSpec d_;
    std::string control_path_;
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
        o.max_stdout_file = stdout_path.empty() ? 0 : kMaxUnlistedFileBytes;
        return run_process({adb_program(), "-s", d_.serial, "shell", cmd}, o);
    }
    void push(const std::string& local, const std::string& remote, double timeout_s) override {
        ProcessOptions o;
        o.timeout_s = timeout_s;
        auto r = run_process({adb_program(), "-s", d_.serial, "push", local, remote}, o);
        if (!r.ok())
            throw runtime_error(transport_error(d_, "pushing " + local, r));
    }
    void pull(const std::string& remote, const std::string& local, double timeout_s,
              std::uint64_t max_bytes) override {
        // adb's pull writes the file itself, so what the device says the file holds is asked
        // first, and a larger file is not copied at all. A device that says less and sends
        // more is refused after the copy, bounded on disk by the deadline only. A device
        // that cannot say (no stat) is copied and checked after.
        const auto said = shell("stat -c %s " + shell_quote(remote), std::min(timeout_s, 30.0), "");
        if (said.ok()) {
            std::uint64_t size = 0;
            const std::string text = sb::trimmed(said.out);
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), size);
            if (!text.empty() && ec == std::errc() && end == text.data() + text.size() &&
                size > max_bytes)
                throw runtime_error(d_.name + " (" + d_.transport + "): pulling " + remote +
                                    ": it has " + std::to_string(size) + " bytes, more than the " +
                                    std::to_string(max_bytes) + " expected (not copied)");
        }
        ProcessOptions o;
        o.timeout_s = timeout_s;
        auto r = run_process({adb_program(), "-s", d_.serial, "pull", remote, local}, o);
        if (!r.ok())
            throw runtime_error(transport_error(d_, "pulling " + remote, r));
        std::error_code ec;
        const auto size = fs::file_size(local, ec);
        if (!ec && size > max_bytes) {
            fs::remove(local, ec);
            throw runtime_error(d_.name + " (" + d_.transport + "): pulling " + remote +
                                ": it sent " + std::to_string(size) + " bytes, more than the " +
                                std::to_string(max_bytes) + " expected");
        }
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
        o.max_stdout_file = stdout_path.empty() ? 0 : kMaxUnlistedFileBytes;
        return run_process({"sh", "-c", cmd}, o);
    }
    void push(const std::string& local, const std::string& remote, double) override {
        copy(local, remote, "copying " + local);
    }
    void pull(const std::string& remote, const std::string& local, double,
              std::uint64_t max_bytes) override {
        std::error_code ec;
        const auto size = fs::file_size(remote, ec);
        if (!ec && size > max_bytes)
            throw runtime_error(d_.name + " (" + d_.transport + "): copying " + remote +
                                " back: it has " + std::to_string(size) + " bytes, more than the " +
                                std::to_string(max_bytes) + " expected");
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

std::unique_ptr<Transport> make_transport(const DeviceSpec& d, const std::string& control_path) {
    switch (d.kind) {
        case TransportKind::ssh:
            return std::make_unique<SshTransport>(
                d, ssh_options_share(d.ssh_options) ? "" : control_path);
        case TransportKind::adb:
            return std::make_unique<AdbTransport>(d);
        case TransportKind::local:
        case TransportKind::exec:
            return std::make_unique<LocalTransport>(d);
    }
    return nullptr;
}

}  // namespace sb
