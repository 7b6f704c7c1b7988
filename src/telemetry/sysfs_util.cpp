#include "telemetry/sysfs_util.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>

#include "core/utf8.hpp"

namespace sb::sysfs {

namespace {

constexpr long kSysfsMagic = 0x62656572;  // SYSFS_MAGIC from <linux/magic.h>

// Opens path for reading without ever blocking: a FIFO or a device where a sensor file was
// expected is refused (EINVAL), not waited on. Returns -1 with errno set on failure.
int open_regular(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return -1;
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        errno = EINVAL;
        return -1;
    }
    return fd;
}

// Reads fd from offset 0 to the end (at most 64 KiB) with pread; the text is made valid
// UTF-8 (a sensor's name or value is quoted in documents).
ReadResult read_fd(int fd) {
    ReadResult r;
    std::string buf;
    char chunk[4096];
    while (buf.size() < 65536) {
        ssize_t n = ::pread(fd, chunk, sizeof chunk, static_cast<off_t>(buf.size()));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            r.err = errno;
            return r;
        }
        if (n == 0)
            break;
        buf.append(chunk, static_cast<std::size_t>(n));
        // sysfs returns an attribute in one read; a short read is the end (saves a syscall).
        if (static_cast<std::size_t>(n) < sizeof chunk)
            break;
    }
    make_valid_utf8(buf);
    r.text = std::move(buf);
    return r;
}

}  // namespace

ReadResult read_text(const std::string& path) {
    int fd = open_regular(path);
    if (fd < 0)
        return ReadResult{std::nullopt, errno};
    ReadResult r = read_fd(fd);
    ::close(fd);
    return r;
}

FileReader::~FileReader() {
    if (fd_ >= 0)
        ::close(fd_);
}

ReadResult FileReader::read() {
    if (fd_ >= 0)
        return read_fd(fd_);
    int fd = open_regular(path_);
    if (fd < 0)
        return ReadResult{std::nullopt, errno};
    ReadResult r = read_fd(fd);
    struct statfs fs {};
    if (::fstatfs(fd, &fs) == 0 && static_cast<long>(fs.f_type) == kSysfsMagic) {
        fd_ = fd;  // keep it: sysfs attributes are re-read with pread from offset 0
    } else {
        ::close(fd);
    }
    return r;
}

std::optional<std::string> read_trimmed(const std::string& path) {
    auto r = read_text(path);
    if (!r.text)
        return std::nullopt;
    return std::string(trim(*r.text));
}

bool exists(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
}

bool is_dir(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_executable(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
           ::access(path.c_str(), X_OK) == 0;
}

namespace {

// Natural order: runs of digits compare by value, so thermal_zone2 < thermal_zone10.
bool natural_less(const std::string& a, const std::string& b) {
    std::size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        bool da = std::isdigit(static_cast<unsigned char>(a[i])) != 0;
        bool db = std::isdigit(static_cast<unsigned char>(b[j])) != 0;
        if (da && db) {
            std::size_t i2 = i, j2 = j;
            while (i2 < a.size() && std::isdigit(static_cast<unsigned char>(a[i2])))
                ++i2;
            while (j2 < b.size() && std::isdigit(static_cast<unsigned char>(b[j2])))
                ++j2;
            std::string_view na(a.data() + i, i2 - i), nb(b.data() + j, j2 - j);
            while (na.size() > 1 && na.front() == '0')
                na.remove_prefix(1);
            while (nb.size() > 1 && nb.front() == '0')
                nb.remove_prefix(1);
            if (na.size() != nb.size())
                return na.size() < nb.size();
            if (na != nb)
                return na < nb;
            i = i2;
            j = j2;
        } else {
            if (a[i] != b[j])
                return a[i] < b[j];
            ++i;
            ++j;
        }
    }
    return a.size() - i < b.size() - j;
}

}  // namespace

std::vector<std::string> list_dir(const std::string& dir, std::string_view prefix) {
    std::vector<std::string> out;
    DIR* d = ::opendir(dir.c_str());
    if (!d)
        return out;
    while (dirent* e = ::readdir(d)) {
        std::string n = e->d_name;
        if (n == "." || n == "..")
            continue;
        if (n.compare(0, prefix.size(), prefix) != 0)
            continue;
        out.push_back(std::move(n));
    }
    ::closedir(d);
    std::sort(out.begin(), out.end(), natural_less);
    return out;
}

std::optional<double> parse_number(std::string_view s) {
    s = trim(s);
    if (s.empty())
        return std::nullopt;
    if (s.front() == '+')
        s.remove_prefix(1);
    double v = 0;
    // from_chars is locale-independent; it rejects "inf"/"nan" only in the general format if we
    // check for them, so require the first character to be a digit, '-' or '.'.
    char c0 = s.empty() ? '\0' : s.front();
    if (!(std::isdigit(static_cast<unsigned char>(c0)) || c0 == '-' || c0 == '.')) {
        return std::nullopt;
    }
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v))
        return std::nullopt;
    return v;
}

std::optional<double> parse_leading_number(std::string_view s) {
    s = trim(s);
    std::size_t n = 0;
    while (n < s.size() && (std::isdigit(static_cast<unsigned char>(s[n])) || s[n] == '.' ||
                            (n == 0 && s[n] == '-'))) {
        ++n;
    }
    return parse_number(s.substr(0, n));
}

std::string sanitize(std::string_view s) {
    std::string out(s);
    for (char& c : out) {
        bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
        if (!ok)
            c = '_';
    }
    if (out.empty())
        out.push_back('_');
    return out;
}

}  // namespace sb::sysfs
