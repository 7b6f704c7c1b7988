#include "engine/http_client.hpp"

#ifndef SB_AGENT_BUILD
#include <curl/curl.h>
#endif

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>

#include "core/clock.hpp"
#include "core/document.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/json_util.hpp"
#include "core/utf8.hpp"

namespace sb {

// ---- Server-Sent Events ----------------------------------------------------------------

void SseParser::feed(std::string_view bytes, int64_t arrival_ns, std::vector<StreamMessage>& out) {
    out_ = &out;
    arrival_ns_ = arrival_ns;
    size_t i = 0;
    if (after_cr_ && !bytes.empty()) {
        if (bytes[0] == '\n')
            i = 1;  // the LF of a CRLF whose CR ended the previous chunk
        after_cr_ = false;
    }
    while (i < bytes.size()) {
        const size_t end = bytes.find_first_of("\r\n", i);
        if (end == std::string_view::npos) {
            line_.append(bytes.substr(i));
            break;
        }
        line_.append(bytes.substr(i, end - i));
        line(line_);
        line_.clear();
        i = end + 1;
        if (bytes[end] == '\r') {
            if (i < bytes.size()) {
                if (bytes[i] == '\n')
                    ++i;
            } else {
                after_cr_ = true;
            }
        }
    }
    out_ = nullptr;
}

void SseParser::line(std::string_view l) {
    if (!started_) {
        started_ = true;
        if (l.substr(0, 3) == "\xEF\xBB\xBF")
            l.remove_prefix(3);
    }
    if (l.empty()) {
        dispatch(arrival_ns_, *out_);
        return;
    }
    if (l[0] == ':')
        return;  // a comment (keep-alive pings, OpenRouter's ": PROCESSING")
    const size_t colon = l.find(':');
    std::string_view field = l.substr(0, colon);
    std::string_view value;
    if (colon != std::string_view::npos) {
        value = l.substr(colon + 1);
        if (!value.empty() && value[0] == ' ')
            value.remove_prefix(1);
    }
    if (field == "data") {
        if (has_data_)
            data_ += '\n';
        data_.append(value);
        has_data_ = true;
    } else if (field == "event") {
        event_.assign(value);
    }
}

void SseParser::dispatch(int64_t arrival_ns, std::vector<StreamMessage>& out) {
    if (has_data_)
        out.push_back(StreamMessage{std::move(data_), std::move(event_), arrival_ns});
    data_.clear();
    event_.clear();
    has_data_ = false;
}

bool SseParser::finish(int64_t arrival_ns, std::vector<StreamMessage>& out) {
    after_cr_ = false;
    if (!line_.empty()) {
        line_.clear();
        data_.clear();
        event_.clear();
        has_data_ = false;
        return true;
    }
    dispatch(arrival_ns, out);
    return false;
}

// ---- NDJSON ------------------------------------------------------------------------------

namespace {

bool blank(std::string_view s) {
    return s.find_first_not_of(" \t\r") == std::string_view::npos;
}

}  // namespace

void NdjsonParser::feed(std::string_view bytes, int64_t arrival_ns,
                        std::vector<StreamMessage>& out) {
    size_t i = 0;
    while (i < bytes.size()) {
        const size_t end = bytes.find('\n', i);
        if (end == std::string_view::npos) {
            line_.append(bytes.substr(i));
            break;
        }
        line_.append(bytes.substr(i, end - i));
        if (!line_.empty() && line_.back() == '\r')
            line_.pop_back();
        if (!blank(line_))
            out.push_back(StreamMessage{line_, {}, arrival_ns});
        line_.clear();
        i = end + 1;
    }
}

bool NdjsonParser::finish(int64_t arrival_ns, std::vector<StreamMessage>& out) {
    if (!line_.empty() && line_.back() == '\r')
        line_.pop_back();
    const bool had = !blank(line_);
    if (had)
        out.push_back(StreamMessage{line_, {}, arrival_ns});
    line_.clear();
    return had;
}

// ---- URLs and error bodies -----------------------------------------------------------------

std::string Url::base() const {
    const bool v6 = host.find(':') != std::string::npos;
    return scheme + "://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port) + prefix;
}

Url parse_url(const std::string& s) {
    auto bad = [&](const std::string& why) {
        return usage_error("--url '" + s + "': " + why + " (expected http://HOST:PORT)");
    };
    Url u;
    size_t pos = s.find("://");
    if (pos == std::string::npos)
        throw bad("no scheme");
    u.scheme = s.substr(0, pos);
    if (u.scheme != "http" && u.scheme != "https")
        throw bad("scheme must be http or https");
    u.port = u.scheme == "https" ? 443 : 80;
    std::string rest = s.substr(pos + 3);
    if (rest.find_first_of("?#") != std::string::npos)
        throw bad("no query or fragment allowed");
    const size_t slash = rest.find('/');
    std::string hostport = rest.substr(0, slash);
    u.prefix = slash == std::string::npos ? "" : rest.substr(slash);
    while (!u.prefix.empty() && u.prefix.back() == '/')
        u.prefix.pop_back();
    std::string port;
    if (!hostport.empty() && hostport[0] == '[') {
        const size_t close = hostport.find(']');
        if (close == std::string::npos)
            throw bad("unclosed IPv6 bracket");
        u.host = hostport.substr(1, close - 1);
        if (close + 1 < hostport.size()) {
            if (hostport[close + 1] != ':')
                throw bad("junk after the IPv6 address");
            port = hostport.substr(close + 2);
        }
    } else {
        const size_t colon = hostport.rfind(':');
        u.host = hostport.substr(0, colon);
        if (colon != std::string::npos)
            port = hostport.substr(colon + 1);
    }
    if (u.host.empty())
        throw bad("no host");
    if (!port.empty() || hostport.back() == ':') {
        try {
            size_t used = 0;
            const int p = std::stoi(port, &used);
            if (used != port.size() || p < 1 || p > 65535)
                throw std::invalid_argument(port);
            u.port = p;
        } catch (const std::exception&) {
            throw bad("port must be 1-65535");
        }
    }
    return u;
}

std::optional<nlohmann::json> parse_server_json(std::string_view text, bool* too_deep) {
    if (too_deep)
        *too_deep = false;
    try {
        check_json_depth(text, "", kMaxDocumentDepth);
    } catch (const Error&) {
        if (too_deep)
            *too_deep = true;
        return std::nullopt;
    }
    try {
        return nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception&) {
        return std::nullopt;
    }
}

std::string error_message_of(const std::string& body) {
    std::string msg;
    try {
        const std::optional<nlohmann::json> parsed = parse_server_json(body);
        if (parsed && parsed->is_object()) {
            const nlohmann::json& j = *parsed;
            if (j.contains("error")) {
                const auto& e = j["error"];
                if (e.is_object() && e.contains("message") && e["message"].is_string())
                    msg = e["message"].get<std::string>();
                else if (e.is_string())
                    msg = e.get<std::string>();
                else
                    msg = dump_json(e);
            } else if (j.contains("message") && j["message"].is_string()) {
                msg = j["message"].get<std::string>();
            } else if (j.contains("detail") && j["detail"].is_string()) {
                msg = j["detail"].get<std::string>();
            }
        }
    } catch (const std::exception&) {
    }
    if (msg.empty())
        msg = body.substr(0, body.find('\n'));
    for (char& c : msg)
        if (c == '\n' || c == '\r' || c == '\t')
            c = ' ';
    // The body is any bytes the server sent: valid UTF-8, cut on a character boundary.
    make_valid_utf8(msg);
    if (msg.size() > 200)
        msg = utf8_prefix(msg, 197) + "...";
    return msg;
}

#ifndef SB_AGENT_BUILD

// ---- libcurl client -----------------------------------------------------------------------

namespace {

std::string seconds(int64_t ms) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", ms / 1000.0);
    return buf;
}

// The state of one transfer, shared with libcurl's callbacks.
struct Transfer {
    CURL* curl = nullptr;
    const std::function<bool(std::string_view, int64_t)>* on_bytes = nullptr;
    std::string* sink = nullptr;  // whole-response mode
    long status = 0;
    std::string error_body;
    bool stopped = false, timed_out = false, interrupted = false, too_large = false;
    int header_blocks = 0;  // 1xx interim responses add one each
    int64_t last_activity_ns = 0;
    int64_t read_ns = 0;
};

// A whole response larger than this is refused: the answers read whole (model lists, token
// ids) are small, and a server that never stops sending must not exhaust memory.
constexpr size_t kMaxWholeResponse = 64u << 20;

// The deadline restarts when a block of headers is complete, not on every header line: a
// server that sends header lines forever still runs out of time.
size_t on_header(char* p, size_t size, size_t n, void* ud) {
    auto* tr = static_cast<Transfer*>(ud);
    const size_t len = size * n;
    const bool end_of_block = len <= 2 && (len == 0 || p[0] == '\r' || p[0] == '\n');
    if (end_of_block) {
        if (++tr->header_blocks > 8)
            return 0;  // endless interim responses: libcurl stops with a write error
        tr->last_activity_ns = now_ns();
    }
    return len;
}

size_t on_write(char* p, size_t size, size_t n, void* ud) {
    const int64_t t = now_ns();
    auto* tr = static_cast<Transfer*>(ud);
    const size_t len = size * n;
    if (tr->status == 0)
        curl_easy_getinfo(tr->curl, CURLINFO_RESPONSE_CODE, &tr->status);
    if (!tr->sink)
        tr->last_activity_ns = t;  // a stream's silence ends with any byte
    if (tr->sink) {
        // A whole response must be complete within the timeout of its headers: its bytes do
        // not restart the clock, so a server that trickles them cannot hold the run.
        if (tr->sink->size() + len > kMaxWholeResponse) {
            tr->too_large = true;
            return 0;
        }
        tr->sink->append(p, len);
        return len;
    }
    if (tr->status < 200 || tr->status >= 300) {
        if (tr->error_body.size() < 4096)
            tr->error_body.append(p, std::min(len, 4096 - tr->error_body.size()));
        return len;
    }
    if (!(*tr->on_bytes)(std::string_view(p, len), t)) {
        tr->stopped = true;
        return 0;  // makes libcurl stop with CURLE_WRITE_ERROR
    }
    return len;
}

int on_progress(void* ud, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    auto* tr = static_cast<Transfer*>(ud);
    if (interrupt_requested()) {
        tr->interrupted = true;
        return 1;
    }
    if (now_ns() - tr->last_activity_ns > tr->read_ns) {
        tr->timed_out = true;
        return 1;
    }
    return 0;
}

// The options every transfer has, for HttpClient and HttpMulti alike. They are set again
// before each transfer, after curl_easy_reset: libcurl before 8.17 never resets its count of
// retries on a new connection between the transfers of one handle, so with a server that
// closes kept-alive connections (llama-server after every stream) the sixth reuse that meets a
// closed socket failed with "Connection died, tried 5 times". The reset clears that count and
// keeps the live connections, so a connection is still reused where the server allows it.
// post (when set) must outlive the transfer; so must tr and errbuf.
void setup_transfer(CURL* curl, char* errbuf, curl_slist* headers, const Url& url,
                    const HttpTimeouts& t, const std::string& path, const std::string* post,
                    Transfer& tr) {
    curl_easy_reset(curl);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(t.connect_ms));
    curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(curl, CURLOPT_PROXY, "");                 // a benchmark talks to the server
    curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, nullptr);  // no compression
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_URL, (url.base() + path).c_str());
    if (post) {
        curl_easy_setopt(curl, CURLOPT_POST, 1L);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, post->data());
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(post->size()));
    } else {
        curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
    }
    tr.curl = curl;
    tr.read_ns = t.read_ms * 1'000'000;
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &tr);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &tr);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &tr);
    errbuf[0] = 0;
}

