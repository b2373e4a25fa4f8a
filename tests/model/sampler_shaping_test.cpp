// The sampler's logit shaping (sampler.hpp, steps 2-5): logit_bias, the ignore_eos and
// min_tokens hold-backs, and OpenAI's presence and frequency penalties, each checked against the
// arithmetic the header states (the CUDA device sampler mirrors it), plus their validation.
#include "model/sampling/sampler.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

using namespace bitnet;
using namespace bitnet::model;

namespace {

sampler make(const sampling_params& p) {
    auto s = sampler::create(p);
    REQUIRE(s);
    return std::move(*s);
}

sampling_params greedy_reporting(int n_logprobs) {
    sampling_params p;
    p.temperature = 0.0f;
    p.n_logprobs = n_logprobs;
    return p;
}

/// The logprob reported for `token` among a draw's alternatives (every token reported).
double reported(const sampled& s, std::int32_t token) {
    for (const auto& alt : s.top_logprobs)
        if (alt.token == token)
            return alt.logprob;
    FAIL("token " << token << " not among the alternatives");
    return 0.0;
}

/// log-softmax of `z` at `t`, in double (logprobs.hpp's arithmetic).
double log_softmax(const std::vector<float>& z, std::size_t t) {
    double m = -INFINITY;
    for (float v : z)
        m = std::max(m, static_cast<double>(v));
    double sum = 0.0;
    for (float v : z)
        sum += std::exp(static_cast<double>(v) - m);
    return static_cast<double>(z[t]) - (m + std::log(sum));
}

} // namespace

TEST_CASE("logit_bias: +100 forces a token under greedy, -100 removes the greedy one") {
    const std::vector<float> logits{0.5f, 3.0f, -2.0f, 1.0f, 2.5f};
    auto p = greedy_reporting(0);
    CHECK(make(p).sample(logits).value().token == 1);

    p.logit_bias = {{2, 100.0f}};
    for (int i = 0; i < 5; ++i)
        CHECK(make(p).sample(logits).value().token == 2);

    p.logit_bias = {{1, -100.0f}};
    CHECK(make(p).sample(logits).value().token == 4); // the next best

    // A sampled draw is forced too: +100 leaves every other token e^-100 of the mass.
    p.temperature = 1.0f;
    p.top_k = 0;
    p.min_p = 0.0f;
    p.logit_bias = {{3, 100.0f}};
    for (std::uint64_t seed = 0; seed < 50; ++seed) {
        p.seed = seed;
        CHECK(make(p).sample(logits).value().token == 3);
    }
}

TEST_CASE("logit_bias: added to the raw logit, ids past the row skipped, logprobs after it") {
    const std::vector<float> logits{0.5f, 3.0f, -2.0f, 1.0f};
    auto p = greedy_reporting(4);
    p.logit_bias = {{0, 1.25f}, {2, -0.5f}, {7, 50.0f}};
    const auto s = make(p).sample(logits).value();
    const std::vector<float> z{0.5f + 1.25f, 3.0f, -2.0f - 0.5f, 1.0f};
    for (std::int32_t t = 0; t < 4; ++t)
        CHECK(reported(s, t) == doctest::Approx(log_softmax(z, static_cast<std::size_t>(t))));
}

TEST_CASE(
    "ignore_eos never draws an end-of-generation id, and min_tokens holds EOG and stop ids back "
    "until that many tokens were generated") {
    // Token 3 is the model's EOG and the greedy choice; token 1 is the request's stop id and
    // the runner-up.
    const std::vector<float> logits{0.0f, 2.0f, -1.0f, 4.0f, 1.5f};
    auto p = greedy_reporting(5);
    p.eog_ids = {3};
    p.stop_ids = {1};
    CHECK(make(p).sample(logits).value().token == 3);

    auto ignore = p;
    ignore.ignore_eos = true;
    for (std::size_t n = 0; n < 4; ++n) {
        const auto s = make(ignore).sample(logits, {}, n).value();
        CHECK(s.token == 1); // the stop id is still allowed: ignore_eos is about EOG only
        CHECK(std::isinf(reported(s, 3)));
    }
    // A +100 bias does not revive a held-back token: the bias comes first.
    ignore.logit_bias = {{3, 100.0f}};
    CHECK(make(ignore).sample(logits).value().token == 1);

    auto at_least = p;
    at_least.min_tokens = 3;
    for (std::size_t n = 0; n < 3; ++n)
        CHECK(make(at_least).sample(logits, {}, n).value().token == 4);
    CHECK(make(at_least).sample(logits, {}, 3).value().token == 3);
    CHECK(make(at_least).sample(logits, {}, 9).value().token == 3);
}

