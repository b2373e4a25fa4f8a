// The device sampler (kernels/cuda/sample.cuh) against model::sampler through the ops interface:
// the same rows, settings and seeds, draw after draw (the device's uniform taken from a twin
// sampler's RNG, model::sampler::take_uniform, as the executor takes it), the token and the
// logprob compared. Greedy, temperature, top-k, top-p, min-p, the repetition penalty and their
// combinations, on vocabularies off any power of two, rows peaked, flat and with ties and -inf;
// NaN and infinite rows refused as the CPU refuses them. Presence and frequency penalties and
// the logit bias (which model::sampler lacks) against the CPU sampler fed the row adjusted by
// OpenAI's definition on the host. The same checks run on the simulated grid (exact: bits) and on
// a device (tests/gpu: the tokens, and logprobs within 1e-5; its exp and log are CUDA's).
#pragma once

#include "kernels/cuda/ops.hpp"
#include "kernels/cuda/sample.cuh"
#include "kernels/cuda_sim_util.hpp"
#include "model/engine/cuda/cuda_engine_sampling.hpp"
#include "model/sampling/sampler.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace bitnet::test::cuda {

namespace kc = bitnet::kernels::cuda;

/// Rows of n_vocab logits: peaked (a few large), flat (tiny differences), and with ties, -inf and
/// -0/+0 (row % 3 picks which).
inline std::vector<float> sampler_rows(std::uint32_t rows, std::uint32_t n_vocab,
                                       std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> z(std::size_t{rows} * n_vocab);
    for (std::uint32_t r = 0; r < rows; ++r)
        for (std::uint32_t i = 0; i < n_vocab; ++i) {
            float& v = z[std::size_t{r} * n_vocab + i];
            switch (r % 3) {
            case 0:
                v = 4.0f * normal(rng);
                break;
            case 1:
                v = 0.01f * normal(rng);
                break;
            default:
                v = static_cast<float>(static_cast<int>(rng() % 7)) * 0.5f; // many ties
                if (i % 11 == 3)
                    v = -std::numeric_limits<float>::infinity();
                if (i % 13 == 5)
                    v = -0.0f;
            }
        }
    return z;
}

/// One launch of the device sampler over `rows` rows of z with `requests[r]` for row r.
inline std::vector<kc::sample_result> device_draw(kc::ops& o, const std::vector<float>& z,
                                                  std::uint32_t n_vocab,
                                                  const std::vector<model::device_sample>& reqs) {
    const auto rows = static_cast<std::uint32_t>(reqs.size());
    std::vector<kc::sample_adjust> adjust;
    std::vector<kc::sample_row_params> params;
    for (const auto& r : reqs)
        params.push_back(model::device_sample_row(r, n_vocab, adjust));
    adjust.push_back({}); // never empty: a buffer of one
    const std::uint32_t n_pow2 = kc::sample_sort_size(n_vocab);
    device_vector<float> dz(o, z);
    device_vector<kc::sample_row_params> dp(o, params);
    device_vector<kc::sample_adjust> da(o, adjust);
    device_vector<float> work(o, std::size_t{rows} * n_vocab);
    device_vector<std::uint64_t> keys(o, std::size_t{rows} * n_pow2);
    device_vector<kc::sample_result> out(o, rows);
    kc::sample_args a;
    a.logits = dz.get();
    a.ldl = n_vocab;
    a.n_vocab = n_vocab;
    a.n_rows = rows;
    a.params = dp.get();
    a.adjust = da.get();
    a.work = work.get();
    a.keys = keys.get();
    a.n_pow2 = n_pow2;
    a.out = out.get();
    o.run(a);
    return out.download();
}

