// The logprobs arithmetic shared by the sampler (generated tokens) and prompt scoring (echo):
// a token scored from a row gets the bits the sampler reports for it from the same row, so a
// prompt token's logprob equals the one a single-token request would report.
#include "model/sampling/logprobs.hpp"

#include "model/sampling/sampler.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>

using namespace bitnet;

namespace {

std::vector<float> random_row(std::mt19937_64& rng, std::size_t n) {
    std::normal_distribution<float> d(0.0f, 3.0f);
    std::vector<float> row(n);
    for (auto& v : row)
        v = d(rng);
    return row;
}

bool same_bits(float a, float b) {
    return std::memcmp(&a, &b, sizeof a) == 0;
}

} // namespace

TEST_CASE("score_token gives the sampler's logprobs bit for bit, alternatives included") {
    std::mt19937_64 rng(7);
    for (std::size_t n : {1u, 2u, 5u, 37u, 1000u}) {
        CAPTURE(n);
        const auto row = random_row(rng, n);
        model::sampling_params p;
        p.temperature = 0.0f;
        p.n_logprobs = 20;
        auto smp = model::sampler::create(p).value();
        const auto s = smp.sample(row).value();
        std::vector<std::int32_t> order;
        const auto sc = model::score_token(row, s.token, 20, order).value();
        CHECK(same_bits(sc.logprob, s.logprob));
        REQUIRE(sc.top.size() == std::min<std::size_t>(20, n));
        REQUIRE(sc.top.size() == s.top_logprobs.size());
        for (std::size_t i = 0; i < sc.top.size(); ++i) {
            CHECK(sc.top[i].token == s.top_logprobs[i].token);
            CHECK(same_bits(sc.top[i].logprob, s.top_logprobs[i].logprob));
        }
        // Any token, not only the greedy one: its logprob is log-softmax, so the probabilities
        // of the row add up to 1.
        double mass = 0.0;
        for (std::size_t t = 0; t < n; ++t)
            mass += std::exp(static_cast<double>(
                model::score_token(row, static_cast<std::int32_t>(t), 0, order).value().logprob));
        CHECK(mass == doctest::Approx(1.0).epsilon(1e-5));
    }
}

TEST_CASE("score_token refuses a target outside the row, a NaN logit and a row without a finite "
          "maximum") {
    std::vector<std::int32_t> order;
    const std::vector<float> row{0.5f, 1.0f, -2.0f};
    CHECK_FALSE(model::score_token(row, 3, 1, order));
    CHECK_FALSE(model::score_token(row, -1, 1, order));
    const std::vector<float> nan_row{0.5f, std::nanf(""), 1.0f};
    auto r = model::score_token(nan_row, 0, 1, order);
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("NaN") != std::string::npos);
    const std::vector<float> inf_row{0.5f, INFINITY};
    CHECK_FALSE(model::score_token(inf_row, 0, 1, order));
    CHECK_FALSE(model::score_token(std::vector<float>{}, 0, 1, order));
    // Ties: the lower id first among equal logits.
    const std::vector<float> tie{1.0f, 2.0f, 2.0f, 0.0f};
    const auto t = model::score_token(tie, 0, 3, order).value();
    REQUIRE(t.top.size() == 3);
    CHECK(t.top[0].token == 1);
    CHECK(t.top[1].token == 2);
    CHECK(t.top[2].token == 0);
}

TEST_CASE("a drawn token's logprob is score_token's bits whichever way the sampler reaches its "
          "normaliser, and a draw that delivers none takes the same token") {
    // At temperature 1 without a filter the sampler takes the normaliser from the draw's own
    // sum; elsewhere it runs the normaliser's pass. Both must give score_token's bits, and
    // skipping the pass (no logprob delivered) must not move the draw.
    struct arm {
        float temperature;
        int top_k;
        float top_p;
    };
    std::mt19937_64 rng(11);
    for (const arm a : {arm{1.0f, 0, 1.0f}, arm{0.7f, 0, 1.0f}, arm{1.0f, 40, 1.0f},
                        arm{1.0f, 0, 0.9f}, arm{1.3f, 5, 0.95f}}) {
        CAPTURE(a.temperature);
        CAPTURE(a.top_k);
        CAPTURE(a.top_p);
        for (std::size_t n : {1u, 3u, 97u, 4096u}) {
            CAPTURE(n);
            model::sampling_params p;
            p.temperature = a.temperature;
            p.top_k = a.top_k;
            p.top_p = a.top_p;
            p.seed = n;
            auto reporting = model::sampler::create(p).value();
            p.report_logprob = false;
            auto silent = model::sampler::create(p).value();
            std::vector<std::int32_t> order;
            for (int draw = 0; draw < 20; ++draw) {
                const auto row = random_row(rng, n);
                const auto s = reporting.sample(row).value();
                const auto q = silent.sample(row).value();
                CHECK(q.token == s.token);
                CHECK(q.logprob == 0.0f);
                const auto sc = model::score_token(row, s.token, 0, order).value();
                CHECK(same_bits(sc.logprob, s.logprob));
            }
        }
    }
    // Without a delivered logprob the row is still checked: a NaN is refused, not drawn from.
    model::sampling_params p;
    p.report_logprob = false;
    auto smp = model::sampler::create(p).value();
    const std::vector<float> nan_row{0.5f, std::nanf(""), 1.0f};
    auto r = smp.sample(nan_row);
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("NaN") != std::string::npos);
}
