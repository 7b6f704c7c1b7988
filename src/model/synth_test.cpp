#include "model/synth.hpp"

#include <gtest/gtest.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "engine/ggml_quantizer.hpp"
#include "engine/llama_engine.hpp"
#include "model/gguf.hpp"
#include "model/hf_config.hpp"
#include "model/inspect.hpp"
#include "model/presets.hpp"
#include "model/routing.hpp"

namespace sb {
namespace {

namespace fs = std::filesystem;

// One directory per test: CTest may run the tests of this file in parallel processes.
fs::path synth_dir() {
    const fs::path dir = fs::path(testing::TempDir()) /
                         ("sb_synth_test." + std::to_string(::getpid())) /
                         testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::create_directories(dir);
    return dir;
}

std::string synth_temp_file(const std::string& name) {
    return (synth_dir() / name).string();
}

std::vector<uint8_t> synth_slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void synth_spit(const std::string& path, const std::vector<uint8_t>& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
}

SynthResult write_tiny(const std::string& name, const std::string& quant, uint64_t seed = 1,
                       const Quantizer& q = GgmlQuantizer(), int threads = 0, bool pure = false) {
    SynthOptions o;
    o.preset = "tiny";
    o.quant = quant;
    o.pure = pure;
    o.seed = seed;
    o.threads = threads;
    o.out_path = synth_temp_file(name);
    o.generator = "stagebench test";
    return write_synthetic_model(o, q);
}

void expect_inspect_input_error(const std::string& path) {
    try {
        inspect_model(path);
        FAIL() << "no error for " << path;
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input);
        const std::string msg = e.what();
        EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << msg;
        EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
}

TEST(Synth, TinyQ4_0MatchesThePreset) {
    const SynthResult r = write_tiny("tiny-q4_0.gguf", "q4_0");
    const Preset& p = find_preset("tiny");
    const auto specs = arch_tensors(p.spec);
    EXPECT_EQ(r.n_params, count_params(p.spec));
    EXPECT_EQ(r.n_tensors, specs.size());
    EXPECT_EQ(r.quant, "q4_0");
    EXPECT_FALSE(r.pure);
    EXPECT_EQ(r.quantizer, "ggml");
    EXPECT_TRUE(r.fallbacks.empty());
    EXPECT_FALSE(r.routing);
    EXPECT_EQ(r.file_bytes, fs::file_size(r.path));
    // llama-quantize's Q4_0 mix: the tied embedding (the output) at Q6_K, the rest Q4_0.
    EXPECT_EQ(r.tensor_types,
              (std::map<std::string, uint64_t>{{"f32", 9}, {"q4_0", 28}, {"q6_K", 1}}));

    const GgufFile g = read_gguf(r.path);
    ASSERT_EQ(g.tensors.size(), specs.size());
    for (std::size_t i = 0; i < specs.size(); ++i) {
        const auto& t = g.tensors[i];
        EXPECT_EQ(t.name, specs[i].name);
        EXPECT_EQ(t.ne, specs[i].ne) << t.name;
        const uint32_t want = t.name == "token_embd.weight" ? ggml_type::kQ6_K
                              : specs[i].ne.size() == 2     ? ggml_type::kQ4_0
                                                            : ggml_type::kF32;
        EXPECT_EQ(t.type, want) << t.name;
    }
    EXPECT_EQ(g.n_params(), r.n_params);
    EXPECT_EQ(g.architecture(), "llama");
    EXPECT_EQ(g.get_string("general.name"), "synthetic tiny");
    EXPECT_EQ(g.get_u32("general.file_type"), 2u);
    EXPECT_EQ(g.get_u32("general.alignment"), 32u);
    EXPECT_EQ(g.get_u32("llama.block_count"), 4u);
    EXPECT_EQ(g.get_u32("llama.embedding_length"), 256u);
    EXPECT_EQ(g.get_u32("llama.feed_forward_length"), 768u);
    EXPECT_EQ(g.get_u32("llama.attention.head_count"), 8u);
    EXPECT_EQ(g.get_u32("llama.attention.head_count_kv"), 4u);
    EXPECT_EQ(g.get_u32("llama.rope.dimension_count"), 32u);
    EXPECT_EQ(g.get_u32("llama.vocab_size"), 4096u);
    EXPECT_EQ(gguf_type_of(*g.find("llama.attention.layer_norm_rms_epsilon")), GgufType::float32);
    EXPECT_EQ(gguf_type_of(*g.find("llama.context_length")), GgufType::uint32);
    EXPECT_EQ(g.get_string("tokenizer.ggml.model"), "llama");
    EXPECT_EQ(g.get_array_size("tokenizer.ggml.tokens"), 4096u);
    EXPECT_EQ(g.get_array_size("tokenizer.ggml.scores"), 4096u);
    EXPECT_EQ(g.get_array_size("tokenizer.ggml.token_type"), 4096u);
    EXPECT_EQ(gguf_element_type(*g.get_array("tokenizer.ggml.scores")), GgufType::float32);
    EXPECT_EQ(gguf_element_type(*g.get_array("tokenizer.ggml.token_type")), GgufType::int32);
    EXPECT_EQ(g.get_u32("tokenizer.ggml.bos_token_id"), 1u);
    EXPECT_EQ(g.get_u32("tokenizer.ggml.eos_token_id"), 2u);
    EXPECT_EQ(g.get_u32("tokenizer.ggml.unknown_token_id"), 0u);
    EXPECT_EQ(g.get_bool("tokenizer.ggml.add_bos_token"), true);
    EXPECT_EQ(g.get_bool("stagebench.synthetic"), true);
    EXPECT_EQ(g.get_string("stagebench.preset"), "tiny");
    EXPECT_EQ(g.get_u64("stagebench.seed"), 1u);
    EXPECT_EQ(gguf_type_of(*g.find("stagebench.seed")), GgufType::uint64);
    EXPECT_EQ(g.get_string("stagebench.generator"), "stagebench test");
    EXPECT_FALSE(g.find("stagebench.pure"));  // the default mix
    EXPECT_FALSE(g.find("stagebench.routing"));

    // No temporary file is left beside the result.
    for (const auto& e : fs::directory_iterator(synth_dir())) {
        EXPECT_EQ(e.path().string().find(".tmp-"), std::string::npos) << e.path();
    }
}

TEST(Synth, F32WeightsHaveTheIntendedDistribution) {
    const SynthResult r = write_tiny("tiny-f32.gguf", "f32");
    const GgufFile g = read_gguf(r.path);
    EXPECT_EQ(g.get_u32("general.file_type"), 0u);
    const auto bytes = synth_slurp(r.path);
    for (const auto& t : g.tensors)
        EXPECT_EQ(t.type, ggml_type::kF32) << t.name;

    const auto* norm = g.find_tensor("blk.0.attn_norm.weight");
    ASSERT_NE(norm, nullptr);
    std::vector<float> ones(256);
    std::memcpy(ones.data(), bytes.data() + g.data_offset + norm->offset, norm->nbytes);
    for (float x : ones)
        EXPECT_EQ(x, 1.0f);

    const auto* w = g.find_tensor("blk.1.ffn_up.weight");
    std::vector<float> v(static_cast<std::size_t>(w->n_elements()));
    std::memcpy(v.data(), bytes.data() + g.data_offset + w->offset, w->nbytes);
    double sum = 0, sq = 0;
    for (float x : v) {
        sum += x;
        sq += double(x) * x;
    }
    const double mean = sum / v.size();
    const double sd = std::sqrt(sq / v.size() - mean * mean);
    EXPECT_NEAR(mean, 0.0, 0.001);
    EXPECT_NEAR(sd, 0.02, 0.001);
}

TEST(Synth, SameSeedSameBytesOtherSeedOtherBytes) {
    const auto a = synth_slurp(write_tiny("seed1a.gguf", "q4_0", 1).path);
    const auto b = synth_slurp(write_tiny("seed1b.gguf", "q4_0", 1, GgmlQuantizer(), 1).path);
    const auto c = synth_slurp(write_tiny("seed2.gguf", "q4_0", 2).path);
    EXPECT_EQ(a, b);  // thread count does not matter either
    ASSERT_EQ(a.size(), c.size());
    EXPECT_NE(a, c);
}

TEST(Synth, BuiltinQuantizerMatchesGgmlByteForByte) {
    // Uniform files (--pure): the builtin quantizer has no K-quants for the mix's Q6_K.
    for (const std::string q : {"q4_0", "q8_0", "f16", "f32"}) {
        const SynthResult rg = write_tiny("g-" + q + ".gguf", q, 3, GgmlQuantizer(), 0, true);
        const SynthResult rb = write_tiny("b-" + q + ".gguf", q, 3, BuiltinQuantizer(), 0, true);
        const GgufFile gg = read_gguf(rg.path);
        const GgufFile gb = read_gguf(rb.path);
        EXPECT_EQ(gb.get_string("stagebench.quantizer"), "builtin");
        EXPECT_EQ(gb.get_bool("stagebench.pure"), true);
        // The tensor data sections are identical; only the quantizer's name differs.
        const auto a = synth_slurp(rg.path);
        const auto b = synth_slurp(rb.path);
        const std::vector<uint8_t> da(a.begin() + static_cast<long>(gg.data_offset), a.end());
        const std::vector<uint8_t> db(b.begin() + static_cast<long>(gb.data_offset), b.end());
        EXPECT_EQ(da, db) << q;
    }
}

TEST(Synth, OptionsAreChecked) {
    SynthOptions o;
    o.preset = "tiny";
    o.out_path = synth_temp_file("bad.gguf");
    auto kind_of = [&](const SynthOptions& opt) {
        try {
            write_synthetic_model(opt, GgmlQuantizer());
        } catch (const Error& e) {
            return e.kind();
        }
        return ErrorKind::runtime;  // unexpected success
    };
    SynthOptions bad = o;
    bad.quant = "q3_x";
    EXPECT_EQ(kind_of(bad), ErrorKind::usage);
    bad = o;
    bad.preset = "nope";
    EXPECT_EQ(kind_of(bad), ErrorKind::usage);
    bad = o;
    bad.layers = -2;
    EXPECT_EQ(kind_of(bad), ErrorKind::usage);
    bad = o;
    bad.out_path = "";
    EXPECT_EQ(kind_of(bad), ErrorKind::usage);
    bad = o;
    bad.out_path = synth_temp_file("missing-dir/x.gguf");
    EXPECT_EQ(kind_of(bad), ErrorKind::input);
    bad = o;
    bad.out_path = synth_dir().string();
    EXPECT_EQ(kind_of(bad), ErrorKind::input);
    bad = o;
    bad.config_path = synth_temp_file("config.json");  // both a preset and a config
    EXPECT_EQ(kind_of(bad), ErrorKind::usage);
    bad = o;
    bad.preset = "";  // neither
    EXPECT_EQ(kind_of(bad), ErrorKind::usage);
    bad = o;
    bad.routing = "uniform";  // tiny has no experts
    EXPECT_EQ(kind_of(bad), ErrorKind::usage);
    bad = o;
    bad.preset = "";
    bad.config_path = synth_temp_file("no-such-config.json");
    EXPECT_EQ(kind_of(bad), ErrorKind::input);
    EXPECT_FALSE(fs::exists(o.out_path));
}

// Every dimension within its bound can still add up to terabytes: the file is bounded (1 TiB)
// and must fit the free space of -o's directory, both checked before a byte is written.
TEST(Synth, TheModelsSizeIsBoundedAndMustFitTheFreeSpace) {
    const fs::path dir = synth_dir();
    nlohmann::json cfg = {{"model_type", "llama"},           {"hidden_size", 65536},
                          {"intermediate_size", 262144},     {"num_attention_heads", 512},
                          {"num_key_value_heads", 512},      {"num_hidden_layers", 40},
                          {"max_position_embeddings", 4096}, {"vocab_size", 32000}};
    SynthOptions o;
    o.config_path = (dir / "huge.json").string();
    o.out_path = (dir / "huge.gguf").string();
    auto error_of = [&] {
        std::ofstream(o.config_path) << cfg.dump();
        try {
            write_synthetic_model(o, GgmlQuantizer());
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::input);
            return std::string(e.what());
        }
        ADD_FAILURE() << "no error";
        return std::string();
    };
    // About 1.4 TiB at q4_0.
    std::string msg = error_of();
    EXPECT_NE(msg.find("more than synth writes (at most 1 TiB)"), std::string::npos) << msg;
    // About 900 GiB: more than this disk has free, unless it has 1 TiB.
    struct statvfs st {};
    ASSERT_EQ(::statvfs(dir.c_str(), &st), 0);
    const double free_gib = static_cast<double>(st.f_bavail) * st.f_frsize / (1u << 30);
    cfg["num_hidden_layers"] = 25;
    if (free_gib < 1024) {
        msg = error_of();
        EXPECT_NE(msg.find("GiB are free"), std::string::npos) << msg;
        EXPECT_NE(msg.find(dir.string()), std::string::npos) << msg;
    }
    // Nothing was written, not even a temporary.
    for (const auto& e : fs::directory_iterator(dir))
        EXPECT_EQ(e.path().filename(), "huge.json");
}

// llama.cpp cannot load an LFM2 without an attention layer or without a convolution layer
// (GGML_ASSERT(buffer) on the empty cache): --layers 1 gave it no attention layer.
TEST(Synth, AScaledDownHybridKeepsBothKindsOfLayer) {
    SynthOptions o;
    o.preset = "lfm2-1.2b";
    o.layers = 1;
    o.out_path = synth_temp_file("lfm2-1l.gguf");
    try {
        write_synthetic_model(o, GgmlQuantizer());
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::usage);
        const std::string msg = e.what();
        EXPECT_NE(msg.find("--layers 1 leaves lfm2-1.2b no attention layer"), std::string::npos)
            << msg;
        EXPECT_NE(msg.find("use --layers 2 or more"), std::string::npos) << msg;
    }
    EXPECT_FALSE(fs::exists(o.out_path));
}

