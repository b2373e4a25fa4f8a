// Recorded decode steps against exact-size steps (cuda_engine.hpp): the helpers of
// cuda_engine_graph_test.cpp (simulated grid) and of the gpu suite (a device, where a replay is
// one CUDA graph launch).
#pragma once

#include "cuda_engine_twin.hpp"

#include <cstring>
#include <functional>
#include <map>

namespace bitnet::test {

/// An engine on the simulated grid or a device, with these caps.
using cuda_engine_loader = std::function<std::unique_ptr<model::engine>(
    const std::string& path, const model::cuda_buffer_caps& caps)>;

inline std::unique_ptr<model::engine> load_sim_with(const std::string& path,
                                                    const model::cuda_buffer_caps& caps) {
    return load_sim_engine(path, 64ull << 20, &caps);
}

inline std::vector<std::int32_t> graph_test_tokens(std::size_t n, std::int32_t first,
                                                   std::int32_t stride) {
    std::vector<std::int32_t> t(n);
    for (std::size_t i = 0; i < n; ++i)
        t[i] = static_cast<std::int32_t>((first + stride * static_cast<std::int32_t>(i)) % 500);
    return t;
}

inline const model::cuda_engine& as_cuda(const model::engine& e) {
    return dynamic_cast<const model::cuda_engine&>(e);
}

/// Both steps' outputs: the same rows and the same bits.
inline void require_same(const model::step_output& a, const model::step_output& b) {
    REQUIRE(a.rows_for_chunk == b.rows_for_chunk);
    REQUIRE(a.logits.size() == b.logits.size());
    CHECK(std::memcmp(a.logits.data(), b.logits.data(), a.logits.size() * sizeof(float)) == 0);
}

/// Decode steps of `sizes` sequences (each after its prompt), on an engine that replays recorded
/// plans and one that launches every step for its size; every logit compared. Sequences join as
/// the sizes grow and leave as they shrink.
/// `load` makes the engines (the simulated grid's, or a device's); on a device a replay is one
/// graph launch.
inline void ragged_decodes(const std::string& path, const model::cuda_buffer_caps& recorded_caps,
                           const std::vector<std::size_t>& sizes, const cuda_engine_loader& load) {
    model::cuda_buffer_caps exact_caps = recorded_caps;
    exact_caps.recorded_rows = 0;
    auto rec = load(path, recorded_caps);
    auto exact = load(path, exact_caps);
    const bool device = !as_cuda(*rec).describe().starts_with("simulated");
    const std::uint32_t n_vocab = rec->config().n_vocab;
    std::map<model::seq_id, std::uint32_t> len;
    std::map<model::seq_id, std::int32_t> next;
    std::size_t replays = 0;
    for (std::size_t step = 0; step < sizes.size(); ++step) {
        CAPTURE(step);
        const std::size_t n = sizes[step];
        // Prompts of different lengths for sequences that join (an exact step on both).
        std::vector<model::seq_chunk> batch;
        for (model::seq_id s = 1; s <= n; ++s)
            if (!len.count(s))
                batch.push_back(
                    {s, graph_test_tokens(3 + 5 * s, static_cast<std::int32_t>(s), 13), 0, true});
        for (auto it = len.begin(); it != len.end();) // sequences past n leave
            if (it->first > n) {
                rec->release(it->first);
                exact->release(it->first);
                it = len.erase(it);
            } else {
                ++it;
            }
        if (!batch.empty()) {
            auto a = rec->step(batch);
            auto b = exact->step(batch);
            REQUIRE(a);
            REQUIRE(b);
            require_same(*a, *b);
            for (std::size_t i = 0; i < batch.size(); ++i) {
                len[batch[i].seq] = static_cast<std::uint32_t>(batch[i].tokens.size());
                next[batch[i].seq] = argmax(a->row(a->rows_for_chunk[i], n_vocab));
            }
        }
        batch.clear();
        for (const auto& [s, l] : len)
            batch.push_back({s, {next[s]}, l, true});
        auto a = rec->step(batch);
        auto b = exact->step(batch);
        REQUIRE(a);
        REQUIRE(b);
        require_same(*a, *b);
        CHECK_FALSE(as_cuda(*exact).last_step().replayed);
        CHECK(as_cuda(*exact).last_step().rows == n);
        // n rows in a bucket of the next power of two.
        const auto& st = as_cuda(*rec).last_step();
        CHECK(st.replayed);
        CHECK(st.graphs == (device ? 1u : 0u));
        CHECK(st.rows >= n);
        CHECK(st.rows < 2 * n);
        CHECK((st.rows & (st.rows - 1)) == 0);
        replays += st.replayed ? 1 : 0;
        for (std::size_t i = 0; i < batch.size(); ++i) {
            next[batch[i].seq] = argmax(a->row(a->rows_for_chunk[i], n_vocab));
            ++len[batch[i].seq];
        }
        CHECK(rec->kv_blocks_free() == exact->kv_blocks_free());
    }
    CHECK(replays == sizes.size());
    // One plan per bucket met: the row buckets of `sizes` (all contexts here fit 64 positions).
    std::map<std::size_t, int> buckets;
    for (std::size_t n : sizes) {
        std::size_t b = 1;
        while (b < n)
            b <<= 1;
        buckets[b] = 1;
    }
    CHECK(as_cuda(*rec).recorded_plans() == buckets.size());
}

} // namespace bitnet::test
