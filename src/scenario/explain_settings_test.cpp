#include "scenario/explain_settings.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace sb {
namespace {

// Lines of a real llama-server's startup log (the pinned tree, `-lv 4`, "-ub 32 -t 1"), with
// llama.cpp's prefixes as they come.
const char* kVerboseLog =
    R"(0.00.146.455 I cmn  common_param: system_info: n_threads = 1 (n_threads_batch = 1) / 2 | CPU : SSE3 = 1 | AVX2 = 1 |
0.00.217.220 I load_tensors: loading model tensors, this can take a while... (load_mode = mmap)
0.00.246.083 I llama_context: n_seq_max             = 1
0.00.246.107 I llama_context: n_ctx                 = 2048
0.00.246.129 I llama_context: n_ctx_seq             = 2048
0.00.246.152 I llama_context: n_batch               = 2048
0.00.246.176 I llama_context: n_ubatch              = 32
0.00.246.221 I llama_context: flash_attn            = auto
0.00.302.920 I llama_kv_cache: size =    4.00 MiB (  2048 cells,   4 layers,  1/1 seqs), K (q8_0):    2.00 MiB, V (f16):    2.00 MiB
0.00.315.043 I cmn          init: llama threadpool init, n_threads = 1
0.00.315.196 I cmn  common_init_: warming up the model with an empty run - please wait ... (--no-warmup to disable)
0.00.318.871 I srv    load_model: initializing, n_slots = 1, n_ctx_slot = 2048, kv_unified = 'false'
0.00.319.734 I srv    load_model: prompt cache is enabled, size limit: 8192 MiB
)";

// The same server at the default verbosity: only the threads and the slots.
const char* kQuietLog = R"(0.00.114.579 I srv    load_model: loading model 'tiny.gguf'
0.00.371.325 I cmn          init: llama threadpool init, n_threads = 3
0.00.379.965 I srv    load_model: initializing, n_slots = 2, n_ctx_slot = 1024, kv_unified = 'false'
)";

TEST(ExplainSettings, SplitServerArgsAsAShell) {
    EXPECT_EQ(split_server_args("  -ub 32   -t 1 "),
              (std::vector<std::string>{"-ub", "32", "-t", "1"}));
    EXPECT_EQ(split_server_args("--alias 'my model' -c \"4 096\" a\\ b"),
              (std::vector<std::string>{"--alias", "my model", "-c", "4 096", "a b"}));
    EXPECT_TRUE(split_server_args("").empty());
    EXPECT_THROW(split_server_args("-ub '32"), Error);
    EXPECT_THROW(split_server_args("-ub \"32"), Error);
    EXPECT_THROW(split_server_args("-ub 32\\"), Error);
}

// A server's API key never reaches a document or a store: its value is replaced, as the next
// word or after '='; the file flag and everything else stay.
TEST(ExplainSettings, TheApiKeyIsRedacted) {
    EXPECT_EQ(redact_server_args({"-ngl", "99", "--api-key", "K1", "-c", "512"}),
              (std::vector<std::string>{"-ngl", "99", "--api-key", "***", "-c", "512"}));
    EXPECT_EQ(redact_server_args({"--api-key=K2", "--api-key-file", "keys.txt"}),
              (std::vector<std::string>{"--api-key=***", "--api-key-file", "keys.txt"}));
    EXPECT_EQ(redact_server_args({"--api-key"}), (std::vector<std::string>{"--api-key"}));
}

// llama-server's refusal quotes the flag; the key is not repeated.
TEST(ExplainSettings, AnApiKeyQuotedByTheServerIsRedacted) {
    EXPECT_EQ(redact_api_keys("invalid argument: --api-key=K7", {"-c", "8", "--api-key=K7"}),
              "invalid argument: --api-key=***");
    EXPECT_EQ(redact_api_keys("key K8 and K8 again", {"--api-key", "K8"}), "key *** and *** again");
    EXPECT_EQ(redact_api_keys("nothing", {"--api-key"}), "nothing");
}

