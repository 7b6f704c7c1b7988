// ggml-vulkan's timestamp-query logger as the pinned tree prints it (fixtures captured from real
// runs on Mesa's lavapipe, tests/fixtures/vulkan/README.md), damaged lines, and the matching
// of its names to a profile's ops.
#include "profile/vk_perf_log.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "profile/op_times.hpp"

using namespace sb;

namespace {

std::string vk_fixture(const std::string& name) {
    const std::string path = std::string(SB_SOURCE_DIR) + "/tests/fixtures/vulkan/" + name;
    std::ifstream f(path, std::ios::binary);
    EXPECT_TRUE(f.good()) << path;
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

// text with its line n (1-based) replaced.
std::string replace_line(const std::string& text, int n, const std::string& line) {
    std::istringstream in(text);
    std::string out, l;
    for (int i = 1; std::getline(in, l); ++i)
        out += (i == n ? line : l) + "\n";
    return out;
}

int line_of(const std::string& text, const std::string& start, int nth = 1) {
    std::istringstream in(text);
    std::string l;
    for (int i = 1; std::getline(in, l); ++i)
        if (l.rfind(start, 0) == 0 && --nth == 0)
            return i;
    ADD_FAILURE() << "no line starts with " << start;
    return -1;
}

const VkPerfSection* section(const VkPerfLog& log, const std::string& stage, int index) {
    for (const auto& s : log.sections)
        if (s.stage == stage && s.index == index)
            return &s;
    return nullptr;
}

TensorInfo t(const std::string& type, std::vector<int64_t> ne) {
    return TensorInfo{"", type, std::move(ne), true};
}

OpRecord vk_rec(const std::string& op, TensorInfo out, std::vector<TensorInfo> srcs,
                const std::string& backend = "Vulkan0") {
    OpRecord r;
    r.op = op;
    r.out = std::move(out);
    r.srcs = std::move(srcs);
    r.backend = backend;
    return r;
}

}  // namespace

// stagebench's own pass (fusion off): one prefill of 32 tokens and decode steps, each between
// its markers; the blocks of the load and the warm-up are outside every section.
TEST(VkPerfLog, ReadsThePassAsThePinnedTreePrintsIt) {
    const VkPerfLog log = parse_vk_perf_log(vk_fixture("ops_pass.log"));
    EXPECT_TRUE(log.rejected.empty()) << log.rejected.front();
    ASSERT_EQ(log.sections.size(), 3u);
    const VkPerfSection* pre = section(log, "prefill", 0);
    ASSERT_NE(pre, nullptr);
    EXPECT_EQ(pre->n_blocks, 1);
    EXPECT_GT(log.n_blocks, 3);  // the warm-up's block too
    const auto& mm = pre->ops.at("MUL_MAT q4_0 m=768 n=32 k=256");
    EXPECT_EQ(mm.count, 6);
    EXPECT_GT(mm.total_us, 0);
    EXPECT_EQ(pre->ops.at("RMS_NORM(256,32,1,1)").count, 7);
    EXPECT_EQ(pre->ops.count("FLASH_ATTN_EXT dst(32,8,32,1),  q(32,32,8,1),  k(32,256,4,1),  "
                             "v(32,256,4,1),  m(256,32,1,1)"),
              1u);
    const VkPerfSection* d1 = section(log, "decode", 1);
    ASSERT_NE(d1, nullptr);
    EXPECT_EQ(d1->ops.at("MUL_MAT_VEC q6_K m=4096 n=1 k=256").count, 1);
    EXPECT_EQ(d1->ops.at("GLU").count, 4);
}

// llama-bench with fusion on: fused names ("RMS_NORM_MUL RMS_NORM(256,1,1,1)") read as names;
// blocks outside markers are counted and not used.
TEST(VkPerfLog, ReadsFusedNamesAndIgnoresUnmarkedBlocks) {
    const std::string text = vk_fixture("llama_bench_fused.log");
    const VkPerfLog bare = parse_vk_perf_log(text);
    EXPECT_TRUE(bare.rejected.empty());
    EXPECT_EQ(bare.n_blocks, 5);
    EXPECT_TRUE(bare.sections.empty());
    const VkPerfLog log = parse_vk_perf_log(vk_perf_marker("prefill", 0, true) + "\n" + text +
                                            vk_perf_marker("prefill", 0, false) + "\n");
    ASSERT_EQ(log.sections.size(), 1u);
    const VkPerfSection& s = log.sections[0];
    EXPECT_EQ(s.n_blocks, 5);
    EXPECT_EQ(s.ops.at("RMS_NORM_MUL RMS_NORM(256,32,1,1)").count, 14);
    EXPECT_EQ(s.ops.at("MUL_MAT_ADD MUL_MAT_VEC q4_0 m=256 n=1 k=768").count, 1 + 1 + 4 + 4 + 4);
    // "ADD: 7 x 428.775 us = 3001.43 us" and "ADD: 7 x 327.358 us = 2291.51 us" first.
    EXPECT_NEAR(s.ops.at("RMS_NORM_MUL RMS_NORM(256,32,1,1)").total_us, 323104 + 297730, 1e-6);
}

// A damaged line is named (its number and text) and its block is not used; the other blocks are.
TEST(VkPerfLog, DamagedLinesAreNamedAndTheirBlockDropped) {
    const std::string text = vk_fixture("ops_pass.log");
    const int add = line_of(text, "ADD: ", 2);  // the prefill's (the first is the warm-up's)
    struct Case {
        std::string line, why;
    };
    const std::vector<Case> cases{
        {"ADD: 8 x 210.96 us = 1687.68", "not an op timing"},
        {"ADD: -8 x 210.96 us = 1687.68 us", "a count outside 1..10000000"},
        {"ADD: 8 x nan us = 1687.68 us", "a count or time that is not a number"},
        {"ADD: 8 x 1e+12 us = 8e+12 us", "a time outside 0..3600000000 us"},
        {"ADD: 8 x 210.96 us = 9999.99 us", "its average times its count is not its total"},
        {"ADD 8 x 210.96 us", "not an op timing"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.line);
        const VkPerfLog log = parse_vk_perf_log(replace_line(text, add, c.line));
        ASSERT_EQ(log.rejected.size(), 2u);
        EXPECT_EQ(log.rejected[0], "line " + std::to_string(add) + ": " + c.why + ": " + c.line);
        EXPECT_NE(log.rejected[1].find("block dropped: its total"), std::string::npos)
            << log.rejected[1];
        const VkPerfSection* pre = section(log, "prefill", 0);
        ASSERT_NE(pre, nullptr);
        EXPECT_EQ(pre->n_blocks, 0);
        EXPECT_TRUE(pre->ops.empty());
        ASSERT_NE(section(log, "decode", 0), nullptr);
        EXPECT_EQ(section(log, "decode", 0)->n_blocks, 1);
    }
}

TEST(VkPerfLog, BlocksWithoutTheirTotalAndBadMarkersAreRejected) {
    const std::string text = vk_fixture("ops_pass.log");
    const int total = line_of(text, "Total time: ", 2);
    // A total that is not the sum of the block's lines.
    VkPerfLog log = parse_vk_perf_log(replace_line(text, total, "Total time: 1 us."));
    ASSERT_EQ(log.rejected.size(), 1u);
    EXPECT_NE(log.rejected[0].find("block dropped: its total 1 us is not the sum of its lines"),
              std::string::npos)
        << log.rejected[0];
    // The block cut off before its total: the end marker comes first.
    log = parse_vk_perf_log(replace_line(text, total, "garbage"));
    ASSERT_EQ(log.rejected.size(), 2u);
    EXPECT_EQ(log.rejected[0], "line " + std::to_string(total) + ": not an op timing: garbage");
    EXPECT_NE(log.rejected[1].find("a stage marker came before its \"Total time\" line"),
              std::string::npos);
    // Output ending inside a block and inside a stage.
    const std::string cut = text.substr(0, text.find("Total time: ", text.find("begin decode 1")));
    log = parse_vk_perf_log(cut);
    ASSERT_EQ(log.rejected.size(), 2u);
    EXPECT_NE(log.rejected[0].find("the output ended before its \"Total time\" line"),
              std::string::npos);
    EXPECT_EQ(log.rejected[1], "the output ended inside stage decode 1");
    // Markers out of order.
    log = parse_vk_perf_log(vk_perf_marker("decode", 0, false) + "\n" +
                            "stagebench-device-timer: begin prefill x\n");
    ASSERT_EQ(log.rejected.size(), 2u);
    EXPECT_EQ(log.rejected[0],
              "line 1: the end of a stage that had not begun: stagebench-device-timer: end "
              "decode 0");
    EXPECT_EQ(log.rejected[1],
              "line 2: not a stage marker: stagebench-device-timer: begin prefill x");
}

TEST(VkPerfLog, NamesOpsAsTheLoggerDoes) {
    EXPECT_EQ(*vk_perf_name(vk_rec("MUL_MAT", t("f32", {128, 32, 1, 1}),
                                   {t("q4_0", {256, 128, 1, 1}), t("f32", {256, 32, 1, 1})})),
              "MUL_MAT q4_0 m=128 n=32 k=256");
    EXPECT_EQ(*vk_perf_name(vk_rec("MUL_MAT", t("f32", {4096, 1, 1, 1}),
                                   {t("q6_K", {256, 4096, 1, 1}), t("f32", {256, 1, 1, 1})})),
              "MUL_MAT_VEC q6_K m=4096 n=1 k=256");
    EXPECT_EQ(*vk_perf_name(vk_rec("MUL_MAT", t("f32", {256, 8, 4, 2}),
                                   {t("f16", {64, 256, 4, 2}), t("f32", {64, 8, 4, 2})})),
              "MUL_MAT_VEC f16 m=256 n=8 k=64 batch=8");
    EXPECT_EQ(*vk_perf_name(vk_rec("RMS_NORM", t("f32", {256, 32, 1, 1}), {t("f32", {256, 32})})),
              "RMS_NORM(256,32,1,1)");
    EXPECT_EQ(*vk_perf_name(vk_rec("SWIGLU", t("f32", {768, 1}), {t("f32", {768, 1})})), "GLU");
    EXPECT_EQ(*vk_perf_name(vk_rec("SILU", t("f32", {768, 1}), {t("f32", {768, 1})})), "SILU");
    EXPECT_EQ(*vk_perf_name(vk_rec("FLASH_ATTN_EXT", t("f32", {32, 8, 1, 1}),
                                   {t("f32", {32, 1, 8, 1}), t("f16", {32, 256, 4, 1}),
                                    t("f16", {32, 256, 4, 1}), t("f16", {256, 1, 1, 1})})),
              "FLASH_ATTN_EXT dst(32,8,1,1),  q(32,1,8,1),  k(32,256,4,1),  v(32,256,4,1),  "
              "m(256,1,1,1)");
    EXPECT_EQ(*vk_perf_name(vk_rec("ROPE", t("f32", {32, 8, 32}), {})), "ROPE");
    OpRecord view = vk_rec("VIEW", t("f32", {32}), {});
    view.no_compute = true;
    EXPECT_FALSE(vk_perf_name(view));
    EXPECT_TRUE(is_vk_perf_device("Vulkan0"));
    EXPECT_FALSE(is_vk_perf_device("CUDA0"));
}

// Every op of a name gets the median over the samples whose count matches the profile's; a
// sample with another count is not used; a name the timer never matched keeps no time, and
// says why.
TEST(VkPerfLog, MatchesByNameAndCountPerStage) {
    StageProfile st;
    st.stage = "decode";
    const TensorInfo v = t("f32", {256, 1, 1, 1});
    st.ops = {vk_rec("ADD", v, {v, v}), vk_rec("ADD", v, {v, v}), vk_rec("ADD", v, {v, v}, "CPU"),
              vk_rec("MUL_MAT", v, {t("q4_0", {256, 256}), v}), vk_rec("RMS_NORM", v, {v})};
    st.ops.push_back(vk_rec("VIEW", v, {v}));
    st.ops.back().no_compute = true;
    auto sample = [](double add_us, int64_t add_n, double norm_us) {
        VkPerfSection s;
        s.stage = "decode";
        s.ops["ADD"] = {add_n, add_us};
        s.ops["RMS_NORM(256,1,1,1)"] = {1, norm_us};
        s.ops["SOFT_MAX"] = {1, 5};
        return s;
    };
    const std::vector<VkPerfSection> samples{sample(10, 2, 7), sample(30, 2, 9), sample(99, 3, 8)};
    const DeviceTimeMatch m = match_vk_perf(st, "Vulkan0", samples);
    ASSERT_EQ(m.ops.size(), st.ops.size());
    // ADD: 5 µs and 15 µs per op in the samples that count two: 10 µs.
    for (size_t i : {0u, 1u}) {
        ASSERT_TRUE(m.ops[i] && m.ops[i]->op_ns);
        EXPECT_DOUBLE_EQ(*m.ops[i]->op_ns, 10'000);
        EXPECT_EQ(m.ops[i]->method,
                  "device timer: Vulkan timestamp queries (GGML_VK_PERF_LOGGER, fusion off) in a "
                  "pass of its own; mean of the 2 ADD on Vulkan0 per decode step, median of 2 "
                  "decode step(s)");
    }
    EXPECT_FALSE(m.ops[2]);  // on the CPU
    ASSERT_TRUE(m.ops[3]);
    EXPECT_FALSE(m.ops[3]->op_ns);
    EXPECT_EQ(m.ops[3]->method,
              "no device time: the device timer counted 0 of \"MUL_MAT_VEC q4_0 m=256 n=1 "
              "k=256\" per decode step where the profile has 1");
    ASSERT_TRUE(m.ops[4] && m.ops[4]->op_ns);
    EXPECT_DOUBLE_EQ(*m.ops[4]->op_ns, 8'000);
    EXPECT_NE(m.ops[4]->method.find(
                  "; the one RMS_NORM(256,1,1,1) on Vulkan0 per decode step, median of 3 "),
              std::string::npos);
    EXPECT_FALSE(m.ops[5]);  // a view
    EXPECT_EQ(m.n_matched, 3);
    EXPECT_EQ(m.n_unmatched, 1);
    ASSERT_EQ(m.notes.size(), 1u);
    EXPECT_EQ(m.notes[0],
              "the device timer timed ops on Vulkan0 that the profile of the decode does not have "
              "there (not used): SOFT_MAX");
}

// assign_op_times takes the device's time where it has one, the round-trip method elsewhere
// (with why the device gave none), and counts both.
namespace {
class GpuReplayer final : public OpReplayer {
  public:
    void open(const ReplaySetup&) override {}
    bool can_replay_on(const std::string&) const override { return false; }
    bool fixed_dispatch(const std::string&) const override { return false; }
    bool in_situ_only(const std::string& d) const override { return d == "Vulkan0"; }
    OpTime replay(const CapturedNode&, const std::string&, bool) override { return {}; }
    std::vector<std::string> unusable_inputs(const CapturedNode&,
                                             const std::string&) const override {
        return {};
    }
    std::optional<double> dispatch_ns(const std::string&) override { return 100'000; }
    std::optional<double> conversion_ns(const CapturedNode&, const std::string&, bool*) override {
        return std::nullopt;
    }
};
}  // namespace

TEST(VkPerfLog, OpTimesPreferTheDeviceTimer) {
    BuiltStage b;
    const TensorInfo v = t("f32", {256, 1, 1, 1});
    b.stage.ops = {vk_rec("ADD", v, {v, v}), vk_rec("MUL_MAT", v, {t("q4_0", {256, 256}), v})};
    b.stage.ops[0].call_ns = 150'000;
    b.stage.ops[1].call_ns = 900'000;
    b.nodes.resize(2);
    b.nodes[0].signature = "add";
    b.nodes[1].signature = "mm";
    std::vector<std::optional<OpTime>> dev(2);
    dev[0] = OpTime{7'000, std::nullopt, "device timer: ..."};
    dev[1] = OpTime{std::nullopt, std::nullopt, "no device time: why"};
    GpuReplayer rep;
    OpTimeOptions o;
    o.device_times = &dev;
    assign_op_times(b, rep, o);
    EXPECT_DOUBLE_EQ(*b.stage.ops[0].op_ns, 7'000);
    EXPECT_EQ(*b.stage.ops[0].op_method, "device timer: ...");
    EXPECT_DOUBLE_EQ(*b.stage.ops[1].op_ns, 800'000);
    EXPECT_EQ(*b.stage.ops[1].op_method,
              "traced call less the 100.00 µs round trip of a no-work op on Vulkan0 (a GPU's ops "
              "are not replayed); no device time: why");
    EXPECT_EQ(b.stage.rec.n_op_device_timer, 1);
    EXPECT_EQ(b.stage.rec.n_op_in_situ, 1);
    EXPECT_DOUBLE_EQ(*b.stage.rec.sum_op_in_situ_ns, 800'000);
    EXPECT_TRUE(b.stage.notes.empty());  // 7 µs of device time within its 150 µs call
}

// A call holds its op, so device times above the calls are said, once per device, with the op
// type that exceeds its calls the most; at or below them, nothing.
TEST(VkPerfLog, DeviceTimesAboveTheirCallsAreSaidWithTheOpThatExceedsMost) {
    auto stage = [](double norm_device_ns) {
        BuiltStage b;
        const TensorInfo v = t("f32", {256, 1, 1, 1});
        b.stage.ops = {vk_rec("ADD", v, {v, v}), vk_rec("RMS_NORM", v, {v}),
                       vk_rec("RMS_NORM", v, {v}),
                       vk_rec("MUL_MAT", v, {t("q4_0", {256, 256}), v})};
        b.nodes.resize(4);
        const double calls[] = {100'000, 150'000, 150'000, 1'100'000};
        const char* sigs[] = {"add", "norm", "norm", "mm"};
        const double device[] = {50'000, norm_device_ns, norm_device_ns, 1'000'000};
        std::vector<std::optional<OpTime>> dev(4);
        for (int i = 0; i < 4; ++i) {
            b.stage.ops[i].call_ns = calls[i];
            b.nodes[i].signature = sigs[i];
            dev[i] = OpTime{device[i], std::nullopt, "device timer: ..."};
        }
        GpuReplayer rep;
        OpTimeOptions o;
        o.device_times = &dev;
        assign_op_times(b, rep, o);
        return b.stage.notes;
    };
    // Device 50 + 2 x 450 + 1000 = 1950 µs against calls of 1500 µs; RMS_NORM 900 against 300.
    const std::vector<std::string> above = stage(450'000);
    ASSERT_EQ(above.size(), 1u);
    EXPECT_EQ(above[0],
              "on Vulkan0 the device timer's op times sum to 130 % of the same ops' traced "
              "calls, which hold them: its pass ran apart from the calls and was slowed where "
              "they were not (most in RMS_NORM, 3.00x its calls); an op's call bounds it better "
              "where its device time is the larger");
    // 50 + 2 x 175 + 1000 = 1400 µs: within the calls, though RMS_NORM alone is above its own.
    EXPECT_TRUE(stage(175'000).empty());
    // Exactly the calls: within.
    EXPECT_TRUE(stage(225'000).empty());
}
