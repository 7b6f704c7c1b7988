#pragma once
// HTTP for engines behind a server: the framing of streamed responses (Server-Sent Events for
// the OpenAI APIs, NDJSON for Ollama's native API) and a small libcurl client that keeps one
// connection alive, bounds connecting and every silent wait by timeouts, and stamps every
// received byte chunk with sb::now_ns(). The framing is pure code over bytes, so tests can cut
// a stream at every byte offset.
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sb {

// One complete streamed message: its payload (SSE: the data lines joined by '\n'; NDJSON: one
// line without its line end) and the arrival time (sb::now_ns) of the byte chunk that
// completed it.
struct StreamMessage {
    std::string data;
    std::string event;  // SSE "event:" field; empty when absent (and always for NDJSON)
    int64_t arrival_ns = 0;
};

// Server-Sent Events framing (WHATWG): a line ends with LF, CRLF or CR, also when the CR and
// the LF arrive in different chunks; a blank line ends a message; lines starting with ':' are
// comments; "data:" lines accumulate (one leading space dropped); "event:" is kept; "id:",
// "retry:" and unknown fields are ignored. A message without data lines produces nothing. A
// leading UTF-8 byte order mark is skipped.
class SseParser {
  public:
    // Feeds the next bytes; messages they complete are appended to out.
    void feed(std::string_view bytes, int64_t arrival_ns, std::vector<StreamMessage>& out);
    // End of the stream. A message whose lines all ended but whose blank line never came is
    // delivered (some servers omit the last blank line); a line cut in the middle is dropped.
    // Returns true when bytes of an unfinished line were dropped.
    bool finish(int64_t arrival_ns, std::vector<StreamMessage>& out);

  private:
    void line(std::string_view l);
    void dispatch(int64_t arrival_ns, std::vector<StreamMessage>& out);
    std::string line_;
    bool after_cr_ = false;  // the previous chunk ended with CR: a leading LF belongs to it
    bool started_ = false;   // past a possible byte order mark
    std::string data_, event_;
    bool has_data_ = false;
    std::vector<StreamMessage>* out_ = nullptr;
    int64_t arrival_ns_ = 0;
};

// Newline-delimited JSON framing: one message per non-blank line (LF or CRLF).
class NdjsonParser {
  public:
    void feed(std::string_view bytes, int64_t arrival_ns, std::vector<StreamMessage>& out);
    // End of the stream: a last line without a line end is delivered. Returns true if one was.
    bool finish(int64_t arrival_ns, std::vector<StreamMessage>& out);

  private:
    std::string line_;
};

// "http://host[:port][/prefix]" split into its parts. Throws sb::Error(usage) for anything
// else (another scheme, no host, a query or fragment).
struct Url {
    std::string scheme;  // http | https
    std::string host;    // without brackets for IPv6
    int port = 80;
    std::string prefix;        // "" or "/v1"-like, no trailing slash
    std::string base() const;  // scheme://host:port + prefix
};
Url parse_url(const std::string& url);

// Every wait of a request is bounded: connecting by connect_ms; then read_ms bounds the wait
// for the headers and, after them, a whole response (get, post_json: its bytes do not restart
// the clock, so a server trickling them fails it) or each silence of a stream (post_stream:
// every chunk restarts it; the caller bounds the wait for a complete message, see
// HttpEngine::generate). Header lines restart nothing but the end of a header block.
struct HttpTimeouts {
    int64_t connect_ms = 10000;
    int64_t read_ms = 120000;
};

struct HttpResponse {
    long status = 0;
    std::string body;
};

// How a streamed request ended. A failure of the transport is in `error`, one line, e.g.
// "no data from http://127.0.0.1:8080 for 2 s (--timeout)"; an HTTP status >= 300 leaves
// the first 4 KiB of the body in error_body and passes no bytes to the callback.
struct StreamOutcome {
    long status = 0;
    int64_t start_ns = 0;   // just before the request was handed to libcurl
    bool complete = false;  // the response ended as HTTP says it should
    bool stopped = false;   // the callback asked to stop
    std::optional<std::string> error;
    std::string error_body;
};

// A client for one server. Not thread-safe; keeps its connection between requests.
class HttpClient {
  public:
    // Throws sb::Error(usage) for a malformed URL.
    HttpClient(const std::string& base_url, HttpTimeouts timeouts);
    ~HttpClient();
    HttpClient(const HttpClient&) = delete;
    HttpClient& operator=(const HttpClient&) = delete;

    const Url& url() const { return url_; }
    const HttpTimeouts& timeouts() const { return timeouts_; }

    // A whole response (at most 64 MiB). Throws sb::Error(runtime) with a one-line message
    // when the transport fails (refused, timed out, closed, too large); any HTTP status is
    // returned.
    HttpResponse get(const std::string& path);
    HttpResponse post_json(const std::string& path, const nlohmann::json& body);

    // Posts body and hands every chunk of a 2xx response to on_bytes(bytes, arrival_ns) as
    // it arrives; on_bytes returns false to stop reading. Never throws for the transport or
    // the status: see StreamOutcome. Also stops (error set) when an interrupt is requested.
    StreamOutcome post_stream(const std::string& path, const nlohmann::json& body,
                              const std::function<bool(std::string_view, int64_t)>& on_bytes);

  private:
    struct Impl;
    Url url_;
    HttpTimeouts timeouts_;
    std::unique_ptr<Impl> impl_;
};

// Many streamed requests on the calling thread: libcurl's multi interface drives every
// transfer in flight (each on a fresh handle and a fresh connection, closed after it) from
// poll(). Each transfer is what HttpClient::post_stream does, with the same options,
// timeouts, interrupt check, outcome and error lines; its chunks are stamped with sb::now_ns()
// in libcurl's write callback, as there. Not thread-safe: one thread calls start_stream and
// poll, and the callbacks run on it, inside poll.
class HttpMulti {
  public:
    using OnBytes = std::function<bool(std::string_view, int64_t)>;
    using OnDone = std::function<void(StreamOutcome)>;

    // Throws sb::Error(usage) for a malformed URL.
    HttpMulti(const std::string& base_url, HttpTimeouts timeouts);
    ~HttpMulti();  // ends (without on_done) any transfer still in flight
    HttpMulti(const HttpMulti&) = delete;
    HttpMulti& operator=(const HttpMulti&) = delete;

    const Url& url() const { return url_; }

    // Starts a streamed POST of body; its chunks go to on_bytes as in post_stream, and
    // on_done gets the outcome (start_ns: just before libcurl got the transfer) from the
    // poll() that saw it end. on_done may start further streams.
    void start_stream(const std::string& path, const nlohmann::json& body, OnBytes on_bytes,
                      OnDone on_done);
    // Moves every transfer on, waiting at most wait_ms (at most 1 s, as curl_easy_perform's
    // own loop) for something to happen; calls on_done of those that ended. Returns how many
    // are still in flight.
    int poll(int wait_ms);
    int in_flight() const;

  private:
    struct Impl;
    Url url_;
    HttpTimeouts timeouts_;
    std::unique_ptr<Impl> impl_;
};

// The message of an error body: error.message, error (a string), message, or the body's
// first line, shortened to one line of at most 200 characters.
std::string error_message_of(const std::string& body);

// A server's JSON (a response body or a stream message), parsed; nullopt when text is not JSON
// or nests arrays and objects deeper than kMaxDocumentDepth (core/document.hpp,
// check_json_depth), and then *too_deep (when given) says which. No server API nests a tenth as
// deep, and dumping or copying a value recurses once per level: a reply nested 100,000 deep
// would overflow the stack. Never throws.
std::optional<nlohmann::json> parse_server_json(std::string_view text, bool* too_deep = nullptr);

}  // namespace sb
