#include "model/synth.hpp"

#include <sys/statvfs.h>

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
#include "core/interrupt.hpp"
#include "model/arch.hpp"
#include "model/gguf.hpp"
#include "model/hf_config.hpp"
#include "model/inspect.hpp"
#include "model/presets.hpp"
#include "model/quant_mix.hpp"
#include "model/random.hpp"
#include "model/routing.hpp"

namespace sb {

namespace {

constexpr float kWeightStd = 0.02f;
constexpr float kBiasStd = 0.02f;
// Floats generated per batch (16 MiB); bounds memory whatever the model size.
constexpr int64_t kBatchElements = int64_t{1} << 22;
// Below this many elements a batch is not worth spreading over threads.
constexpr int64_t kParallelMin = int64_t{1} << 18;

using synth_random::fill_row;
using synth_random::fnv1a;

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

// Produces row `row` (n_per_row floats) of a tensor; called from worker threads at once, so it
// must only read shared state.
using RowSource = std::function<void(int64_t row, float* out)>;

// Streams a matrix: generates rows batch by batch, converts them on worker threads, and hands
// each batch to the sink in row order.
class MatrixFill {
  public:
    MatrixFill(const Quantizer& q, uint32_t type, int64_t n_per_row, int64_t n_rows,
               RowSource source, int threads, std::shared_ptr<Scratch> scratch)
        : q_(q),
          type_(type),
          n_per_row_(n_per_row),
          n_rows_(n_rows),
          source_(std::move(source)),
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
                for (int64_t r = a; r < b; ++r)
                    source_(r0 + r, src.data() + r * n_per_row_);
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
    RowSource source_;
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

std::string gib(uint64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(bytes) / (1u << 30));
    return buf;
}

// Throws sb::Error(input) when the filesystem that out_path is written to (the directory of
// the file it names, or of the file its link points to) has less than bytes free. A FIFO or a
// device is written in place, and not checked.
void check_free_space(const std::string& out_path, uint64_t bytes) {
    if (!output_is_replaced(out_path))
        return;
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path target = fs::canonical(out_path, ec);
    if (ec)
        target = fs::absolute(out_path, ec);
    const std::string dir = target.parent_path().string();
    struct statvfs st {};
    if (dir.empty() || ::statvfs(dir.c_str(), &st) != 0)
        return;  // check_output_path() has refused a directory that is not there
    const uint64_t free = static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
    if (free < bytes)
        throw input_error("the model needs " + gib(bytes) + " GiB at '" + dir + "', but only " +
                          gib(free) + " GiB are free there");
}

// A hybrid scaled down to n_layers (layer_kinds_for) must keep a layer of each kind its
// pattern has: llama.cpp asserts on the empty cache of a missing kind as it loads. Throws
// sb::Error(usage) naming the smallest --layers that keeps both.
void check_scaled_layers(const ModelSpec& spec, const std::string& label, int n_layers) {
    auto lacks = [&](int64_t n) -> const char* {
        const auto kinds = layer_kinds_for(spec, n);
        for (const auto kind : {LayerKind::attention, LayerKind::shortconv})
            if (std::find(spec.layer_kinds.begin(), spec.layer_kinds.end(), kind) !=
                    spec.layer_kinds.end() &&
                std::find(kinds.begin(), kinds.end(), kind) == kinds.end())
                return kind == LayerKind::attention ? "attention" : "convolution";
        return nullptr;
    };
    const char* missing = lacks(n_layers);
    if (!missing)
        return;
    int64_t enough = n_layers + 1;
    while (enough < spec.n_layer && lacks(enough))
        ++enough;
    throw usage_error("--layers " + std::to_string(n_layers) + " leaves " + label + " no " +
                      missing + " layer, and llama.cpp cannot load it without one: use --layers " +
                      std::to_string(enough) + " or more");
}

}  // namespace

uint32_t llama_file_type_for(const std::string& quant) {
    return parse_quant_scheme(quant).file_type;
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

namespace {

// The family vocabularies of a config.json model_type, in order of preference: the first one
// here whose size is the model's vocabulary size becomes its default.
std::vector<std::string> family_vocabs(const std::string& model_type) {
    if (model_type == "llama")
        return {"llama-bpe", "llama-spm"};
    if (model_type == "qwen2" || model_type == "qwen3" || model_type == "qwen3_moe")
        return {"qwen2"};
    if (model_type == "smollm3")
        return {"llama-bpe"};
    if (model_type == "phi3")
        return {"phi-3"};
    return {};
}

bool bundled(const std::string& name) {
    std::error_code ec;
    return std::filesystem::is_regular_file(bundled_vocab_dir() + "/ggml-vocab-" + name + ".gguf",
                                            ec);
}

// The tokenizer.* keys of a vocabulary GGUF and its token count.
std::vector<GgufKv> read_vocab_keys(const std::string& path, int64_t& n_tokens) {
    const GgufFile f = read_gguf(path);
    const GgufArray* tokens = f.get_array("tokenizer.ggml.tokens");
    if (!tokens || gguf_element_type(*tokens) != GgufType::string ||
        !f.get_string("tokenizer.ggml.model"))
        throw input_error(path +
                          ": not a vocabulary (no tokenizer.ggml.model and "
                          "tokenizer.ggml.tokens strings)");
    n_tokens = static_cast<int64_t>(gguf_array_size(*tokens));
    std::vector<GgufKv> keys;
    for (const auto& kv : f.kv)
        if (kv.key.rfind("tokenizer.", 0) == 0)
            keys.push_back(kv);
    return keys;
}

GgufValue* find_value(std::vector<GgufKv>& keys, const std::string& key) {
    for (auto& kv : keys)
        if (kv.key == key)
            return &kv.value;
    return nullptr;
}

void set_value(std::vector<GgufKv>& keys, const std::string& key, GgufValue v) {
    if (GgufValue* old = find_value(keys, key))
        *old = std::move(v);
    else
        keys.push_back({key, std::move(v)});
}

// The model's own special tokens over its family vocabulary: added tokens as the converter
// types them (control when special, user-defined otherwise) and the special ids.
void apply_overlay(std::vector<GgufKv>& keys, const TokenizerOverlay& o, const std::string& where) {
    auto* tokens_v = find_value(keys, "tokenizer.ggml.tokens");
    auto* types_v = find_value(keys, "tokenizer.ggml.token_type");
    auto* tokens =
        tokens_v ? std::get_if<std::vector<std::string>>(&std::get<GgufArray>(*tokens_v)) : nullptr;
    auto* types = types_v && std::holds_alternative<GgufArray>(*types_v)
                      ? std::get_if<std::vector<int32_t>>(&std::get<GgufArray>(*types_v))
                      : nullptr;
    if (!tokens || (!o.added_tokens.empty() && (!types || types->size() != tokens->size())))
        throw input_error(where +
                          ": the vocabulary has no token list and types to add the "
                          "model's tokens to");
    for (const auto& t : o.added_tokens) {
        const auto i = static_cast<std::size_t>(t.id);
        if (i >= tokens->size())
            throw input_error(where + ": added token " + std::to_string(t.id) +
                              " is outside the vocabulary of " + std::to_string(tokens->size()));
        (*tokens)[i] = t.content;
        (*types)[i] = t.special ? 3 : 4;  // LLAMA_TOKEN_TYPE_CONTROL, USER_DEFINED
    }
    const auto n = static_cast<int64_t>(tokens->size());
    auto id = [&](const char* key, std::optional<int64_t> v) {
        if (v && *v < n)
            set_value(keys, key, static_cast<uint32_t>(*v));
    };
    id("tokenizer.ggml.bos_token_id", o.bos_token_id);
    id("tokenizer.ggml.eos_token_id", o.eos_token_id);
    id("tokenizer.ggml.padding_token_id", o.padding_token_id);
    if (o.add_bos_token)
        set_value(keys, "tokenizer.ggml.add_bos_token", *o.add_bos_token);
}

// general.name. llama.cpp's vocabulary loader reads a Phi-3 tokenizer into a name holding
// "phi3" or "phi-3" and then looks up Phi-3's tokens, which a synthetic vocabulary does not
// have: such a model without a real vocabulary is named plainly.
std::string model_name(const std::string& label, bool real_vocab) {
    std::string lower = label;
    for (auto& c : lower)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!real_vocab &&
        (lower.find("phi3") != std::string::npos || lower.find("phi-3") != std::string::npos))
        return "synthetic model";
    return "synthetic " + label;
}

}  // namespace

SynthResult write_synthetic_model(const SynthOptions& o, const Quantizer& quantizer) {
    if (o.preset.empty() == o.config_path.empty())
        throw usage_error(o.preset.empty() ? "give a preset or a config.json"
                                           : "give a preset or a config.json, not both");
    const QuantScheme scheme = parse_quant_scheme(o.quant);
    if (o.layers < 0)
        throw usage_error("--layers must be positive, got " + std::to_string(o.layers));
    if (o.out_path.empty())
        throw usage_error("no output path for the synthetic model");

    const Preset* preset = o.preset.empty() ? nullptr : &find_preset(o.preset);
    ModelSpec spec = preset ? preset->spec : read_hf_config(o.config_path);
    const std::string label =
        preset ? preset->name
               : spec.model_type + " (" + std::filesystem::path(o.config_path).filename().string() +
                     ")";

    // The tokenizer, read before anything is written: its size is the model's n_vocab.
    std::string family;  // the model's family vocabulary, when it has one here
    if (preset) {
        if (!preset->vocab.empty() && bundled(preset->vocab))
            family = preset->vocab;
    } else {
        for (const auto& v : family_vocabs(spec.model_type)) {
            int64_t n = 0;
            if (bundled(v) && (read_vocab_keys(resolve_vocab(v), n), n == spec.n_vocab)) {
                family = v;
                break;
            }
        }
    }
    const std::string vocab = o.vocab.empty() ? (family.empty() ? "synthetic" : family) : o.vocab;
    std::vector<GgufKv> vocab_keys;
    std::string vocab_source = vocab;
    if (vocab != "none" && vocab != "synthetic") {
        vocab_source = resolve_vocab(vocab);
        int64_t n_tokens = 0;
        vocab_keys = read_vocab_keys(vocab_source, n_tokens);
        if (preset && vocab == preset->vocab && n_tokens != spec.n_vocab)
            throw input_error(vocab_source + ": " + std::to_string(n_tokens) + " tokens, not the " +
                              std::to_string(spec.n_vocab) + " of " + preset->name +
                              " (--vocab synthetic to go without)");
        spec.n_vocab = n_tokens;
        if (!family.empty() && vocab == family) {
            TokenizerOverlay overlay;
            if (preset && preset->tokenizer) {
                overlay = *preset->tokenizer;
            } else {
                overlay.bos_token_id = spec.bos_token_id;
                overlay.eos_token_id = spec.eos_token_id;
                overlay.padding_token_id = spec.pad_token_id;
            }
            apply_overlay(vocab_keys, overlay, preset ? preset->name : o.config_path);
        }
        // What run would refuse (model/inspect.hpp) is not copied into a model.
        GgufFile keys;
        keys.path = vocab_source;
        keys.kv = std::move(vocab_keys);
        if (const auto why = vocabulary_fault(keys))
            throw input_error(vocab_source + ": " + *why +
                              "; llama.cpp cannot load a model with this vocabulary");
        vocab_keys = std::move(keys.kv);
    }

    std::optional<RoutingPlan> plan;
    const int n_layers = o.layers > 0 ? o.layers : static_cast<int>(spec.n_layer);
    if (o.layers > 0)
        check_scaled_layers(spec, label, o.layers);
    if (spec.is_moe())
        plan = plan_routing(parse_routing(o.routing.empty() ? "skewed" : o.routing), spec, n_layers,
                            o.seed);
    else if (!o.routing.empty())
        throw usage_error("--routing applies to mixtures of experts; " + label + " has no experts");

    check_output_path(o.out_path, "the model (-o)");  // before minutes of generating
    const int threads = o.threads > 0
                            ? o.threads
                            : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    const std::vector<TensorSpec> specs = arch_tensors(spec, o.layers);

    SynthResult result;
    result.preset = preset ? preset->name : "";
    result.config = preset ? "" : o.config_path;
    result.arch = spec.arch;
    result.quant = scheme.name;
    result.pure = o.pure;
    result.quantizer = quantizer.name();
    result.n_params = count_params(specs);
    result.n_layers = n_layers;
    result.n_tensors = specs.size();
    result.vocab = vocab_source;
    result.n_vocab = spec.n_vocab;
    if (plan)
        result.routing = routing_name(plan->routing);

    GgufWriter w;
    w.set_string("general.architecture", spec.arch);
    w.set_string("general.type", "model");
    w.set_string("general.name", model_name(label, !vocab_keys.empty()));
    w.set_u32("general.file_type", scheme.file_type);
    w.set_u32("general.quantization_version", 2);
    w.set_u32("general.alignment", kGgufDefaultAlignment);
    write_arch_keys(w, spec, n_layers);

    if (vocab_source == "none") {
        // llama.cpp then makes vocab_size dummy tokens and runs the model on token ids.
        w.set_string("tokenizer.ggml.model", "none");
    } else if (!vocab_keys.empty()) {
        for (auto& kv : vocab_keys)
            w.set(kv.key, std::move(kv.value));
    } else {
        SyntheticVocab sv = make_synthetic_vocab(spec.n_vocab);
        w.set_string("tokenizer.ggml.model", "llama");
        w.set_array("tokenizer.ggml.tokens", std::move(sv.tokens));
        w.set_array("tokenizer.ggml.scores", std::move(sv.scores));
        w.set_array("tokenizer.ggml.token_type", std::move(sv.token_types));
        w.set_u32("tokenizer.ggml.bos_token_id", 1);
        w.set_u32("tokenizer.ggml.eos_token_id", 2);
        w.set_u32("tokenizer.ggml.unknown_token_id", 0);
        w.set_bool("tokenizer.ggml.add_bos_token", true);
        w.set_bool("tokenizer.ggml.add_eos_token", false);
    }

    w.set_bool("stagebench.synthetic", true);
    if (preset)
        w.set_string("stagebench.preset", preset->name);
    else
        w.set_string("stagebench.config", std::filesystem::path(o.config_path).filename().string());
    w.set_u64("stagebench.seed", o.seed);
    w.set_string("stagebench.generator", o.generator);
    w.set_string("stagebench.quantizer", quantizer.name());
    if (o.pure)
        w.set_bool("stagebench.pure", true);  // absent: llama-quantize's default mix
    w.set_string("stagebench.vocab", vocab_source == "synthetic" || vocab_source == "none"
                                         ? vocab_source
                                         : std::filesystem::path(vocab_source).filename().string());
    if (plan) {
        w.set_string("stagebench.routing", routing_name(plan->routing));
        if (plan->routing == Routing::skewed)
            w.set_f32("stagebench.routing.zipf_exponent", static_cast<float>(kZipfExponent));
    }

    // Progress counts tensor data bytes as they are handed to the file.
    uint64_t done = 0;
    uint64_t total = 0;
    // Ctrl-C or SIGTERM (core/interrupt.hpp) ends the write between batches: the temporary is
    // removed as the exception unwinds (OutputFile), and nothing reaches out_path.
    auto stop_if_interrupted = [&] {
        if (interrupt_requested())
            throw runtime_error("synth interrupted (Ctrl-C or SIGTERM) after " +
                                std::to_string(done >> 20) + " of " + std::to_string(total >> 20) +
                                " MiB: no model written to '" + o.out_path + "'");
    };
    const std::function<void(uint64_t)> on_bytes = [&](uint64_t n) {
        done += n;
        if (o.on_progress)
            o.on_progress(done, total);
        stop_if_interrupted();
    };
    auto add = [&](const TensorSpec& t, uint32_t type, GgufTensorFill fill) {
        ++result.tensor_types[std::string(ggml_type_info(type)->name)];
        total += w.add_tensor(t.name, t.ne, type, [fill = std::move(fill), &on_bytes](GgufSink& s) {
            ProgressSink progress(s, on_bytes);
            fill(progress);
        });
    };

    QuantMixer mixer(scheme, o.pure, spec, n_layers, specs);
    auto scratch = std::make_shared<Scratch>();
    const uint64_t seed = o.seed;
    const int64_t n_embd = spec.n_embd;
    for (const auto& t : specs) {
        const uint64_t hash = fnv1a(t.name);
        const uint32_t type = mixer.type_for(t);
        if (mixer.fell_back())
            result.fallbacks.push_back(t.name + ": " + std::string(ggml_type_info(type)->name));
        const int64_t n_rows = t.n_elements() / t.ne[0];
        switch (t.kind) {
            case TensorKind::matrix:
            case TensorKind::conv: {
                RowSource source = [seed, hash, n = t.ne[0]](int64_t row, float* out) {
                    fill_row(out, n, seed, hash, row, kWeightStd);
                };
                if (plan && t.name == "token_embd.weight") {
                    // Every token holds the same value at the router's bias coordinate.
                    source = [seed, hash, n = t.ne[0], p = &*plan](int64_t row, float* out) {
                        fill_row(out, n, seed, hash, row, kWeightStd);
                        out[p->bias_coord] = p->bias_value;
                    };
                } else if (plan && t.writes_residual) {
                    // No layer writes the coordinates the router reads.
                    source = [seed, hash, n = t.ne[0], n_embd, p = &*plan](int64_t row,
                                                                           float* out) {
                        if (is_routing_coord(*p, row % n_embd))
                            std::fill(out, out + n, 0.0f);
                        else
                            fill_row(out, n, seed, hash, row, kWeightStd);
                    };
                }
                add(t, type,
                    MatrixFill(quantizer, type, t.ne[0], n_rows, std::move(source), threads,
                               scratch));
                break;
            }
            case TensorKind::router: {
                RowSource source = [seed, hash, n = t.ne[0]](int64_t row, float* out) {
                    fill_row(out, n, seed, hash, row, kWeightStd);
                };
                if (plan) {
                    const int layer = t.layer().value_or(0);
                    source = [seed, layer, p = &*plan](int64_t row, float* out) {
                        router_row(*p, layer, row, seed, out);
                    };
                }
                add(t, type,
                    MatrixFill(quantizer, type, t.ne[0], n_rows, std::move(source), threads,
                               scratch));
                break;
            }
            case TensorKind::norm:
                add(t, type,
                    floats_fill(std::vector<float>(static_cast<std::size_t>(t.ne[0]), 1.0f)));
                break;
            case TensorKind::bias: {
                std::vector<float> v(static_cast<std::size_t>(t.ne[0]));
                fill_row(v.data(), t.ne[0], seed, hash, 0, kBiasStd);
                add(t, type, floats_fill(std::move(v)));
                break;
            }
            case TensorKind::rope_freqs:
                add(t, type,
                    floats_fill(
                        llama3_rope_factors(*spec.llama3_rope, spec.rope_theta, spec.n_rot)));
                break;
            case TensorKind::rope_long:
                add(t, type, floats_fill(spec.longrope->long_factors));
                break;
            case TensorKind::rope_short:
                add(t, type, floats_fill(spec.longrope->short_factors));
                break;
        }
    }

    // Bounded before a byte is written: every dimension is (model/hf_config.cpp), their
    // product is here, and the disk must hold it (a full disk is found after minutes).
    const uint64_t file_bytes = w.file_bytes();
    if (file_bytes > kMaxSynthFileBytes)
        throw input_error(label + ": the model would be " + gib(file_bytes) +
                          " GiB, more than synth writes (at most 1 TiB)");
    check_free_space(o.out_path, file_bytes);

    // A temporary beside the target renamed over it when done (an interrupted write leaves no
    // half model), or in place for a FIFO or a device (core/file_io.hpp).
    stop_if_interrupted();
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
        {"path", r.path},
        {"preset", r.preset.empty() ? nlohmann::json() : nlohmann::json(r.preset)},
        {"config", r.config.empty() ? nlohmann::json() : nlohmann::json(r.config)},
        {"arch", r.arch},
        {"quant", r.quant},
        {"pure", r.pure},
        {"quantizer", r.quantizer},
        {"n_params", r.n_params},
        {"file_bytes", r.file_bytes},
        {"n_tensors", r.n_tensors},
        {"n_layers", r.n_layers},
        {"tensor_types", r.tensor_types},
        {"fallbacks", r.fallbacks},
        {"vocab", r.vocab},
        {"n_vocab", r.n_vocab},
        {"routing", r.routing ? nlohmann::json(*r.routing) : nlohmann::json()}};
}

}  // namespace sb
