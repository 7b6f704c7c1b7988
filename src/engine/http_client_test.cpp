#include "engine/http_client.hpp"

#include <gtest/gtest.h>

#include <random>

#include "core/error.hpp"
#include "core/utf8.hpp"

using namespace sb;

namespace {

// Feeds s in pieces cut at the given offsets, each piece stamped with its index.
std::vector<StreamMessage> sse_in_pieces(const std::string& s, const std::vector<size_t>& cuts,
                                         bool* dropped = nullptr) {
    SseParser p;
    std::vector<StreamMessage> out;
    size_t prev = 0;
    int64_t t = 0;
    for (size_t c : cuts) {
        p.feed(std::string_view(s).substr(prev, c - prev), ++t, out);
        prev = c;
    }
    p.feed(std::string_view(s).substr(prev), ++t, out);
    const bool d = p.finish(++t, out);
    if (dropped)
        *dropped = d;
    return out;
}

std::vector<std::string> datas(const std::vector<StreamMessage>& v) {
    std::vector<std::string> d;
    for (const auto& m : v)
        d.push_back(m.data);
    return d;
}

const std::string kStream =
    ": keep-alive comment\r\n"
    "data: {\"choices\":[{\"text\":\"a\"}]}\r\n"
    "\r\n"
    "event: message\n"
    "data: {\"choices\":\n"
    "data:[{\"text\":\"b c\"}]}\n"
    "\n"
    "id: 7\rretry: 100\r"
    "data: {\"usage\":{}}\r"
    "\r"
    ":\n"
    "data: [DONE]\n\n";

const std::vector<std::string> kExpected = {
    "{\"choices\":[{\"text\":\"a\"}]}",
    "{\"choices\":\n[{\"text\":\"b c\"}]}",
    "{\"usage\":{}}",
    "[DONE]",
};

}  // namespace

TEST(SseParser, CommentsCrLfCrAndDone) {
    auto msgs = sse_in_pieces(kStream, {});
    EXPECT_EQ(datas(msgs), kExpected);
    EXPECT_EQ(msgs[1].event, "message");
    EXPECT_EQ(msgs[0].event, "");
}

TEST(SseParser, AnyCutGivesTheSameMessages) {
    for (size_t cut = 0; cut <= kStream.size(); ++cut)
        EXPECT_EQ(datas(sse_in_pieces(kStream, {cut})), kExpected) << "cut at " << cut;
}

TEST(SseParser, EveryPairOfCutsGivesTheSameMessages) {
    for (size_t a = 0; a <= kStream.size(); ++a)
        for (size_t b = a; b <= kStream.size(); ++b)
            ASSERT_EQ(datas(sse_in_pieces(kStream, {a, b})), kExpected) << a << "," << b;
}

TEST(SseParser, ByteByByte) {
    std::vector<size_t> cuts;
    for (size_t i = 1; i < kStream.size(); ++i)
        cuts.push_back(i);
    auto msgs = sse_in_pieces(kStream, cuts);
    ASSERT_EQ(datas(msgs), kExpected);
    // A message is stamped with the arrival of the byte that completed it: the blank line.
    const size_t end_first = kStream.find("\r\n\r\n") + 4;
    EXPECT_EQ(msgs[0].arrival_ns, static_cast<int64_t>(end_first) - 1);
}

TEST(SseParser, CrLfSplitBetweenChunksIsOneLineEnd) {
    // "data: x\r" | "\n\r\n": the LF after the CR must not end a second (blank) line early.
    SseParser p;
    std::vector<StreamMessage> out;
    p.feed("data: x\r", 1, out);
    EXPECT_TRUE(out.empty());
    p.feed("\n", 2, out);
    EXPECT_TRUE(out.empty());
    p.feed("\r\n", 3, out);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].data, "x");
    EXPECT_EQ(out[0].arrival_ns, 3);
}

TEST(SseParser, ByteOrderMarkAndFieldsWithoutSpace) {
    auto msgs = sse_in_pieces(
        "\xEF\xBB\xBF"
        "data:1\n\ndata\n\n",
        {1, 2});
    EXPECT_EQ(datas(msgs), (std::vector<std::string>{"1", ""}));
}

TEST(SseParser, MessagesWithoutDataAndUnknownFieldsAreIgnored) {
    auto msgs = sse_in_pieces("event: ping\n\nfoo: bar\n\n: x\n\n", {});
    EXPECT_TRUE(msgs.empty());
}

TEST(SseParser, EndOfStreamWithoutBlankLineDeliversCompleteLines) {
    bool dropped = true;
    auto msgs = sse_in_pieces("data: 1\n\ndata: 2\n", {}, &dropped);
    EXPECT_EQ(datas(msgs), (std::vector<std::string>{"1", "2"}));
    EXPECT_FALSE(dropped);
}

TEST(SseParser, EndOfStreamInTheMiddleOfALineDropsIt) {
    bool dropped = false;
    auto msgs = sse_in_pieces("data: 1\n\ndata: {\"choi", {}, &dropped);
    EXPECT_EQ(datas(msgs), (std::vector<std::string>{"1"}));
    EXPECT_TRUE(dropped);
}