TEST(Synth, LayerOverrideAndProgress) {
    SynthOptions o;
    o.preset = "tiny";
    o.layers = 2;
    o.quant = "Q8_0";
    o.out_path = synth_temp_file("tiny-2l.gguf");
    uint64_t last_done = 0, last_total = 0;
    int calls = 0;
    o.on_progress = [&](uint64_t done, uint64_t total) {
        EXPECT_GE(done, last_done);
        last_done = done;
        last_total = total;
        ++calls;
    };
    const SynthResult r = write_synthetic_model(o, GgmlQuantizer());
    EXPECT_EQ(r.n_layers, 2);
    EXPECT_EQ(r.n_params, count_params(find_preset("tiny").spec, 2));
    EXPECT_GT(calls, 0);
    EXPECT_EQ(last_done, last_total);
    const GgufFile g = read_gguf(r.path);
    EXPECT_EQ(g.get_u32("llama.block_count"), 2u);
    EXPECT_EQ(g.get_u32("general.file_type"), 7u);
    EXPECT_EQ(g.find_tensor("blk.2.attn_q.weight"), nullptr);
    EXPECT_EQ(g.find_tensor("blk.1.attn_q.weight")->type, ggml_type::kQ8_0);
}

TEST(Synth, VocabularyIsValid) {
    for (int64_t n : {260, 4096, 128256, 151936}) {
        const SyntheticVocab v = make_synthetic_vocab(n);
        ASSERT_EQ(v.tokens.size(), static_cast<std::size_t>(n));
        ASSERT_EQ(v.scores.size(), v.tokens.size());
        ASSERT_EQ(v.token_types.size(), v.tokens.size());
        EXPECT_EQ(std::set<std::string>(v.tokens.begin(), v.tokens.end()).size(), v.tokens.size());
        for (std::size_t i = 1; i < v.scores.size(); ++i)
            EXPECT_LE(v.scores[i], v.scores[i - 1]);
        for (const auto& t : v.tokens)
            EXPECT_FALSE(t.empty());
    }
    const SyntheticVocab v = make_synthetic_vocab(300);
    EXPECT_EQ(v.tokens[0], "<unk>");
    EXPECT_EQ(v.token_types[0], 2);
    EXPECT_EQ(v.tokens[1], "<s>");
    EXPECT_EQ(v.token_types[1], 3);
    EXPECT_EQ(v.tokens[2], "</s>");
    EXPECT_EQ(v.tokens[3], "<0x00>");
    EXPECT_EQ(v.tokens[3 + 10], "<0x0A>");
    EXPECT_EQ(v.tokens[258], "<0xFF>");
    EXPECT_EQ(v.token_types[258], 6);
    EXPECT_EQ(v.tokens[259], "\xE2\x96\x81");
    EXPECT_EQ(v.token_types[259], 1);
    EXPECT_THROW(make_synthetic_vocab(100), Error);
}