// No "Expect: 100-continue": it would add a round trip (or a 1 s wait) to long prompts.
curl_slist* request_headers() {
    curl_slist* h = curl_slist_append(nullptr, "Content-Type: application/json");
    return curl_slist_append(h, "Expect:");
}

void init_curl_once() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// One line for a failed transfer.
std::string describe(const Url& url, const HttpTimeouts& t, CURLcode rc, const Transfer& tr,
                     const char* errbuf) {
    const std::string where = url.base();
    const std::string detail = errbuf[0] ? errbuf : curl_easy_strerror(rc);
    if (tr.interrupted)
        return "interrupted";
    if (tr.too_large)
        return where + " sent an answer larger than " + std::to_string(kMaxWholeResponse >> 20) +
               " MiB";
    if (tr.header_blocks > 8)
        return where + " sent more than 8 interim responses";
    if (tr.timed_out && tr.sink)
        return "no complete answer from " + where + " within " + seconds(t.read_ms) +
               " s (--timeout)";
    if (tr.timed_out)
        return "no data from " + where + " for " + seconds(t.read_ms) + " s (--timeout)";
    switch (rc) {
        case CURLE_COULDNT_CONNECT:
        case CURLE_COULDNT_RESOLVE_HOST:
            return "cannot connect to " + where + ": " + detail;
        case CURLE_OPERATION_TIMEDOUT:
            return "connecting to " + where + " timed out after " + seconds(t.connect_ms) +
                   " s (--timeout)";
        case CURLE_GOT_NOTHING:
            return where + " closed the connection without answering";
        case CURLE_PARTIAL_FILE:
        case CURLE_RECV_ERROR:
        case CURLE_SEND_ERROR:
            return where + " closed the connection mid-response (" + detail + ")";
        default:
            return "request to " + where + " failed: " + detail;
    }
}

