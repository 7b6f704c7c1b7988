#include "engine/backends.hpp"

#include "core/error.hpp"

#include <gtest/gtest.h>

namespace sb {
namespace {

// llama.cpp's RPC client parses host:port at the first ':' and connects over IPv4 only: an
// IPv6 endpoint (which made it stop the process) is one line of bad input before any
// connection, bare or in brackets.
TEST(RpcEndpoint, IPv6AndMalformedEndpointsAreOneLineOfBadInput) {
    const std::pair<const char*, const char*> cases[] = {
        {"::1:50052", "connects over IPv4 only"},
        {"[::1]:50052", "connects over IPv4 only"},
        {"fe80::1%eth0:50052", "connects over IPv4 only"},
        {"50052", "is not host:port"},
        {"127.0.0.1:", "is not host:port"},
    };
    for (const auto& [endpoint, why] : cases) {
        try {
            add_rpc_server(endpoint, 1000);
            ADD_FAILURE() << endpoint << " accepted";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::input) << endpoint;
            const std::string w = e.what();
            EXPECT_NE(w.find(std::string("RPC endpoint '") + endpoint + "'"), std::string::npos)
                << w;
            EXPECT_NE(w.find(why), std::string::npos) << w;
        }
    }
}

// llama.cpp's text enters error lines in one place: a message that ends in a newline (ggml's
// GGML_ABORT("...\n"), a log line) or holds several lines no longer splits the one-line error.
TEST(LlamaText, EveryMessageBecomesOneLine) {
    EXPECT_EQ(llama_text_line("Failed to connect to 127.0.0.1:1\n"),
              "Failed to connect to 127.0.0.1:1");
    EXPECT_EQ(llama_text_line("ggml-rpc.cpp:550: RPC handshake failed for x\r\n\n"),
              "ggml-rpc.cpp:550: RPC handshake failed for x");
    EXPECT_EQ(llama_text_line("file.cpp:1: \nggml-hex: graph-compute X is not supported\n"),
              "file.cpp:1: ggml-hex: graph-compute X is not supported");
    EXPECT_EQ(llama_text_line("a\n  b\t\n\nc"), "a b c");
    EXPECT_EQ(llama_text_line("\n\n"), "");
    EXPECT_EQ(llama_text_line("plain"), "plain");
}

TEST(LlamaText, ReasonsLoseTheFunctionNamesAndStayOneLine) {
    EXPECT_EQ(llama_reason("llama_model_load: error loading model: unknown model architecture: "
                           "'bogus'\n"),
              "unknown model architecture: 'bogus'");
    EXPECT_EQ(llama_reason("main: exiting due to model loading error\n"),
              "exiting due to model loading error");
    EXPECT_EQ(llama_reason("Not a name: keeps it\n"), "Not a name: keeps it");
}

// The log record: a message that ends in a newline and one that comes in pieces give the same
// one line.
TEST(LlamaText, TheLogRecordIsOneLine) {
    take_llama_error();
    record_llama_log(4 /* GGML_LOG_LEVEL_ERROR */, "llama_model_load: error loading model: ");
    record_llama_log(5 /* GGML_LOG_LEVEL_CONT */, "bad tensor\n");
    record_llama_log(4, "a later error\n");
    EXPECT_EQ(take_llama_error(), "bad tensor");
    record_llama_log(4, "first line\nsecond line\n\n");
    EXPECT_EQ(take_llama_error(), "first line second line");
    EXPECT_EQ(take_llama_error(), "");
}

}  // namespace
}  // namespace sb
