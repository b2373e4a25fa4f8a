// Speculative decoding over the REAL engine on bitnet.cpp's tiny file (random weights, greedy
// margins down to 0.003): the batcher drafts from each sequence's own tokens, the executor
// verifies the drafts in one pass and keeps only those its sampler picks, so every generation
// must equal the same generation without drafts, token for token and byte for byte, whether
// greedy, seeded, under a JSON Schema, cut by a stop string, alone, in a mixed batch, under KV
// pressure (preemption) or resumed after k tokens.
#include "actors/actor_test_config.hpp"
#include "actors/batcher.hpp"
#include "actors/batcher_client.hpp"
#include "actors/executor.hpp"
#include "actors/tiny_model_rig.hpp"
#include "model/gguf/gguf_reader.hpp"
#include "model/tokenizer/tokenizer.hpp"

#include <caf/actor_system.hpp>
#include <doctest/doctest.h>

#include <random>

using namespace bitnet;

namespace {

using test::tiny_tokenizer;

/// A real executor and a batcher that drafts up to `max_draft` tokens per step (0: never).
struct spec_rig {
    test::actor_test_config cfg;
    caf::actor_system sys{cfg};
    msg::executor_actor exec;
    msg::batcher_actor batcher;

    spec_rig(std::uint32_t max_draft, std::uint32_t kv_blocks) {
        exec = actors::spawn_executor(sys, test::tiny_executor_order());
        auto bo = test::tiny_batcher_order(kv_blocks);
        bo.policy.spec_max_draft = max_draft;
        bo.policy.spec_step_tokens = 32;
        bo.policy.spec_by_default = true;
        batcher = actors::spawn_batcher(sys, bo, exec, tiny_tokenizer());
    }
    ~spec_rig() {
        caf::anon_send_exit(batcher, caf::exit_reason::user_shutdown);
        caf::anon_send_exit(exec, caf::exit_reason::user_shutdown);
    }
    std::vector<test::transcript> run(const std::vector<msg::generate_request>& reqs) {
        return test::run_together(sys, batcher, reqs, std::chrono::seconds(30));
    }
    msg::batcher_stats stats() { return test::batcher_stats_of(sys, batcher); }
};

using test::make_req;

/// A prompt that repeats a random phrase: drafts are proposed from the first step.
std::vector<msg::token_id> repeating_prompt(std::size_t phrase, int times, std::mt19937_64& rng) {
    const auto p = test::random_tokens(phrase, rng);
    std::vector<msg::token_id> out;
    for (int i = 0; i < times; ++i)
        out.insert(out.end(), p.begin(), p.end());
    return out;
}

/// Everything a client sees of a transcript: ids, indices, text pieces, logprobs, the end.
void check_same(const test::transcript& got, const test::transcript& want) {
    REQUIRE(got.done);
    REQUIRE(want.done);
    REQUIRE(got.tokens.size() == want.tokens.size());
    for (std::size_t i = 0; i < got.tokens.size(); ++i) {
        CAPTURE(i);
        CHECK(got.tokens[i].token == want.tokens[i].token);
        CHECK(got.tokens[i].index == want.tokens[i].index);
        CHECK(got.tokens[i].text == want.tokens[i].text);
        CHECK(got.tokens[i].logprob == want.tokens[i].logprob);
    }
    CHECK(got.done->finish_reason == want.done->finish_reason);
    CHECK(got.done->completion_tokens == want.done->completion_tokens);
}

/// The requests of the tests below: greedy and seeded, repeating and random prompts.
std::vector<msg::generate_request> mixed_requests(std::mt19937_64& rng, std::uint32_t n_gen) {
    std::vector<msg::generate_request> reqs;
    for (std::uint64_t k = 0; k < 6; ++k) {
        const float temperature = k % 3 == 2 ? 0.8f : 0.0f;
        auto prompt =
            k % 2 == 0 ? repeating_prompt(4 + k, 4, rng) : test::random_tokens(6 + rng() % 9, rng);
        reqs.push_back(make_req(k + 1, std::move(prompt), n_gen, temperature, 900 + k));
    }
    return reqs;
}

} // namespace

