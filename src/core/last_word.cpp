#include "core/last_word.hpp"

#include <cctype>
#include <mutex>
#include <utility>
#include <vector>

namespace sb {
namespace {

std::mutex g_mu;
std::vector<std::pair<int, LastWord>> g_words;  // registration order
int g_next_id = 0;
// Held while the last words are said: a second thread that stops waits for the first, which
// ends the process.
std::mutex g_speak_mu;
thread_local bool t_speaking = false;

}  // namespace

LastWordScope::LastWordScope(LastWord fn) {
    std::lock_guard<std::mutex> lock(g_mu);
    id_ = g_next_id++;
    g_words.emplace_back(id_, std::move(fn));
}

LastWordScope::~LastWordScope() {
    std::lock_guard<std::mutex> lock(g_mu);
    for (auto it = g_words.begin(); it != g_words.end(); ++it)
        if (it->first == id_) {
            g_words.erase(it);
            break;
        }
}

std::optional<std::string> say_last_words(const std::string& llama_message) {
    // A stop inside a last word must not wait for itself.
    if (t_speaking)
        return std::nullopt;
    std::lock_guard<std::mutex> speak(g_speak_mu);
    t_speaking = true;
    std::vector<LastWord> words;
    {
        std::lock_guard<std::mutex> lock(g_mu);
        for (auto it = g_words.rbegin(); it != g_words.rend(); ++it)
            words.push_back(it->second);
    }
    std::optional<std::string> line;
    for (auto& w : words) {
        try {
            auto l = w(llama_message);
            if (l && !line)
                line = std::move(l);
        } catch (...) {
            // The process is ending; the remaining last words still get their turn.
        }
    }
    t_speaking = false;
    return line;
}

std::string strip_source_location(const std::string& m) {
    // "path/file.cpp:123: text" -> "text"
    const size_t colon = m.find(": ");
    if (colon == std::string::npos)
        return m;
    size_t digits = colon;
    while (digits > 0 && std::isdigit(static_cast<unsigned char>(m[digits - 1])))
        --digits;
    if (digits == colon || digits == 0 || m[digits - 1] != ':')
        return m;
    return m.substr(colon + 2);
}

}  // namespace sb
