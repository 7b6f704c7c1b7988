#include "engine/tokenizer_check.hpp"

#include "core/error.hpp"
#include "engine/llama_engine.hpp"
#include "llama.h"

namespace sb {

std::optional<std::string> tokenizer_fault(const llama_model* model) {
    const llama_vocab* v = llama_model_get_vocab(model);
    // What llama_vocab::impl::tokenize asserts with add_special (as every prompt is tokenized).
    const auto type = llama_vocab_type(v);
    if (type == LLAMA_VOCAB_TYPE_NONE)
        return "it has no vocabulary (tokenizer.ggml.model is none): it cannot tokenize text "
               "(give it one: stagebench synth --vocab FILE.gguf)";
    if (type == LLAMA_VOCAB_TYPE_WPM) {
        if (llama_vocab_bos(v) == LLAMA_TOKEN_NULL || llama_vocab_sep(v) == LLAMA_TOKEN_NULL)
            return std::string(
                "its BERT (WordPiece) vocabulary has no [CLS] or no [SEP] token "
                "(tokenizer.ggml.bos_token_id, tokenizer.ggml.seperator_token_id), which llama.cpp "
                "puts around every text: it aborts tokenizing one");
        return std::nullopt;
    }
    if (type != LLAMA_VOCAB_TYPE_SPM && type != LLAMA_VOCAB_TYPE_BPE &&
        type != LLAMA_VOCAB_TYPE_UGM)
        return std::nullopt;
    if (llama_vocab_get_add_bos(v) && llama_vocab_bos(v) == LLAMA_TOKEN_NULL)
        return std::string(
            "its vocabulary adds a BOS token to every text (tokenizer.ggml.add_bos_token) but has "
            "none (tokenizer.ggml.bos_token_id): llama.cpp aborts tokenizing a text");
    if (llama_vocab_get_add_eos(v) && llama_vocab_eos(v) == LLAMA_TOKEN_NULL)
        return std::string(
            "its vocabulary adds an EOS token to every text (tokenizer.ggml.add_eos_token) but has "
            "none (tokenizer.ggml.eos_token_id): llama.cpp aborts tokenizing a text");
    return std::nullopt;
}

void check_llama_tokenizes(const std::string& model_path) {
    with_llama_vocab(model_path, [&](const llama_model* m) {
        if (auto why = tokenizer_fault(m))
            throw input_error("'" + model_path + "': " + *why);
    });
}

}  // namespace sb