// A streamed transfer's end, for post_stream and HttpMulti alike.
void stream_outcome(StreamOutcome& o, CURLcode rc, Transfer& tr, const Url& url,
                    const HttpTimeouts& t, const char* errbuf) {
    if (tr.status == 0)
        curl_easy_getinfo(tr.curl, CURLINFO_RESPONSE_CODE, &tr.status);
    o.status = tr.status;
    o.error_body = std::move(tr.error_body);
    if (rc == CURLE_OK)
        o.complete = true;
    else if (rc == CURLE_WRITE_ERROR && tr.stopped)
        o.stopped = true;
    else
        o.error = describe(url, t, rc, tr, errbuf);
}

}  // namespace

struct HttpClient::Impl {
    CURL* curl = nullptr;
    curl_slist* headers = nullptr;
    char errbuf[CURL_ERROR_SIZE] = {};
    std::string body;

    // Runs one request; returns libcurl's code with the transfer's state filled in.
    CURLcode perform(const HttpClient& c, const std::string& path, const std::string* post,
                     Transfer& tr, int64_t* start_ns) {
        if (post)
            body = *post;
        setup_transfer(curl, errbuf, headers, c.url_, c.timeouts_, path, post ? &body : nullptr,
                       tr);
        const int64_t t0 = now_ns();
        tr.last_activity_ns = t0;
        if (start_ns)
            *start_ns = t0;
        const CURLcode rc = curl_easy_perform(curl);
        if (tr.status == 0)
            curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &tr.status);
        return rc;
    }

    std::string describe(const HttpClient& c, CURLcode rc, const Transfer& tr) const {
        return sb::describe(c.url_, c.timeouts_, rc, tr, errbuf);
    }
};

