#include "store/store_name.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace sb {

namespace {

constexpr std::string_view kSchemes[] = {"postgresql://", "postgres://"};

// The position just after the scheme of a URI that starts at pos, or npos.
std::size_t after_scheme(std::string_view s, std::size_t pos = 0) {
    for (auto scheme : kSchemes)
        if (s.substr(pos, scheme.size()) == scheme)
            return pos + scheme.size();
    return std::string_view::npos;
}

int hex_value(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

// libpq percent-decodes parameter names: "pass%77ord" is the password too.
std::string percent_decoded(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '%' && i + 2 < s.size()) {
            const int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
            if (hi >= 0 && lo >= 0) {
                out += static_cast<char>(hi * 16 + lo);
                i += 2;
                continue;
            }
        }
        out += s[i];
    }
    return out;
}

// Where the user information of a URI (after its scheme) ends: the last '@' before the path,
// or npos. libpq takes the first; the last also hides a password with an '@' left unencoded.
std::size_t userinfo_end(std::string_view rest) {
    const std::size_t slash = rest.find('/');
    const std::size_t at = rest.substr(0, slash).rfind('@');
    return at;
}

// The URI from start (just after its scheme) to its end, without its password.
std::string printable_rest(std::string_view rest) {
    std::string out;
    const std::size_t stop = userinfo_end(rest);
    std::size_t pos = 0;
    if (stop != std::string_view::npos) {
        const std::string_view userinfo = rest.substr(0, stop);
        out += userinfo.substr(0, userinfo.find(':'));
        out += '@';
        pos = stop + 1;
    }
    const std::size_t q = rest.find('?', pos);
    out += rest.substr(pos, q == std::string_view::npos ? std::string_view::npos : q - pos);
    if (q == std::string_view::npos)
        return out;
    std::string kept;
    std::string_view params = rest.substr(q + 1);
    while (true) {
        const std::size_t amp = params.find('&');
        const std::string_view p = params.substr(0, amp);
        if (percent_decoded(p.substr(0, p.find('='))) != "password" && !p.empty()) {
            if (!kept.empty())
                kept += '&';
            kept += p;
        }
        if (amp == std::string_view::npos)
            break;
        params = params.substr(amp + 1);
    }
    if (!kept.empty())
        out += "?" + kept;
    return out;
}

}  // namespace

bool is_postgres_url(std::string_view name) {
    return after_scheme(name) != std::string_view::npos;
}

std::string printable_store_name(std::string_view name) {
    const std::size_t start = after_scheme(name);
    if (start == std::string_view::npos)
        return std::string(name);
    return std::string(name.substr(0, start)) + printable_rest(name.substr(start));
}

bool store_name_has_password(std::string_view name) {
    return is_postgres_url(name) && printable_store_name(name) != name;
}

std::vector<std::string> printable_argv(std::vector<std::string> argv) {
    for (auto& a : argv) {
        // A URI runs to the end of its argument: "postgresql://..." or "--db=postgresql://...".
        for (std::size_t i = 0; i < a.size(); ++i) {
            if (after_scheme(a, i) != std::string::npos) {
                a = a.substr(0, i) + printable_store_name(std::string_view(a).substr(i));
                break;
            }
        }
    }
    return argv;
}

std::string fallback_document_base(const std::string& store, const std::string& utc_stamp) {
    const std::size_t start = after_scheme(store);
    if (start == std::string::npos)
        return store + "." + utc_stamp;
    // The database: the path after the host, before any parameter.
    std::string db;
    const std::string_view rest = std::string_view(store).substr(start);
    const std::size_t stop = userinfo_end(rest);
    const std::size_t host_at = stop != std::string_view::npos ? stop + 1 : 0;
    const std::size_t slash = rest.find('/', host_at);
    if (slash != std::string_view::npos) {
        const std::string_view path = rest.substr(slash + 1, rest.find('?', slash) - slash - 1);
        for (char c : percent_decoded(path))
            db += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
    }
    if (db.empty())
        db = "postgresql";
    return db + "." + utc_stamp;
}

std::string write_fallback_document(const std::string& base, const std::string& text) {
    for (int n = 1; n <= 10000; ++n) {
        std::string path = base;
        if (n > 1)
            path += '-' + std::to_string(n);
        path += ".json";
        // O_EXCL: the name is ours only if nobody made it first, at any moment.
        const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 && errno == EEXIST)
            continue;
        if (fd < 0)
            throw runtime_error("cannot create '" + path + "': " + std::strerror(errno));
        std::size_t done = 0;
        while (done < text.size()) {
            const ssize_t w = ::write(fd, text.data() + done, text.size() - done);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                const int e = errno;
                ::close(fd);
                ::unlink(path.c_str());
                throw runtime_error("cannot write '" + path + "': " + std::strerror(e));
            }
            done += static_cast<std::size_t>(w);
        }
        if (::fsync(fd) != 0 || ::close(fd) != 0) {
            const int e = errno;
            ::unlink(path.c_str());
            throw runtime_error("cannot write '" + path + "': " + std::strerror(e));
        }
        return path;
    }
    throw runtime_error("cannot create '" + base + ".json': 10000 files of that name exist");
}

}  // namespace sb
