#include "model/synth.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "model/gguf.hpp"
#include "model/presets.hpp"

namespace sb {

namespace {

constexpr float kWeightStd = 0.02f;
constexpr float kBiasStd = 0.02f;
// Floats generated per batch (16 MiB); bounds memory whatever the model size.
constexpr int64_t kBatchElements = int64_t{1} << 22;
// Below this many elements a batch is not worth spreading over threads.
constexpr int64_t kParallelMin = int64_t{1} << 18;

uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t fnv1a(const std::string& s) {
    uint64_t h = 0xCBF29CE484222325ull;
    for (unsigned char c : s)
        h = (h ^ c) * 0x100000001B3ull;
    return h;
}

// Fills one row from its own seed, so the output does not depend on batching or threads.
// Values are approximately normal: the Irwin-Hall sum of four 16-bit uniforms (mean 2,
// variance 1/3), which costs one 64-bit random number per value.
void fill_row(float* out, int64_t n, uint64_t seed, uint64_t tensor_hash, int64_t row,
              float stddev) {
    uint64_t state = seed ^ (tensor_hash * 0x9E3779B97F4A7C15ull);
    state ^= splitmix64(state) + static_cast<uint64_t>(row) * 0xD1B54A32D192ED03ull;
    const float scale = stddev * std::sqrt(3.0f) / 65536.0f;
    for (int64_t i = 0; i < n; ++i) {
        const uint64_t r = splitmix64(state);
        const auto sum = static_cast<int64_t>((r & 0xFFFF) + ((r >> 16) & 0xFFFF) +
                                              ((r >> 32) & 0xFFFF) + (r >> 48));
        // sum + 2 (half-unit offsets) - 2 * 65536 (the mean), scaled.
        out[i] = static_cast<float>(sum + 2 - 2 * 65536) * scale;
    }
}

struct QuantChoice {
    std::string name;  // canonical lower-case
    uint32_t type;
    uint32_t file_type;
};

QuantChoice parse_quant(const std::string& quant) {
    std::string q = quant;
    for (auto& c : q)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (q == "q4_0")
        return {q, ggml_type::kQ4_0, 2};
    if (q == "q8_0")
        return {q, ggml_type::kQ8_0, 7};
    if (q == "f16")
        return {q, ggml_type::kF16, 1};
    if (q == "f32")
        return {q, ggml_type::kF32, 0};
    throw usage_error("unknown quant '" + quant + "' (valid: q4_0, q8_0, f16, f32)");
}

std::string ascii_word(uint64_t index, int length) {
    std::string w(static_cast<std::size_t>(length), 'a');
    for (int i = length - 1; i >= 0; --i) {
        w[static_cast<std::size_t>(i)] = static_cast<char>('a' + index % 26);
        index /= 26;
    }
    return w;
}

// Batch buffers shared by all matrices of a model (fills run one after another), so memory is
// touched once rather than once per tensor.
struct Scratch {
    std::vector<float> src;
    std::vector<uint8_t> dst;
};

// Streams a matrix: generates rows batch by batch, converts them on worker threads, and hands
// each batch to the sink in row order.
class MatrixFill {
  public:
    MatrixFill(const Quantizer& q, uint32_t type, int64_t n_per_row, int64_t n_rows, uint64_t seed,
               uint64_t tensor_hash, int threads, std::shared_ptr<Scratch> scratch)
        : q_(q),
          type_(type),
          n_per_row_(n_per_row),
          n_rows_(n_rows),
          seed_(seed),
          hash_(tensor_hash),
          threads_(threads),
          scratch_(std::move(scratch)) {}

