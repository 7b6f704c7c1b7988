#pragma once
// What is kept when llama.cpp ends the process. Some faults inside llama.cpp cannot be
// reported to its caller: ggml stops the process (ggml_abort), e.g. when an RPC server dies
// mid-test or answers garbage. The stop cannot be unwound, and it often runs on a thread of
// llama.cpp's own (ggml-rpc's dispatcher) while the measuring thread waits inside llama.cpp.
//
// A scenario that measures registers a last word for as long as it runs: a function that
// records the test that was running as failed and writes the document where the user asked
// for it (--out, --db). main()'s handler for llama.cpp's stop calls say_last_words(), prints one
// line and ends the process with exit 1.
#include <functional>
#include <optional>
#include <string>

namespace sb {

// Receives llama.cpp's message (e.g. "ggml-rpc.cpp:566: Remote RPC server crashed or
// returned malformed response"); returns the one line to print for the whole stop, or
// nullopt to leave that to another last word. It runs on an arbitrary thread while the
// registering thread is blocked inside llama.cpp; it must not call into llama.cpp and must not
// throw (an exception is caught and ignored).
using LastWord = std::function<std::optional<std::string>(const std::string& llama_message)>;

// Registers fn for the lifetime of the scope. Scopes nest: the innermost speaks first.
class LastWordScope {
  public:
    explicit LastWordScope(LastWord fn);
    ~LastWordScope();
    LastWordScope(const LastWordScope&) = delete;
    LastWordScope& operator=(const LastWordScope&) = delete;

  private:
    int id_;
};

// Calls every registered last word, innermost first, and returns the first line one of them
// gave (nullopt when none did). Calls from several threads are serialised (the first caller
// ends the process, so the others never proceed); a stop inside a last word (a nested call on
// the same thread) returns nullopt at once.
std::optional<std::string> say_last_words(const std::string& llama_message);

// llama.cpp's message without the source location ggml puts in front ("file.cpp:123: ").
std::string strip_source_location(const std::string& llama_message);

}  // namespace sb