HttpClient::HttpClient(const std::string& base_url, HttpTimeouts timeouts)
    : url_(parse_url(base_url)), timeouts_(timeouts), impl_(std::make_unique<Impl>()) {
    init_curl_once();
    impl_->curl = curl_easy_init();
    if (!impl_->curl)
        throw runtime_error("cannot initialise libcurl");
    impl_->headers = request_headers();
}

HttpClient::~HttpClient() {
    if (impl_) {
        if (impl_->curl)
            curl_easy_cleanup(impl_->curl);
        curl_slist_free_all(impl_->headers);
    }
}

HttpResponse HttpClient::get(const std::string& path) {
    Transfer tr;
    HttpResponse r;
    tr.sink = &r.body;
    const CURLcode rc = impl_->perform(*this, path, nullptr, tr, nullptr);
    if (rc != CURLE_OK)
        throw runtime_error(impl_->describe(*this, rc, tr));
    r.status = tr.status;
    return r;
}

HttpResponse HttpClient::post_json(const std::string& path, const nlohmann::json& body) {
    Transfer tr;
    HttpResponse r;
    tr.sink = &r.body;
    const std::string b = dump_json(body);
    const CURLcode rc = impl_->perform(*this, path, &b, tr, nullptr);
    if (rc != CURLE_OK)
        throw runtime_error(impl_->describe(*this, rc, tr));
    r.status = tr.status;
    return r;
}