// The command line a document keeps: a key inside --server-args' value is redacted too, in
// every way the flag can be written there; other words stay as they were.
TEST(ExplainSettings, TheCommandLineKeepsNoApiKey) {
    using V = std::vector<std::string>;
    EXPECT_EQ(
        redact_command_line({"stagebench", "serve", "--server-args", "-ngl 99 --api-key K1 -c 8"}),
        (V{"stagebench", "serve", "--server-args", "-ngl 99 --api-key *** -c 8"}));
    EXPECT_EQ(redact_command_line({"serve", "--server-args=--api-key K2"}),
              (V{"serve", "--server-args=--api-key ***"}));
    EXPECT_EQ(redact_command_line({"serve", "--server-args", "--api-key=K3"}),
              (V{"serve", "--server-args", "--api-key=***"}));
    EXPECT_EQ(redact_command_line({"serve", "--server-args", "--api-key 'K 4' -t 2"}),
              (V{"serve", "--server-args", "--api-key *** -t 2"}));
    EXPECT_EQ(redact_command_line({"serve", "--server-args", "--api-key   K5"}),
              (V{"serve", "--server-args", "--api-key   ***"}));
    EXPECT_EQ(redact_command_line({"x", "--api-key", "K6"}), (V{"x", "--api-key", "***"}));
    // Left alone: a key file, a flag that only starts like it, a model path that mentions it.
    const V keep{"serve", "--server-args", "--api-key-file keys.txt", "-m", "my--api-key.gguf"};
    EXPECT_EQ(redact_command_line(keep), keep);
}

TEST(ExplainSettings, TheLastFlagWins) {
    const std::vector<std::string> a{"-ub", "64", "--ubatch-size=32", "-fa", "on", "--no-mmap"};
    EXPECT_EQ(arg_value(a, {"-ub", "--ubatch-size"}), "32");
    EXPECT_EQ(arg_value(a, {"-fa", "--flash-attn"}), "on");
    EXPECT_EQ(arg_value(a, {"-t"}), std::nullopt);
    EXPECT_TRUE(has_flag(a, {"--no-mmap"}));
    EXPECT_FALSE(has_flag(a, {"--no-warmup"}));
    // A flag at the end without its value has none.
    EXPECT_EQ(arg_value({"-ub"}, {"-ub"}), std::nullopt);
}

TEST(ExplainSettings, StartupLogOfTheVerboseServer) {
    const auto m = parse_startup_log(kVerboseLog);
    EXPECT_EQ(m.at("threads"), "1");
    EXPECT_EQ(m.at("threads_batch"), "1");
    EXPECT_EQ(m.at("n_ctx"), "2048");
    EXPECT_EQ(m.at("n_batch"), "2048");
    EXPECT_EQ(m.at("n_ubatch"), "32");
    EXPECT_EQ(m.at("flash_attn"), "auto");
    EXPECT_EQ(m.at("type_k"), "q8_0");
    EXPECT_EQ(m.at("type_v"), "f16");
    EXPECT_EQ(m.at("mmap"), "on");
    EXPECT_EQ(m.at("warmup"), "on");
    EXPECT_EQ(m.at("prompt_cache"), "on");
    EXPECT_EQ(m.at("slots"), "1");
    EXPECT_EQ(m.at("n_ctx_slot"), "2048");
}

TEST(ExplainSettings, StartupLogAtTheDefaultVerbosity) {
    const auto m = parse_startup_log(kQuietLog);
    EXPECT_EQ(m.at("threads"), "3");
    EXPECT_EQ(m.count("threads_batch"), 0u);
    EXPECT_EQ(m.at("slots"), "2");
    EXPECT_EQ(m.at("n_ctx_slot"), "1024");
    EXPECT_EQ(m.count("n_ubatch"), 0u) << "not in this log: not guessed";
    EXPECT_TRUE(parse_startup_log("").empty());
}

const ExplainSetting& find(const std::vector<ExplainSetting>& v, const std::string& name) {
    for (const auto& s : v)
        if (s.name == name)
            return s;
    ADD_FAILURE() << "no setting " << name;
    static ExplainSetting none;
    return none;
}

