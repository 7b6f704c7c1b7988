// run_serve end to end on a scripted server (FakeServeTarget, engine/fake_serve.hpp) and the
// fake clock: the points, every request's record, failures, --max-error-rate and Ctrl-C, with
// exact values. The HTTP transport itself is tested in engine/http_*_test.cpp and the command
// against a real llama-server in tests/integration.
#include <gtest/gtest.h>

#include <cmath>

#include "core/document.hpp"
#include "core/interrupt.hpp"
#include "scenario/serve.hpp"
#include "scenario/test_util.hpp"

namespace sb {
namespace {

using sb::test::kMs;

// Points of 4 requests, 8 prompt tokens, 3 output tokens: with the default script a request's
// TTFT is 10 ms + 8 x 100 us = 10.8 ms, then a token every 10 ms: E2E 30.8 ms.
ServeOptions small(ClientKind client) {
    ServeOptions o;
    o.url = "http://127.0.0.1:9";  // never contacted: the factory's target is scripted
    o.concurrency = {1};
    o.requests = 4;
    o.n_prompt = 8;
    o.n_gen = 3;
    o.client = client;
    o.progress = false;
    o.bootstrap_resamples = 0;
    return o;
}

constexpr int64_t kTtft = 10'800'000, kE2e = 30'800'000;

class ServeRun : public ::testing::TestWithParam<ClientKind> {
  protected:
    void SetUp() override { clear_interrupt(); }
    void TearDown() override { clear_interrupt(); }
    test::RunRig rig;
};

// One client sends its requests back to back: each record's times are the script's, sends
// follow each other by one E2E, the point spans them all.
TEST_P(ServeRun, EveryRequestIsRecordedWithTheScriptsTimes) {
    const ServeOptions o = small(GetParam());
    const RunResult r = run_serve(o, rig.env("serve"));
    EXPECT_EQ(r.outcome, Outcome::ok);
    ASSERT_TRUE(r.doc.serve);
    ASSERT_EQ(r.doc.serve->points.size(), 1u);
    const ServePoint& p = r.doc.serve->points[0];
    EXPECT_EQ(p.mode, "concurrency");
    EXPECT_EQ(p.value, 1.0);
    ASSERT_EQ(p.requests.size(), 4u);
    for (int i = 0; i < 4; ++i) {
        const ServeRequest& q = p.requests[static_cast<size_t>(i)];
        SCOPED_TRACE(i);
        EXPECT_EQ(q.index, i);
        EXPECT_EQ(q.send_ns, i * kE2e);
        EXPECT_EQ(q.ttft_ns, kTtft);
        EXPECT_EQ(q.itl_ns, (std::vector<int64_t>{10 * kMs, 10 * kMs}));
        EXPECT_EQ(q.tpot_ns, 10 * kMs);
        EXPECT_EQ(q.e2e_ns, kE2e);
        EXPECT_EQ(q.output_tokens, 3);
        EXPECT_EQ(q.prompt_tokens, 8);
        EXPECT_EQ(q.ttft_first_byte_ns, kTtft);
        EXPECT_EQ(q.request_id, "fake-" + std::to_string(i));
        EXPECT_FALSE(q.error);
    }
    EXPECT_EQ(p.ok, 4);
    EXPECT_EQ(p.errors, 0);
    EXPECT_EQ(p.duration_ns, 4 * kE2e);
    EXPECT_DOUBLE_EQ(p.request_per_s, 4 / (4 * kE2e * 1e-9));
    EXPECT_DOUBLE_EQ(p.output_tokens_per_s, 12 / (4 * kE2e * 1e-9));
    EXPECT_DOUBLE_EQ(*p.ttft.median, 10.8);
    EXPECT_FALSE(p.stopped_by);
    EXPECT_FALSE(r.doc.serve->interrupted);
    // The server was asked once per request, on the run's clock.
    const auto calls = rig.tl.calls_of(FakeOp::request);
    ASSERT_EQ(calls.size(), 4u);
    EXPECT_EQ(calls[3].start_ns - calls[0].start_ns, 3 * kE2e);
    EXPECT_EQ(rig.engines.servers().at(0).url, "http://127.0.0.1:9");
    EXPECT_EQ(r.doc.engines.at("http").value("server", ""), "fake-server");
}

// The server's own timings are kept per request as it said them, beside the client's TTFT and
// E2E, with a reason for each way the two disagree beyond the slack (1 ms + 1 % of the span):
// TTFT 10.8 ms and E2E 30.8 ms allow a prompt time up to 11.908 ms and prompt + generation up
// to 32.108 ms.
TEST_P(ServeRun, TheServersTimingsAreKeptAsClaimsWithTheirDisagreements) {
    rig.engines.serve.reply = [](const FakeCall& c, int64_t) {
        FakeServeReply rep;
        rep.ttft_ns = kTtft;
        rep.itl_ns = 10 * kMs;
        ServerTimings s;
        s.source = "llama-server";
        s.prompt_n = 8;
        s.cache_n = 0;
        s.predicted_n = 3;
        s.prompt_ns = 9 * kMs;
        s.predicted_ns = 20 * kMs;
        if (c.index == 1)
            s.prompt_ns = 12 * kMs;  // longer than the client waited for its first token
        if (c.index == 2)
            s.predicted_n = 2;  // the client counted 3
        if (c.index == 3)
            s.prompt_ns = 11'900'000;  // within the slack
        if (c.index == 4)
            s.predicted_ns = 24 * kMs;  // with the prompt's 9 ms, longer than the E2E
        rep.server = s;
        return rep;
    };
    ServeOptions o = small(GetParam());
    o.requests = 5;
    const RunResult r = run_serve(o, rig.env("serve"));
    EXPECT_EQ(r.outcome, Outcome::ok);
    const ServePoint& p = r.doc.serve->points.at(0);
    ASSERT_EQ(p.requests.size(), 5u);
    for (const ServeRequest& q : p.requests) {
        SCOPED_TRACE(q.index);
        ASSERT_TRUE(q.server_claim);
        EXPECT_EQ(q.server_claim->said.source, "llama-server");
        EXPECT_EQ(q.server_claim->said.prompt_n, 8);
        EXPECT_EQ(q.ttft_ns, kTtft);  // the client's own measurement beside it
        EXPECT_EQ(q.output_tokens, 3);
    }
    EXPECT_TRUE(p.requests[0].server_claim->disagreements.empty());
    EXPECT_EQ(p.requests[0].server_claim->said.prompt_ns, 9 * kMs);
    EXPECT_EQ(p.requests[0].server_claim->said.predicted_ns, 20 * kMs);
    EXPECT_EQ(p.requests[1].server_claim->said.prompt_ns, 12 * kMs);  // kept as said
    EXPECT_EQ(p.requests[1].server_claim->disagreements,
              (std::vector<std::string>{
                  "the llama-server timings claim 12.000 ms of prompt processing, longer than the "
                  "client's TTFT of 10.800 ms: not believed"}));
    EXPECT_EQ(p.requests[2].server_claim->said.predicted_n, 2);
    EXPECT_EQ(p.requests[2].server_claim->disagreements,
              (std::vector<std::string>{
                  "the llama-server timings count 2 generated tokens, the client 3: not "
                  "believed"}));
    EXPECT_TRUE(p.requests[3].server_claim->disagreements.empty());
    EXPECT_EQ(p.requests[4].server_claim->disagreements,
              (std::vector<std::string>{
                  "the llama-server timings claim 33.000 ms of prompt processing and "
                  "generation together, longer than the client's E2E of 30.800 ms: not "
                  "believed"}));
    // Each reason is one of the request's notes too.
    EXPECT_EQ(p.requests[1].notes, p.requests[1].server_claim->disagreements);
    // The claims come back from the document as they went in.
    const ResultDocument back = from_json<ResultDocument>(to_json(r.doc), "serve.json");
    ASSERT_TRUE(back.serve);
    for (size_t i = 0; i < 5; ++i) {
        const auto& a = *p.requests[i].server_claim;
        const auto& b = *back.serve->points.at(0).requests.at(i).server_claim;
        EXPECT_EQ(to_json(a), to_json(b));
    }
}

// A request the server fails is a failure of its point (and of the run), not an exception;
// the others are measured as before.
TEST_P(ServeRun, AFailedRequestIsCountedAndTheRunFails) {
    rig.engines.serve.reply = [](const FakeCall& c, int64_t) {
        FakeServeReply rep;
        rep.ttft_ns = kTtft;
        rep.itl_ns = 10 * kMs;
        if (c.index == 1)
            rep.error = "HTTP 500: scripted";
        return rep;
    };
    const RunResult r = run_serve(small(GetParam()), rig.env("serve"));
    EXPECT_EQ(r.outcome, Outcome::failed);
    const ServePoint& p = r.doc.serve->points.at(0);
    ASSERT_EQ(p.requests.size(), 4u);
    EXPECT_EQ(p.ok, 3);
    EXPECT_EQ(p.errors, 1);
    EXPECT_EQ(p.requests[1].error, "HTTP 500: scripted");
    EXPECT_FALSE(p.requests[1].interrupted);
    EXPECT_FALSE(p.requests[1].ttft_ns);
    // The failed request took its TTFT: the next one was sent after it.
    EXPECT_EQ(p.requests[2].send_ns, kE2e + kTtft);
    EXPECT_EQ(p.requests[3].e2e_ns, kE2e);
}

// --max-error-rate 0.25: two of the first four requests fail, so the point sends no fifth.
TEST_P(ServeRun, MaxErrorRateStopsThePoint) {
    rig.engines.serve.reply = [](const FakeCall& c, int64_t) {
        FakeServeReply rep;
        rep.ttft_ns = kTtft;
        rep.itl_ns = 10 * kMs;
        if (c.index == 0 || c.index == 2)
            rep.error = "scripted";
        return rep;
    };
    ServeOptions o = small(GetParam());
    o.requests = 12;
    o.max_error_rate = 0.25;
    const RunResult r = run_serve(o, rig.env("serve"));
    const ServePoint& p = r.doc.serve->points.at(0);
    EXPECT_EQ(p.requests.size(), 4u);
    EXPECT_EQ(p.ok, 2);
    EXPECT_EQ(p.errors, 2);
    EXPECT_EQ(p.stopped_by, "max_error_rate");
    EXPECT_EQ(rig.tl.calls_of(FakeOp::request).size(), 4u);
    EXPECT_EQ(r.outcome, Outcome::failed);
}

// Ctrl-C while a request is in flight: it is cut and kept as interrupted (neither a success
// nor a failure), the requests never sent are left out, the next point is not measured, and
// the document on disk holds what was measured.
TEST_P(ServeRun, CtrlCWithinAPointKeepsWhatWasMeasured) {
    test::TempDir dir;
    rig.engines.serve.before = [](const FakeCall& c) {
        if (c.index == 2)
            request_interrupt();
    };
    ServeOptions o = small(GetParam());
    o.concurrency = {1, 2};
    o.out_path = dir.file("serve.json");
    const RunResult r = run_serve(o, rig.env("serve"));
    EXPECT_EQ(r.outcome, Outcome::interrupted);
    ASSERT_EQ(r.doc.serve->points.size(), 1u);
    const ServePoint& p = r.doc.serve->points[0];
    ASSERT_EQ(p.requests.size(), 3u);
    EXPECT_EQ(p.ok, 2);
    EXPECT_EQ(p.errors, 0);
    EXPECT_EQ(p.interrupted, 1);
    EXPECT_TRUE(p.requests[2].interrupted);
    EXPECT_EQ(p.requests[2].send_ns, 2 * kE2e);
    EXPECT_TRUE(r.doc.serve->interrupted);
    clear_interrupt();
    const ResultDocument saved = load_result_document(*o.out_path);
    ASSERT_TRUE(saved.serve);
    ASSERT_EQ(saved.serve->points.size(), 1u);
    EXPECT_EQ(saved.serve->points[0].requests.size(), 3u);
    EXPECT_EQ(saved.serve->points[0].ok, 2);
    EXPECT_TRUE(saved.serve->interrupted);
}

// Ctrl-C between points (while the second point's prompts are made): the first point is kept
// whole, the second is not begun.
TEST_P(ServeRun, CtrlCBeforeAPointKeepsThePointsBefore) {
    rig.engines.serve.on_prompt = [](int index) {
        if (index == 4)
            request_interrupt();
    };
    ServeOptions o = small(GetParam());
    o.concurrency = {1, 2};
    const RunResult r = run_serve(o, rig.env("serve"));
    EXPECT_EQ(r.outcome, Outcome::interrupted);
    ASSERT_EQ(r.doc.serve->points.size(), 1u);
    EXPECT_EQ(r.doc.serve->points[0].ok, 4);
    EXPECT_EQ(r.doc.serve->points[0].interrupted, 0);
    EXPECT_TRUE(r.doc.serve->interrupted);
    EXPECT_EQ(rig.tl.calls_of(FakeOp::request).size(), 4u);
}

INSTANTIATE_TEST_SUITE_P(Clients, ServeRun, ::testing::Values(ClientKind::thread, ClientKind::loop),
                         [](const auto& info) { return std::string(to_string(info.param)); });

// Two clients on one thread (--client loop): the first two requests go out at once, each
// next one when one of those ends; the point spans two E2Es.
TEST(ServeRunLoop, ClosedLoopOfTwoClientsOverlapsTheirRequests) {
    clear_interrupt();
    test::RunRig rig;
    ServeOptions o = small(ClientKind::loop);
    o.concurrency = {2};
    const RunResult r = run_serve(o, rig.env("serve"));
    const ServePoint& p = r.doc.serve->points.at(0);
    ASSERT_EQ(p.requests.size(), 4u);
    EXPECT_EQ(p.requests[0].send_ns, 0);
    EXPECT_EQ(p.requests[1].send_ns, 0);
    EXPECT_EQ(p.requests[2].send_ns, kE2e);
    EXPECT_EQ(p.requests[3].send_ns, kE2e);
    EXPECT_EQ(p.duration_ns, 2 * kE2e);
    EXPECT_DOUBLE_EQ(p.request_per_s, 4 / (2 * kE2e * 1e-9));
}

// An open loop sends each request at its seeded arrival (arrival_gaps), whatever is in flight.
TEST(ServeRunLoop, OpenLoopSendsAtTheSeededArrivals) {
    clear_interrupt();
    test::RunRig rig;
    ServeOptions o = small(ClientKind::loop);
    o.concurrency.clear();
    o.rates = {50};
    o.seed = 7;
    const RunResult r = run_serve(o, rig.env("serve"));
    EXPECT_EQ(r.outcome, Outcome::ok);
    const ServePoint& p = r.doc.serve->points.at(0);
    EXPECT_EQ(p.mode, "rate");
    ASSERT_EQ(p.requests.size(), 4u);
    const std::vector<double> gaps = arrival_gaps(4, 50, 1.0, 7);
    double at_s = 0;
    for (size_t i = 0; i < 4; ++i) {
        at_s += gaps[i];
        EXPECT_EQ(p.requests[i].send_ns, static_cast<int64_t>(at_s * 1e9)) << i;
        EXPECT_EQ(p.requests[i].e2e_ns, kE2e);
    }
    EXPECT_EQ(p.duration_ns, p.requests[3].send_ns - p.requests[0].send_ns + kE2e);
}

// A server that cannot be reached is bad input before anything is measured.
// serve -m FILE: the llama-server stagebench starts comes from the run's engine factory, with
// serve's slots, threads and context, and the load goes to it; it is stopped at the end.
TEST(ServeRunLoop, TheServerStagebenchStartsComesFromTheFactory) {
    clear_interrupt();
    test::RunRig rig;
    ServeOptions o = small(ClientKind::loop);
    o.url.reset();
    o.model_file = test::tiny_gguf();
    o.slots = 2;
    o.threads = 3;
    const RunResult r = run_serve(o, rig.env("serve"));
    EXPECT_EQ(r.outcome, Outcome::ok);
    ASSERT_EQ(rig.engines.started().size(), 1u);
    const FakeServerState& srv = *rig.engines.started()[0];
    EXPECT_EQ(srv.spec.model, test::tiny_gguf());
    EXPECT_EQ(srv.spec.slots, 2);
    EXPECT_EQ(srv.spec.threads, 3);
    EXPECT_EQ(srv.spec.n_ctx, 2 * (8 + 3 + 64));
    EXPECT_TRUE(srv.stopped);
    // Its client, and the target put under load: both at its URL.
    ASSERT_EQ(rig.engines.servers().size(), 2u);
    EXPECT_EQ(rig.engines.servers()[0].url, "http://fake-server-0");
    EXPECT_EQ(rig.engines.servers()[1].url, "http://fake-server-0");
    ASSERT_TRUE(r.doc.serve);
    EXPECT_EQ(r.doc.serve->points[0].ok, 4);
}

// The server stagebench started has stopped by the end of a point: the point's failed requests
// say why, and no further point is sent to it.
TEST(ServeRunLoop, AServerThatStoppedEndsTheRunWithWhy) {
    clear_interrupt();
    test::RunRig rig;
    ServeOptions o = small(ClientKind::loop);
    o.url.reset();
    o.model_file = test::tiny_gguf();
    o.concurrency = {1, 2};
    const std::string why = "the llama-server stagebench started has stopped (killed by signal 9)";
    rig.engines.serve.reply = [&](const FakeCall& c, int64_t) {
        FakeServeReply reply;
        reply.ttft_ns = kTtft;
        reply.itl_ns = 10 * kMs;
        if (c.index >= 2) {
            rig.engines.started()[0]->ended = why;
            reply.error = "cannot connect to http://fake-server-0";
        }
        return reply;
    };
    const RunResult r = run_serve(o, rig.env("serve"));
    EXPECT_EQ(r.outcome, Outcome::failed);
    ASSERT_EQ(r.doc.serve->points.size(), 1u);  // the second point was never sent
    const ServePoint& p = r.doc.serve->points[0];
    ASSERT_EQ(p.requests.size(), 4u);
    EXPECT_FALSE(p.requests[1].error.has_value());
    EXPECT_EQ(p.requests[2].error, why);
    EXPECT_EQ(p.requests[3].error, why);
    EXPECT_TRUE(rig.engines.started()[0]->stopped);
}

TEST(ServeRunLoop, AnUnreachableServerIsBadInput) {
    clear_interrupt();
    test::RunRig rig;
    rig.engines.refuse = EngineKind::http;
    try {
        run_serve(small(ClientKind::loop), rig.env("serve"));
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input);
    }
}

}  // namespace
}  // namespace sb
