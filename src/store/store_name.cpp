#include "store/store_name.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
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

// Whether s is valid percent-encoding (every '%' followed by two hex digits), as libpq wants.
bool well_encoded(std::string_view s) {
    for (std::size_t i = 0; i < s.size(); ++i)
        if (s[i] == '%' &&
            (i + 2 >= s.size() || hex_value(s[i + 1]) < 0 || hex_value(s[i + 2]) < 0))
            return false;
    return true;
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

bool is_libpq_keyword(std::string_view key);

// A parameter (its name, or the whole parameter when it has no '=') whose value may be a
// secret: "password", "sslpassword", any name holding "pass", and one libpq does not know or
// cannot decode: what was meant is unknown, and it may be the rest of a password with an '&'
// left unencoded.
bool secret_param(std::string_view name) {
    if (!well_encoded(name))
        return true;
    const std::string key = percent_decoded(name);
    return lower(key).find("pass") != std::string::npos || !is_libpq_keyword(key);
}

// Where the text after a scheme-like start of name begins, for a name that starts with a
// PostgreSQL scheme, in any case, with or without its "//" ("postgresql:", "POSTGRES://h"), or
// npos.
std::size_t after_scheme_like(std::string_view s) {
    const std::string head = lower(s.substr(0, 11));
    std::size_t pos = std::string_view::npos;
    if (head.rfind("postgresql:", 0) == 0)
        pos = 11;
    else if (head.rfind("postgres:", 0) == 0)
        pos = 9;
    else
        return pos;
    while (pos < s.size() && s[pos] == '/')
        ++pos;
    return pos;
}

// libpq's connection keywords (PQconndefaults()): a name that starts with one and '=' is a
// key=value connection string to libpq.
constexpr std::string_view kLibpqKeywords[] = {"application_name",
                                               "channel_binding",
                                               "client_encoding",
                                               "connect_timeout",
                                               "dbname",
                                               "fallback_application_name",
                                               "gssencmode",
                                               "gsslib",
                                               "host",
                                               "hostaddr",
                                               "keepalives",
                                               "keepalives_count",
                                               "keepalives_idle",
                                               "keepalives_interval",
                                               "krbsrvname",
                                               "load_balance_hosts",
                                               "options",
                                               "passfile",
                                               "password",
                                               "port",
                                               "replication",
                                               "require_auth",
                                               "requirepeer",
                                               "requiressl",
                                               "service",
                                               "sslcert",
                                               "sslcompression",
                                               "sslcrl",
                                               "sslcrldir",
                                               "sslkey",
                                               "sslmode",
                                               "sslpassword",
                                               "sslrootcert",
                                               "sslsni",
                                               "target_session_attrs",
                                               "tcp_user_timeout",
                                               "user"};

bool is_libpq_keyword(std::string_view key) {
    for (auto k : kLibpqKeywords)
        if (key == k)
            return true;
    return false;
}

bool is_key_value_string(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i])))
        ++i;
    const std::size_t word = i;
    while (i < s.size() && (std::isalpha(static_cast<unsigned char>(s[i])) || s[i] == '_'))
        ++i;
    const std::string_view key = s.substr(word, i - word);
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i])))
        ++i;
    return i < s.size() && s[i] == '=' && is_libpq_keyword(key);
}

// A password keyword of a key=value string: the keyword's start, where its value starts and
// ends (the value as written, quotes included), and its value as libpq reads it.
struct KeywordValue {
    std::size_t start = 0, value = 0, end = 0;
    std::string text;
};

// Every "WORD = VALUE" of s whose WORD holds "pass" (any case), as libpq's key=value grammar
// reads them: a value is a run of non-blanks, or a quoted string with backslash escapes.
std::vector<KeywordValue> password_keywords(std::string_view s) {
    std::vector<KeywordValue> out;
    const std::string low = lower(s);
    auto is_word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    // Each word once, and never one inside a value already taken: the matches are in order
    // and do not overlap.
    std::size_t from = 0;
    for (std::size_t hit = low.find("pass"); hit != std::string::npos;
         hit = low.find("pass", from)) {
        std::size_t start = hit;
        while (start > 0 && start > from && is_word(s[start - 1]))
            --start;
        std::size_t i = hit + 4;
        while (i < s.size() && is_word(s[i]))
            ++i;
        from = i;
        while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i])))
            ++i;
        if (i >= s.size() || s[i] != '=')
            continue;
        ++i;
        while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i])))
            ++i;
        KeywordValue kv;
        kv.start = start;
        kv.value = i;
        if (i < s.size() && s[i] == '\'') {
            for (++i; i < s.size() && s[i] != '\''; ++i) {
                if (s[i] == '\\' && i + 1 < s.size())
                    ++i;
                kv.text += s[i];
            }
            if (i < s.size())
                ++i;
        } else {
            while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i])))
                kv.text += s[i++];
        }
        kv.end = i;
        from = i;
        out.push_back(std::move(kv));
    }
    return out;
}

