#include "model/gguf.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace sb {
namespace {

namespace fs = std::filesystem;

// One directory per test: CTest may run the tests of this file in parallel processes.
std::string temp_file(const std::string& name) {
    const fs::path dir = fs::path(testing::TempDir()) /
                         ("sb_gguf_test." + std::to_string(::getpid())) /
                         testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::create_directories(dir);
    return (dir / name).string();
}

std::vector<uint8_t> slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void spit(const std::string& path, const std::vector<uint8_t>& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
}

// Little-endian byte builder for hand-made (and broken) files.
struct Bytes {
    std::vector<uint8_t> b;
    template <class T>
    Bytes& put(T v) {
        const auto* p = reinterpret_cast<const uint8_t*>(&v);
        b.insert(b.end(), p, p + sizeof v);
        return *this;
    }
    Bytes& str(const std::string& s) {
        put<uint64_t>(s.size());
        b.insert(b.end(), s.begin(), s.end());
        return *this;
    }
    Bytes& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
        b.insert(b.end(), {'G', 'G', 'U', 'F'});
        return put<uint32_t>(version).put<uint64_t>(n_tensors).put<uint64_t>(n_kv);
    }
};

// Expects read_gguf to throw an input error whose one-line message starts with the path and
// contains `needle`.
void expect_input_error(const std::string& path, const std::string& needle) {
    try {
        read_gguf(path);
        FAIL() << "no error for " << path;
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input);
        const std::string msg = e.what();
        EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << msg;
        EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
        EXPECT_NE(msg.find(needle), std::string::npos) << msg;
    }
}

std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
    std::vector<uint8_t> b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}

// A small valid file with every value type, written by GgufWriter.
GgufWriter sample_writer() {
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.set("u8", GgufValue{uint8_t{200}});
    w.set("i8", GgufValue{int8_t{-100}});
    w.set("u16", GgufValue{uint16_t{60000}});
    w.set("i16", GgufValue{int16_t{-30000}});
    w.set_u32("u32", 4000000000u);
    w.set_i32("i32", -7);
    w.set_f32("f32", 1.5f);
    w.set_bool("bool", true);
    w.set_u64("u64", 1ull << 40);
    w.set("i64", GgufValue{int64_t{-(1ll << 40)}});
    w.set("f64", GgufValue{2.25});
    w.set_array("tokens", std::vector<std::string>{"a", "bc", ""});
    w.set_array("scores", std::vector<float>{0.0f, -1.0f});
    w.set_array("flags", std::vector<bool>{true, false, true});
    w.set_array("empty", std::vector<int32_t>{});
    w.add_tensor("norm.weight", {3}, ggml_type::kF32, f32_bytes({1, 2, 3}));
    std::vector<uint8_t> q8(2 * 34, 7);
    w.add_tensor("w.weight", {32, 2}, ggml_type::kQ8_0, q8);
    w.add_tensor("t3", {2, 2, 2}, ggml_type::kF32, [](GgufSink& s) {
        const std::vector<float> v = {1, 2, 3, 4, 5, 6, 7, 8};
        s.write(v.data(), 16);  // in two pieces
        s.write(v.data() + 4, 16);
    });
    return w;
}

