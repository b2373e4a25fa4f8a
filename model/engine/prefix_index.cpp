// Prefix-cache index (see prefix_index.hpp).
#include "model/engine/prefix_index.hpp"

#include <algorithm>

namespace bitnet::model {
namespace {

// splitmix64's finaliser: every input bit reaches every output bit, so keys of prompts that
// differ in one token differ everywhere (a plain FNV would do, this mixes better per word).
std::uint64_t mix(std::uint64_t x) noexcept {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

} // namespace

prefix_index::key_type prefix_index::chain(key_type parent, std::span<const std::int32_t> tokens) {
    std::uint64_t h = mix(parent ^ (0x100000001b3ull * (tokens.size() + 1)));
    for (std::int32_t t : tokens)
        h = mix(h ^ static_cast<std::uint32_t>(t)) + 0x9e3779b97f4a7c15ull;
    return h;
}

prefix_index::key_type prefix_index::scoped_root(std::uint64_t scope) {
    return scope == 0 ? root : mix(root ^ mix(scope ^ 0x5c0be5c0be5c0be5ull));
}

prefix_index::prefix_index(std::uint32_t n_blocks, std::uint32_t block_tokens)
    : block_tokens_(block_tokens)
    , slots_(n_blocks)
    , tokens_(std::size_t{n_blocks} * block_tokens) {}

std::optional<prefix_index::block_id>
prefix_index::find(key_type key, key_type parent, std::span<const std::int32_t> tokens) const {
    auto it = by_key_.find(key);
    if (it == by_key_.end() || tokens.size() != block_tokens_)
        return std::nullopt;
    const block_id b = it->second;
    const auto stored = tokens_.begin() + std::ptrdiff_t{b} * block_tokens_;
    if (slots_[b].parent != parent || !std::equal(tokens.begin(), tokens.end(), stored))
        return std::nullopt;
    return b;
}

bool prefix_index::insert(block_id b, key_type key, key_type parent,
                          std::span<const std::int32_t> tokens) {
    if (slots_[b].indexed || tokens.size() != block_tokens_ || by_key_.count(key))
        return false;
    by_key_.emplace(key, b);
    slot& s = slots_[b];
    s.indexed = true;
    s.key = key;
    s.parent = parent;
    std::copy(tokens.begin(), tokens.end(), tokens_.begin() + std::ptrdiff_t{b} * block_tokens_);
    return true;
}

void prefix_index::park(block_id b) {
    slot& s = slots_[b];
    if (!s.indexed || s.parked)
        return;
    s.parked = true;
    s.lru_pos = lru_.insert(lru_.end(), b);
}

void prefix_index::unpark(block_id b) noexcept {
    slot& s = slots_[b];
    if (!s.parked)
        return;
    lru_.erase(s.lru_pos);
    s.parked = false;
}

std::optional<prefix_index::block_id> prefix_index::evict_lru() {
    if (lru_.empty())
        return std::nullopt;
    const block_id b = lru_.front();
    lru_.pop_front();
    slot& s = slots_[b];
    by_key_.erase(s.key);
    s = slot{};
    return b;
}

} // namespace bitnet::model