inline std::vector<model::sampling_params> sampler_settings() {
    std::vector<model::sampling_params> v;
    auto add = [&](float t, int k, float p, float min_p, float rep, int last_n) {
        model::sampling_params s;
        s.temperature = t;
        s.top_k = k;
        s.top_p = p;
        s.min_p = min_p;
        s.repetition_penalty = rep;
        s.repeat_last_n = last_n;
        v.push_back(s);
    };
    add(0.0f, 0, 1.0f, 0.0f, 1.0f, 64);     // greedy
    add(0.8f, 0, 1.0f, 0.0f, 1.0f, 64);     // temperature alone: no order needed
    add(1.0f, 5, 1.0f, 0.0f, 1.0f, 64);     // top-k
    add(1.2f, 50, 0.9f, 0.0f, 1.0f, 64);    // top-k, top-p
    add(1.0f, 0, 0.5f, 0.0f, 1.0f, 64);     // top-p over the whole vocabulary
    add(1.0f, 0, 1.0f, 0.05f, 1.0f, 64);    // min-p
    add(0.7f, 20, 0.95f, 0.02f, 1.3f, 8);   // everything, a short window
    add(0.0f, 0, 1.0f, 0.0f, 1.5f, 64);     // greedy with a repetition penalty
    add(2.0f, 0, 1.0f, 0.0f, 0.8f, -1);     // a penalty below 1, the whole history
    add(0.5f, 100000, 1.0f, 0.0f, 1.0f, 0); // top-k past the vocabulary
    return v;
}

/// Every setting on every row kind, 3 draws each, against model::sampler. `exact`: logprob bits.
inline void check_sampler_table(kc::ops& o, bool exact) {
    std::uint32_t seed = 70;
    for (const std::uint32_t n_vocab : {1u, 7u, 300u, 4099u}) {
        CAPTURE(n_vocab);
        const std::uint32_t rows = 3;
        const std::vector<float> z = sampler_rows(rows, n_vocab, ++seed);
        std::vector<std::int32_t> recent;
        for (int i = 0; i < 30; ++i)
            recent.push_back(static_cast<std::int32_t>((i * 37 + seed) % (n_vocab + 3)) - 1);
        for (model::sampling_params p : sampler_settings()) {
            CAPTURE(p.temperature);
            CAPTURE(p.top_k);
            CAPTURE(p.top_p);
            CAPTURE(p.min_p);
            CAPTURE(p.repetition_penalty);
            p.seed = ++seed;
            std::vector<model::sampler> cpu, twin;
            for (std::uint32_t r = 0; r < rows; ++r) {
                cpu.push_back(model::sampler::create(p).value());
                twin.push_back(model::sampler::create(p).value());
            }
            for (int draw = 0; draw < 3; ++draw) {
                std::vector<model::device_sample> reqs(rows);
                for (std::uint32_t r = 0; r < rows; ++r) {
                    reqs[r].params = p;
                    reqs[r].recent = recent;
                    if (p.temperature != 0.0f)
                        reqs[r].uniform = twin[r].take_uniform();
                }
                const auto got = device_draw(o, z, n_vocab, reqs);
                for (std::uint32_t r = 0; r < rows; ++r) {
                    CAPTURE(r);
                    CAPTURE(draw);
                    const std::span<const float> row(z.data() + std::size_t{r} * n_vocab, n_vocab);
                    const auto want = cpu[r].sample(row, recent);
                    REQUIRE(want);
                    CHECK(got[r].status == 0);
                    CHECK(got[r].token == want->token);
                    if (exact)
                        CHECK(std::memcmp(&got[r].logprob, &want->logprob, sizeof(float)) == 0);
                    else
                        CHECK(std::fabs(got[r].logprob - want->logprob) <= 1e-5f);
                }
            }
        }
    }
}

