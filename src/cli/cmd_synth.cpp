#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "core/version.hpp"
#include "engine/ggml_quantizer.hpp"
#include "model/hf_config.hpp"
#include "model/presets.hpp"
#include "model/quant_mix.hpp"
#include "model/synth.hpp"

namespace sb::cli {

namespace {

std::string joined(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v)
        s += (s.empty() ? "" : ", ") + x;
    return s;
}

// The vocabulary a preset gets without --vocab, as it is on this machine.
std::string default_vocab(const Preset& p) {
    if (p.vocab.empty())
        return "synthetic";
    for (const auto& n : bundled_vocab_names())
        if (n == p.vocab)
            return p.vocab;
    return "synthetic (" + p.vocab + " not here)";
}

void list_presets(std::ostream& out) {
    const auto& all = presets();
    out << fmt::format("{:<14} {:<9} {:>9} {:>6}  {:<10} {}\n", "preset", "arch", "params",
                       "layers", "vocabulary", "what is special");
    for (const auto& p : all) {
        const uint64_t n = count_params(p.spec);
        out << fmt::format("{:<14} {:<9} {:>7.3f} B {:>6}  {:<10} {}\n", p.name, p.spec.arch,
                           static_cast<double>(n) / 1e9, p.spec.n_layer, default_vocab(p),
                           p.special);
    }
    int from_files = 0;
    for (const auto& p : all)
        from_files += p.file.empty() ? 0 : 1;
    const std::string dir = preset_dir();
    out << fmt::format("{} presets: {} read from {}, {} built into this binary\n", all.size(),
                       from_files, dir.empty() ? "(no preset directory)" : dir,
                       all.size() - static_cast<std::size_t>(from_files));
}

}  // namespace

void add_synth_command(CLI::App& app, Context& ctx) {
    auto* cmd = app.add_subcommand(
        "synth", "Write a synthetic GGUF with a real model's architecture and random weights");
    auto o = std::make_shared<SynthOptions>();
    auto list = std::make_shared<bool>(false);
    // The presets are read when the command runs, not here: a broken preset file must not
    // stop every other command from starting.
    cmd->add_option("--preset", o->preset,
                    "a model's published hyperparameters, by name (synth --list shows them)");
    cmd->add_option("--config", o->config_path,
                    "a Hugging Face config.json to copy instead of a preset (model_type: " +
                        joined(supported_model_types()) + ")");
    cmd->add_flag("--list", *list, "list the presets and exit");
    cmd->add_option(
           "--quant", o->quant,
           "file type: " + joined(quant_names()) + "; tensors mixed as llama-quantize does for it")
        ->capture_default_str();
    cmd->add_flag("--pure", o->pure,
                  "every quantizable tensor at the file type's own type (llama-quantize --pure)");
    cmd->add_option("--layers", o->layers, "scale the model down to this many layers")
        ->check(layers_check());
    cmd->add_option("--seed", o->seed, "random seed")->capture_default_str();
    cmd->add_option("--vocab", o->vocab,
                    "tokenizer (default: the model's family vocabulary where the llama.cpp "
                    "tree has it: llama-bpe, qwen2; otherwise synthetic): synthetic, none, a "
                    "vocabulary GGUF whose tokenizer is copied (n_vocab becomes its size), or a "
                    "name of the tree's models/ggml-vocab-NAME.gguf");
    cmd->add_option("--routing", o->routing,
                    "mixtures of experts: skewed (default; Zipf popularity of the experts) or "
                    "uniform")
        ->check(CLI::IsMember({"uniform", "skewed"}));
    cmd->add_option("-o,--out", o->out_path, "output GGUF file");
    cmd->add_option("-t,--threads", o->threads, "worker threads (0 = all)")->check(threads_check());
    cmd->callback([&ctx, o, list] {
        if (*list) {
            list_presets(ctx.out);
            return;
        }
        if (o->preset.empty() == o->config_path.empty())
            throw usage_error(o->preset.empty()
                                  ? "synth needs --preset NAME or --config config.json"
                                  : "synth takes --preset or --config, not both");
        if (o->out_path.empty())
            throw usage_error("synth needs -o FILE");
        o->generator = std::string("stagebench ") + tool_version();
        GgmlQuantizer q;
        SynthResult r = write_synthetic_model(*o, q);
        ctx.out << fmt::format(
            "wrote {}: {} ({}) {} layers, {:.3f} B params, {} tensors, "
            "{:.1f} MiB\n",
            r.path, r.preset.empty() ? r.config : r.preset, r.arch, r.n_layers, r.n_params / 1e9,
            r.n_tensors, r.file_bytes / 1048576.0);
        std::string types;
        for (const auto& [type, n] : r.tensor_types)
            types += fmt::format("{}{} {}", types.empty() ? "" : ", ", n, type);
        ctx.out << fmt::format("tensor types ({}{}): {}\n", r.quant, r.pure ? ", pure" : "", types);
        ctx.out << fmt::format("vocabulary: {} ({} tokens)\n", r.vocab, r.n_vocab);
        if (r.routing)
            ctx.out << "routing: " << *r.routing << "\n";
        for (const auto& t : r.fallbacks)
            ctx.out << "note: " << t << " (rows not a multiple of the type's block)\n";
    });
}

}  // namespace sb::cli
