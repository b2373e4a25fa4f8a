// Recorded decode steps (cuda_engine.hpp): a step replayed from a plan recorded for its bucket
// (rows padded to a power of two, a context bound) equals the same step launched for its exact
// size, bit for bit, on the tiny models and ragged batches; the plans are recorded once per
// bucket; and the launches a decode step makes (the fused plan) are counted.
#include "cuda_engine_graph_checks.hpp"

using namespace bitnet;
using namespace bitnet::test;

TEST_CASE("cuda engine (simulated grid): a replayed decode step equals the step launched for its "
          "size, bit for bit, on ragged batches") {
    scratch_dir dir;
    const std::vector<std::size_t> sizes = {3, 5, 7, 1, 2, 6, 8, 3};
    model::cuda_buffer_caps caps;
    SUBCASE("synthetic tiny model, embeddings gathered on the device") {
        ragged_decodes(make_model(dir, "bitnet-b1.58", 2), caps, sizes, load_sim_with);
    }
    SUBCASE("synthetic tiny model, embeddings looked up on the host") {
        caps.gather_embeddings = false;
        ragged_decodes(make_model(dir, "bitnet-b1.58", 3), caps, sizes, load_sim_with);
    }
    SUBCASE("bitnet.cpp's tiny file") {
        ragged_decodes(data_path("bitnetcpp/tiny-i2_s.gguf"), caps, {2, 5, 3}, load_sim_with);
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
    std::vector<model::seq_chunk> prompts = {{1, graph_test_tokens(150, 3, 7), 0, true},
                                             {2, graph_test_tokens(40, 5, 11), 0, true}};
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
    REQUIRE(e->step(std::vector<model::seq_chunk>{{1, graph_test_tokens(9, 1, 3), 0, true}}));
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