/// OpenAI's adjustments on the host: bias, then model::sampler's repetition penalty, then
/// presence and frequency; the CPU sampler (its own penalty off) draws from the result.
inline void check_sampler_penalties_and_bias(kc::ops& o, bool exact) {
    const std::uint32_t n_vocab = 500;
    const std::vector<float> z = sampler_rows(3, n_vocab, 5);
    model::device_sample req;
    req.params.temperature = 0.9f;
    req.params.top_k = 40;
    req.params.repetition_penalty = 1.25f;
    req.params.repeat_last_n = 6;
    req.params.seed = 99;
    req.recent = {4, 9, 9, 17, 250, 3, 3, 3, 600, -2}; // the window: 250, 3, 3, 3, 600, -2
    req.presence_penalty = 0.7f;
    req.frequency_penalty = 0.3f;
    req.counted = {3, 3, 9, 17, 17, 17, 499};
    req.logit_bias = {{3, 2.5f}, {42, -100.0f}, {7, 1.0f}, {7, 4.0f}};
    for (std::uint32_t r = 0; r < 3; ++r) {
        CAPTURE(r);
        std::vector<float> row(z.begin() + std::size_t{r} * n_vocab,
                               z.begin() + std::size_t{r + 1} * n_vocab);
        row[3] += 2.5f;
        row[42] += -100.0f;
        row[7] += 4.0f; // the later bias for a token wins
        for (int t : {250, 3})
            row[t] = row[t] > 0.0f ? row[t] / 1.25f : row[t] * 1.25f;
        for (auto [t, count] : std::vector<std::pair<int, int>>{{3, 2}, {9, 1}, {17, 3}, {499, 1}})
            row[t] = row[t] - (static_cast<float>(count) * 0.3f + 0.7f);
        model::sampling_params plain = req.params;
        plain.repetition_penalty = 1.0f;
        auto cpu = model::sampler::create(plain).value();
        auto twin = model::sampler::create(plain).value();
        model::device_sample d = req;
        d.uniform = twin.take_uniform();
        std::vector<float> one(z.begin() + std::size_t{r} * n_vocab,
                               z.begin() + std::size_t{r + 1} * n_vocab);
        const auto got = device_draw(o, one, n_vocab, {d});
        const auto want = cpu.sample(row);
        REQUIRE(want);
        CHECK(got[0].token == want->token);
        if (exact)
            CHECK(std::memcmp(&got[0].logprob, &want->logprob, sizeof(float)) == 0);
    }
}

/// Without report_logprob the device skips the logprob's sum over the vocabulary: the same
/// tokens, and 0 for the logprob.
inline void check_sampler_without_logprob(kc::ops& o) {
    const std::uint32_t n_vocab = 1000;
    const std::vector<float> z = sampler_rows(3, n_vocab, 17);
    for (const float t : {0.0f, 0.8f}) {
        model::sampling_params p;
        p.temperature = t;
        p.top_k = 30;
        p.seed = 5;
        p.report_logprob = false;
        auto cpu = model::sampler::create(p).value();
        auto twin = model::sampler::create(p).value();
        std::vector<model::device_sample> reqs(3);
        for (auto& r : reqs) {
            r.params = p;
            r.uniform = t != 0.0f ? twin.take_uniform() : 0.0;
        }
        const auto got = device_draw(o, z, n_vocab, reqs);
        for (std::uint32_t r = 0; r < 3; ++r) {
            const auto want =
                cpu.sample(std::span<const float>(z.data() + std::size_t{r} * n_vocab, n_vocab));
            REQUIRE(want);
            CHECK(got[r].token == want->token);
            CHECK(got[r].logprob == 0.0f);
        }
    }
}

/// A NaN logit and a row without a finite maximum: refused as model::sampler refuses them.
inline void check_sampler_refusals(kc::ops& o) {
    const std::uint32_t n_vocab = 40;
    std::vector<float> z(2 * n_vocab, 0.5f);
    z[17] = NAN;
    z[30] = NAN;
    z[n_vocab + 4] = std::numeric_limits<float>::infinity();
    std::vector<model::device_sample> reqs(2);
    const auto got = device_draw(o, z, n_vocab, reqs);
    CHECK(got[0].status == 1);
    CHECK(got[0].detail == 17); // the lowest NaN id, as log_normalizer names it
    CHECK(got[1].status == 2);
    auto cpu = model::sampler::create(model::sampling_params{}).value();
    CHECK_FALSE(cpu.sample(std::span<const float>(z.data(), n_vocab)));
    CHECK_FALSE(cpu.sample(std::span<const float>(z.data() + n_vocab, n_vocab)));
}

} // namespace bitnet::test::cuda
