// The registry of wire APIs: one declaration and one entry per API, each defined in its own
// engine/wire_*.cpp. The order is --help's and HttpApi's (its named enumerators come first, in
// their order).
#include "engine/wire_api.hpp"

namespace sb {

const WireApi& openai_completions_api();  // engine/wire_openai_completions.cpp
const WireApi& openai_chat_api();         // engine/wire_openai_chat.cpp
const WireApi& llama_completion_api();    // engine/wire_llama.cpp
const WireApi& ollama_generate_api();     // engine/wire_ollama.cpp

const std::vector<const WireApi*>& wire_apis() {
    static const std::vector<const WireApi*> all = {
        &openai_completions_api(),
        &openai_chat_api(),
        &llama_completion_api(),
        &ollama_generate_api(),
    };
    return all;
}

}  // namespace sb