TEST(NdjsonParser, LinesAcrossEveryCut) {
    const std::string s = "{\"response\":\"a\"}\n\r\n{\"response\":\"b\"}\r\n  \n{\"done\":true}";
    const std::vector<std::string> want{"{\"response\":\"a\"}", "{\"response\":\"b\"}",
                                        "{\"done\":true}"};
    for (size_t cut = 0; cut <= s.size(); ++cut) {
        NdjsonParser p;
        std::vector<StreamMessage> out;
        p.feed(std::string_view(s).substr(0, cut), 1, out);
        p.feed(std::string_view(s).substr(cut), 2, out);
        EXPECT_TRUE(p.finish(3, out)) << cut;
        EXPECT_EQ(datas(out), want) << "cut at " << cut;
    }
}

TEST(Url, Parses) {
    Url u = parse_url("http://127.0.0.1:8080");
    EXPECT_EQ(u.host, "127.0.0.1");
    EXPECT_EQ(u.port, 8080);
    EXPECT_EQ(u.prefix, "");
    EXPECT_EQ(u.base(), "http://127.0.0.1:8080");
    u = parse_url("https://example.org/api/");
    EXPECT_EQ(u.port, 443);
    EXPECT_EQ(u.prefix, "/api");
    u = parse_url("http://[::1]:11434");
    EXPECT_EQ(u.host, "::1");
    EXPECT_EQ(u.base(), "http://[::1]:11434");
    EXPECT_EQ(parse_url("http://localhost").port, 80);
}

TEST(Url, RejectsWhatIsNotAServerUrl) {
    for (const char* bad : {"127.0.0.1:8080", "ftp://x", "http://", "http://h:0", "http://h:99999",
                            "http://h:8080?x=1", "http://h:abc", "http://[::1"}) {
        try {
            parse_url(bad);
            ADD_FAILURE() << bad;
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::usage) << bad;
        }
    }
}

TEST(ErrorMessage, FromTheUsualBodies) {
    EXPECT_EQ(error_message_of(R"({"error":{"message":"boom","code":500}})"), "boom");
    EXPECT_EQ(error_message_of(R"({"error":"model not found"})"), "model not found");
    EXPECT_EQ(error_message_of(R"({"detail":"bad request"})"), "bad request");
    EXPECT_EQ(error_message_of("plain text\nsecond line"), "plain text");
    EXPECT_EQ(error_message_of(std::string(500, 'x')).size(), 200u);
}

// A body nested deeper than kMaxDocumentDepth (100,000 arrays in its error: quoting it recursed
// until the stack overflowed) is not read as JSON: its first line, shortened, is the message.
TEST(ErrorMessage, ABodyNestedTooDeepIsQuotedNotRead) {
    const std::string body =
        R"({"error":)" + std::string(100000, '[') + std::string(100000, ']') + "}";
    EXPECT_EQ(error_message_of(body), body.substr(0, 197) + "...");
    bool too_deep = false;
    EXPECT_FALSE(parse_server_json(body, &too_deep));
    EXPECT_TRUE(too_deep);
    EXPECT_FALSE(parse_server_json("{oops", &too_deep));
    EXPECT_FALSE(too_deep);
    const auto j = parse_server_json(R"({"a":[[1]]})", &too_deep);
    ASSERT_TRUE(j);
    EXPECT_EQ((*j)["a"][0][0], 1);
}

// Error bodies are any bytes a server sends: generated ones (JSON or not, cut anywhere, bytes
// that are not UTF-8) always give one line of valid UTF-8 of at most 200 bytes.
TEST(ErrorMessage, GeneratedBodiesGiveOneValidLine) {
    std::mt19937_64 rng(42);
    const std::vector<std::string> parts = {R"({"error":{"message":")",
                                            R"("}})",
                                            "\xff\xfe",
                                            "\xE2\x82",
                                            "\xC3\xA9",
                                            "\n",
                                            "\r\n",
                                            "\t",
                                            R"({"detail":")",
                                            "x",
                                            "\xF0\x9F\x98\x80",
                                            "\\u00e9"};
    for (int i = 0; i < 5000; ++i) {
        std::string body;
        const int n = static_cast<int>(rng() % 60);
        for (int k = 0; k < n; ++k) {
            if (rng() % 4 == 0)
                body += static_cast<char>(rng() % 256);
            else
                body += parts[rng() % parts.size()];
        }
        const std::string m = error_message_of(body);
        ASSERT_TRUE(is_valid_utf8(m)) << body;
        ASSERT_LE(m.size(), 200u) << body;
        ASSERT_EQ(m.find_first_of("\r\n"), std::string::npos) << body;
    }
    EXPECT_EQ(error_message_of("bad \xff\xfe"), "bad \xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(HttpClient, RefusedConnectionIsOneLine) {
    // Port 1 on loopback: nothing listens there.
    HttpClient c("http://127.0.0.1:1", HttpTimeouts{1000, 1000});
    try {
        c.get("/health");
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::runtime);
        EXPECT_NE(std::string(e.what()).find("cannot connect to http://127.0.0.1:1"),
                  std::string::npos)
            << e.what();
    }
    StreamOutcome o = c.post_stream("/v1/completions", {{"x", 1}},
                                    [](std::string_view, int64_t) { return true; });
    EXPECT_FALSE(o.complete);
    ASSERT_TRUE(o.error);
    EXPECT_EQ(o.error->find('\n'), std::string::npos);
}
