#include "profile/sched_log.hpp"

#include <gtest/gtest.h>

namespace sb {
namespace {

// As ggml_backend_sched_print_assignments writes it with GGML_SCHED_DEBUG=2.
const char* kDump =
    "\n## SPLIT #0: CPU # 0 inputs\n"
    "node #  0 (  GET_ROWS):             inp_embd (   1K) [  CPU         ] use=1,c=1:      "
    "token_embd.weight (   1M) [ NULL         ]            inp_tokens (   0K) [ NULL         ]\n"
    "\n## SPLIT #1: RPC0[127.0.0.1:40123] # 1 inputs: [inp_embd (   1K)] \n"
    "node #  1 (  RMS_NORM):               norm-0 (   1K) [RPC0[         ] use=1,c=1:\n"
    "node #  2 (       MUL):          attn_norm-0 (   1K) [RPC0[         ] use=3,c=1:\n"
    "node #  4 (   MUL_MAT): a_very_long_tensor_n (   1K) [RPC0[         ] use=1,c=1:\n"
    "\n## SPLIT #2: CPU # 2 inputs: [result_norm (   1K)] [cache_k_l0 (view) (  16K)] \n"
    "node # 30 (   MUL_MAT):        result_output (  16K) [  CPU         ] use=0,c=1:\n";

TEST(SchedLog, ParsesSplitsBackendsAndNodes) {
    SchedAssignment a = parse_sched_assignments(std::string("noise before\n") + kDump);
    ASSERT_EQ(a.splits.size(), 3u);
    EXPECT_EQ(a.splits[0].backend, "CPU");
    EXPECT_EQ(a.splits[0].first_node, 0);
    EXPECT_EQ(a.splits[0].n_inputs, 0);
    EXPECT_EQ(a.splits[1].backend, "RPC0[127.0.0.1:40123]");
    EXPECT_EQ(a.splits[1].first_node, 1);
    EXPECT_EQ(a.splits[1].n_inputs, 1);
    ASSERT_EQ(a.splits[1].inputs.size(), 1u);
    EXPECT_EQ(a.splits[1].inputs[0], "inp_embd");
    EXPECT_EQ(a.splits[2].first_node, 30);
    ASSERT_EQ(a.splits[2].inputs.size(), 2u);
    EXPECT_EQ(a.splits[2].inputs[1], "cache_k_l0 (view)");
    EXPECT_EQ(a.split_of(0)->index, 0);
    EXPECT_EQ(a.split_of(3)->index, 1);  // a view between nodes: the split it sits in
    EXPECT_EQ(a.split_of(29)->index, 1);
    EXPECT_EQ(a.split_of(31)->index, 2);
    ASSERT_EQ(a.nodes.size(), 5u);
    EXPECT_EQ(a.nodes.at(2).op, "MUL");
    EXPECT_EQ(a.nodes.at(2).name, "attn_norm-0");
    EXPECT_TRUE(sched_line_matches(a.nodes.at(4), "MUL_MAT", "a_very_long_tensor_name_here-0"));
    EXPECT_FALSE(sched_line_matches(a.nodes.at(4), "MUL_MAT", "other"));
}

TEST(SchedLog, TheLatestDumpWins) {
    std::string two =
        std::string(kDump) + "\n## SPLIT #0: BLAS # 0 inputs\n" +
        "node #  0 (   MUL_MAT):                 kq-0 (   1K) [ BLAS         ] use=1,c=1:\n";
    SchedAssignment a = parse_sched_assignments(two);
    ASSERT_EQ(a.splits.size(), 1u);
    EXPECT_EQ(a.splits[0].backend, "BLAS");
    EXPECT_EQ(a.nodes.size(), 1u);
}

TEST(SchedLog, NothingToParse) {
    EXPECT_TRUE(parse_sched_assignments("").empty());
    EXPECT_TRUE(parse_sched_assignments("## SPLIT #1: CPU # 0 inputs\n").empty());
    SchedAssignment a;
    EXPECT_EQ(a.split_of(3), nullptr);
}

}  // namespace
}  // namespace sb
