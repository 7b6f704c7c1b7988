// Seeded fuzz of what servers claim in their streams (README "Bad input and faults"): usage
// counts, running counts, token arrays and server timings of every API, with values that are
// right, absurd (10^12 tokens for a 4-token stream), negative, fractional, huge, of another
// type, nested too deep or missing, in streams cut into random pieces. Whatever the server says,
// reading the stream never throws anything but a one-line sb::Error, and what is measured stays
// within what was received and asked for: no count sizes an allocation, nothing negative, no server
// time longer than the request. The seed and the number of cases are printed
// (tests/fuzz_seed.hpp).
#include <gtest/gtest.h>

#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "engine/http_engine.hpp"
#include "fuzz_seed.hpp"

namespace sb {
namespace {

// A value nested beyond what a server's message may nest (kMaxDocumentDepth): the whole
// message is refused.
const std::string kDeep = std::string(1000, '[') + std::string(1000, ']');

// A claimed value as JSON text: mostly plausible, often not.
std::string claim(std::mt19937_64& rng, int plausible) {
    static const std::vector<std::string> kOdd = {"-1",
                                                  "-5",
                                                  "0",
                                                  "1e300",
                                                  "-1e300",
                                                  "1000000000000",
                                                  "9223372036854775807",
                                                  "18446744073709551615",
                                                  "2.5",
                                                  "1e-300",
                                                  "\"7\"",
                                                  "null",
                                                  "true",
                                                  "[]",
                                                  "{}",
                                                  "16777217",
                                                  kDeep};
    if (rng() % 3 != 0)
        return std::to_string(plausible);
    return kOdd[rng() % kOdd.size()];
}

std::string timings(std::mt19937_64& rng, int prompt, int predicted) {
    return "{\"prompt_n\":" + claim(rng, prompt) + ",\"cache_n\":" + claim(rng, 0) +
           ",\"prompt_ms\":" + claim(rng, 1) + ",\"predicted_n\":" + claim(rng, predicted) +
           ",\"predicted_ms\":" + claim(rng, 2) + "}";
}

// The messages of one stream of api: k output chunks, then the final message(s).
std::vector<std::string> stream_messages(HttpApi api, int k, int n_prompt, std::mt19937_64& rng) {
    std::vector<std::string> m;
    const bool counts = rng() % 2 == 0;  // per-chunk running counts
    for (int i = 1; i <= k; ++i) {
        switch (api) {
            case HttpApi::openai:
                m.push_back("{\"choices\":[{\"text\":\"t\"}]" +
                            (counts ? ",\"timings\":" + timings(rng, n_prompt, i) : "") + "}");
                break;
            case HttpApi::openai_chat:
                m.push_back("{\"choices\":[{\"delta\":{\"content\":\"t\"}}]}");
                break;
            case HttpApi::llama: {
                const std::string ids = rng() % 2 ? "[1]" : (rng() % 2 ? "[1,2,3]" : "[]");
                m.push_back("{\"content\":\"t\",\"tokens\":" + ids + ",\"stop\":false" +
                            (counts ? ",\"tokens_predicted\":" + claim(rng, i) : "") + "}");
                break;
            }
            case HttpApi::ollama:
                m.push_back("{\"response\":\"t\",\"done\":false}");
                break;
        }
    }
    const std::string p = claim(rng, n_prompt), c = claim(rng, k);
    switch (api) {
        case HttpApi::openai:
        case HttpApi::openai_chat: {
            std::string usage = "{\"prompt_tokens\":" + p + ",\"completion_tokens\":" + c;
            if (rng() % 4 == 0)  // MLC's extra
                usage += ",\"extra\":{\"prefill_tokens\":" + claim(rng, n_prompt) +
                         ",\"prefill_tokens_per_s\":" + claim(rng, 1000) +
                         ",\"decode_tokens\":" + claim(rng, k) +
                         ",\"decode_tokens_per_s\":" + claim(rng, 100) +
                         ",\"ttft_s\":" + claim(rng, 0) + "}";
            usage += "}";
            std::string fin = "{\"choices\":[{\"text\":\"\",\"finish_reason\":\"length\"}]," +
                              std::string("\"usage\":") + usage;
            if (rng() % 3 == 0)
                fin += ",\"timings\":" + timings(rng, n_prompt, k);
            if (rng() % 4 == 0)  // vLLM's wall-clock stamps
                fin += ",\"metrics\":{\"first_scheduled_time\":" + claim(rng, 100) +
                       ",\"first_token_time\":" + claim(rng, 100) +
                       ",\"last_token_time\":" + claim(rng, 100) +
                       ",\"time_in_queue\":" + claim(rng, 0) + "}";
            m.push_back(fin + "}");
            m.push_back("[DONE]");
            break;
        }
        case HttpApi::llama:
            m.push_back("{\"content\":\"\",\"stop\":true,\"tokens_evaluated\":" + p +
                        ",\"tokens_predicted\":" + c + ",\"timings\":" + timings(rng, n_prompt, k) +
                        "}");
            break;
        case HttpApi::ollama:
            m.push_back("{\"response\":\"\",\"done\":true,\"prompt_eval_count\":" + p +
                        ",\"eval_count\":" + c + ",\"prompt_eval_duration\":" +
                        claim(rng, 1000000) + ",\"eval_duration\":" + claim(rng, 2000000) +
                        ",\"load_duration\":" + claim(rng, 0) + "}");
            break;
    }
    return m;
}

TEST(HttpClaimsFuzz, WhateverTheServerClaimsTheMeasureStaysWithinWhatWasReceived) {
    sbtest::FuzzRun fuzz(33);
    std::mt19937_64 rng(fuzz.seed());
    const HttpApi apis[] = {HttpApi::openai, HttpApi::openai_chat, HttpApi::llama, HttpApi::ollama};
    int measured = 0, refused = 0;
    while (fuzz.cases() < 3000) {
        const int case_no = fuzz.next_case();
        const HttpApi api = apis[rng() % 4];
        const int n_gen = 1 + static_cast<int>(rng() % 8);
        const int n_prompt = 1 + static_cast<int>(rng() % 64);
        const int k = static_cast<int>(rng() % (n_gen + 3));
        const std::vector<std::string> msgs = stream_messages(api, k, n_prompt, rng);
        std::string bytes;
        for (const auto& m : msgs)
            bytes += api == HttpApi::ollama ? m + "\n" : "data: " + m + "\n\n";
        SCOPED_TRACE("case " + std::to_string(case_no) + ": " + bytes.substr(0, 400));

        GenerationStream::Spec spec;
        spec.api = api;
        spec.n_gen = n_gen;
        spec.n_prompt = n_prompt;
        spec.where = "http://fuzz";
        GenerationStream st(std::move(spec));
        // Random cuts; arrivals in the past second, in order.
        const int64_t t0 = now_ns() - 1'000'000'000;
        int64_t t = t0;
        for (size_t at = 0; at < bytes.size();) {
            const size_t len = std::min<size_t>(bytes.size() - at, 1 + rng() % 64);
            t += 1000 + static_cast<int64_t>(rng() % 100000);
            if (!st.on_bytes(std::string_view(bytes).substr(at, len), t))
                break;
            at += len;
        }
        StreamOutcome o;
        o.status = 200;
        o.complete = true;
        o.start_ns = t0;
        try {
            const RequestMeasure m = request_measure(st.finish(o));
            ++measured;
            const RequestTiming& r = m.timing;
            const int64_t received = 3 * int64_t{k};  // tokens that arrived: arrays hold <= 3
            EXPECT_GE(r.n_out, 1);
            EXPECT_LE(r.n_out, std::max<int64_t>(n_gen, received));
            EXPECT_GE(r.n_streamed, 0);
            EXPECT_LE(r.n_streamed, std::max<int64_t>(n_gen, received));
            EXPECT_LE(static_cast<int64_t>(r.itl_ns.size()), std::max<int64_t>(n_gen, received));
            for (int64_t g : r.itl_ns)
                EXPECT_GE(g, 0);
            EXPECT_GE(r.ttft_ns, 0);
            EXPECT_GE(r.e2e_ns, r.ttft_ns);
            EXPECT_GE(r.tpot_ns.value_or(0), 0);
            EXPECT_GE(r.claimed_out.value_or(0), 0);
            if (m.prompt_tokens) {
                EXPECT_GE(*m.prompt_tokens, 1);
                EXPECT_LE(*m.prompt_tokens, 4 * n_prompt + 4096);
            }
            if (m.server) {
                const ServerTimings& s = *m.server;
                const int64_t seen = now_ns() - t0;
                for (const auto& v : {s.prompt_ns, s.predicted_ns, s.queue_ns, s.load_ns})
                    if (v) {
                        EXPECT_GE(*v, 0);
                        EXPECT_LE(*v, seen);
                    }
                for (const auto& v : {s.prompt_n, s.cache_n})
                    if (v) {
                        EXPECT_GE(*v, 0);
                        EXPECT_LE(*v, 4 * n_prompt + 4096);
                    }
                if (s.predicted_n) {
                    EXPECT_GE(*s.predicted_n, 0);
                    EXPECT_LE(*s.predicted_n, n_gen);
                }
            }
            for (const auto& n : r.notes)
                EXPECT_EQ(n.find('\n'), std::string::npos) << n;
        } catch (const Error& e) {
            ++refused;
            EXPECT_EQ(e.kind(), ErrorKind::runtime) << e.what();
            EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
        }
    }
    std::cout << "http claims fuzz: " << measured << " measured, " << refused << " refused\n";
    EXPECT_GT(measured, fuzz.cases() / 3);
    EXPECT_GT(refused, 0);
}

}  // namespace
}  // namespace sb