TEST(Inspect, DescribesASyntheticModel) {
    const SynthResult r = write_tiny("inspect.gguf", "q4_0", 42);
    const ModelInfo m = inspect_model(r.path);
    EXPECT_EQ(m.arch, "llama");
    EXPECT_EQ(m.name, "synthetic tiny");
    EXPECT_EQ(m.file_bytes, r.file_bytes);
    EXPECT_EQ(m.n_params, r.n_params);
    EXPECT_EQ(m.n_tensors, r.n_tensors);
    EXPECT_EQ(m.file_type, "Q4_0");
    EXPECT_EQ(m.dominant_type, "q4_0");
    EXPECT_TRUE(m.synthetic);
    EXPECT_EQ(m.synthetic_preset, "tiny");
    EXPECT_EQ(m.synthetic_seed, 42u);
    EXPECT_FALSE(m.synthetic_routing);
    EXPECT_EQ(m.n_layers, 4);
    EXPECT_EQ(m.n_embd, 256);
    EXPECT_EQ(m.n_vocab, 4096);
    EXPECT_EQ(m.n_ctx_train, 2048);
    EXPECT_EQ(m.tokenizer, "llama");
    EXPECT_EQ(m.tensor_types.at("f32"), 9u);

    const nlohmann::json j = to_json(m);
    EXPECT_EQ(j["arch"], "llama");
    EXPECT_EQ(j["synthetic_preset"], "tiny");
    EXPECT_EQ(j["n_params"], r.n_params);
    EXPECT_EQ(to_json(r)["n_params"], r.n_params);
}

