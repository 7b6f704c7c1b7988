#include "core/file_io.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <random>
#include <thread>

#include "core/clock.hpp"
#include "core/error.hpp"

namespace sb {
namespace fs = std::filesystem;

namespace {

const char* kind_name(mode_t m) {
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISSOCK(m))
        return "a socket";
    return "not a regular file";
}

enum class Target { absent, regular, link_to_regular, in_place, directory, refused };

struct Classified {
    Target target = Target::absent;
    std::string resolved;  // link_to_regular: the file the link points to
    std::string why;       // refused: why
};

// /dev/stdout, /dev/fd/N and /proc/self/fd/N name a file some process has open: written where
// that descriptor points, never replaced.
bool names_an_open_file(const std::string& path) {
    return path.rfind("/dev/", 0) == 0 || path.rfind("/proc/", 0) == 0;
}

Classified classify(const std::string& path) {
    Classified c;
    struct stat l {};
    if (::lstat(path.c_str(), &l) != 0) {
        if (errno == ENOENT)
            return c;
        c.target = Target::refused;
        c.why = std::strerror(errno);
        return c;
    }
    mode_t mode = l.st_mode;
    const bool link = S_ISLNK(mode);
    if (link) {
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0)
            return c;  // a dangling link: replaced by the new file, like an absent path
        mode = st.st_mode;
    }
    if (S_ISREG(mode)) {
        if (!link) {
            c.target = Target::regular;
        } else if (names_an_open_file(path)) {
            c.target = Target::in_place;
        } else {
            std::error_code ec;
            const fs::path real = fs::canonical(path, ec);
            if (ec) {
                c.target = Target::refused;
                c.why = ec.message();
            } else {
                c.target = Target::link_to_regular;
                c.resolved = real.string();
            }
        }
    } else if (S_ISDIR(mode)) {
        c.target = Target::directory;
        c.why = "it is a directory";
    } else if (S_ISFIFO(mode) || S_ISCHR(mode)) {
        c.target = Target::in_place;
    } else {
        c.target = Target::refused;
        c.why = std::string("it is ") + kind_name(mode);
    }
    return c;
}

std::string cannot_write(const std::string& what, const std::string& path, const std::string& why) {
    return "cannot write " + what + " '" + path + "': " + why;
}

// A new file at target needs a writable directory.
void check_directory_of(const std::string& target, const std::string& what,
                        const std::string& path) {
    const fs::path parent = fs::path(target).parent_path();
    const std::string dir = parent.empty() ? std::string(".") : parent.string();
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0)
        throw input_error(cannot_write(what, path, "no directory '" + dir + "'"));
    if (!S_ISDIR(st.st_mode))
        throw input_error(cannot_write(what, path, "'" + dir + "' is not a directory"));
    if (::access(dir.c_str(), W_OK) != 0)
        throw input_error(
            cannot_write(what, path, "directory '" + dir + "': " + std::strerror(errno)));
}

std::string temp_name(const std::string& target) {
    std::random_device rd;
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, ".tmp-%08x", static_cast<unsigned>(rd()));
    return target + suffix;
}

// The temporaries being written, for unlink_pending_outputs() in a signal handler: a slot is
// free (0), being filled (1) or holds a path (2); lock-free atomics and static storage only.
struct PendingSlot {
    std::atomic<int> state{0};
    char path[4096];
};
PendingSlot g_pending[32];
static_assert(std::atomic<int>::is_always_lock_free);

int add_pending(const std::string& path) {
    if (path.size() >= sizeof(PendingSlot::path))
        return -1;
    for (int i = 0; i < static_cast<int>(std::size(g_pending)); ++i) {
        int expected = 0;
        if (g_pending[i].state.compare_exchange_strong(expected, 1)) {
            std::memcpy(g_pending[i].path, path.c_str(), path.size() + 1);
            g_pending[i].state.store(2);
            return i;
        }
    }
    return -1;
}

void drop_pending(int& slot) {
    if (slot >= 0)
        g_pending[slot].state.store(0);
    slot = -1;
}

}  // namespace

void unlink_pending_outputs() {
    for (auto& slot : g_pending)
        if (slot.state.load() == 2)
            ::unlink(slot.path);
}

void require_regular_file(const std::string& path, const std::string& what) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        throw input_error("cannot read " + what + " '" + path + "': " + std::strerror(errno));
    if (!S_ISREG(st.st_mode))
        throw input_error("cannot read " + what + " '" + path + "': it is " +
                          kind_name(st.st_mode) + ", not a regular file");
}

