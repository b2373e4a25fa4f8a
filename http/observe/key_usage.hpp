// What each API key has used, for its own `GET /v1/stats`: a user key sees its own figures and
// nothing of other keys' traffic (queue depths, cache hits and prompt lengths would give that
// away). Only configured keys reach it, so the map is as small as the key list.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

namespace bitnet::http {

class key_usage {
public:
    struct figures {
        std::uint64_t requests = 0;
        std::uint64_t prompt_tokens = 0;
        std::uint64_t completion_tokens = 0;
    };

    void add(const std::string& key, std::uint64_t prompt_tokens, std::uint64_t completion_tokens) {
        std::lock_guard lk(mu_);
        auto& f = by_key_[key];
        ++f.requests;
        f.prompt_tokens += prompt_tokens;
        f.completion_tokens += completion_tokens;
    }
    [[nodiscard]] figures of(const std::string& key) const {
        std::lock_guard lk(mu_);
        auto it = by_key_.find(key);
        return it == by_key_.end() ? figures{} : it->second;
    }

private:
    mutable std::mutex mu_;
    std::unordered_map<std::string, figures> by_key_;
};

} // namespace bitnet::http