TEST(Inspect, MissingValuesAreNull) {
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.add_tensor("token_embd.weight", {4, 3}, ggml_type::kF32, std::vector<uint8_t>(48));
    const std::string path = synth_temp_file("bare.gguf");
    w.write(path);
    const ModelInfo m = inspect_model(path);
    EXPECT_FALSE(m.synthetic);
    EXPECT_FALSE(m.name);
    EXPECT_FALSE(m.n_layers);
    EXPECT_EQ(m.n_vocab, 3);  // from token_embd.weight
    const nlohmann::json j = to_json(m);
    EXPECT_TRUE(j["name"].is_null());
    EXPECT_TRUE(j["file_type"].is_null());
    EXPECT_TRUE(j["synthetic_preset"].is_null());
}

TEST(Inspect, UnusableFilesAreOneLineInputErrors) {
    const SynthResult r = write_tiny("whole.gguf", "q4_0");
    const auto bytes = synth_slurp(r.path);
    const std::string cut = synth_temp_file("truncated.gguf");
    for (std::size_t n : {std::size_t{0}, std::size_t{10}, std::size_t{1000}, bytes.size() / 2,
                          bytes.size() - 100}) {
        synth_spit(cut, std::vector<uint8_t>(bytes.begin(), bytes.begin() + static_cast<long>(n)));
        expect_inspect_input_error(cut);
    }
    std::vector<uint8_t> garbage(4096);
    for (std::size_t i = 0; i < garbage.size(); ++i)
        garbage[i] = static_cast<uint8_t>(i * 7 + 3);
    const std::string junk = synth_temp_file("garbage.gguf");
    synth_spit(junk, garbage);
    expect_inspect_input_error(junk);
    // The right magic followed by garbage.
    garbage[0] = 'G', garbage[1] = 'G', garbage[2] = 'U', garbage[3] = 'F';
    garbage[4] = 3, garbage[5] = garbage[6] = garbage[7] = 0;
    synth_spit(junk, garbage);
    expect_inspect_input_error(junk);

    expect_inspect_input_error(synth_dir().string());
    expect_inspect_input_error(synth_temp_file("no-such-model.gguf"));

    GgufWriter no_arch;
    no_arch.add_tensor("x", {4}, ggml_type::kF32, std::vector<uint8_t>(16));
    no_arch.write(synth_temp_file("noarch.gguf"));
    expect_inspect_input_error(synth_temp_file("noarch.gguf"));
}