TEST(GgmlTypes, TableMatchesGgml) {
    struct Row {
        uint32_t id;
        const char* name;
        int64_t block;
        std::size_t size;
    };
    for (const Row& r :
         {Row{0, "f32", 1, 4}, Row{1, "f16", 1, 2}, Row{2, "q4_0", 32, 18}, Row{3, "q4_1", 32, 20},
          Row{6, "q5_0", 32, 22}, Row{7, "q5_1", 32, 24}, Row{8, "q8_0", 32, 34},
          Row{10, "q2_K", 256, 84}, Row{11, "q3_K", 256, 110}, Row{12, "q4_K", 256, 144},
          Row{13, "q5_K", 256, 176}, Row{14, "q6_K", 256, 210}, Row{15, "q8_K", 256, 292},
          Row{16, "iq2_xxs", 256, 66}, Row{23, "iq4_xs", 256, 136}, Row{29, "iq1_m", 256, 56},
          Row{30, "bf16", 1, 2}}) {
        const GgmlTypeInfo* t = ggml_type_info(r.id);
        ASSERT_NE(t, nullptr) << r.id;
        EXPECT_EQ(t->name, r.name);
        EXPECT_EQ(t->block_size, r.block);
        EXPECT_EQ(t->type_size, r.size);
        EXPECT_EQ(ggml_type_by_name(r.name), t);
    }
    EXPECT_EQ(ggml_type_info(4), nullptr);   // removed Q4_2
    EXPECT_EQ(ggml_type_info(31), nullptr);  // removed Q4_0_4_4
    EXPECT_EQ(ggml_type_info(999), nullptr);
    EXPECT_EQ(ggml_type_by_name("Q4_K"), ggml_type_info(ggml_type::kQ4_K));
    EXPECT_EQ(ggml_row_bytes(ggml_type::kQ4_0, 4096), 4096u / 32 * 18);
    EXPECT_FALSE(ggml_row_bytes(ggml_type::kQ4_0, 100));
}

TEST(Gguf, WriteThenReadRoundTrips) {
    const std::string path = temp_file("roundtrip.gguf");
    const GgufWriter w = sample_writer();
    const uint64_t written = w.write(path);
    EXPECT_EQ(written, fs::file_size(path));
    EXPECT_EQ(written, w.file_bytes());

    const GgufFile g = read_gguf(path);
    EXPECT_EQ(g.version, 3u);
    EXPECT_EQ(g.file_bytes, written);
    EXPECT_EQ(g.alignment, 32u);
    EXPECT_EQ(g.data_offset % 32, 0u);
    EXPECT_EQ(g.kv.size(), w.kv().size());
    EXPECT_EQ(g.architecture(), "llama");
    EXPECT_EQ(g.get_u32("u8"), 200u);
    EXPECT_EQ(g.get_i32("i8"), -100);
    EXPECT_EQ(g.get_u32("u16"), 60000u);
    EXPECT_EQ(g.get_i32("i16"), -30000);
    EXPECT_EQ(g.get_u32("u32"), 4000000000u);
    EXPECT_FALSE(g.get_i32("u32"));  // does not fit
    EXPECT_EQ(g.get_i64("u32"), 4000000000);
    EXPECT_EQ(g.get_i32("i32"), -7);
    EXPECT_FALSE(g.get_u32("i32"));
    EXPECT_EQ(g.get_f32("f32"), 1.5f);
    EXPECT_EQ(g.get_f64("f64"), 2.25);
    EXPECT_EQ(g.get_bool("bool"), true);
    EXPECT_EQ(g.get_u64("u64"), 1ull << 40);
    EXPECT_EQ(g.get_i64("i64"), -(1ll << 40));
    EXPECT_FALSE(g.get_string("u32"));
    EXPECT_FALSE(g.get_u32("general.architecture"));
    EXPECT_FALSE(g.get_u32("missing"));
    EXPECT_EQ(gguf_type_of(*g.find("u16")), GgufType::uint16);
    EXPECT_EQ(gguf_type_of(*g.find("bool")), GgufType::boolean);

    ASSERT_NE(g.get_array("tokens"), nullptr);
    EXPECT_EQ(std::get<std::vector<std::string>>(*g.get_array("tokens")),
              (std::vector<std::string>{"a", "bc", ""}));
    EXPECT_EQ(std::get<std::vector<float>>(*g.get_array("scores")),
              (std::vector<float>{0.0f, -1.0f}));
    EXPECT_EQ(std::get<std::vector<bool>>(*g.get_array("flags")),
              (std::vector<bool>{true, false, true}));
    EXPECT_EQ(g.get_array_size("empty"), 0u);
    EXPECT_EQ(gguf_element_type(*g.get_array("empty")), GgufType::int32);

    ASSERT_EQ(g.tensors.size(), 3u);
    EXPECT_EQ(g.tensors[0].name, "norm.weight");
    EXPECT_EQ(g.tensors[0].ne, (std::vector<int64_t>{3}));
    EXPECT_EQ(g.tensors[0].nbytes, 12u);
    EXPECT_EQ(g.tensors[0].offset, 0u);
    EXPECT_EQ(g.tensors[1].type, ggml_type::kQ8_0);
    EXPECT_EQ(g.tensors[1].nbytes, 68u);
    EXPECT_EQ(g.tensors[1].offset, 32u);
    EXPECT_EQ(g.tensors[2].ne, (std::vector<int64_t>{2, 2, 2}));
    EXPECT_EQ(g.tensors[2].offset, 32u + 96u);
    EXPECT_EQ(g.n_params(), 3u + 64u + 8u);
    EXPECT_NE(g.find_tensor("w.weight"), nullptr);
    EXPECT_EQ(g.find_tensor("nope"), nullptr);

    // The data is where the offsets say.
    const auto bytes = slurp(path);
    float f[3];
    std::memcpy(f, bytes.data() + g.data_offset + g.tensors[0].offset, sizeof f);
    EXPECT_EQ(f[2], 3.0f);
    float t3[8];
    std::memcpy(t3, bytes.data() + g.data_offset + g.tensors[2].offset, sizeof t3);
    EXPECT_EQ(t3[7], 8.0f);
    EXPECT_EQ(bytes[g.data_offset + g.tensors[1].offset], 7);
}