    void operator()(GgufSink& sink) const {
        const std::size_t row_bytes = q_.row_size(type_, n_per_row_);
        const int64_t batch_rows = std::clamp<int64_t>(kBatchElements / n_per_row_, 1, n_rows_);
        auto& src = scratch_->src;
        auto& dst = scratch_->dst;
        src.resize(std::max(src.size(), static_cast<std::size_t>(batch_rows * n_per_row_)));
        dst.resize(std::max(dst.size(), static_cast<std::size_t>(batch_rows) * row_bytes));
        for (int64_t r0 = 0; r0 < n_rows_; r0 += batch_rows) {
            const int64_t rows = std::min(batch_rows, n_rows_ - r0);
            const int workers = rows * n_per_row_ < kParallelMin
                                    ? 1
                                    : static_cast<int>(std::min<int64_t>(threads_, rows));
            auto work = [&](int64_t a, int64_t b) {
                for (int64_t r = a; r < b; ++r) {
                    fill_row(src.data() + r * n_per_row_, n_per_row_, seed_, hash_, r0 + r,
                             kWeightStd);
                }
                q_.quantize_rows(type_, src.data() + a * n_per_row_, dst.data() + a * row_bytes,
                                 b - a, n_per_row_);
            };
            if (workers <= 1) {
                work(0, rows);
            } else {
                std::vector<std::thread> pool;
                std::exception_ptr error;
                std::mutex error_mutex;
                try {
                    for (int w = 0; w < workers; ++w) {
                        const int64_t a = rows * w / workers;
                        const int64_t b = rows * (w + 1) / workers;
                        pool.emplace_back([&, a, b] {
                            try {
                                work(a, b);
                            } catch (...) {
                                std::lock_guard lock(error_mutex);
                                if (!error)
                                    error = std::current_exception();
                            }
                        });
                    }
                } catch (...) {
                    // Could not start a thread: finish the started ones before unwinding.
                    for (auto& t : pool)
                        t.join();
                    throw;
                }
                for (auto& t : pool)
                    t.join();
                if (error)
                    std::rethrow_exception(error);
            }
            sink.write(dst.data(), static_cast<std::size_t>(rows) * row_bytes);
        }
    }

  private:
    const Quantizer& q_;
    uint32_t type_;
    int64_t n_per_row_;
    int64_t n_rows_;
    uint64_t seed_;
    uint64_t hash_;
    int threads_;
    std::shared_ptr<Scratch> scratch_;
};

// Forwards to the file and reports the running byte count.
class ProgressSink : public GgufSink {
  public:
    ProgressSink(GgufSink& inner, const std::function<void(uint64_t)>& on_bytes)
        : inner_(inner), on_bytes_(on_bytes) {}
    void write(const void* data, std::size_t n) override {
        inner_.write(data, n);
        on_bytes_(n);
    }

  private:
    GgufSink& inner_;
    const std::function<void(uint64_t)>& on_bytes_;
};

GgufTensorFill floats_fill(std::vector<float> v) {
    return [v = std::move(v)](GgufSink& sink) { sink.write(v.data(), v.size() * sizeof(float)); };
}

// Collects the writer's small pieces into large writes of the output file.
class OutputSink : public GgufSink {
  public:
    explicit OutputSink(OutputFile& file) : file_(file) { buf_.reserve(kBuffer); }
    void write(const void* data, std::size_t n) override {
        const char* p = static_cast<const char*>(data);
        if (buf_.size() + n > kBuffer)
            flush();
        if (n >= kBuffer)
            file_.write(std::string_view(p, n));
        else
            buf_.append(p, n);
    }
    void flush() {
        file_.write(buf_);
        buf_.clear();
    }