// Where the parameters of a URI (after its scheme) begin: the first '?' followed by a libpq
// keyword and '=' ("?sslmode=require"), npos when none. A '?' before it, if any, is taken for
// part of a password.
std::size_t query_start(std::string_view rest) {
    for (std::size_t q = rest.find('?'); q != std::string_view::npos; q = rest.find('?', q + 1)) {
        const std::size_t end = rest.find_first_of("=&", q + 1);
        if (end != std::string_view::npos && rest[end] == '=' &&
            is_libpq_keyword(percent_decoded(rest.substr(q + 1, end - q - 1))))
            return q;
    }
    return std::string_view::npos;
}

// Where the user information of a URI (after its scheme) ends: the last '@' before its
// parameters, or npos. libpq takes the first '@' before any '/'; the last also hides a
// password with an '@', '/' or '?' left unencoded (libpq would read a host, a port, a
// database or parameters out of it, and quote them).
std::size_t userinfo_end(std::string_view rest) {
    return rest.substr(0, query_start(rest)).rfind('@');
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
        if (!p.empty() && !secret_param(p.substr(0, p.find('=')))) {
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

// Every secret name holds (see scrub_store_secrets), longest first.
std::vector<std::string> secrets_of(std::string_view name) {
    std::vector<std::string> out;
    auto add = [&out](std::string_view v) {
        if (v.empty())
            return;
        out.emplace_back(v);
        std::string d = percent_decoded(v);
        d = d.substr(0, d.find('\0'));  // libpq's messages are C strings
        if (!d.empty() && d != v)
            out.push_back(std::move(d));
    };
    std::size_t start = after_scheme(name);
    if (start == std::string_view::npos)
        start = after_scheme_like(name);
    if (start != std::string_view::npos) {
        const std::string_view rest = name.substr(start);
        const std::size_t at = userinfo_end(rest);
        if (at != std::string_view::npos) {
            const std::string_view userinfo = rest.substr(0, at);
            const std::size_t colon = userinfo.find(':');
            if (colon != std::string_view::npos) {
                // The password, and the pieces libpq may quote when it reads less of it (up
                // to an '@', a '/' it took for the path, a ':' before a port).
                const std::string_view pw = userinfo.substr(colon + 1);
                add(pw);
                std::size_t piece = 0;
                for (std::size_t i = 0; i <= pw.size(); ++i)
                    if (i == pw.size() ||
                        std::string_view("@/?#:[]&=").find(pw[i]) != std::string_view::npos) {
                        if (piece != 0 || i != pw.size())
                            add(pw.substr(piece, i - piece));
                        piece = i + 1;
                    }
            }
        }
        const std::size_t q = rest.find('?', at == std::string_view::npos ? 0 : at + 1);
        if (q != std::string_view::npos) {
            std::string_view params = rest.substr(q + 1);
            while (!params.empty()) {
                const std::size_t amp = params.find('&');
                const std::string_view p = params.substr(0, amp);
                const std::size_t eq = p.find('=');
                if (secret_param(p.substr(0, eq))) {
                    // libpq quotes the name of one it does not know, the value it cannot use.
                    add(p);
                    if (eq != std::string_view::npos) {
                        add(p.substr(0, eq));
                        add(p.substr(eq + 1));
                    }
                }
                params =
                    amp == std::string_view::npos ? std::string_view() : params.substr(amp + 1);
            }
        }
    }
    for (const KeywordValue& kv : password_keywords(name)) {
        add(name.substr(kv.value, kv.end - kv.value));
        add(kv.text);
    }
    std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
        return a.size() > b.size() || (a.size() == b.size() && a < b);
    });
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

void replace_all(std::string& s, std::string_view what, std::string_view with) {
    if (what.empty())
        return;
    for (std::size_t pos = s.find(what); pos != std::string::npos;
         pos = s.find(what, pos + with.size()))
        s.replace(pos, what.size(), with);
}

}  // namespace

bool is_postgres_url(std::string_view name) {
    return after_scheme(name) != std::string_view::npos;
}

std::string printable_store_name(std::string_view name) {
    std::size_t start = after_scheme(name);
    if (start == std::string_view::npos)
        start = after_scheme_like(name);
    if (start != std::string_view::npos)
        return std::string(name.substr(0, start)) + printable_rest(name.substr(start));
    if (!is_key_value_string(name))
        return std::string(name);
    std::string out;
    std::size_t pos = 0;
    for (const KeywordValue& kv : password_keywords(name)) {
        out += name.substr(pos, kv.start - pos);
        pos = kv.end;
    }
    out += name.substr(pos);
    return out;
}

std::string unusable_store_name(std::string_view name) {
    if (is_postgres_url(name))
        return "";
    if (after_scheme_like(name) != std::string_view::npos) {
        const std::string shown = printable_store_name(name);
        return "results store '" + shown +
               "' is not a PostgreSQL URI: give postgresql://[user@]host[:port]/dbname (./" +
               shown + " for a file of that name)";
    }
    if (is_key_value_string(name))
        return "the results store (--db) is a libpq key=value connection string, which --db "
               "does not take: give it as a URI, "
               "postgresql://[user@]host[:port]/dbname[?param=value]";
    return "";
}

std::string scrub_store_secrets(std::string_view message, std::string_view name) {
    std::string out(message);
    const std::string shown = printable_store_name(name);
    if (shown != name)
        replace_all(out, name, shown);
    for (const std::string& s : secrets_of(name))
        replace_all(out, s, "***");
    return out;
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
