#include "core/last_words.hpp"

#include <atomic>
#include <mutex>
#include <vector>

namespace sb {

namespace {

std::mutex& registry_mutex() {
    static std::mutex m;
    return m;
}

std::vector<LastWords*>& registry() {
    static std::vector<LastWords*> r;
    return r;
}

std::atomic<bool> said{false};

}  // namespace

LastWords::LastWords(std::function<void(const std::string&)> fn) : fn_(std::move(fn)) {
    std::lock_guard<std::mutex> lock(registry_mutex());
    registry().push_back(this);
}

LastWords::~LastWords() {
    std::lock_guard<std::mutex> lock(registry_mutex());
    auto& r = registry();
    for (auto it = r.begin(); it != r.end(); ++it)
        if (*it == this) {
            r.erase(it);
            break;
        }
}

void say_last_words(const std::string& why) noexcept {
    if (said.exchange(true))
        return;
    // A copy: a scope that ends while the words are said must not pull one from under them.
    std::vector<LastWords*> words;
    {
        std::lock_guard<std::mutex> lock(registry_mutex());
        words = registry();
    }
    for (auto it = words.rbegin(); it != words.rend(); ++it) {
        try {
            (*it)->fn_(why);
        } catch (...) {
        }
    }
}

}  // namespace sb
