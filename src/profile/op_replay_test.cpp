#include "profile/op_replay.hpp"

#include <algorithm>
#include <cstring>
#include <memory>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "engine/backends.hpp"

namespace sb {
namespace {

struct CpuBackend {
    CpuBackend() {
        init_backends();
        be = ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, nullptr);
    }
    ~CpuBackend() {
        if (be)
            ggml_backend_free(be);
    }
    ggml_backend_t be = nullptr;
};

// y = W x: a mat-mul whose weights are model parameters (cycled through copies).
NodeDesc mat_mul(int64_t k, int64_t n) {
    NodeDesc nd;
    nd.op = GGML_OP_MUL_MAT;
    nd.op_desc = "MUL_MAT";
    nd.dst = contiguous_desc("y", GGML_TYPE_F32, {n, 1, 1, 1});
    TensorDesc w = contiguous_desc("w", GGML_TYPE_F32, {k, n, 1, 1});
    w.weight = true;
    nd.srcs = {w, contiguous_desc("x", GGML_TYPE_F32, {k, 1, 1, 1})};
    return nd;
}

TEST(ReplayPool, ReusesABufferUntilALargerOneIsAsked) {
    CpuBackend cpu;
    ASSERT_NE(cpu.be, nullptr);
    ggml_backend_buffer_type_t buft = ggml_backend_get_default_buffer_type(cpu.be);
    ReplayPool pool;
    ggml_backend_buffer_t a = pool.buffer(buft, 0, 1 << 20);
    ASSERT_NE(a, nullptr);
    EXPECT_GE(ggml_backend_buffer_get_size(a), size_t{1} << 20);
    EXPECT_EQ(pool.buffer(buft, 0, 4096), a);     // smaller: the same memory
    EXPECT_EQ(pool.buffer(buft, 0, 1 << 20), a);  // as large: the same memory
    ggml_backend_buffer_t other = pool.buffer(buft, 1, 4096);
    EXPECT_NE(other, a);  // another slot never shares memory
    ggml_backend_buffer_t b = pool.buffer(buft, 0, 2 << 20);
    ASSERT_NE(b, nullptr);
    EXPECT_GE(ggml_backend_buffer_get_size(b), size_t{2} << 20);
    EXPECT_EQ(pool.buffer(buft, 1, 4096), other);
}

TEST(ReplayPool, PatternIsWholeRowsMadeOnce) {
    ReplayPool pool;
    const std::vector<uint8_t>& p = pool.pattern(GGML_TYPE_Q4_0, 4096);
    const size_t row = ggml_row_size(GGML_TYPE_Q4_0, 4096);
    ASSERT_FALSE(p.empty());
    EXPECT_EQ(p.size() % row, 0u);
    EXPECT_LE(p.size(), size_t{1} << 20);
    EXPECT_GT(p.size() + row, size_t{1} << 20);
    EXPECT_EQ(&pool.pattern(GGML_TYPE_Q4_0, 4096), &p);  // made once
    EXPECT_NE(&pool.pattern(GGML_TYPE_Q4_0, 2048), &p);  // per row length
    // A row longer than the pattern's size is one row.
    EXPECT_EQ(pool.pattern(GGML_TYPE_F32, 1 << 19).size(), size_t{1} << 21);
}

TEST(ReplayPool, ScratchGrowsAndKeepsItsMemoryWhenSmallerIsAsked) {
    ReplayPool pool;
    uint8_t* a = pool.scratch(1000);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(pool.scratch(10), a);
    uint8_t* b = pool.scratch(1 << 20);
    ASSERT_NE(b, nullptr);
    b[(1 << 20) - 1] = 1;  // writable to its end
    EXPECT_EQ(pool.scratch(1000), b);
}

// Replays with and without a pool run the same graph: both time the op; with a pool, the
// weight copies (2 MiB budget, 256 KiB weights: 8 sets) and the output live in its buffers,
// and a later, larger replay grows them.
TEST(ReplayOp, RunsFromAPoolAcrossReplaysOfDifferentSizes) {
    CpuBackend cpu;
    ASSERT_NE(cpu.be, nullptr);
    ReplayConfig cfg;
    cfg.copies = 4;
    cfg.max_copies = 8;
    cfg.input_budget_bytes = 2u << 20;
    ReplayPool pool;
    ggml_backend_buffer_type_t buft = ggml_backend_get_default_buffer_type(cpu.be);
    for (const NodeDesc& nd : {mat_mul(256, 256), mat_mul(1024, 256), mat_mul(256, 64)}) {
        const ReplayResult fresh = replay_op(nd, cpu.be, false, cfg);
        const ReplayResult pooled = replay_op(nd, cpu.be, false, cfg, &pool);
        ASSERT_TRUE(fresh.op_ns.has_value()) << fresh.method;
        ASSERT_TRUE(pooled.op_ns.has_value()) << pooled.method;
        EXPECT_GT(*pooled.op_ns, 0.0);
        const size_t w_bytes = nd.srcs[0]->nbytes;
        const size_t sets = std::clamp<size_t>(cfg.input_budget_bytes / w_bytes, 1, 8);
        // The same input sets either way (how many copies and slope or average depend on
        // the timings).
        const std::string sets_text = fmt::format("({} input set", sets);
        EXPECT_NE(fresh.method.find(sets_text), std::string::npos) << fresh.method;
        EXPECT_NE(pooled.method.find(sets_text), std::string::npos) << pooled.method;
        // Set 0 and the output in slot 0, the further weight copies in slot 1 (asking for a
        // byte returns what the slot holds).
        EXPECT_GE(ggml_backend_buffer_get_size(pool.buffer(buft, 0, 1)), w_bytes);
        if (sets > 1) {
            EXPECT_GE(ggml_backend_buffer_get_size(pool.buffer(buft, 1, 1)), (sets - 1) * w_bytes);
        }
    }
}

// A GPU's replay (ReplayConfig::alone_only): one node per graph, never copies; the op time is
// the graph's round trip less the device's no-work one, or the whole round trip while that
// is being measured. Run here on the CPU backend, where the arithmetic is the same.
TEST(ReplayOp, AloneOnlyTimesOneNodeLessTheRoundTrip) {
    CpuBackend cpu;
    ASSERT_NE(cpu.be, nullptr);
    ReplayConfig cfg;
    cfg.copies = 16;
    cfg.alone_only = true;
    const ReplayResult probe = replay_op(mat_mul(256, 256), cpu.be, false, cfg);
    ASSERT_TRUE(probe.op_ns && probe.isolated_min_ns) << probe.method;
    EXPECT_EQ(probe.copies, 1);
    EXPECT_EQ(*probe.op_ns, *probe.isolated_min_ns);
    EXPECT_NE(probe.method.find("replayed alone on CPU (round trip included)"), std::string::npos)
        << probe.method;
    cfg.dispatch_ns = 1000.0;
    const ReplayResult r = replay_op(mat_mul(256, 256), cpu.be, false, cfg);
    ASSERT_TRUE(r.op_ns && r.isolated_min_ns) << r.method;
    EXPECT_EQ(r.copies, 1);
    EXPECT_DOUBLE_EQ(*r.op_ns, std::max(0.0, *r.isolated_min_ns - 1000.0));
    EXPECT_NE(r.method.find("replayed alone on CPU, less its 1.0 µs round trip"), std::string::npos)
        << r.method;
}

// The replay's repetitions are the one loop's core on the injected clock: a clock on which each
// timed computation takes the next scripted duration gives exact times. Warmed up untimed, then
// at least 5 repetitions of the one-node graph, until the least is within settle of the median.
TEST(ReplayOp, RepetitionsRunOnTheInjectedClockUnderTheReplayRule) {
    CpuBackend cpu;
    ASSERT_NE(cpu.be, nullptr);
    struct Script {
        std::vector<int64_t> durations;
        std::size_t reads = 0;
        int64_t now = 1'000'000'000;
    } s{{900, 800, 500, 600, 700, 400, 400, 400}};
    ReplayConfig cfg;
    cfg.alone_only = true;
    cfg.dispatch_ns = 100.0;
    cfg.settle = 0.5;
    cfg.clock = [&s] {  // a read before each computation, one after it
        if (s.reads++ % 2 == 1)
            s.now += s.durations.at(s.reads / 2 - 1);
        return s.now;
    };
    const ReplayResult r = replay_op(mat_mul(64, 64), cpu.be, false, cfg);
    ASSERT_TRUE(r.op_ns) << r.method;
    EXPECT_EQ(s.reads, 10u) << "5 repetitions: the median 700 is within 50 % of the least, 500";
    EXPECT_EQ(*r.isolated_min_ns, 500.0);
    EXPECT_EQ(*r.isolated_ns, 700.0);
    EXPECT_EQ(*r.op_ns, 400.0);  // the least less the 100 ns round trip

    const RepeatRule rule = replay_rule(cfg, 5);
    EXPECT_EQ(rule.min_reps, 5);
    EXPECT_EQ(rule.max_reps, cfg.max_reps);
    EXPECT_EQ(rule.max_spent_ns, cfg.max_spent_ns);
    EXPECT_TRUE(rule.enough({500, 700, 740}));
    EXPECT_FALSE(rule.enough({500, 800, 900}));
}

// A token-embedding lookup: rows `ids` of an n_rows x 2048 F32 table.
NodeDesc get_rows(int64_t n_rows, const std::vector<int32_t>& ids) {
    NodeDesc nd;
    nd.op = GGML_OP_GET_ROWS;
    nd.op_desc = "GET_ROWS";
    const auto n = static_cast<int64_t>(ids.size());
    nd.dst = contiguous_desc("inp_embd", GGML_TYPE_F32, {2048, n, 1, 1});
    TensorDesc table = contiguous_desc("token_embd.weight", GGML_TYPE_F32, {2048, n_rows, 1, 1});
    table.weight = true;
    TensorDesc idx = contiguous_desc("inp_tokens", GGML_TYPE_I32, {n, 1, 1, 1});
    auto bytes = std::make_shared<std::vector<uint8_t>>(ids.size() * sizeof(int32_t));
    std::memcpy(bytes->data(), ids.data(), bytes->size());
    idx.data = bytes;
    nd.srcs = {table, idx};
    return nd;
}

TEST(ReplayOp, AGetRowsReadsTheRowsOfItsCapturedIndices) {
    // Distinct and ascending; indices outside the table are left out.
    EXPECT_EQ(rows_read(get_rows(1000, {7, 3, 7, 999, 1000, -1})),
              (std::vector<int64_t>{3, 7, 999}));
    // Unknown without the indices' bytes, for another op, or a table of three dimensions.
    NodeDesc no_data = get_rows(1000, {1});
    no_data.srcs[1]->data.reset();
    EXPECT_FALSE(rows_read(no_data).has_value());
    EXPECT_FALSE(rows_read(mat_mul(64, 64)).has_value());
    NodeDesc three_d = get_rows(1000, {1});
    three_d.srcs[0]->ne[2] = 2;
    EXPECT_FALSE(rows_read(three_d).has_value());
    // Too few bytes for the indices the shape says: unknown.
    NodeDesc short_data = get_rows(1000, {1, 2});
    short_data.srcs[1]->data = std::make_shared<std::vector<uint8_t>>(4);
    EXPECT_FALSE(rows_read(short_data).has_value());
}

// A 64 MiB table of which one row is filled (from a pool) replays as the whole one does.
TEST(ReplayOp, AGetRowsFromAPoolFillsOnlyItsRows) {
    CpuBackend cpu;
    ASSERT_NE(cpu.be, nullptr);
    ReplayPool pool;
    const NodeDesc nd = get_rows(8192, {4242});
    const ReplayResult pooled = replay_op(nd, cpu.be, false, ReplayConfig{}, &pool);
    ASSERT_TRUE(pooled.op_ns.has_value()) << pooled.method;
    EXPECT_GT(*pooled.op_ns, 0.0);
    // The table is the first tensor of the pool's fresh (zeroed) buffer for slot 0: row 4242
    // holds data, the rows around it were never written.
    ggml_backend_buffer_t b = pool.buffer(ggml_backend_get_default_buffer_type(cpu.be), 0, 1);
    const auto* base = static_cast<const float*>(ggml_backend_buffer_get_base(b));
    auto row_is_zero = [&](int64_t r) {
        for (int64_t i = 0; i < 2048; ++i)
            if (base[r * 2048 + i] != 0.0f)
                return false;
        return true;
    };
    EXPECT_FALSE(row_is_zero(4242));
    EXPECT_TRUE(row_is_zero(0));
    EXPECT_TRUE(row_is_zero(4241));
    EXPECT_TRUE(row_is_zero(8191));
    const ReplayResult fresh = replay_op(nd, cpu.be, false, ReplayConfig{});
    ASSERT_TRUE(fresh.op_ns.has_value()) << fresh.method;
}

}  // namespace
}  // namespace sb