  private:
    static constexpr std::size_t kBuffer = 4 << 20;
    OutputFile& file_;
    std::string buf_;
};

}  // namespace

uint32_t llama_file_type_for(const std::string& quant) {
    return parse_quant(quant).file_type;
}

SyntheticVocab make_synthetic_vocab(int64_t n_vocab) {
    constexpr int32_t kNormal = 1, kUnknown = 2, kControl = 3, kByte = 6;
    if (n_vocab < 260) {
        throw usage_error("vocabulary of " + std::to_string(n_vocab) +
                          " tokens is too small (at least 260)");
    }
    SyntheticVocab v;
    const auto n = static_cast<std::size_t>(n_vocab);
    v.tokens.reserve(n);
    v.scores.reserve(n);
    v.token_types.reserve(n);
    auto add = [&](std::string piece, int32_t type) {
        v.tokens.push_back(std::move(piece));
        v.token_types.push_back(type);
        // Special and byte tokens score 0; normal pieces descend from -1, as in Llama 2's vocab.
        v.scores.push_back(type == kNormal ? -static_cast<float>(v.tokens.size() - 259) : 0.0f);
    };
    add("<unk>", kUnknown);
    add("<s>", kControl);
    add("</s>", kControl);
    for (int b = 0; b < 256; ++b) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "<0x%02X>", b);
        add(buf, kByte);
    }
    const std::string space = "\xE2\x96\x81";  // U+2581, SentencePiece's word boundary
    add(space, kNormal);
    for (int c = 33; c < 127 && v.tokens.size() < n; ++c)
        add(std::string(1, char(c)), kNormal);
    for (int c = 33; c < 127 && v.tokens.size() < n; ++c)
        add(space + char(c), kNormal);
    // Lowercase words of growing length: "▁xy" then "xy"; single letters are already taken.
    for (int len = 2; v.tokens.size() < n; ++len) {
        uint64_t count = 1;
        for (int i = 0; i < len; ++i)
            count *= 26;
        for (uint64_t i = 0; i < count && v.tokens.size() < n; ++i) {
            const std::string w = ascii_word(i, len);
            add(space + w, kNormal);
            if (v.tokens.size() < n)
                add(w, kNormal);
        }
    }
    return v;
}

std::string bundled_vocab_dir() {
    if (const char* d = std::getenv("STAGEBENCH_VOCAB_DIR"); d && *d)
        return d;
    // Beside the executable, never a path of the build machine: bin/../share/stagebench/vocab
    // (the build tree links it to the llama.cpp tree's models/, `make dist` copies the presets'
    // vocabularies there).
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec || self.empty())
        return "";
    return (self.parent_path().parent_path() / "share" / "stagebench" / "vocab").string();
}

std::vector<std::string> bundled_vocab_names() {
    std::vector<std::string> names;
    const std::string dir = bundled_vocab_dir();
    std::error_code ec;
    if (dir.empty() || !std::filesystem::is_directory(dir, ec))
        return names;
    const std::string prefix = "ggml-vocab-", suffix = ".gguf";
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
        const std::string f = e.path().filename().string();
        if (f.size() > prefix.size() + suffix.size() && f.rfind(prefix, 0) == 0 &&
            f.compare(f.size() - suffix.size(), suffix.size(), suffix) == 0)
            names.push_back(f.substr(prefix.size(), f.size() - prefix.size() - suffix.size()));
    }
    std::sort(names.begin(), names.end());
    return names;
}

std::string resolve_vocab(const std::string& name) {
    const bool is_path = name.find('/') != std::string::npos ||
                         (name.size() > 5 && name.compare(name.size() - 5, 5, ".gguf") == 0);
    if (is_path)
        return name;
    const std::string dir = bundled_vocab_dir();
    const std::string path = dir + "/ggml-vocab-" + name + ".gguf";
    std::error_code ec;
    if (!dir.empty() && std::filesystem::is_regular_file(path, ec))
        return path;
    std::string known;
    for (const auto& n : bundled_vocab_names())
        known += (known.empty() ? "" : ", ") + n;
    throw usage_error("--vocab " + name + ": no vocabulary of that name" +
                      (known.empty()
                           ? " (no " + (dir.empty() ? std::string("vocabulary directory") : dir) +
                                 "; give a path to a GGUF)"
                           : " (known: synthetic, none, " + known + "; or a path to a GGUF)"));
}