TEST(Gguf, SetReplacesAndCustomAlignmentIsUsed) {
    GgufWriter w;
    w.set_u32("general.alignment", 64);
    w.set_u32("k", 1);
    w.set_u32("k", 2);
    EXPECT_EQ(w.kv().size(), 2u);
    w.add_tensor("a", {3}, ggml_type::kF32, f32_bytes({1, 2, 3}));
    w.add_tensor("b", {3}, ggml_type::kF32, f32_bytes({1, 2, 3}));
    const std::string path = temp_file("align64.gguf");
    w.write(path);
    const GgufFile g = read_gguf(path);
    EXPECT_EQ(g.get_u32("k"), 2u);
    EXPECT_EQ(g.alignment, 64u);
    EXPECT_EQ(g.data_offset % 64, 0u);
    EXPECT_EQ(g.tensors[1].offset, 64u);
}

TEST(Gguf, NoTensorsIsValid) {
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    const std::string path = temp_file("notensors.gguf");
    w.write(path);
    const GgufFile g = read_gguf(path);
    EXPECT_TRUE(g.tensors.empty());
    EXPECT_EQ(g.data_offset, g.file_bytes);
}

TEST(Gguf, WriterRejectsBadTensors) {
    GgufWriter w;
    w.add_tensor("a", {32}, ggml_type::kF32, std::vector<uint8_t>(128));
    auto expect_usage = [](auto&& f) {
        try {
            f();
            FAIL() << "no error";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::usage);
        }
    };
    expect_usage([&] { w.add_tensor("a", {32}, ggml_type::kF32, std::vector<uint8_t>(128)); });
    expect_usage([&] { w.add_tensor("q", {33}, ggml_type::kQ4_0, std::vector<uint8_t>(18)); });
    expect_usage([&] { w.add_tensor("x", {1}, 4, std::vector<uint8_t>(4)); });
    expect_usage([&] { w.add_tensor("x", {}, ggml_type::kF32, std::vector<uint8_t>(4)); });
    expect_usage([&] {
        w.add_tensor("x", {1, 1, 1, 1, 1}, ggml_type::kF32, std::vector<uint8_t>(4));
    });
    expect_usage([&] { w.add_tensor("x", {-1}, ggml_type::kF32, std::vector<uint8_t>(4)); });
    expect_usage(
        [&] { w.add_tensor(std::string(64, 'n'), {1}, ggml_type::kF32, std::vector<uint8_t>(4)); });

    GgufWriter short_fill;
    short_fill.add_tensor("a", {4}, ggml_type::kF32, [](GgufSink& s) {
        const float v = 1;
        s.write(&v, 4);
    });
    try {
        short_fill.write(temp_file("short.gguf"));
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::runtime);
    }
    try {
        sample_writer().write(temp_file("no/such/dir/x.gguf"));
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input);
    }
}

