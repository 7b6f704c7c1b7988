#pragma once
// Vocabularies llama.cpp loads but cannot tokenize a text with: its tokenizer asserts on them
// and ends the process (explain's in-process prompts, a llama-server's requests, perplexity's
// text), so what tokenizes text asks here first and refuses them as bad input.
#include <optional>
#include <string>

struct llama_model;  // llama.cpp's model, opaque here (engine/ and profile/ include llama.h)

namespace sb {

// Why llama.cpp cannot tokenize a text with model's vocabulary, or nullopt when it can: a
// vocabulary of type none; one that adds a BOS (or EOS) token to every text but has no such
// token (a T5 vocabulary without tokenizer.ggml.bos_token_id); a BERT (WordPiece) one without
// its [CLS] or [SEP] token. One sentence naming the keys to fix. model: a loaded model (weights
// or vocabulary only).
std::optional<std::string> tokenizer_fault(const llama_model* model);

// with_llama_vocab (engine/llama_engine.hpp), then tokenizer_fault: throws sb::Error(input)
// "'PATH': REASON" when the model's vocabulary cannot tokenize a text (a llama-server serving
// it would abort on its first request), and as check_llama_accepts when llama.cpp refuses the
// file.
void check_llama_tokenizes(const std::string& model_path);

}  // namespace sb