SynthResult write_synthetic_model(const SynthOptions& o, const Quantizer& quantizer) {
    Preset preset = find_preset(o.preset);
    // The tokenizer's keys, read before anything is written: its size is the model's n_vocab.
    std::vector<GgufKv> vocab_keys;
    std::string vocab_source = "synthetic";
    std::string vocab = o.vocab;
    // A preset's family vocabulary by default, where the llama.cpp tree that has it is here.
    if (vocab.empty() && !preset.vocab.empty()) {
        std::error_code ec;
        const std::string family = bundled_vocab_dir() + "/ggml-vocab-" + preset.vocab + ".gguf";
        if (std::filesystem::is_regular_file(family, ec))
            vocab = preset.vocab;
    }
    if (vocab == "none") {
        vocab_source = "none";
    } else if (!vocab.empty() && vocab != "synthetic") {
        vocab_source = resolve_vocab(vocab);
        const GgufFile f = read_gguf(vocab_source);
        const GgufArray* tokens = f.get_array("tokenizer.ggml.tokens");
        if (!tokens || gguf_element_type(*tokens) != GgufType::string ||
            !f.get_string("tokenizer.ggml.model"))
            throw input_error(vocab_source +
                              ": not a vocabulary (no tokenizer.ggml.model and "
                              "tokenizer.ggml.tokens strings)");
        for (const auto& kv : f.kv)
            if (kv.key.rfind("tokenizer.", 0) == 0)
                vocab_keys.push_back(kv);
        if (vocab == preset.vocab &&
            static_cast<int64_t>(gguf_array_size(*tokens)) != preset.n_vocab)
            throw input_error(vocab_source + ": " + std::to_string(gguf_array_size(*tokens)) +
                              " tokens, not the " + std::to_string(preset.n_vocab) + " of " +
                              preset.name + " (--vocab synthetic to go without)");
        preset.n_vocab = static_cast<int64_t>(gguf_array_size(*tokens));
    }
    const QuantChoice quant = parse_quant(o.quant);
    if (o.layers < 0)
        throw usage_error("--layers must be positive, got " + std::to_string(o.layers));
    if (o.out_path.empty())
        throw usage_error("no output path for the synthetic model");
    check_output_path(o.out_path, "the model (-o)");  // before minutes of generating
    const int threads = o.threads > 0
                            ? o.threads
                            : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    const std::vector<TensorSpec> specs = preset_tensors(preset, o.layers);
    const int n_layers = o.layers > 0 ? o.layers : static_cast<int>(preset.n_layer);

    SynthResult result;
    result.preset = preset.name;
    result.quant = quant.name;
    result.quantizer = quantizer.name();
    result.n_params = count_params(specs);
    result.n_layers = n_layers;
    result.n_tensors = specs.size();
    result.vocab = vocab_source;
    result.n_vocab = preset.n_vocab;

    GgufWriter w;
    const std::string& a = preset.arch;
    w.set_string("general.architecture", a);
    w.set_string("general.type", "model");
    w.set_string("general.name", "synthetic " + preset.name);
    w.set_u32("general.file_type", quant.file_type);
    w.set_u32("general.quantization_version", 2);
    w.set_u32("general.alignment", kGgufDefaultAlignment);
    w.set_u32(a + ".vocab_size", static_cast<uint32_t>(preset.n_vocab));
    w.set_u32(a + ".context_length", static_cast<uint32_t>(preset.n_ctx_train));
    w.set_u32(a + ".embedding_length", static_cast<uint32_t>(preset.n_embd));
    w.set_u32(a + ".block_count", static_cast<uint32_t>(n_layers));
    w.set_u32(a + ".feed_forward_length", static_cast<uint32_t>(preset.n_ff));
    w.set_u32(a + ".attention.head_count", static_cast<uint32_t>(preset.n_head));
    w.set_u32(a + ".attention.head_count_kv", static_cast<uint32_t>(preset.n_head_kv));
    w.set_u32(a + ".attention.key_length", static_cast<uint32_t>(preset.head_dim));
    w.set_u32(a + ".attention.value_length", static_cast<uint32_t>(preset.head_dim));
    w.set_u32(a + ".rope.dimension_count", static_cast<uint32_t>(preset.head_dim));
    w.set_f32(a + ".rope.freq_base", preset.rope_theta);
    w.set_f32(a + ".attention.layer_norm_rms_epsilon", preset.rms_eps);

    if (vocab_source == "none") {
        // llama.cpp then makes vocab_size dummy tokens and runs the model on token ids.
        w.set_string("tokenizer.ggml.model", "none");
    } else if (!vocab_keys.empty()) {
        for (auto& kv : vocab_keys)
            w.set(kv.key, std::move(kv.value));
    } else {
        SyntheticVocab vocab = make_synthetic_vocab(preset.n_vocab);
        w.set_string("tokenizer.ggml.model", "llama");
        w.set_array("tokenizer.ggml.tokens", std::move(vocab.tokens));
        w.set_array("tokenizer.ggml.scores", std::move(vocab.scores));
        w.set_array("tokenizer.ggml.token_type", std::move(vocab.token_types));
        w.set_u32("tokenizer.ggml.bos_token_id", 1);
        w.set_u32("tokenizer.ggml.eos_token_id", 2);
        w.set_u32("tokenizer.ggml.unknown_token_id", 0);
        w.set_bool("tokenizer.ggml.add_bos_token", true);
        w.set_bool("tokenizer.ggml.add_eos_token", false);
    }

    w.set_bool("stagebench.synthetic", true);
    w.set_string("stagebench.preset", preset.name);
    w.set_u64("stagebench.seed", o.seed);
    w.set_string("stagebench.generator", o.generator);
    w.set_string("stagebench.quantizer", quantizer.name());
    w.set_string("stagebench.vocab", vocab_source == "synthetic" || vocab_source == "none"
                                         ? vocab_source
                                         : std::filesystem::path(vocab_source).filename().string());

    // Progress counts tensor data bytes as they are handed to the file.
    uint64_t done = 0;
    uint64_t total = 0;
    const std::function<void(uint64_t)> on_bytes = [&](uint64_t n) {
        done += n;
        if (o.on_progress)
            o.on_progress(done, total);
    };
    auto add = [&](const TensorSpec& t, uint32_t type, GgufTensorFill fill) {
        total += w.add_tensor(t.name, t.ne, type, [fill = std::move(fill), &on_bytes](GgufSink& s) {
            ProgressSink progress(s, on_bytes);
            fill(progress);
        });
    };

    auto scratch = std::make_shared<Scratch>();
    for (const auto& t : specs) {
        const uint64_t hash = fnv1a(t.name);
        switch (t.kind) {
            case TensorKind::matrix: {
                uint32_t type = quant.type;
                if (t.ne[0] % ggml_type_info(type)->block_size != 0) {
                    type = ggml_type::kF16;
                    result.f16_fallback.push_back(t.name);
                }
                add(t, type,
                    MatrixFill(quantizer, type, t.ne[0], t.ne[1], o.seed, hash, threads, scratch));
                break;
            }
            case TensorKind::norm:
                add(t, ggml_type::kF32,
                    floats_fill(std::vector<float>(static_cast<std::size_t>(t.ne[0]), 1.0f)));
                break;
            case TensorKind::bias: {
                std::vector<float> v(static_cast<std::size_t>(t.ne[0]));
                fill_row(v.data(), t.ne[0], o.seed, hash, 0, kBiasStd);
                add(t, ggml_type::kF32, floats_fill(std::move(v)));
                break;
            }
            case TensorKind::rope_freqs:
                add(t, ggml_type::kF32,
                    floats_fill(llama3_rope_factors(*preset.rope_scaling, preset.rope_theta,
                                                    preset.head_dim)));
                break;
        }
    }

    // A temporary beside the target renamed over it when done (an interrupted write leaves no
    // half model), or in place for a FIFO or a device (core/file_io.hpp).
    OutputFile file(o.out_path, "the model (-o)");
    OutputSink sink(file);
    result.file_bytes = w.write(sink, o.out_path);
    sink.flush();
    file.commit();
    result.path = o.out_path;
    return result;
}

nlohmann::json to_json(const SynthResult& r) {
    return nlohmann::json{
        {"path", r.path},           {"preset", r.preset},     {"quant", r.quant},
        {"quantizer", r.quantizer}, {"n_params", r.n_params}, {"file_bytes", r.file_bytes},
        {"n_tensors", r.n_tensors}, {"n_layers", r.n_layers}, {"f16_fallback", r.f16_fallback},
        {"vocab", r.vocab},         {"n_vocab", r.n_vocab}};
}

}  // namespace sb