TEST(Gguf, EveryTruncationIsAnInputError) {
    const std::string good = temp_file("good.gguf");
    sample_writer().write(good);
    const auto bytes = slurp(good);
    const GgufFile full = read_gguf(good);
    const auto& last = full.tensors.back();
    // Only the padding after the last tensor's data may go missing without harm.
    const uint64_t data_end = full.data_offset + last.offset + last.nbytes;
    const std::string cut = temp_file("cut.gguf");
    for (std::size_t n = 0; n < bytes.size(); ++n) {
        spit(cut, std::vector<uint8_t>(bytes.begin(), bytes.begin() + static_cast<long>(n)));
        if (n >= data_end) {
            EXPECT_NO_THROW(read_gguf(cut)) << n;
            continue;
        }
        try {
            read_gguf(cut);
            ADD_FAILURE() << "no error for a file cut at " << n;
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::input) << n;
            EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
        }
    }
}

TEST(Gguf, RejectsCorruptHeaders) {
    const std::string p = temp_file("bad.gguf");

    spit(p, {'G', 'G', 'U'});
    expect_input_error(p, "not a GGUF file");
    spit(p, {'G', 'G', 'M', 'L', 3, 0, 0, 0});
    expect_input_error(p, "bad magic");
    spit(p, Bytes{}.header(0, 0, 1).b);
    expect_input_error(p, "unsupported GGUF version 1");
    spit(p, Bytes{}.header(0, 0, 0x03000000).b);
    expect_input_error(p, "big-endian");
    spit(p, std::vector<uint8_t>{'G', 'G', 'U', 'F', 3, 0, 0, 0, 0, 0});
    expect_input_error(p, "truncated GGUF header");

    // Version 2 has the same layout and is accepted.
    spit(p, Bytes{}.header(0, 0, 2).b);
    EXPECT_EQ(read_gguf(p).version, 2u);

    spit(p, Bytes{}.header(0, 1ull << 60).b);
    expect_input_error(p, "metadata count");
    spit(p, Bytes{}.header(1ull << 60, 0).b);
    expect_input_error(p, "tensor count");
    spit(p, Bytes{}.header(0, 1).put<uint64_t>(1ull << 62).put<uint64_t>(0).put<uint64_t>(0).b);
    expect_input_error(p, "metadata key");
    spit(p, Bytes{}.header(0, 1).str("k").put<uint32_t>(8).put<uint64_t>(~0ull).b);
    expect_input_error(p, "string value");
    spit(p, Bytes{}.header(0, 1).str("k").put<uint32_t>(99).put<uint32_t>(0).b);
    expect_input_error(p, "invalid value type 99");
    spit(p, Bytes{}
                .header(0, 1)
                .str("k")
                .put<uint32_t>(9)
                .put<uint32_t>(4)
                .put<uint64_t>(1ull << 61)
                .b);
    expect_input_error(p, "array 'k'");
    spit(p, Bytes{}
                .header(0, 1)
                .str("k")
                .put<uint32_t>(9)
                .put<uint32_t>(8)
                .put<uint64_t>(1ull << 40)
                .b);
    expect_input_error(p, "array 'k'");
    spit(p, Bytes{}.header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(9).put<uint64_t>(0).b);
    expect_input_error(p, "unsupported type 9");
    spit(p, Bytes{}
                .header(0, 2)
                .str("k")
                .put<uint32_t>(4)
                .put<uint32_t>(1)
                .str("k")
                .put<uint32_t>(4)
                .put<uint32_t>(1)
                .b);
    expect_input_error(p, "duplicate metadata key 'k'");
    spit(p, Bytes{}.header(0, 1).str("").put<uint32_t>(4).put<uint32_t>(1).b);
    expect_input_error(p, "is empty");
    spit(p, Bytes{}.header(0, 1).str("general.alignment").put<uint32_t>(4).put<uint32_t>(48).b);
    expect_input_error(p, "not a power of two");
    spit(p, Bytes{}.header(0, 1).str("general.alignment").put<uint32_t>(10).put<uint64_t>(32).b);
    expect_input_error(p, "expected uint32");
    // Control characters from the file never reach the message.
    spit(p, Bytes{}.header(0, 1).str("a\nb").put<uint32_t>(77).b);
    expect_input_error(p, "'a?b'");
}

