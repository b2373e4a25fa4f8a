// The part of an engine that is its paged KV cache's bookkeeping (model::kv_cache): block counts,
// release, fork and automatic prefix caching answered by the cache, whichever device holds the
// pool (the CPU engine's host pool, the CUDA engine's device pool).
#pragma once

#include "model/engine/engine.hpp"
#include "model/engine/kv_cache.hpp"

#include <utility>

namespace bitnet::model {

class paged_kv_engine : public engine {
public:
    [[nodiscard]] std::uint64_t kv_pool_bytes() const noexcept override {
        return cache_.pool_bytes();
    }
    [[nodiscard]] std::uint32_t kv_block_tokens() const noexcept override {
        return cache_.block_tokens();
    }
    [[nodiscard]] std::uint32_t kv_blocks_total() const noexcept override {
        return cache_.n_blocks_total();
    }
    [[nodiscard]] std::uint32_t kv_blocks_free() const noexcept override {
        return cache_.n_blocks_free();
    }
    void release(seq_id seq) override { cache_.free(seq); }
    [[nodiscard]] result<void> fork(seq_id from, seq_id to) override {
        return cache_.fork(from, to);
    }
    [[nodiscard]] result<void> truncate(seq_id seq, std::uint32_t n_tokens) override {
        return cache_.truncate(seq, n_tokens);
    }
    [[nodiscard]] std::uint32_t cached_prefix_blocks(std::span<const std::int32_t> tokens,
                                                     std::uint64_t scope = 0) const override {
        return cache_.cached_blocks(tokens, scope);
    }
    std::uint32_t attach_prefix(seq_id seq, std::span<const std::int32_t> tokens,
                                std::uint32_t max_blocks, std::uint32_t max_parked,
                                std::uint64_t scope = 0) override {
        return cache_.attach_prefix(seq, tokens, max_blocks, max_parked, scope);
    }
    [[nodiscard]] std::uint32_t kv_blocks_needed(seq_id seq,
                                                 std::uint32_t n_tokens) const override {
        return cache_.blocks_needed(seq, n_tokens);
    }
    void publish_prefix(seq_id seq, std::span<const std::int32_t> tokens,
                        std::uint64_t scope = 0) override {
        cache_.publish_prefix(seq, tokens, scope);
    }

protected:
    explicit paged_kv_engine(kv_cache cache)
        : cache_(std::move(cache)) {}

    kv_cache cache_;
};

} // namespace bitnet::model