StreamOutcome HttpClient::post_stream(
    const std::string& path, const nlohmann::json& body,
    const std::function<bool(std::string_view, int64_t)>& on_bytes) {
    Transfer tr;
    tr.on_bytes = &on_bytes;
    StreamOutcome o;
    const std::string b = dump_json(body);
    const CURLcode rc = impl_->perform(*this, path, &b, tr, &o.start_ns);
    stream_outcome(o, rc, tr, url_, timeouts_, impl_->errbuf);
    return o;
}

// ---- many streams on one thread -------------------------------------------------------------

struct HttpMulti::Impl {
    // One transfer in flight: what its callbacks and libcurl point into (never moved).
    struct Active {
        CURL* curl = nullptr;
        Transfer tr;
        char errbuf[CURL_ERROR_SIZE] = {};
        std::string body;
        OnBytes on_bytes;
        OnDone on_done;
        StreamOutcome outcome;
    };
    CURLM* multi = nullptr;
    curl_slist* headers = nullptr;
    std::map<CURL*, std::unique_ptr<Active>> active;

    // Hands the ended transfers' outcomes to their on_done (after taking them out, so that
    // on_done may start others).
    // Returns how many ended.
    size_t collect(const Url& url, const HttpTimeouts& t) {
        std::vector<std::unique_ptr<Active>> ended;
        int left = 0;
        while (CURLMsg* m = curl_multi_info_read(multi, &left)) {
            if (m->msg != CURLMSG_DONE)
                continue;
            auto it = active.find(m->easy_handle);
            if (it == active.end())
                continue;
            std::unique_ptr<Active> a = std::move(it->second);
            active.erase(it);
            curl_multi_remove_handle(multi, a->curl);
            stream_outcome(a->outcome, m->data.result, a->tr, url, t, a->errbuf);
            curl_easy_cleanup(a->curl);
            ended.push_back(std::move(a));
        }
        for (auto& a : ended)
            a->on_done(std::move(a->outcome));
        return ended.size();
    }
};

HttpMulti::HttpMulti(const std::string& base_url, HttpTimeouts timeouts)
    : url_(parse_url(base_url)), timeouts_(timeouts), impl_(std::make_unique<Impl>()) {
    init_curl_once();
    impl_->multi = curl_multi_init();
    if (!impl_->multi)
        throw runtime_error("cannot initialise libcurl");
    impl_->headers = request_headers();
}

HttpMulti::~HttpMulti() {
    for (auto& [curl, a] : impl_->active) {
        curl_multi_remove_handle(impl_->multi, curl);
        curl_easy_cleanup(curl);
    }
    curl_multi_cleanup(impl_->multi);
    curl_slist_free_all(impl_->headers);
}

