// The device sampler on the simulated grid against model::sampler, bit for bit
// (cuda_sampler_checks.hpp); and the CUDA engine sampling on its device (step_sampled) giving
// the tokens and logprobs the host sampler gives from the CPU engine's logits, in recorded and
// exact steps, greedy and seeded.
#include "cuda_engine_twin.hpp"
#include "cuda_sampler_checks.hpp"

#include <cstring>

using namespace bitnet;
using namespace bitnet::test;

TEST_CASE("cuda_sim device sampler equals model::sampler draw for draw, bit for bit") {
    const auto o = kernels::cuda::make_simulated_ops();
    cuda::check_sampler_table(*o, true);
}

TEST_CASE("cuda_sim device sampler: presence and frequency penalties and logit bias as OpenAI "
          "defines them") {
    const auto o = kernels::cuda::make_simulated_ops();
    cuda::check_sampler_penalties_and_bias(*o, true);
}

TEST_CASE("cuda_sim device sampler without report_logprob: the same tokens, no logprob") {
    const auto o = kernels::cuda::make_simulated_ops();
    cuda::check_sampler_without_logprob(*o);
}

TEST_CASE("cuda_sim device sampler refuses NaN and infinite rows as model::sampler does") {
    const auto o = kernels::cuda::make_simulated_ops();
    cuda::check_sampler_refusals(*o);
}

namespace {

/// Four sequences generate 6 tokens each on the CPU engine with model::sampler and on the CUDA
/// engine with step_sampled; the same tokens and logprob bits.
void sampled_generation(const std::string& path, const model::cuda_buffer_caps& caps) {
    auto cpu = load_engine(path);
    auto dev = load_sim_engine(path, 64ull << 20, &caps);
    const std::uint32_t n_vocab = cpu->config().n_vocab;
    std::vector<model::sampling_params> params(4);
    params[0].temperature = 0.0f;
    params[1].temperature = 0.9f;
    params[1].top_k = 40;
    params[2].temperature = 1.1f;
    params[2].top_p = 0.8f;
    params[2].repetition_penalty = 1.2f;
    params[3].temperature = 0.6f;
    params[3].min_p = 0.1f;
    std::vector<model::sampler> cpu_s, twin;
    std::vector<std::vector<std::int32_t>> seqs;
    for (std::size_t i = 0; i < params.size(); ++i) {
        params[i].seed = 1000 + i;
        cpu_s.push_back(model::sampler::create(params[i]).value());
        twin.push_back(model::sampler::create(params[i]).value());
        seqs.push_back({1, static_cast<std::int32_t>(20 + 7 * i), 300, 42});
    }
    for (int step = 0; step < 6; ++step) {
        CAPTURE(step);
        std::vector<model::seq_chunk> batch;
        std::vector<model::device_sample> samples;
        for (std::size_t i = 0; i < seqs.size(); ++i) {
            const auto& s = seqs[i];
            if (step == 0)
                batch.push_back({i + 1, s, 0, true});
            else
                batch.push_back(
                    {i + 1, {s.back()}, static_cast<std::uint32_t>(s.size() - 1), true});
            model::device_sample d;
            d.chunk = i;
            d.params = params[i];
            d.recent = s;
            d.return_logits = i == 3; // one row's logits come back as well
            if (params[i].temperature != 0.0f)
                d.uniform = twin[i].take_uniform();
            samples.push_back(d);
        }
        auto a = cpu->step(batch);
        auto b = dev->step_sampled(batch, samples);
        REQUIRE(a);
        REQUIRE(b);
        REQUIRE(b->sampled.size() == seqs.size());
        CHECK(b->logits.size() == n_vocab); // only the row that asked
        for (std::size_t i = 0; i < seqs.size(); ++i) {
            CAPTURE(i);
            const auto want = cpu_s[i].sample(a->row(a->rows_for_chunk[i], n_vocab), seqs[i]);
            REQUIRE(want);
            CHECK(b->sampled[i].error.empty());
            CHECK(b->sampled[i].chunk == i);
            CHECK(b->sampled[i].token == want->token);
            CHECK(std::memcmp(&b->sampled[i].logprob, &want->logprob, sizeof(float)) == 0);
            seqs[i].push_back(want->token);
        }
        CHECK(b->rows_for_chunk[3] == 0);
        CHECK(b->rows_for_chunk[0] == model::step_output::no_row);
        CHECK(std::memcmp(b->row(0, n_vocab).data(), a->row(a->rows_for_chunk[3], n_vocab).data(),
                          n_vocab * sizeof(float)) == 0);
    }
}

} // namespace

TEST_CASE("cuda engine (simulated grid): step_sampled gives the host sampler's tokens from the "
          "CPU engine's logits") {
    scratch_dir dir;
    const std::string path = make_model(dir, "bitnet-b1.58", 6);
    model::cuda_buffer_caps caps;
    SUBCASE("decode steps replayed from recorded plans") {
        sampled_generation(path, caps);
    }
    SUBCASE("every step launched for its size, the sampler in launches of one row") {
        caps.recorded_rows = 0;
        caps.sampling_bytes = 1;
        sampled_generation(path, caps);
    }
}

TEST_CASE("cuda engine (simulated grid): step_sampled refuses what it cannot sample") {
    scratch_dir dir;
    auto e = load_sim_engine(make_model(dir, "bitnet-b1.58", 7));
    const std::vector<model::seq_chunk> batch{{1, {1, 2, 3}, 0, true}, {2, {4, 5}, 0, false}};
    auto refused = [&](model::device_sample s) {
        auto r = e->step_sampled(batch, std::vector<model::device_sample>{s});
        return !r && r.error().value() == errc::invalid_argument;
    };
    model::device_sample s;
    s.chunk = 1; // wants no logits
    CHECK(refused(s));
    s.chunk = 5; // no such chunk
    CHECK(refused(s));
    s.chunk = 0;
    s.params.n_logprobs = 3; // alternatives are host work
    CHECK(refused(s));
    s.params.n_logprobs = 0;
    s.params.top_p = 0.0f; // what model::sampler refuses
    CHECK(refused(s));
    s.params.top_p = 1.0f;
    s.logit_bias.assign(model::max_adjusted_tokens + 1, {1, 1.0f});
    CHECK(refused(s));
    CHECK(e->kv_blocks_free() == e->kv_blocks_total()); // nothing ran
    CHECK(e->samples_on_device());
}