BenchSettings bench() {
    BenchSettings b;
    b.devices = "CPU";
    b.n_threads = 2;
    b.n_ctx = 600;
    return b;
}

TEST(ExplainSettings, EachSettingFromTheMostTrustedSource) {
    ServerFacts f;
    f.settings_readable = true;
    f.args = {"-ub", "64", "-t", "1", "-ctk", "q8_0", "--no-warmup"};
    f.log = kQuietLog;  // threads 3: the log is what llama.cpp really used
    f.props = {{"default_generation_settings", {{"n_ctx", 1024}, {"params", {{"top_k", 20}}}}},
               {"total_slots", 2}};
    f.default_devices = "CPU+BLAS";
    SamplerSettings sampler;
    sampler.top_k = 20;
    const auto v = compare_settings(bench(), f, sampler);

    const ExplainSetting& ub = find(v, "n_ubatch");
    EXPECT_EQ(ub.bench, "512");
    EXPECT_EQ(ub.server, "64");
    EXPECT_EQ(ub.source, "--server-args");
    EXPECT_TRUE(ub.differs);
    EXPECT_EQ(ub.measure, "graph+n_ubatch");

    const ExplainSetting& t = find(v, "threads");
    EXPECT_EQ(t.server, "3");
    EXPECT_EQ(t.source, "startup log");
    EXPECT_EQ(t.measure, "graph+threads");
    const ExplainSetting& tb = find(v, "threads_batch");
    EXPECT_EQ(tb.server, "3");
    EXPECT_FALSE(tb.measure) << "not settable alone in-process";

    const ExplainSetting& b = find(v, "n_batch");
    EXPECT_EQ(b.server, "2048");
    EXPECT_EQ(b.source, "llama-server's default");
    EXPECT_FALSE(b.differs);
    EXPECT_FALSE(b.measure);

    const ExplainSetting& ctx = find(v, "n_ctx");
    EXPECT_EQ(ctx.server, "1024");
    EXPECT_EQ(ctx.source, "/props");
    EXPECT_EQ(ctx.measure, "graph+n_ctx");

    EXPECT_EQ(find(v, "slots").server, "2");
    EXPECT_FALSE(find(v, "slots").measure);
    EXPECT_EQ(find(v, "type_k").measure, "graph+type_k");
    EXPECT_FALSE(find(v, "type_v").differs);
    EXPECT_EQ(find(v, "devices").server, "CPU+BLAS");
    EXPECT_EQ(find(v, "devices").measure, "graph+devices");
    EXPECT_EQ(find(v, "warmup").server, "off");
    EXPECT_FALSE(find(v, "warmup").measure);
    EXPECT_NE(find(v, "sampling").server->find("top_k 20"), std::string::npos);
}

TEST(ExplainSettings, SpellingsAndOrderDoNotMakeADifference) {
    ServerFacts f;
    f.settings_readable = true;
    f.args = {"-fa", "auto", "-dev", "none"};
    BenchSettings b = bench();
    b.devices = "CPU";
    b.flash_attn = "auto";
    auto v = compare_settings(b, f, {});
    EXPECT_FALSE(find(v, "flash_attn").differs);
    EXPECT_EQ(find(v, "devices").server, "CPU") << "-dev none is the CPU alone";
    EXPECT_FALSE(find(v, "devices").differs);
    f.accel_devices = "BLAS";
    v = compare_settings(b, f, {});
    EXPECT_EQ(find(v, "devices").server, "CPU+BLAS") << "accelerators whatever -dev says";
    EXPECT_TRUE(find(v, "devices").differs);
    f.accel_devices.clear();
    f.args = {"-fa", "1", "-dev", "BLAS,CPU"};
    b.flash_attn = "on";
    b.devices = "CPU+BLAS";
    v = compare_settings(b, f, {});
    EXPECT_FALSE(find(v, "flash_attn").differs);
    EXPECT_FALSE(find(v, "devices").differs);
}