// --vocab: the tokenizer.* keys of a vocabulary GGUF, copied as they are; n_vocab its size.
SynthResult write_tiny_vocab(const std::string& name, const std::string& vocab) {
    SynthOptions o;
    o.preset = "tiny";
    o.quant = "q4_0";
    o.out_path = synth_temp_file(name);
    o.vocab = vocab;
    return write_synthetic_model(o, GgmlQuantizer());
}

TEST(SynthVocab, CopiesTheTokenizerOfAVocabularyFile) {
    const std::string vocab_path = resolve_vocab("llama-spm");
    ASSERT_TRUE(fs::is_regular_file(vocab_path)) << vocab_path;
    const SynthResult r = write_tiny_vocab("spm.gguf", "llama-spm");
    EXPECT_EQ(r.n_vocab, 32000);
    EXPECT_EQ(r.vocab, vocab_path);
    const GgufFile v = read_gguf(vocab_path), m = read_gguf(r.path);
    int copied = 0;
    for (const auto& kv : v.kv) {
        if (kv.key.rfind("tokenizer.", 0) != 0)
            continue;
        const GgufValue* got = m.find(kv.key);
        ASSERT_NE(got, nullptr) << kv.key;
        EXPECT_TRUE(*got == kv.value) << kv.key;
        ++copied;
    }
    EXPECT_GE(copied, 5);  // model, tokens, scores, token_type, the special ids
    EXPECT_EQ(m.get_array_size("tokenizer.ggml.tokens"), 32000u);
    EXPECT_EQ(m.get_u32("llama.vocab_size"), 32000u);
    EXPECT_EQ(m.find_tensor("token_embd.weight")->ne[1], 32000);
    EXPECT_EQ(m.get_string("stagebench.vocab"), "ggml-vocab-llama-spm.gguf");
    // A BPE vocabulary brings its merges.
    const SynthResult bpe = write_tiny_vocab("qwen2.gguf", "qwen2");
    const GgufFile q = read_gguf(bpe.path);
    EXPECT_EQ(q.get_array_size("tokenizer.ggml.merges"),
              read_gguf(resolve_vocab("qwen2")).get_array_size("tokenizer.ggml.merges"));
    EXPECT_GT(q.get_array_size("tokenizer.ggml.merges").value_or(0), 0u);
    EXPECT_EQ(bpe.n_vocab, static_cast<int64_t>(*q.get_array_size("tokenizer.ggml.tokens")));
}