std::string read_input_file(const std::string& path, const std::string& what) {
    require_regular_file(path, what);
    // O_NONBLOCK: should the path have been swapped for a FIFO since the check, opening it
    // does not wait for a writer (and fstat below refuses it).
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        throw input_error("cannot read " + what + " '" + path + "': " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        throw input_error("cannot read " + what + " '" + path + "': not a regular file");
    }
    std::string text;
    text.reserve(static_cast<std::size_t>(st.st_size));
    char buf[1 << 16];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            const int e = errno;
            ::close(fd);
            throw input_error("cannot read " + what + " '" + path + "': " + std::strerror(e));
        }
        if (n == 0)
            break;
        text.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return text;
}

bool output_is_replaced(const std::string& path) {
    const Target t = classify(path).target;
    return t == Target::absent || t == Target::regular || t == Target::link_to_regular;
}

void check_output_path(const std::string& path, const std::string& what) {
    if (path.empty())
        throw usage_error("an empty path given for " + what);
    const Classified c = classify(path);
    switch (c.target) {
        case Target::directory:
        case Target::refused:
            throw input_error(cannot_write(what, path, c.why));
        case Target::absent:
        case Target::regular:
            check_directory_of(path, what, path);
            break;
        case Target::link_to_regular:
            check_directory_of(c.resolved, what, path);
            break;
        case Target::in_place:
            break;
    }
}

OutputFile::OutputFile(const std::string& path, const std::string& what)
    : path_(path), what_(what) {
    check_output_path(path, what);
    const Classified c = classify(path);
    if (c.target == Target::in_place) {
        in_place_ = true;
        target_ = path;
        // Non-blocking: a FIFO without a reader answers ENXIO at once instead of blocking the
        // open; the writes below wait for a slow reader with poll(), under a deadline.
        const int64_t until = now_ns() + kFifoReaderWait_ms * 1'000'000;
        for (;;) {
            fd_ = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_APPEND | O_CLOEXEC);
            if (fd_ >= 0)
                break;
            if (errno != ENXIO)
                throw input_error(cannot_write(what, path, std::strerror(errno)));
            if (now_ns() > until)
                throw input_error(cannot_write(
                    what, path,
                    "it is a FIFO that no process reads (start the reader first; waited " +
                        std::to_string(kFifoReaderWait_ms / 1000) + " s)"));
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        return;
    }
    target_ = c.target == Target::link_to_regular ? c.resolved : path;
    tmp_ = temp_name(target_);
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0) {
        const int e = errno;
        tmp_.clear();
        throw input_error(cannot_write(what, path, std::strerror(e)));
    }
    pending_ = add_pending(tmp_);
    // A file that is replaced keeps its permissions.
    struct stat st {};
    if (c.target != Target::absent && ::stat(target_.c_str(), &st) == 0)
        (void)::fchmod(fd_, st.st_mode & 07777);
}

OutputFile::~OutputFile() {
    if (fd_ >= 0)
        ::close(fd_);
    if (!tmp_.empty())
        ::unlink(tmp_.c_str());
    drop_pending(pending_);
}

void OutputFile::fail(const std::string& why) {
    if (fd_ >= 0)
        ::close(fd_);
    fd_ = -1;
    if (!tmp_.empty())
        ::unlink(tmp_.c_str());
    tmp_.clear();
    drop_pending(pending_);
    throw runtime_error(cannot_write(what_, path_, why));
}

void OutputFile::write(std::string_view bytes) {
    if (fd_ < 0)
        throw runtime_error(cannot_write(what_, path_, "already closed"));
    int64_t last_progress = now_ns();
    while (!bytes.empty()) {
        const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
        if (n > 0) {
            bytes.remove_prefix(static_cast<std::size_t>(n));
            last_progress = now_ns();
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (now_ns() - last_progress > kStalledWrite_ms * 1'000'000)
                fail("its reader stopped reading for " + std::to_string(kStalledWrite_ms / 1000) +
                     " s");
            pollfd p{fd_, POLLOUT, 0};
            (void)::poll(&p, 1, 100);
            continue;
        }
        fail(n < 0 ? std::strerror(errno) : "no progress");
    }
}

void OutputFile::commit() {
    if (fd_ < 0)
        throw runtime_error(cannot_write(what_, path_, "already closed"));
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0 && !in_place_) {
        const int e = errno;
        ::unlink(tmp_.c_str());
        tmp_.clear();
        drop_pending(pending_);
        throw runtime_error(cannot_write(what_, path_, std::strerror(e)));
    }
    if (in_place_)
        return;
    if (std::rename(tmp_.c_str(), target_.c_str()) != 0) {
        const int e = errno;
        ::unlink(tmp_.c_str());
        tmp_.clear();
        drop_pending(pending_);
        throw runtime_error(cannot_write(
            what_, path_, std::string("cannot move it into place: ") + std::strerror(e)));
    }
    tmp_.clear();
    drop_pending(pending_);
}

void write_output_file(const std::string& path, std::string_view text, const std::string& what) {
    OutputFile f(path, what);
    f.write(text);
    f.commit();
}

}  // namespace sb