TEST(Gguf, RejectsCorruptTensorInfos) {
    const std::string p = temp_file("badt.gguf");
    auto one_tensor = [](const std::string& name, std::vector<int64_t> ne, uint32_t type,
                         uint64_t offset, std::size_t data) {
        Bytes b;
        b.header(1, 0).str(name).put<uint32_t>(static_cast<uint32_t>(ne.size()));
        for (auto d : ne)
            b.put<int64_t>(d);
        b.put<uint32_t>(type).put<uint64_t>(offset);
        b.b.resize((b.b.size() + 31) / 32 * 32 + data, 0);
        return b.b;
    };
    spit(p, one_tensor("t", {4}, ggml_type::kF32, 0, 16));
    EXPECT_EQ(read_gguf(p).tensors.at(0).nbytes, 16u);

    spit(p, one_tensor("t", {4}, 77, 0, 16));
    expect_input_error(p, "unknown ggml type 77");
    spit(p, one_tensor("t", {4}, 5, 0, 16));
    expect_input_error(p, "unknown ggml type 5");
    spit(p, one_tensor("t", {4}, ggml_type::kF32, 0, 15));
    expect_input_error(p, "tensor data needs");
    spit(p, one_tensor("t", {1ll << 30, 1ll << 20}, ggml_type::kF32, 0, 16));
    expect_input_error(p, "more bytes than the whole file");
    spit(p, one_tensor("t", {1ll << 40, 1ll << 40}, ggml_type::kF32, 0, 16));
    expect_input_error(p, "too many elements");
    spit(p, one_tensor("t", {-4}, ggml_type::kF32, 0, 16));
    expect_input_error(p, "negative dimension");
    spit(p, one_tensor("t", {1, 1, 1, 1, 1}, ggml_type::kF32, 0, 16));
    expect_input_error(p, "5 dimensions");
    spit(p, one_tensor("t", {33}, ggml_type::kQ4_0, 0, 64));
    expect_input_error(p, "not a multiple of the block size 32");
    spit(p, one_tensor("t", {4}, ggml_type::kF32, 32, 64));
    expect_input_error(p, "data offset 32, expected 0");
    spit(p, one_tensor(std::string(64, 'x'), {4}, ggml_type::kF32, 0, 16));
    expect_input_error(p, "name longer than 63");
    spit(p, Bytes{}
                .header(2, 0)
                .str("t")
                .put<uint32_t>(1)
                .put<int64_t>(1)
                .put<uint32_t>(0)
                .put<uint64_t>(0)
                .str("t")
                .put<uint32_t>(1)
                .put<int64_t>(1)
                .put<uint32_t>(0)
                .put<uint64_t>(32)
                .b);
    expect_input_error(p, "duplicate tensor 't'");
}

TEST(Gguf, PathProblemsAreInputErrors) {
    expect_input_error(temp_file("does-not-exist.gguf"), "no such file");
    const std::string dir = temp_file("a_directory");
    fs::create_directories(dir);
    expect_input_error(dir, "is a directory");
}

}  // namespace
}  // namespace sb