// A vocabulary GGUF of the synthetic vocabulary's tokens, changed by edit.
std::string vocab_file(const std::string& name, const std::function<void(SyntheticVocab&)>& edit) {
    SyntheticVocab v = make_synthetic_vocab(300);
    edit(v);
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.set_string("tokenizer.ggml.model", "llama");
    w.set_array("tokenizer.ggml.tokens", v.tokens);
    w.set_array("tokenizer.ggml.scores", v.scores);
    w.set_array("tokenizer.ggml.token_type", v.token_types);
    const std::string path = synth_temp_file(name);
    w.write(path);
    return path;
}

std::string vocab_error(const std::string& vocab) {
    try {
        write_tiny_vocab("from-bad-vocab.gguf", vocab);
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input);
        const std::string msg = e.what();
        EXPECT_EQ(msg.rfind(vocab + ": ", 0), 0u) << msg;
        EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
        return msg;
    }
    ADD_FAILURE() << "no error for " << vocab;
    return "";
}

// What llama.cpp cannot load is not copied into a model: a token twice (run refused the
// model), a byte token of 1 or 2 bytes (llama.cpp's loader threw "basic_string::substr").
TEST(SynthVocab, AVocabularyLlamaCppCannotLoadIsRefused) {
    EXPECT_NE(vocab_error(vocab_file("twice.gguf",
                                     [](SyntheticVocab& v) { v.tokens[280] = v.tokens[270]; }))
                  .find("holds '" + make_synthetic_vocab(300).tokens[270] + "' twice"),
              std::string::npos);
    EXPECT_NE(vocab_error(vocab_file("bytes.gguf",
                                     [](SyntheticVocab& v) {
                                         for (std::size_t i = 259; i < v.tokens.size(); ++i)
                                             v.token_types[i] = 6;  // "a", "b", ... typed as bytes
                                     }))
                  .find("token 260 ('!') is a byte token"),
              std::string::npos);
    // The model that run reads is checked the same way.
    GgufFile g;
    g.path = "m.gguf";
    g.kv.push_back({"general.architecture", std::string("llama")});
    g.kv.push_back({"tokenizer.ggml.model", std::string("llama")});
    g.kv.push_back({"tokenizer.ggml.tokens", GgufArray(std::vector<std::string>{"<0x00>", "a"})});
    g.kv.push_back({"tokenizer.ggml.token_type", GgufArray(std::vector<int32_t>{6, 6})});
    try {
        check_llama_limits(g);
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("token 1 ('a') is a byte token"), std::string::npos)
            << e.what();
    }
}

// The tree's own tokenizer tests: each vocabulary's .inp texts tokenize to its .out ids
// (without BOS) once copied into a synthetic model that llama.cpp loads.
std::vector<std::pair<std::string, std::vector<int32_t>>> vocab_cases(const std::string& vocab) {
    const std::string base = resolve_vocab(vocab);
    std::ifstream fin(base + ".inp", std::ios::binary), fout(base + ".out");
    const std::string raw{std::istreambuf_iterator<char>(fin), std::istreambuf_iterator<char>()};
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<std::string> inputs;
    for (size_t pos = 0; pos < raw.size();) {
        const size_t next = raw.find(sep, pos);
        inputs.push_back(raw.substr(pos, next == std::string::npos ? next : next - pos));
        if (next == std::string::npos)
            break;
        pos = next + sep.size();
    }
    std::vector<std::pair<std::string, std::vector<int32_t>>> cases;
    size_t i = 0;
    for (std::string line; std::getline(fout, line) && i < inputs.size(); ++i) {
        std::vector<int32_t> ids;
        std::istringstream ss(line);
        for (int32_t id; ss >> id;)
            ids.push_back(id);
        cases.emplace_back(inputs[i], ids);
    }
    return cases;
}

