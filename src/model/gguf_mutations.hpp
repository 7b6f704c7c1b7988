#pragma once
// Mutated copies of a GGUF file for the robustness tests (src/model/llama_limits_test.cpp,
// tests/integration/bad_model_test.cpp): the same tensors and data, with changed metadata or
// alignment, and a seeded generator of such changes. Header-only, for tests.
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "model/gguf.hpp"

namespace sb::testing_gguf {

struct Mutation {
    std::string what;                                // e.g. "llama.block_count = 0"
    std::function<void(std::vector<GgufKv>&)> edit;  // changes the metadata
    std::optional<uint32_t> alignment;               // general.alignment to write
};

inline GgufKv* find_kv(std::vector<GgufKv>& kv, const std::string& key) {
    for (auto& e : kv)
        if (e.key == key)
            return &e;
    return nullptr;
}

inline void set_kv(std::vector<GgufKv>& kv, const std::string& key, GgufValue v) {
    if (GgufKv* e = find_kv(kv, key))
        e->value = std::move(v);
    else
        kv.push_back({key, std::move(v)});
}

// Writes src's tensors (data copied from src) with m applied to its metadata to dst.
inline void write_mutated(const std::string& src, const std::string& dst, const Mutation& m) {
    const GgufFile g = read_gguf(src);
    std::vector<GgufKv> kv = g.kv;
    if (m.edit)
        m.edit(kv);
    if (m.alignment)
        set_kv(kv, "general.alignment", *m.alignment);
    GgufWriter w;
    for (auto& e : kv)
        w.set(e.key, e.value);
    auto file = std::shared_ptr<std::FILE>(std::fopen(src.c_str(), "rb"), [](std::FILE* f) {
        if (f)
            std::fclose(f);
    });
    if (!file)
        throw runtime_error("cannot read " + src);
    for (const auto& t : g.tensors) {
        const uint64_t at = g.data_offset + t.offset, n = t.nbytes;
        w.add_tensor(t.name, t.ne, t.type, [file, at, n](GgufSink& sink) {
            std::vector<char> buf(n);
            if (std::fseek(file.get(), static_cast<long>(at), SEEK_SET) != 0 ||
                std::fread(buf.data(), 1, n, file.get()) != n)
                throw runtime_error("cannot read tensor data");
            sink.write(buf.data(), n);
        });
    }
    w.write(dst);
}

// A seeded mutation of the values llama.cpp reads from a llama-architecture model: one
// hyper-parameter, tokenizer value or the alignment set to something plausible, extreme or of
// the wrong type.
inline Mutation random_mutation(std::mt19937_64& rng, const GgufFile& g) {
    const std::string arch = g.architecture().value_or("llama");
    std::vector<std::string> keys;
    for (const auto& e : g.kv)
        if (e.key.rfind(arch + ".", 0) == 0 || e.key.rfind("tokenizer.", 0) == 0)
            keys.push_back(e.key);
    for (const char* extra : {".expert_count", ".expert_used_count", ".rope.scaling.type",
                              ".nextn_predict_layers", ".attention.layer_norm_epsilon"})
        keys.push_back(arch + extra);
    const std::string key = keys[rng() % keys.size()];
    const int kind = static_cast<int>(rng() % 12);
    Mutation m;
    const uint32_t u32s[] = {0,  1,   2,   3,   5,    7,     8,           16,         31,
                             64, 511, 512, 513, 1000, 65535, 0x7fffffffu, 0xffffffffu};
    const float f32s[] = {0.0f,
                          -0.0f,
                          1e-6f,
                          -1e-5f,
                          1.0f,
                          -1.0f,
                          1e30f,
                          -1e30f,
                          std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN()};
    const char* strings[] = {"",      "none",  "linear", "yarn",    "longrope",
                             "bogus", "llama", "gpt2",   "\xff\xfe"};
    switch (kind) {
        case 0:
        case 1:
        case 2: {
            const uint32_t v = u32s[rng() % std::size(u32s)];
            m.what = key + " = " + std::to_string(v);
            m.edit = [key, v](auto& kv) { set_kv(kv, key, v); };
            break;
        }
        case 3:
        case 4: {
            const float v = f32s[rng() % std::size(f32s)];
            m.what = key + " = " + std::to_string(v) + " (f32)";
            m.edit = [key, v](auto& kv) { set_kv(kv, key, v); };
            break;
        }
        case 5: {
            const std::string v = strings[rng() % std::size(strings)];
            m.what = key + " = '" + v + "'";
            m.edit = [key, v](auto& kv) { set_kv(kv, key, v); };
            break;
        }
        case 6: {
            const int32_t v = -static_cast<int32_t>(1 + rng() % 100);
            m.what = key + " = " + std::to_string(v) + " (i32)";
            m.edit = [key, v](auto& kv) { set_kv(kv, key, v); };
            break;
        }
        case 7: {
            const uint32_t n = static_cast<uint32_t>(rng() % 6);
            const uint32_t v = u32s[rng() % std::size(u32s)];
            m.what = key + " = [" + std::to_string(v) + "] x " + std::to_string(n);
            m.edit = [key, n, v](auto& kv) {
                set_kv(kv, key, GgufArray{std::vector<uint32_t>(n, v)});
            };
            break;
        }
        case 8: {
            m.what = "remove " + key;
            m.edit = [key](auto& kv) {
                for (auto it = kv.begin(); it != kv.end(); ++it)
                    if (it->key == key) {
                        kv.erase(it);
                        break;
                    }
            };
            break;
        }
        case 9: {
            const uint32_t a = 1u << (rng() % 9);  // 1 .. 256
            m.what = "general.alignment = " + std::to_string(a);
            m.alignment = a;
            break;
        }
        case 10: {
            const size_t i = 1 + rng() % 300, j = rng() % 300;
            m.what = "token " + std::to_string(i) + " := token " + std::to_string(j);
            m.edit = [i, j](auto& kv) {
                if (GgufKv* e = find_kv(kv, "tokenizer.ggml.tokens"))
                    if (auto* a = std::get_if<GgufArray>(&e->value))
                        if (auto* t = std::get_if<std::vector<std::string>>(a))
                            if (i < t->size() && j < t->size())
                                (*t)[i] = (*t)[j];
            };
            break;
        }
        default: {
            const size_t n = rng() % 600;
            m.what = "tokenizer.ggml.scores cut to " + std::to_string(n);
            m.edit = [n](auto& kv) {
                if (GgufKv* e = find_kv(kv, "tokenizer.ggml.scores"))
                    if (auto* a = std::get_if<GgufArray>(&e->value))
                        if (auto* s = std::get_if<std::vector<float>>(a))
                            s->resize(std::min(n, s->size()));
            };
            break;
        }
    }
    return m;
}

}  // namespace sb::testing_gguf
