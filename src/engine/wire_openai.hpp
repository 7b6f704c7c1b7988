#pragma once
// What the OpenAI-style wire APIs (/v1/completions, /v1/chat/completions) share: the
// request's sampling fields and the reading of a message beyond its choice's output. Internal
// to engine/wire_openai_*.cpp.
#include <nlohmann/json.hpp>

#include "engine/wire_api.hpp"

namespace sb {

// max_tokens, streaming with usage, greedy sampling, the seed, ignore_eos, and the fields the
// server takes beyond OpenAI's (ServerKind::openai_extras).
void add_openai_fields(nlohmann::json& body, const WireAsk& ask);

// Reads an OpenAI-style message: output reads choices[0]'s output (text, a delta), then the
// rest is read as every such message has it: vLLM's token_ids, finish_reason, usage (the final
// message), and the timings servers add (MLC's usage.extra, llama-server's timings with its
// running count, vLLM's metrics).
void read_openai(const nlohmann::json& j, ChunkInfo& ci,
                 void (*output)(const nlohmann::json& choice, ChunkInfo& ci));

}  // namespace sb
