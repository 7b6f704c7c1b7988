#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "core/version.hpp"
#include "engine/ggml_quantizer.hpp"
#include "model/presets.hpp"
#include "model/synth.hpp"

namespace sb::cli {

void add_synth_command(CLI::App& app, Context& ctx) {
    auto* cmd = app.add_subcommand(
        "synth", "Write a synthetic GGUF with a real model's architecture and random weights");
    auto o = std::make_shared<SynthOptions>();
    std::string presets;
    for (const auto& n : preset_names())
        presets += (presets.empty() ? "" : ", ") + n;
    cmd->add_option("--preset", o->preset, "architecture preset: " + presets)->required();
    cmd->add_option("--quant", o->quant, "weight type: q4_0, q8_0, f16, f32")
        ->capture_default_str();
    cmd->add_option("--layers", o->layers, "scale the model down to this many layers")
        ->check(layers_check());
    cmd->add_option("--seed", o->seed, "random seed")->capture_default_str();
    cmd->add_option("--vocab", o->vocab,
                    "tokenizer: synthetic (default), none, a vocabulary GGUF whose tokenizer is "
                    "copied (n_vocab becomes its size), or a name of the llama.cpp tree's "
                    "models/ggml-vocab-NAME.gguf (llama-spm, llama-bpe, qwen2, ...)");
    cmd->add_option("-o,--out", o->out_path, "output GGUF file")->required();
    cmd->add_option("-t,--threads", o->threads, "worker threads (0 = all)")->check(threads_check());
    cmd->callback([&ctx, o] {
        o->generator = std::string("stagebench ") + tool_version();
        GgmlQuantizer q;
        SynthResult r = write_synthetic_model(*o, q);
        ctx.out << fmt::format("wrote {}: {} {} layers, {:.3f} B params, {} tensors, {:.1f} MiB\n",
                               r.path, r.preset, r.n_layers, r.n_params / 1e9, r.n_tensors,
                               r.file_bytes / 1048576.0);
        if (r.vocab != "synthetic")
            ctx.out << fmt::format("vocabulary: {} ({} tokens)\n", r.vocab, r.n_vocab);
        for (const auto& t : r.f16_fallback)
            ctx.out << "note: " << t << " stored as F16 (rows not a multiple of the block size)\n";
    });
}

}  // namespace sb::cli
