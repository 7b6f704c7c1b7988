// The ops tables (`ops`, `decompose`, `import hexagon-profile`): CSV through the op field table,
// Markdown per stage, the formats ops commands print.
#include "report/ops_report.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "core/error.hpp"
#include "profile/op_record.hpp"

namespace sb {
namespace {

OpsProfile profile() {
    OpsProfile p;
    p.source = "trace";
    p.model_path = "/m/tiny.gguf";
    p.method = "replayed";
    p.devices = "CPU";
    p.n_threads = 2;
    StageProfile s;
    s.stage = "decode";
    s.n_tokens = 1;
    s.kv_depth = 8;
    s.n_graphs = 1;
    OpRecord a;
    a.node = 0;
    a.op = "MUL_MAT";
    a.out.name = "ffn_up-0";
    a.out.type = "f32";
    a.out.ne = {256, 1};
    a.layer = 0;
    a.backend = "CPU";
    a.op_ns = 1234.56;
    a.call_ns = 2000;
    OpRecord v;
    v.node = 1;
    v.op = "VIEW";
    v.out.name = "name, with \"comma\"";
    v.out.type = "f32";
    v.out.ne = {4, 2, 1};
    v.backend = "CPU";
    v.no_compute = true;
    s.ops = {a, v};
    s.by_op = aggregate(s.ops, GroupBy::op, std::nullopt);
    p.stages.push_back(s);
    return p;
}

TEST(OpsReport, CsvIsOneRowPerOpThroughTheFieldTable) {
    std::ostringstream out;
    write_ops_csv(profile(), out);
    EXPECT_EQ(out.str(),
              "stage,graph,node,op,name,layer,backend,type,shape,no_compute,op_ns,call_ns,"
              "isolated_call_ns\n"
              "decode,0,0,MUL_MAT,ffn_up-0,0,CPU,f32,256,0,1234.6,2000.0,\n"
              "decode,0,1,VIEW,\"name, with \"\"comma\"\"\",,CPU,f32,4x2,1,,,\n");
}

TEST(OpsReport, MarkdownHasAStageSectionAndTheByOpTable) {
    std::ostringstream out;
    write_ops_markdown(profile(), out);
    const std::string s = out.str();
    EXPECT_EQ(s.rfind("# Per-op profile: /m/tiny.gguf\n\nreplayed\n", 0), 0u) << s;
    EXPECT_NE(s.find("## decode — 1 token(s) at KV depth 8 · CPU · 2 threads · 1 graph(s)"),
              std::string::npos)
        << s;
    EXPECT_NE(s.find("### By op type"), std::string::npos) << s;
    EXPECT_NE(s.find("| MUL_MAT | 1 | 1.23 | 2.00 | 1.6x |"), std::string::npos) << s;
}

// An imported NPU profile's pipeline: one table per session, each time once with its unit.
TEST(OpsReport, MarkdownHasTheNpuPipelineOfEachSession) {
    OpsProfile p = profile();
    NpuPipeline pipe;
    pipe.device = "HTP0";
    pipe.n_batches = 2;
    pipe.npu_batch_ns = 100e3;
    pipe.ops_ns = 90e3;
    pipe.envelope = "NPU batch";
    pipe.envelope_ns = 100e3;
    pipe.n_events = 10;
    pipe.parts = {{"activation_quantization", 15e3, 0.15, "HVX_A_QUANT+HVX_A_PREP"}};
    p.stages[0].npu_pipeline = {pipe};
    std::ostringstream out;
    write_ops_markdown(p, out);
    const std::string s = out.str();
    EXPECT_NE(s.find("### The NPU's pipeline, from its own profile (HTP0)\n\nNPU batch 0.100 ms · "
                     "ops 0.090 ms · 2 batch(es) · 10 trace events\n"),
              std::string::npos)
        << s;
    EXPECT_NE(s.find("| part | time | share of NPU batch | from |"), std::string::npos) << s;
    EXPECT_NE(s.find("| activation quantization | 0.015 ms | 15.0 % | HVX_A_QUANT+HVX_A_PREP |"),
              std::string::npos)
        << s;
}

// The trace events per op type (Table V): each part's time and share of the op's wall time, a
// dash where an op has no such part; the events no op holds in one line.
TEST(OpsReport, MarkdownHasTheNpuSplitPerOpType) {
    OpsProfile p = profile();
    NpuPipeline pipe;
    pipe.device = "HTP0";
    pipe.n_batches = 1;
    pipe.n_events = 26;
    pipe.by_op = {{"MUL_MAT",
                   2,
                   50e3,
                   10,
                   {{"activation_quantization", 10e3, 0.2, ""},
                    {"dma", 20e3, 0.4, ""},
                    {"untraced", 10e3, 0.2, ""}}},
                  {"FLASH_ATTN_EXT",
                   1,
                   30e3,
                   8,
                   {{"attention_preparation", 4e3, 4.0 / 30, ""}, {"untraced", 0, 0.0, ""}}}};
    pipe.n_unattributed = 8;
    pipe.unattributed_ns = 21e3;
    p.stages[0].npu_pipeline = {pipe};
    std::ostringstream out;
    write_ops_markdown(p, out);
    const std::string s = out.str();
    EXPECT_NE(s.find("#### Per op type (HTP0): share of each op's wall time\n\n"
                     "| op | nodes | wall time | activation quantization | attention preparation "
                     "| dma | untraced |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n"
                     "| MUL_MAT | 2 | 0.050 ms | 0.010 ms (20.0 %) | - | 0.020 ms (40.0 %) | "
                     "0.010 ms (20.0 %) |\n"
                     "| FLASH_ATTN_EXT | 1 | 0.030 ms | - | 0.004 ms (13.3 %) | - | 0.000 ms "
                     "(0.0 %) |\n"),
              std::string::npos)
        << s;
    EXPECT_NE(s.find("\n8 trace event(s) (0.021 ms over threads) lie in no op's window"),
              std::string::npos)
        << s;
}

// An imported stage: only the rows its log defines, and one line on what it cannot reconcile.
TEST(OpsReport, AnImportedStagePrintsOnlyTheRowsItsLogDefines) {
    OpsProfile p = profile();
    p.source = "hexagon-profile";
    StageProfile& st = p.stages[0];
    st.rec.sum_op_ns = 1234.56;
    std::ostringstream out;
    write_ops_markdown(p, out);
    std::string s = out.str();
    EXPECT_NE(s.find("## decode — 1 token(s) in 1 graph(s) · CPU\n\n| reconciliation | time "
                     "|\n| --- | ---: |\n| Σ op time (the backend's own) | 0.001 ms |\n\nAn "
                     "imported stage is not reconciled against its wall time: the log holds no "
                     "run of the stage itself (uninstrumented or traced), and the backend profiles "
                     "only its own ops, not the copies between backends, the scheduler or the "
                     "host's work.\n"),
              std::string::npos)
        << s;
    for (const char* absent : {"uninstrumented stage (median", "traced stage", "scheduler between",
                               "copies between backends (", "host: graph build", "Σ call time"})
        EXPECT_EQ(s.find(absent), std::string::npos) << absent;
    // A log with call-usec (the formats before PR 22269) has the call rows, and batches point
    // to the pipeline.
    st.rec.sum_call_ns = 3000;
    st.rec.sum_call_compute_ns = 2000;
    NpuPipeline pipe;
    pipe.device = "HTP0";
    pipe.n_batches = 1;
    st.npu_pipeline = {pipe};
    std::ostringstream out2;
    write_ops_markdown(p, out2);
    s = out2.str();
    EXPECT_NE(s.find("| Σ call time, ops that compute (call-usec) | 0.002 ms |\n| Σ call time, all "
                     "nodes (call-usec) | 0.003 ms |\n"),
              std::string::npos)
        << s;
    EXPECT_NE(s.find("host's work; its batches' time against their ops is in the NPU pipeline "
                     "below.\n"),
              std::string::npos)
        << s;
}

// The weights' pages in one sentence, whatever the load found; nothing when not asked.
TEST(OpsReport, MarkdownSaysWhatTheLoadDidToTheWeightsPages) {
    auto md = [](std::optional<HugePagesRecord> h) {
        OpsProfile p = profile();
        p.huge_pages = std::move(h);
        std::ostringstream out;
        write_ops_markdown(p, out);
        return out.str();
    };
    EXPECT_EQ(md(std::nullopt).find("huge pages"), std::string::npos);
    EXPECT_NE(md(HugePagesRecord{"madvise", 763105280, 1, ""})
                  .find("\nWeights advised onto transparent huge pages as they loaded (policy "
                        "madvise): 728 MiB in 1 range(s); --huge-pages off loads them as "
                        "llama.cpp does.\n"),
              std::string::npos);
    EXPECT_NE(md(HugePagesRecord{"never", 0, 0, ""}).find("huge pages are off (policy never)"),
              std::string::npos);
    EXPECT_NE(md(HugePagesRecord{"madvise", 0, 0, ""}).find("no buffer of 32 MiB or more"),
              std::string::npos);
    EXPECT_NE(md(HugePagesRecord{"madvise", 0, 0, "madvise(MADV_HUGEPAGE): Invalid argument"})
                  .find("Weights not advised onto transparent huge pages: madvise("),
              std::string::npos);
}

TEST(OpsReport, AnImportedProfilesOpTotalIsTheBackendsOwnNotReplayed) {
    OpsProfile traced = profile();
    std::ostringstream t;
    write_ops_markdown(traced, t);
    EXPECT_NE(t.str().find("| Σ op time (replayed) |"), std::string::npos) << t.str();
    OpsProfile imported = profile();
    imported.source = "hexagon-profile";  // a log split into stages (--mode, --stage-of)
    std::ostringstream i;
    write_ops_markdown(imported, i);
    EXPECT_EQ(i.str().find("replayed)"), std::string::npos) << i.str();
    EXPECT_NE(i.str().find("| Σ op time (the backend's own) |"), std::string::npos) << i.str();
}

// An imported stage's header: its graphs' tokens and its graphs, nothing the log does not say
// (no KV depth, no threads).
TEST(OpsReport, AnImportedStagesHeaderCountsItsGraphsTokens) {
    OpsProfile p = profile();
    p.source = "hexagon-profile";
    p.devices = "HTP0";
    p.stages[0].n_tokens = 8;
    p.stages[0].n_graphs = 8;
    std::ostringstream out;
    write_ops_markdown(p, out);
    EXPECT_NE(out.str().find("\n## decode — 8 token(s) in 8 graph(s) · HTP0\n"), std::string::npos)
        << out.str();
    EXPECT_EQ(out.str().find("KV depth"), std::string::npos) << out.str();
}

TEST(OpsReport, PrintsMdCsvOrJsonAndRefusesTheRest) {
    ResultDocument d;
    d.command = "ops";
    d.ops = profile();
    d.warnings.push_back({"w", "a warning", "a hint"});
    std::ostringstream md, csv, js;
    print_ops_document(d, OutputFormat::md, md);
    EXPECT_NE(md.str().find("### Warnings\n\n- a warning (a hint)"), std::string::npos);
    print_ops_document(d, OutputFormat::csv, csv);
    EXPECT_EQ(csv.str().rfind("stage,graph,node,", 0), 0u);
    print_ops_document(d, OutputFormat::json, js);
    EXPECT_EQ(nlohmann::json::parse(js.str()), to_json(d));
    for (auto f : {OutputFormat::jsonl, OutputFormat::html}) {
        std::ostringstream out;
        EXPECT_THROW(print_ops_document(d, f, out), Error);
        EXPECT_THROW(check_ops_format(f), Error);
    }
}

}  // namespace
}  // namespace sb
