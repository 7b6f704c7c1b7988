#pragma once
// What must still happen when the process is about to die of a fault it cannot recover from:
// llama.cpp aborts on conditions no check foresaw (GGML_ASSERT), and main()'s fatal handler
// then has one chance to keep what was measured. Each measuring scope registers a LastWords
// for the duration of its work (the document so far to --out, -o json, --db); the handler calls
// say_last_words(), which runs them once, newest first, and returns. Registration is for the
// main thread; say_last_words() may run on any thread.
#include <functional>
#include <string>

namespace sb {

class LastWords {
  public:
    // fn receives the fault's one-line description.
    explicit LastWords(std::function<void(const std::string& why)> fn);
    ~LastWords();
    LastWords(const LastWords&) = delete;
    LastWords& operator=(const LastWords&) = delete;

  private:
    std::function<void(const std::string&)> fn_;
    friend void say_last_words(const std::string& why) noexcept;
};

// Runs every registered LastWords once, newest first; exceptions they throw are swallowed
// (the process is going down). Later calls do nothing.
void say_last_words(const std::string& why) noexcept;

}  // namespace sb