void HttpMulti::start_stream(const std::string& path, const nlohmann::json& body, OnBytes on_bytes,
                             OnDone on_done) {
    auto a = std::make_unique<Impl::Active>();
    // A fresh handle on a fresh connection for every transfer: with handles and connections
    // reused, the transfers that followed others on llama-server (which closes its connection
    // after every stream) stalled, their late chunks seen only at each 1 s poll timeout
    // (libcurl 7.88; not understood further). llama-server reuses no connection anyway.
    a->curl = curl_easy_init();
    if (!a->curl)
        throw runtime_error("cannot initialise libcurl");
    a->body = dump_json(body);
    a->on_bytes = std::move(on_bytes);
    a->on_done = std::move(on_done);
    a->tr.on_bytes = &a->on_bytes;
    setup_transfer(a->curl, a->errbuf, impl_->headers, url_, timeouts_, path, &a->body, a->tr);
    curl_easy_setopt(a->curl, CURLOPT_FRESH_CONNECT, 1L);
    curl_easy_setopt(a->curl, CURLOPT_FORBID_REUSE, 1L);
    const int64_t t0 = now_ns();
    a->tr.last_activity_ns = t0;
    a->outcome.start_ns = t0;
    CURL* curl = a->curl;
    if (curl_multi_add_handle(impl_->multi, curl) != CURLM_OK) {
        curl_easy_cleanup(curl);
        throw runtime_error("libcurl refused another transfer");
    }
    impl_->active.emplace(curl, std::move(a));
}

int HttpMulti::poll(int wait_ms) {
    int running = 0;
    curl_multi_perform(impl_->multi, &running);
    if (impl_->collect(url_, timeouts_) > 0) {
        // Transfers that on_done started are set going now, not after the next wait.
        curl_multi_perform(impl_->multi, &running);
        impl_->collect(url_, timeouts_);
        return in_flight();
    }
    if (!impl_->active.empty()) {
        curl_multi_poll(impl_->multi, nullptr, 0, std::clamp(wait_ms, 0, 1000), nullptr);
        curl_multi_perform(impl_->multi, &running);
        if (impl_->collect(url_, timeouts_) > 0)
            curl_multi_perform(impl_->multi, &running);
    }
    return in_flight();
}

int HttpMulti::in_flight() const {
    return static_cast<int>(impl_->active.size());
}

#else  // SB_AGENT_BUILD

// ---- the static agent: no libcurl ----------------------------------------------------------
// The agent (STAGEBENCH_AGENT=ON) links no shared library, and libcurl has no static build on
// the build machine: the HTTP engine is the host's.

namespace {
[[noreturn]] void no_http() {
    throw usage_error(
        "not in the agent build: the HTTP engine (--engine http, --url); measure a server with "
        "the host's stagebench");
}
}  // namespace

struct HttpClient::Impl {};

HttpClient::HttpClient(const std::string& base_url, HttpTimeouts timeouts)
    : url_(parse_url(base_url)), timeouts_(timeouts) {
    no_http();
}

HttpClient::~HttpClient() = default;

HttpResponse HttpClient::get(const std::string&) {
    no_http();
}

HttpResponse HttpClient::post_json(const std::string&, const nlohmann::json&) {
    no_http();
}

StreamOutcome HttpClient::post_stream(const std::string&, const nlohmann::json&,
                                      const std::function<bool(std::string_view, int64_t)>&) {
    no_http();
}

struct HttpMulti::Impl {};

HttpMulti::HttpMulti(const std::string& base_url, HttpTimeouts timeouts)
    : url_(parse_url(base_url)), timeouts_(timeouts) {
    no_http();
}

HttpMulti::~HttpMulti() = default;

void HttpMulti::start_stream(const std::string&, const nlohmann::json&, OnBytes, OnDone) {
    no_http();
}

int HttpMulti::poll(int) {
    no_http();
}

int HttpMulti::in_flight() const {
    return 0;
}

#endif  // SB_AGENT_BUILD

}  // namespace sb
