// Samplers: greedy ties, each filter's kept set on hand-made logits, seeded determinism,
// repetition penalty, log-probabilities and parameter validation.
#include "model/sampling/sampler.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <vector>

using namespace bitnet;
using namespace bitnet::model;

namespace {

sampler make(const sampling_params& p) {
    auto s = sampler::create(p);
    REQUIRE(s);
    return std::move(*s);
}

// Tokens drawn over many seeds: the support of the filtered distribution.
std::set<std::int32_t> support(sampling_params p, const std::vector<float>& logits,
                               int n_draws = 400) {
    std::set<std::int32_t> seen;
    auto s = make(p);
    for (int i = 0; i < n_draws; ++i)
        seen.insert(s.sample(logits).value().token);
    return seen;
}

} // namespace

TEST_CASE("sampler: greedy takes the argmax and the lowest id on ties") {
    sampling_params p;
    p.temperature = 0.0f;
    auto s = make(p);
    CHECK(s.sample(std::vector<float>{0.1f, 2.0f, -1.0f, 2.0f}).value().token == 1);
    CHECK(s.sample(std::vector<float>{3.0f, 3.0f, 3.0f}).value().token == 0);
    CHECK(s.sample(std::vector<float>{-5.0f, -4.0f, -4.5f}).value().token == 1);
}

TEST_CASE("sampler: top_k = 1 equals greedy, whatever the temperature and seed") {
    const std::vector<float> logits{0.5f, 1.9f, 1.9f, 0.7f, -3.0f, 1.2f};
    sampling_params p;
    p.top_k = 1;
    p.temperature = 1.7f;
    for (std::uint64_t seed = 0; seed < 20; ++seed) {
        p.seed = seed;
        CHECK(make(p).sample(logits).value().token == 1);
    }
}

TEST_CASE("sampler: top-k, top-p and min-p keep the expected sets") {
    // Probabilities proportional to 8, 4, 2, 1, 1 (sum 16): 0.5, 0.25, 0.125, 0.0625, 0.0625.
    const std::vector<float> logits{std::log(8.0f), std::log(4.0f), std::log(2.0f), 0.0f, 0.0f};
    sampling_params p;
    p.temperature = 1.0f;

    SUBCASE("no filter reaches every token") {
        CHECK(support(p, logits, 2000) == std::set<std::int32_t>{0, 1, 2, 3, 4});
    }
    SUBCASE("top_k = 2") {
        p.top_k = 2;
        CHECK(support(p, logits) == std::set<std::int32_t>{0, 1});
    }
    SUBCASE("top_p = 0.7: 0.5 + 0.25 reaches it") {
        p.top_p = 0.7f;
        CHECK(support(p, logits) == std::set<std::int32_t>{0, 1});
    }
    SUBCASE("top_p = 0.8 needs a third token") {
        p.top_p = 0.8f;
        CHECK(support(p, logits) == std::set<std::int32_t>{0, 1, 2});
    }
    SUBCASE("top_p tiny still keeps the best token") {
        p.top_p = 1e-6f;
        CHECK(support(p, logits) == std::set<std::int32_t>{0});
    }
    SUBCASE("min_p = 0.25: p >= 0.125") {
        p.min_p = 0.25f;
        CHECK(support(p, logits) == std::set<std::int32_t>{0, 1, 2});
    }
    SUBCASE("min_p = 0.3: p >= 0.15") {
        p.min_p = 0.3f;
        CHECK(support(p, logits) == std::set<std::int32_t>{0, 1});
    }
    SUBCASE("filters see temperature-free probabilities") {
        p.top_p = 0.7f;
        p.temperature = 50.0f; // near-uniform after temperature, but the set is fixed before
        CHECK(support(p, logits) == std::set<std::int32_t>{0, 1});
    }
}

TEST_CASE("sampler: same seed gives the same sequence, different seeds differ") {
    std::vector<float> logits(64);
    for (std::size_t i = 0; i < logits.size(); ++i)
        logits[i] = static_cast<float>(i % 7) * 0.3f;
    auto run = [&](std::uint64_t seed) {
        sampling_params p;
        p.seed = seed;
        p.top_k = 40;
        p.top_p = 0.95f;
        auto s = make(p);
        std::vector<std::int32_t> out;
        for (int i = 0; i < 50; ++i)
            out.push_back(s.sample(logits).value().token);
        return out;
    };
    CHECK(run(42) == run(42));
    CHECK(run(42) != run(43));
}

TEST_CASE("sampler: repetition penalty divides positive and multiplies negative logits") {
    sampling_params p;
    p.temperature = 0.0f;
    p.repetition_penalty = 1.5f;
    p.n_logprobs = 3;
    auto s = make(p);
    const std::vector<float> logits{2.0f, 1.6f, -1.0f};
    // Without history token 0 wins; penalised 2.0 / 1.5 = 1.33 < 1.6.
    CHECK(s.sample(logits).value().token == 0);
    const std::vector<std::int32_t> recent{0, 0, 2, 9999 /* out of vocab: ignored */};
    auto r = s.sample(logits, recent).value();
    CHECK(r.token == 1);
    // Token 2's logit became -1.5: its logprob matches the penalised distribution.
    const double norm = std::log(std::exp(2.0 / 1.5) + std::exp(1.6) + std::exp(-1.5));
    REQUIRE(r.top_logprobs.size() == 3);
    CHECK(r.top_logprobs[2].token == 2);
    CHECK(r.top_logprobs[2].logprob == doctest::Approx(-1.5 - norm).epsilon(1e-5));

    // Outside the window the token is not penalised.
    p.repeat_last_n = 2;
    auto windowed = make(p);
    CHECK(windowed.sample(logits, std::vector<std::int32_t>{0, 1, 2}).value().token == 0);
}