TEST_CASE("presence and frequency penalties: OpenAI's formula over the generated tokens only") {
    const std::vector<float> logits{1.0f, 2.0f, 0.5f, -0.25f, 1.5f};
    auto p = greedy_reporting(5);
    p.presence_penalty = 0.5f;
    p.frequency_penalty = 0.75f;
    // The prompt repeats token 1 three times; the generated part (the last 4) holds token 1 once,
    // token 4 twice and token 2 once.
    const std::vector<std::int32_t> recent{1, 1, 1, 4, 1, 2, 4};
    const auto s = make(p).sample(logits, recent, 4).value();
    std::vector<float> z = logits;
    z[1] = z[1] - (0.75f * 1.0f + 0.5f);
    z[4] = z[4] - (0.75f * 2.0f + 0.5f);
    z[2] = z[2] - (0.75f * 1.0f + 0.5f);
    for (std::int32_t t = 0; t < 5; ++t)
        CHECK(reported(s, t) == doctest::Approx(log_softmax(z, static_cast<std::size_t>(t))));
    CHECK(s.token == 0); // 1.0 beats 2.0 - 1.25 and 1.5 - 2.0

    // No generated tokens: no penalty, whatever the prompt holds.
    CHECK(make(p).sample(logits, recent, 0).value().token == 1);
    // n_generated past the history counts all of it.
    const auto all = make(p).sample(logits, std::vector<std::int32_t>{1}, 99).value();
    CHECK(reported(all, 1) ==
          doctest::Approx(log_softmax(std::vector<float>{1.0f, 0.75f, 0.5f, -0.25f, 1.5f}, 1)));

    // Negative penalties favour repeats.
    auto favour = greedy_reporting(0);
    favour.frequency_penalty = -2.0f;
    CHECK(make(favour).sample(logits, std::vector<std::int32_t>{2}, 1).value().token == 2);
}

TEST_CASE("penalties keep a seeded draw exact: the same history and seed give the same token") {
    std::vector<float> logits(64);
    for (std::size_t i = 0; i < logits.size(); ++i)
        logits[i] = static_cast<float>(std::sin(static_cast<double>(i) * 1.7));
    sampling_params p;
    p.temperature = 0.9f;
    p.seed = 5;
    p.presence_penalty = 0.4f;
    p.frequency_penalty = 0.3f;
    p.logit_bias = {{7, 2.0f}};
    auto run = [&] {
        auto s = make(p);
        std::vector<std::int32_t> hist{1, 2, 3};
        for (int i = 0; i < 40; ++i)
            hist.push_back(s.sample(logits, hist, hist.size() - 3).value().token);
        return hist;
    };
    CHECK(run() == run());
}

TEST_CASE("shaping settings are validated, and each rules out the first-maximum shortcut") {
    auto bad = [](auto edit) {
        sampling_params p;
        edit(p);
        auto r = validate(p);
        REQUIRE_FALSE(r);
        return r.error().message;
    };
    CHECK(bad([](auto& p) { p.presence_penalty = 2.5f; }).find("presence_penalty") !=
          std::string::npos);
    CHECK(bad([](auto& p) { p.frequency_penalty = -2.01f; }).find("frequency_penalty") !=
          std::string::npos);
    bad([](auto& p) { p.frequency_penalty = NAN; });
    CHECK(bad([](auto& p) {
              p.logit_bias = {{1, 100.5f}};
          }).find("logit_bias") != std::string::npos);
    bad([](auto& p) { p.logit_bias = {{3, 1.0f}, {2, 1.0f}}; }); // not ascending
    bad([](auto& p) { p.logit_bias = {{2, 1.0f}, {2, 1.0f}}; }); // twice
    bad([](auto& p) { p.logit_bias = {{-1, 1.0f}}; });
    bad([](auto& p) {
        for (int i = 0; i <= 300; ++i)
            p.logit_bias.push_back({i, 1.0f});
    });

    sampling_params plain;
    plain.temperature = 0.0f;
    plain.report_logprob = false;
    CHECK(make(plain).first_maximum_only());
    std::vector<sampling_params> shaped(5, plain);
    shaped[0].presence_penalty = 0.1f;
    shaped[1].frequency_penalty = 0.1f;
    shaped[2].logit_bias = {{0, 1.0f}};
    shaped[3].min_tokens = 1;
    shaped[4].ignore_eos = true;
    for (const auto& q : shaped)
        CHECK_FALSE(make(q).first_maximum_only());
}