TEST(ExplainSettings, ANotLlamaServerHasNoSettings) {
    ServerFacts f;
    f.settings_readable = false;
    f.args = {"-ub", "32"};
    const auto v = compare_settings(bench(), f, {});
    for (const auto& s : v) {
        EXPECT_FALSE(s.server) << s.name;
        EXPECT_FALSE(s.differs) << s.name;
        EXPECT_FALSE(s.measure) << s.name;
        EXPECT_NE(s.note.find("could not be read"), std::string::npos) << s.name;
    }
}

TEST(ExplainSettings, ApplyASetting) {
    LoadSpec spec;
    ExplainSetting s;
    s.name = "n_ubatch";
    s.label = "micro-batch";
    s.server = "32";
    apply_setting(spec, s);
    EXPECT_EQ(spec.n_ubatch, 32);
    s.name = "flash_attn";
    s.server = "enabled";
    apply_setting(spec, s);
    EXPECT_EQ(spec.flash_attn, FlashAttn::on);
    s.name = "devices";
    s.server = "CPU+BLAS";
    apply_setting(spec, s);
    EXPECT_EQ(spec.devices, DeviceSet("CPU+BLAS"));
    s.name = "threads";
    s.server = "many";
    EXPECT_THROW(apply_setting(spec, s), Error);
    s.name = "mmap";
    s.server = "off";
    EXPECT_THROW(apply_setting(spec, s), Error);
}

TEST(ExplainSettings, SamplerFromProps) {
    std::vector<std::string> notes;
    const nlohmann::json props = {{"default_generation_settings",
                                   {{"params",
                                     {{"top_k", 40},
                                      {"top_p", 0.9},
                                      {"min_p", 0.1},
                                      {"temperature", 0.7},
                                      {"repeat_penalty", 1.1},
                                      {"dry_multiplier", 0.0}}}}}};
    const SamplerSettings s = sampler_from_props(props, notes);
    EXPECT_EQ(s.top_k, 40);
    EXPECT_DOUBLE_EQ(s.top_p, 0.9);
    EXPECT_DOUBLE_EQ(s.min_p, 0.1);
    EXPECT_DOUBLE_EQ(s.temperature, 0.7);
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find("repeat_penalty = 1.1"), std::string::npos) << notes[0];
    notes.clear();
    const SamplerSettings d = sampler_from_props(nullptr, notes);
    EXPECT_EQ(d.top_k, 40);
    EXPECT_DOUBLE_EQ(d.temperature, 0.8);
    EXPECT_TRUE(notes.empty());
}

// The server flags stagebench reads are checked before anything is measured: a thread count
// the graph level cannot run with (-t 999999) is one usage line, up front.
TEST(ExplainSettings, ServerArgsOutOfRangeAreUsageErrors) {
    auto error = [](const std::vector<std::string>& args) {
        try {
            check_server_args(args, 8, 1 << 24);
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::usage);
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_EQ(error({"-t", "999999"}), "--server-args: -t 999999: expected 1..8 threads");
    EXPECT_EQ(error({"--threads=0"}), "--server-args: --threads 0: expected 1..8 threads");
    EXPECT_EQ(error({"-tb", "x"}), "--server-args: -tb x: expected 1..8 threads");
    EXPECT_EQ(error({"-ub", "0"}), "--server-args: -ub 0: expected 1..16777216 tokens");
    EXPECT_EQ(error({"-c", "-5"}),
              "--server-args: -c -5: expected 0..16777216 tokens (0: the model's)");
    EXPECT_EQ(error({"-np", "1000"}),
              "--server-args: -np 1000: expected 1..256 slots or -1 (auto)");
    // The last of a flag counts, as in llama-server's parser.
    EXPECT_EQ(error({"-t", "999999", "-t", "4"}), "no error");
    EXPECT_EQ(error({"-t", "8", "-tb", "2", "-b", "512", "-ub", "64", "-c", "0", "-np", "-1",
                     "-ngl", "99", "--api-key", "K"}),
              "no error");
}
}  // namespace
}  // namespace sb