TEST(SynthVocab, LlamaCppTokenizesAsTheVocabularyTestsSay) {
    for (const std::string vocab : {"llama-spm", "qwen2"}) {
        const auto cases = vocab_cases(vocab);
        ASSERT_GT(cases.size(), 20u) << vocab;
        const SynthResult r = write_tiny_vocab(vocab + ".gguf", vocab);
        LlamaEngine e;
        LoadSpec spec;
        spec.model_path = r.path;
        spec.n_ctx = 64;
        spec.n_threads = 1;
        e.load(spec);
        EXPECT_EQ(e.n_vocab(), r.n_vocab);
        bool hello = false;
        for (const auto& [text, ids] : cases) {
            EXPECT_EQ(e.tokenize(text, false), ids) << vocab << ": '" << text << "'";
            hello = hello || text == "Hello world";
        }
        EXPECT_TRUE(hello) << vocab;
    }
}

TEST(SynthVocab, NoneLoadsButCannotTokenizeAndUnknownNamesAreUsageErrors) {
    const SynthResult r = write_tiny_vocab("none.gguf", "none");
    EXPECT_EQ(r.vocab, "none");
    EXPECT_EQ(read_gguf(r.path).get_string("tokenizer.ggml.model"), "none");
    LlamaEngine e;
    LoadSpec spec;
    spec.model_path = r.path;
    spec.n_ctx = 64;
    spec.n_threads = 1;
    e.load(spec);
    EXPECT_EQ(e.n_vocab(), 4096);
    try {
        e.tokenize("Hello world", true);
        FAIL() << "a model without a vocabulary tokenized";
    } catch (const Error& err) {
        EXPECT_EQ(err.kind(), ErrorKind::input);
    }
    try {
        write_tiny_vocab("x.gguf", "no-such-vocab");
        FAIL();
    } catch (const Error& err) {
        EXPECT_EQ(err.kind(), ErrorKind::usage);
        EXPECT_NE(std::string(err.what()).find("llama-spm"), std::string::npos) << err.what();
    }
    // A GGUF that is not a vocabulary (no tokens): input error naming it.
    const SynthResult plain = write_tiny_vocab("plain.gguf", "none");
    try {
        write_tiny_vocab("y.gguf", plain.path);
        FAIL();
    } catch (const Error& err) {
        EXPECT_EQ(err.kind(), ErrorKind::input);
    }
}

// A small config.json of every architecture the writer supports: the writer's tensors must be
// what the pinned llama.cpp's loader asks for, and the model must run.
std::vector<std::pair<std::string, nlohmann::json>> small_configs() {
    using nlohmann::json;
    const json common = {{"hidden_size", 128},
                         {"num_hidden_layers", 2},
                         {"num_attention_heads", 4},
                         {"num_key_value_heads", 2},
                         {"intermediate_size", 256},
                         {"vocab_size", 512},
                         {"max_position_embeddings", 256}};
    auto with = [&](json extra) {
        json j = common;
        for (const auto& [k, v] : extra.items())
            j[k] = v;
        return j;
    };
    return {
        {"llama", with({{"model_type", "llama"}})},
        {"qwen2", with({{"model_type", "qwen2"}})},
        {"qwen3", with({{"model_type", "qwen3"}, {"head_dim", 64}})},
        {"smollm3", with({{"model_type", "smollm3"}, {"num_hidden_layers", 4}})},
        {"gemma3", with({{"model_type", "gemma3_text"},
                         {"head_dim", 64},
                         {"sliding_window", 16},
                         {"sliding_window_pattern", 2}})},
        {"phi3", with({{"model_type", "phi3"},
                       {"partial_rotary_factor", 0.75},
                       {"original_max_position_embeddings", 64},
                       {"rope_scaling",
                        {{"type", "longrope"},
                         {"long_factor", std::vector<double>(12, 2.0)},
                         {"short_factor", std::vector<double>(12, 1.0)}}}})},
        {"lfm2", with({{"model_type", "lfm2"},
                       {"block_ff_dim", 384},
                       {"conv_L_cache", 3},
                       {"layer_types", {"conv", "full_attention"}}})},
        {"qwen3moe", with({{"model_type", "qwen3_moe"},
                           {"head_dim", 32},
                           {"num_experts", 8},
                           {"num_experts_per_tok", 2},
                           {"moe_intermediate_size", 64}})},
        {"olmoe", with({{"model_type", "olmoe"},
                        {"num_key_value_heads", 4},
                        {"num_experts", 8},
                        {"num_experts_per_tok", 2},
                        {"intermediate_size", 64}})},
    };
}

