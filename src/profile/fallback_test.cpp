// Fallback rows and their penalty on a hand-made stage: the cases the pipeline test does not
// reach (part of the nodes replayed, a replay that fails, boundaries never timed, a graph that
// never reaches the requested device).
#include "profile/fallback.hpp"

#include <gtest/gtest.h>

#include <map>

namespace sb {
namespace {

OpRecord fallback_rec(int node, const std::string& op, const std::string& backend, double op_ns) {
    OpRecord r;
    r.node = node;
    r.op = op;
    r.backend = backend;
    r.op_ns = op_ns;
    r.call_ns = op_ns + 1000;
    return r;
}

CapturedNode cap(const std::string& signature, uint32_t supports) {
    CapturedNode n;
    n.signature = signature;
    n.supports = supports;
    return n;
}

// Replays by signature: "fail" gives no time, anything else 1 µs.
class Replayer final : public OpReplayer {
  public:
    void open(const ReplaySetup&) override {}
    bool can_replay_on(const std::string&) const override { return true; }
    bool fixed_dispatch(const std::string&) const override { return true; }
    OpTime replay(const CapturedNode& n, const std::string& d, bool) override {
        if (n.signature == "fail")
            return {std::nullopt, std::nullopt, "compute failed on " + d};
        return {1000.0, 2000.0, "replayed"};
    }
    std::vector<std::string> unusable_inputs(const CapturedNode& n,
                                             const std::string& d) const override {
        if (n.signature == "repacked")
            return {"inputs in CPU_REPACK buffers, which " + d + " cannot use"};
        return {};
    }
    std::optional<double> dispatch_ns(const std::string&) override { return 500.0; }
    std::optional<double> conversion_ns(const CapturedNode&, const std::string&, bool*) override {
        return std::nullopt;
    }
};

// CPU split 0 (nodes 0-2), GPU split 1 (node 3), CPU split 2 (node 4): three MUL_MATs on the
// CPU, one of which fails to replay, and one SOFT_MAX after the GPU split.
StageProfile stage(bool timed) {
    StageProfile st;
    st.ops = {fallback_rec(0, "MUL_MAT", "CPU", 4000), fallback_rec(1, "MUL_MAT", "CPU", 4000),
              fallback_rec(2, "MUL_MAT", "CPU", 4000), fallback_rec(3, "MUL_MAT", "GPU0", 3000),
              fallback_rec(4, "SOFT_MAX", "CPU", 2000)};
    st.splits = {
        {0, 0, "CPU", 0, 3, 0, uint64_t{0}, {}, std::nullopt},
        {0, 1, "GPU0", 3, 1, 1, uint64_t{100}, {"a"}, timed ? std::optional(900.0) : std::nullopt},
        {0, 2, "CPU", 4, 1, 1, uint64_t{40}, {"b"}, timed ? std::optional(300.0) : std::nullopt}};
    st.coverage_devices = {"GPU0", "CPU"};
    return st;
}

TEST(Fallback, PartlyReplayedRowsSayWhichAndWhyNot) {
    const StageProfile st = stage(true);
    const std::vector<CapturedNode> nodes{cap("ok", 0b11), cap("repacked", 0b11), cap("fail", 0b11),
                                          cap("gpu", 0b11), cap("soft", 0b10)};
    Replayer r;
    const auto rows = fallback_rows(st, nodes, {"GPU0"}, &r, "GPU0");
    ASSERT_EQ(rows.size(), 2u);
    const FallbackRow& mm = rows[0];
    EXPECT_EQ(mm.op, "MUL_MAT");
    EXPECT_EQ(mm.count, 3);
    EXPECT_EQ(mm.n_replayed, 2);
    EXPECT_DOUBLE_EQ(*mm.op_ns_replayed, 8000);
    EXPECT_DOUBLE_EQ(*mm.op_ns_requested, 2000);
    EXPECT_DOUBLE_EQ(*mm.penalty, 4.0);
    // Split 0's way back to the GPU (900 ns, 100 bytes) is all the mat-muls'; two thirds of
    // it go with the two nodes replayed.
    EXPECT_EQ(mm.n_splits, 1);
    EXPECT_DOUBLE_EQ(*mm.split_ns, 900);
    EXPECT_EQ(*mm.split_bytes, 100u);
    EXPECT_DOUBLE_EQ(*mm.penalty_ns, 8000 + 600 - 2000);
    EXPECT_EQ(mm.penalty_basis, "replayed on GPU0 (2 of 3 nodes)");
    EXPECT_EQ(mm.note,
              "compute failed on GPU0; inputs in CPU_REPACK buffers, which GPU0 cannot use");
    // SOFT_MAX: the GPU cannot run it; its split's own cost is the gap into it.
    const FallbackRow& sm = rows[1];
    EXPECT_EQ(sm.op, "SOFT_MAX");
    EXPECT_DOUBLE_EQ(*sm.penalty_ns, 300);
    EXPECT_EQ(*sm.split_bytes, 40u);
    EXPECT_EQ(sm.note, "1 not supported by GPU0");
}

TEST(Fallback, WithoutTimedBoundariesThereIsNoSplitCostAndTheNoteSaysWhy) {
    const StageProfile st = stage(false);
    const std::vector<CapturedNode> nodes{cap("ok", 0b11), cap("ok", 0b11), cap("ok", 0b11),
                                          cap("gpu", 0b11), cap("soft", 0b10)};
    const auto rows = fallback_rows(st, nodes, {"GPU0"}, nullptr, "");
    ASSERT_EQ(rows.size(), 2u);
    for (const auto& f : rows) {
        SCOPED_TRACE(f.op);
        EXPECT_FALSE(f.penalty_ns.has_value());
        EXPECT_FALSE(f.split_ns.has_value());
        EXPECT_TRUE(f.penalty_basis.empty());
        EXPECT_NE(f.note.find("no penalty: the split boundaries were not timed"),
                  std::string::npos);
    }
    // Bytes are known without the times.
    EXPECT_EQ(*rows[0].split_bytes, 100u);
}

TEST(Fallback, AGraphThatNeverReachesTheDeviceCostsNoSplit) {
    // Decode on BLAS: every node on the CPU, one split, no boundary to cross.
    StageProfile st;
    st.ops = {fallback_rec(0, "MUL_MAT", "CPU", 4000), fallback_rec(1, "ADD", "CPU", 100)};
    st.splits = {{0, 0, "CPU", 0, 2, 0, uint64_t{0}, {}, std::nullopt}};
    st.coverage_devices = {"BLAS", "CPU"};
    const std::vector<CapturedNode> nodes{cap("mm", 0b10), cap("add", 0b10)};
    const auto rows = fallback_rows(st, nodes, {"BLAS"}, nullptr, "");
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_DOUBLE_EQ(*rows[0].penalty_ns, 0);
    EXPECT_EQ(rows[0].penalty_basis,
              "split cost only: BLAS cannot run it, so there is no graph without the split");
    EXPECT_EQ(rows[0].op, "MUL_MAT");  // equal penalties: the larger call first
}

}  // namespace
}  // namespace sb
