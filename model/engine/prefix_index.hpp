// Automatic prefix caching, the index half: which full KV blocks hold which token prefix, and
// which of them no sequence references any more (evictable, least recently used first). The KV
// cache (kv_cache.hpp) owns one and keeps the blocks' reference counts; this class only knows keys.
//
// Key of a block: a hash of its tokens chained to the key of the block before it, so one key
// stands for the whole prefix up to the block's end. A lookup also compares the block's tokens and
// its parent's key with what was stored: a 64-bit collision can then not hand a sequence another
// prompt's KV (it would take two colliding keys on one chain).
//
// A block is indexed only once it is full and every position up to its end was computed with
// prompt semantics (the KV a fresh prefill of the same tokens writes, whatever its chunking: the
// batcher never plans a prompt position in a one-token chunk). Which blocks qualify is the
// caller's business; the index trusts it.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace bitnet::model {

class prefix_index {
public:
    using block_id = std::uint32_t;
    using key_type = std::uint64_t;
    /// The parent key of block 0.
    static constexpr key_type root = 0x9e3779b97f4a7c15ull;

    /// The key of a block holding `tokens` after the block whose key is `parent`.
    [[nodiscard]] static key_type chain(key_type parent, std::span<const std::int32_t> tokens);
    /// The parent key of block 0 in cache scope `scope` (0: `root`, the shared scope). Blocks of
    /// different scopes never match: a scope is part of every key and parent after it.
    [[nodiscard]] static key_type scoped_root(std::uint64_t scope);

    prefix_index() = default;
    /// An index over a pool of `n_blocks` blocks of `block_tokens` tokens.
    prefix_index(std::uint32_t n_blocks, std::uint32_t block_tokens);

    /// The block indexed under `key` whose tokens and parent match; nullopt when none.
    [[nodiscard]] std::optional<block_id> find(key_type key, key_type parent,
                                               std::span<const std::int32_t> tokens) const;
    /// Indexes `b` (full, `tokens.size() == block_tokens`) under `key`. False, and nothing
    /// changes, when the key is taken (the other block keeps it) or `b` is indexed already.
    bool insert(block_id b, key_type key, key_type parent, std::span<const std::int32_t> tokens);
    [[nodiscard]] bool indexed(block_id b) const noexcept { return slots_[b].indexed; }
    [[nodiscard]] std::size_t size() const noexcept { return by_key_.size(); }

    /// `b` (indexed) lost its last reference: it may be evicted, after the ones parked before it.
    void park(block_id b);
    /// `b` (parked) is referenced again.
    void unpark(block_id b) noexcept;
    [[nodiscard]] std::uint32_t n_parked() const noexcept {
        return static_cast<std::uint32_t>(lru_.size());
    }
    /// Drops the least recently parked block from the index and returns it (nullopt: none).
    [[nodiscard]] std::optional<block_id> evict_lru();

private:
    struct slot {
        bool indexed = false;
        bool parked = false;
        key_type key = 0;
        key_type parent = 0;
        std::list<block_id>::iterator lru_pos{};
    };

    std::uint32_t block_tokens_ = 0;
    std::vector<slot> slots_;
    std::vector<std::int32_t> tokens_; ///< [n_blocks][block_tokens], meaningful when indexed
    std::unordered_map<key_type, block_id> by_key_;
    std::list<block_id> lru_; ///< parked blocks, least recently parked first
};

} // namespace bitnet::model