TEST_CASE("tiny-i2_s speculation: greedy and seeded outputs are the same with drafts as "
          "without, alone and in a mixed batch") {
    spec_rig plain(0, 512);
    spec_rig spec(8, 512);
    std::mt19937_64 rng(2028);
    constexpr std::uint32_t n_gen = 48;
    auto reqs = mixed_requests(rng, n_gen);
    std::vector<test::transcript> alone;
    for (const auto& q : reqs)
        alone.push_back(plain.run({q}).front());
    CHECK(plain.stats().spec_drafted_tokens == 0);
    // Alone with drafts.
    for (std::size_t k = 0; k < reqs.size(); ++k) {
        CAPTURE(k);
        auto q = reqs[k];
        q.id += 100;
        check_same(spec.run({q}).front(), alone[k]);
    }
    const auto after_alone = spec.stats();
    MESSAGE("alone: " << after_alone.spec_accepted_tokens << " of "
                      << after_alone.spec_drafted_tokens << " drafts accepted in "
                      << after_alone.steps << " steps (" << reqs.size() * n_gen << " tokens)");
    CHECK(after_alone.spec_drafted_tokens > 0);
    CHECK(after_alone.spec_accepted_tokens > 0);
    // Together, half of them with speculation off (a mixed batch of drafting and plain
    // sequences).
    for (std::size_t k = 0; k < reqs.size(); ++k) {
        reqs[k].id += 200;
        if (k % 2 == 1)
            reqs[k].speculative = msg::spec_mode::off;
    }
    const auto together = spec.run(reqs);
    for (std::size_t k = 0; k < reqs.size(); ++k) {
        CAPTURE(k);
        check_same(together[k], alone[k]);
    }
    CHECK(spec.stats().spec_accepted_tokens > after_alone.spec_accepted_tokens);
}

TEST_CASE("tiny-i2_s speculation: the same outputs under KV pressure (preemption and recompute) "
          "and for a stream resumed after k tokens") {
    spec_rig plain(0, 512);
    spec_rig tight(8, 40); // 6 requests of up to ~70 positions in 40 blocks of 4: preemptions
    std::mt19937_64 rng(77);
    constexpr std::uint32_t n_gen = 40;
    auto reqs = mixed_requests(rng, n_gen);
    std::vector<test::transcript> alone;
    for (const auto& q : reqs)
        alone.push_back(plain.run({q}).front());
    const auto together = tight.run(reqs);
    for (std::size_t k = 0; k < reqs.size(); ++k) {
        CAPTURE(k);
        check_same(together[k], alone[k]);
    }
    const auto st = tight.stats();
    MESSAGE("under pressure: " << st.preemptions << " preemptions, " << st.spec_accepted_tokens
                               << " of " << st.spec_drafted_tokens << " drafts accepted");
    CHECK(st.preemptions > 0);
    CHECK(st.spec_accepted_tokens > 0);

    // Resumed after k tokens (a node died): the rest equals the first run's rest.
    spec_rig roomy(8, 512);
    for (std::size_t r : {std::size_t{0}, std::size_t{2}}) {
        const auto ids = test::generated_ids(alone[r]);
        for (std::uint32_t k : {1u, 7u, 20u}) {
            CAPTURE(r);
            CAPTURE(k);
            auto q = reqs[r];
            q.id = 1000 + r * 100 + k;
            q.prompt.insert(q.prompt.end(), ids.begin(), ids.begin() + k);
            q.n_resumed = k;
            const auto resumed = roomy.run({q}).front();
            REQUIRE(resumed.done);
            CHECK(test::generated_ids(resumed) ==
                  std::vector<msg::token_id>(ids.begin() + k, ids.end()));
        }
    }
}

TEST_CASE("tiny-i2_s speculation: under a JSON Schema and with a stop string, the same output "
          "as without drafts") {
    spec_rig plain(0, 512);
    spec_rig spec(8, 512);
    std::mt19937_64 rng(5);
    // A schema of repeated long keys: the masked sampler keeps the value valid, drafts from the
    // keys already written are verified under the same mask.
    auto q = make_req(1, repeating_prompt(5, 3, rng), 80, 0.0f, 0);
    q.json_schema = R"({"type":"object","properties":{)"
                    R"("first_long_property_name":{"type":"integer"},)"
                    R"("second_long_property_name":{"type":"integer"},)"
                    R"("third_long_property_name":{"type":"integer"}},)"
                    R"("required":["first_long_property_name","second_long_property_name",)"
                    R"("third_long_property_name"],"additionalProperties":false})";
    q.schema_param = "response_format";
    const auto want = plain.run({q}).front();
    REQUIRE(want.done);
    const auto got = spec.run({q}).front();
    check_same(got, want);
    MESSAGE("schema output: " << want.text());

    // A stop string in the middle of a generation whose tokens arrive several per step.
    auto s = make_req(2, repeating_prompt(6, 4, rng), 60, 0.0f, 0);
    const auto full = plain.run({s}).front();
    const std::string text = full.text();
    REQUIRE(text.size() > 12);
    s.stop = {text.substr(text.size() / 2, 3)};
    s.id = 3;
    const auto cut_plain = plain.run({s}).front();
    s.id = 4;
    const auto cut_spec = spec.run({s}).front();
    check_same(cut_spec, cut_plain);
    CHECK(cut_spec.done->finish_reason == "stop");
    CHECK(cut_spec.text() == cut_plain.text());
}
