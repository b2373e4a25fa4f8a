// Recorded decode steps (cuda_engine.hpp): a step replayed from a plan recorded for its bucket
// (rows padded to a power of two, a context bound) equals the same step launched for its exact
// size, bit for bit, on the tiny models and ragged batches; the plans are recorded once per
// bucket; and the launches a decode step makes (the fused plan) are counted.
#include "cuda_engine_twin.hpp"

#include <cstring>
#include <map>

using namespace bitnet;
using namespace bitnet::test;

namespace {

std::vector<std::int32_t> tokens(std::size_t n, std::int32_t first, std::int32_t stride) {
    std::vector<std::int32_t> t(n);
    for (std::size_t i = 0; i < n; ++i)
        t[i] = static_cast<std::int32_t>((first + stride * static_cast<std::int32_t>(i)) % 500);
    return t;
}

const model::cuda_engine& as_cuda(const model::engine& e) {
    return dynamic_cast<const model::cuda_engine&>(e);
}

/// Both steps' outputs: the same rows and the same bits.
void require_same(const model::step_output& a, const model::step_output& b) {
    REQUIRE(a.rows_for_chunk == b.rows_for_chunk);
    REQUIRE(a.logits.size() == b.logits.size());
    CHECK(std::memcmp(a.logits.data(), b.logits.data(), a.logits.size() * sizeof(float)) == 0);
}

/// Decode steps of `sizes` sequences (each after its prompt), on an engine that replays recorded
/// plans and one that launches every step for its size; every logit compared. Sequences join as
/// the sizes grow and leave as they shrink.
void ragged_decodes(const std::string& path, const model::cuda_buffer_caps& recorded_caps,
                    const std::vector<std::size_t>& sizes) {
    model::cuda_buffer_caps exact_caps = recorded_caps;
    exact_caps.recorded_rows = 0;
    auto rec = load_sim_engine(path, 64ull << 20, &recorded_caps);
    auto exact = load_sim_engine(path, 64ull << 20, &exact_caps);
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
                batch.push_back({s, tokens(3 + 5 * s, static_cast<std::int32_t>(s), 13), 0, true});
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

} // namespace

TEST_CASE("cuda engine (simulated grid): a replayed decode step equals the step launched for its "
          "size, bit for bit, on ragged batches") {
    scratch_dir dir;
    const std::vector<std::size_t> sizes = {3, 5, 7, 1, 2, 6, 8, 3};
    model::cuda_buffer_caps caps;
    SUBCASE("synthetic tiny model, embeddings gathered on the device") {
        ragged_decodes(make_model(dir, "bitnet-b1.58", 2), caps, sizes);
    }
    SUBCASE("synthetic tiny model, embeddings looked up on the host") {
        caps.gather_embeddings = false;
        ragged_decodes(make_model(dir, "bitnet-b1.58", 3), caps, sizes);
    }
    SUBCASE("bitnet.cpp's tiny file") {
        ragged_decodes(data_path("bitnetcpp/tiny-i2_s.gguf"), caps, {2, 5, 3});
    }
}

TEST_CASE("cuda engine (simulated grid): long contexts replay with a larger context bucket and "
          "split attention scores, and still equal the exact step") {
    scratch_dir dir;
    const std::string path = make_model(dir, "bitnet-b1.58", 4);
    model::cuda_buffer_caps exact_caps;
    exact_caps.recorded_rows = 0;
    auto rec = load_sim_engine(path);
    auto exact = load_sim_engine(path, 64ull << 20, &exact_caps);
    const std::uint32_t n_vocab = rec->config().n_vocab;
    // Contexts of 150 and 40: a bucket of 2 rows at 256 positions (past 128: scores split).
    std::vector<model::seq_chunk> prompts = {{1, tokens(150, 3, 7), 0, true},
                                             {2, tokens(40, 5, 11), 0, true}};
    auto a = rec->step(prompts);
    auto b = exact->step(prompts);
    REQUIRE(a);
    REQUIRE(b);
    require_same(*a, *b);
    std::vector<model::seq_chunk> decode = {
        {1, {argmax(a->row(0, n_vocab))}, 150, true},
        {2, {argmax(a->row(1, n_vocab))}, 40, true},
    };
    for (int i = 0; i < 3; ++i) {
        a = rec->step(decode);
        b = exact->step(decode);
        REQUIRE(a);
        REQUIRE(b);
        require_same(*a, *b);
        CHECK(as_cuda(*rec).last_step().replayed);
        for (std::size_t c = 0; c < decode.size(); ++c) {
            decode[c].tokens = {argmax(a->row(c, n_vocab))};
            ++decode[c].pos0;
        }
    }
    // The replay's scores kernel runs for its 256-position bucket in every layer; the exact
    // step's longest context (153) passes 128 too.
    const std::uint32_t layers = rec->config().n_layer;
    CHECK(as_cuda(*rec).last_step().kernels == 1 + layers * 11 + 2);
    CHECK(as_cuda(*exact).last_step().kernels == 1 + layers * 11 + 2);
}

TEST_CASE("cuda engine (simulated grid): a decode step is 10 launches a layer plus the embedding "
          "gather and the logits") {
    scratch_dir dir;
    auto e = load_sim_engine(make_model(dir, "bitnet-b1.58", 5));
    const std::uint32_t layers = e->config().n_layer;
    REQUIRE(e->step(std::vector<model::seq_chunk>{{1, tokens(9, 1, 3), 0, true}}));
    REQUIRE(e->step(std::vector<model::seq_chunk>{{1, {5}, 9, true}}));
    const auto& st = as_cuda(*e).last_step();
    // Per layer: norm+quantize, Q/K/V, RoPE+KV, attention, sub-norm+quantize, output (+x),
    // norm+quantize, gate/up, gate+sub-norm+quantize, down (+x). Then the final norm and the
    // logits. (The engine before these fusions made 22 a layer and 2 for the logits.)
    CHECK(st.kernels == 1 + 10 * layers + 2);
    CHECK(st.graphs == 0); // the simulated grid replays launch by launch
    CHECK(st.replayed);
    // With the sampler on the device: one launch more, and only the token comes back.
    model::device_sample s;
    s.params.temperature = 0.0f;
    auto out = e->step_sampled(std::vector<model::seq_chunk>{{1, {7}, 10, true}},
                               std::vector<model::device_sample>{s});
    REQUIRE(out);
    CHECK(as_cuda(*e).last_step().kernels == 1 + 10 * layers + 3);
    CHECK(out->logits.empty());
    CHECK(out->rows_for_chunk[0] == model::step_output::no_row);
    REQUIRE(out->sampled.size() == 1);
    CHECK(out->sampled[0].error.empty());
}