TEST_CASE("sampler: logprobs are a log-softmax, sorted, and exp-sum to 1") {
    std::vector<float> logits{1.0f, 3.0f, 3.0f, -2.0f, 0.5f};
    sampling_params p;
    p.n_logprobs = 5;
    p.temperature = 0.7f;
    p.seed = 3;
    auto r = make(p).sample(logits).value();
    REQUIRE(r.top_logprobs.size() == 5);
    double total = 0.0;
    for (const auto& lp : r.top_logprobs)
        total += std::exp(lp.logprob);
    CHECK(total == doctest::Approx(1.0).epsilon(1e-6));
    CHECK(r.top_logprobs[0].token == 1); // tie 1/2: lowest id first
    CHECK(r.top_logprobs[1].token == 2);
    CHECK(r.top_logprobs[4].token == 3);
    bool found = false;
    for (const auto& lp : r.top_logprobs)
        if (lp.token == r.token) {
            found = true;
            CHECK(lp.logprob == r.logprob);
        }
    CHECK(found);
    // Temperature does not change reported logprobs.
    p.temperature = 0.0f;
    auto g = make(p).sample(logits).value();
    CHECK(g.top_logprobs[0].logprob == r.top_logprobs[0].logprob);
}

TEST_CASE("sampler: invalid parameters and inputs are rejected with a clear error") {
    auto bad = [](auto edit) {
        sampling_params p;
        edit(p);
        auto r = validate(p);
        REQUIRE_FALSE(r);
        CHECK(r.error().value() == errc::invalid_argument);
        CHECK_FALSE(sampler::create(p));
        return r.error().message;
    };
    CHECK(bad([](auto& p) { p.temperature = -0.1f; }).find("temperature") != std::string::npos);
    bad([](auto& p) { p.temperature = NAN; });
    CHECK(bad([](auto& p) { p.top_k = -1; }).find("top_k") != std::string::npos);
    bad([](auto& p) { p.top_p = 0.0f; });
    bad([](auto& p) { p.top_p = 1.01f; });
    bad([](auto& p) { p.min_p = -0.5f; });
    bad([](auto& p) { p.min_p = 1.5f; });
    bad([](auto& p) { p.repetition_penalty = 0.0f; });
    bad([](auto& p) { p.repeat_last_n = -2; });
    CHECK(bad([](auto& p) { p.n_logprobs = 21; }).find("n_logprobs") != std::string::npos);
    CHECK(validate(sampling_params{}));

    auto s = make(sampling_params{});
    CHECK(s.sample(std::vector<float>{}).error().value() == errc::invalid_argument);
    CHECK(s.sample(std::vector<float>{1.0f, NAN}).error().value() == errc::invalid_argument);
}

TEST_CASE("sampler: resume_after continues the draws of a sampler that took n samples") {
    sampling_params p;
    p.temperature = 2.0f;
    p.seed = 99;
    const std::vector<float> logits{0.5f, 0.1f, 0.3f, 0.2f, 0.0f, 0.4f, 0.6f, 0.05f};
    auto whole = make(p);
    std::vector<std::int32_t> first, later;
    for (int i = 0; i < 40; ++i)
        (i < 15 ? first : later).push_back(whole.sample(logits).value().token);
    // A fresh sampler told it already drew 15 times gives the same tail...
    auto resumed = make(p);
    resumed.resume_after(15);
    std::vector<std::int32_t> tail;
    for (int i = 0; i < 25; ++i)
        tail.push_back(resumed.sample(logits).value().token);
    CHECK(tail == later);
    // ... which a restarted one does not (it repeats the head).
    auto restarted = make(p);
    std::vector<std::int32_t> again;
    for (int i = 0; i < 25; ++i)
        again.push_back(restarted.sample(logits).value().token);
    CHECK(again != later);
    // Greedy draws nothing: resuming it changes nothing.
    p.temperature = 0.0f;
    auto g = make(p);
    g.resume_after(1000);
    CHECK(g.sample(logits).value().token == 6);
}

TEST_CASE("sampler: first_maximum_only holds only for a greedy draw that reports nothing else, "
          "and such a draw takes the same token from the row's maximum alone") {
    // Row 3 is the first maximum; a penalty on it makes row 1 win.
    const std::vector<float> full{0.5f, 1.9f, -1.0f, 2.0f, 1.0f, 1.2f};
    std::vector<float> max_only(full.size(), -INFINITY);
    max_only[3] = full[3];
    const std::vector<std::int32_t> recent{3};

    sampling_params p;
    p.temperature = 0.0f;
    p.report_logprob = false;
    CHECK(make(p).first_maximum_only());
    CHECK(make(p).sample(full, recent).value().token == 3);
    CHECK(make(p).sample(max_only, recent).value().token == 3);
    auto no_window = p;
    no_window.repetition_penalty = 2.0f;
    no_window.repeat_last_n = 0; // the penalty looks at nothing
    CHECK(make(no_window).first_maximum_only());

    auto sampled = p;
    sampled.temperature = 0.5f;
    auto reported = p;
    reported.report_logprob = true;
    auto alternatives = p;
    alternatives.n_logprobs = 2;
    auto penalised = p;
    penalised.repetition_penalty = 2.0f;
    for (const auto& q : {sampled, reported, alternatives, penalised})
        CHECK_FALSE(make(q).first_maximum_only());
    // Why a penalty rules it out: the penalised full row's greedy token is another one.
    CHECK(make(penalised).sample(full, recent).value().token == 1);
    CHECK(make(penalised).sample(max_only, recent).value().token == 3);
    // The default reports its logprob: a request must say it shows none.
    CHECK(sampling_params{}.report_logprob);
}