TEST(SynthArch, EveryArchitectureLoadsAndRunsInLlamaCpp) {
    std::set<std::string> archs;
    for (const auto& [arch, config] : small_configs()) {
        SCOPED_TRACE(arch);
        const std::string cfg = synth_temp_file(arch + ".json");
        std::ofstream(cfg) << config.dump(2);
        SynthOptions o;
        o.config_path = cfg;
        o.quant = "q4_0";
        o.vocab = "synthetic";
        o.out_path = synth_temp_file(arch + ".gguf");
        const SynthResult r = write_synthetic_model(o, GgmlQuantizer());
        EXPECT_EQ(r.arch, arch);
        EXPECT_EQ(r.n_vocab, 512);
        EXPECT_EQ(r.routing.has_value(), arch == "qwen3moe" || arch == "olmoe");
        const GgufFile g = read_gguf(r.path);
        EXPECT_EQ(g.architecture(), arch);
        EXPECT_EQ(g.get_string("stagebench.config"), arch + ".json");
        EXPECT_FALSE(g.find("stagebench.preset"));
        // The real loader takes every tensor (it fails on a missing or extra one) and runs.
        LlamaEngine e;
        LoadSpec spec;
        spec.model_path = r.path;
        spec.n_ctx = 64;
        spec.n_threads = 1;
        ASSERT_NO_THROW(e.load(spec));
        EXPECT_EQ(e.n_vocab(), 512);
        const std::vector<int32_t> prompt = {1, 17, 42, 99, 7, 300, 5, 64};
        EXPECT_NO_THROW(e.prefill(prompt));
        EXPECT_NO_THROW(e.decode_step(11));
        EXPECT_NO_THROW(e.decode_step(12));
        archs.insert(arch);
    }
    const auto all = supported_architectures();
    EXPECT_EQ(archs, std::set<std::string>(all.begin(), all.end()));
}

TEST(SynthArch, ARoutedMixtureOfExpertsIsBuiltForItsRouting) {
    const auto configs = small_configs();
    const nlohmann::json moe = configs[7].second;
    ASSERT_EQ(moe.at("model_type"), "qwen3_moe");
    const std::string cfg = synth_temp_file("moe.json");
    std::ofstream(cfg) << moe.dump();
    SynthOptions o;
    o.config_path = cfg;
    o.quant = "f32";
    o.vocab = "synthetic";
    o.routing = "skewed";
    o.out_path = synth_temp_file("moe.gguf");
    const SynthResult r = write_synthetic_model(o, GgmlQuantizer());
    EXPECT_EQ(r.routing, "skewed");
    const GgufFile g = read_gguf(r.path);
    EXPECT_EQ(g.get_string("stagebench.routing"), "skewed");
    EXPECT_EQ(g.get_f32("stagebench.routing.zipf_exponent"), 1.0f);
    EXPECT_EQ(inspect_model(r.path).synthetic_routing, "skewed");
    EXPECT_EQ(to_json(inspect_model(r.path))["synthetic_routing"], "skewed");
    const auto bytes = synth_slurp(r.path);
    auto floats = [&](const char* name) {
        const auto* t = g.find_tensor(name);
        EXPECT_NE(t, nullptr) << name;
        std::vector<float> v(static_cast<std::size_t>(t->n_elements()));
        std::memcpy(v.data(), bytes.data() + g.data_offset + t->offset, t->nbytes);
        return v;
    };
    const RoutingPlan plan = plan_routing(Routing::skewed, read_hf_config(cfg), 2, o.seed);
    // Every token embedding holds the bias value at the bias coordinate.
    const auto embd = floats("token_embd.weight");
    for (std::size_t tok = 0; tok < 512; ++tok)
        EXPECT_EQ(embd[tok * 128 + static_cast<std::size_t>(plan.bias_coord)], plan.bias_value);
    // No layer writes the routing coordinates.
    for (const char* name : {"blk.1.attn_output.weight", "blk.1.ffn_down_exps.weight"}) {
        const auto w = floats(name);
        const auto* t = g.find_tensor(name);
        for (int64_t row = 0; row < t->n_elements() / t->ne[0]; ++row) {
            const bool routing = is_routing_coord(plan, row % 128);
            double s = 0;
            for (int64_t i = 0; i < t->ne[0]; ++i)
                s += std::abs(w[static_cast<std::size_t>(row * t->ne[0] + i)]);
            EXPECT_EQ(s == 0, routing) << name << " row " << row;
        }
    }
    // The router is the plan's, at F32.
    EXPECT_EQ(g.find_tensor("blk.1.ffn_gate_inp.weight")->type, ggml_type::kF32);
    const auto router = floats("blk.1.ffn_gate_inp.weight");
    std::vector<float> row(128);
    for (int64_t e = 0; e < 8; ++e) {
        router_row(plan, 1, e, o.seed, row.data());
        EXPECT_TRUE(std::equal(row.begin(), row.end(),
                               router.begin() + static_cast<std::ptrdiff_t>(e * 128)))
            << e;
    }
}

}  // namespace
}  // namespace sb
