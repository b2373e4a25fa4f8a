// The batcher and executor over the REAL engine on bitnet.cpp's tiny file (random weights, greedy
// margins down to 0.003): tokens computed again must come out as they were first computed.
//  - Preemption: under KV pressure the policy releases a sequence and re-prefills prompt +
//    generated; greedy and seeded generations must equal the same generations without pressure.
//  - Resume: a stream cut after k tokens and submitted again as prompt + those k tokens with
//    n_resumed = k (as a node does for a stream whose node died) must continue with exactly the
//    first run's tokens k.., indices from k, and text that continues the text already sent.
// Both depend on seq_chunk::decoded_from: without it the recomputed positions are computed as a
// prompt and, on this file, later tokens change (tests/engine/decoded_positions_test.cpp).
#include "actors/actor_test_config.hpp"
#include "actors/batcher/batcher.hpp"
#include "actors/batcher_client.hpp"
#include "actors/executor/executor.hpp"
#include "actors/tiny_model_rig.hpp"
#include "messages/errors.hpp"
#include "model/gguf/gguf_reader.hpp"
#include "model/tokenizer/tokenizer.hpp"

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>
#include <doctest/doctest.h>

#include <random>

using namespace bitnet;
using namespace std::chrono_literals;

namespace {

using test::tiny_tokenizer;

/// A real executor (the "gguf" engine kind) and a batcher whose policy holds `kv_blocks` blocks
/// of 4 tokens (the engine's pool is larger: the policy's budget is the pressure).
struct tiny_rig {
    test::actor_test_config cfg;
    caf::actor_system sys{cfg};
    msg::executor_actor exec;
    msg::batcher_actor batcher;

    explicit tiny_rig(std::uint32_t kv_blocks) {
        exec = actors::spawn_executor(sys, test::tiny_executor_order());
        const auto bo = test::tiny_batcher_order(kv_blocks);
        // No end-of-generation ids: every run goes to max_tokens, so runs compare whole.
        batcher = actors::spawn_batcher(sys, bo, exec, tiny_tokenizer());
    }
    ~tiny_rig() {
        caf::anon_send_exit(batcher, caf::exit_reason::user_shutdown);
        caf::anon_send_exit(exec, caf::exit_reason::user_shutdown);
    }

    msg::batcher_stats stats() { return test::batcher_stats_of(sys, batcher); }
};

using test::transcript;

using test::generated_ids;

/// The text of the events with index >= from (the tail included).
std::string text_from(const transcript& t, std::uint32_t from) {
    std::string s;
    for (const auto& e : t.tokens)
        if (e.index >= from)
            s += e.text;
    return s;
}

std::vector<transcript> run_together(tiny_rig& r, const std::vector<msg::generate_request>& reqs) {
    return test::run_together(r.sys, r.batcher, reqs, std::chrono::seconds(30));
}

transcript run_one(tiny_rig& r, const msg::generate_request& req) {
    return run_together(r, {req}).front();
}

using test::make_req;

} // namespace

TEST_CASE("tiny-i2_s: greedy and seeded generations are the same with and without preemption") {
    // 4 requests of up to 12 + 40 tokens (up to 13 blocks each) in a budget of 24 blocks: they
    // cannot all grow, so the newest are preempted and recomputed (prompt + generated) in chunks.
    tiny_rig r(24);
    std::mt19937_64 rng(31);
    constexpr std::uint32_t n_gen = 40;
    std::vector<msg::generate_request> reqs;
    for (std::uint64_t k = 0; k < 4; ++k) {
        const float temperature = k % 2 == 0 ? 0.0f : 0.8f;
        reqs.push_back(
            make_req(k + 1, test::random_tokens(6 + rng() % 7, rng), n_gen, temperature, 500 + k));
    }
    std::vector<std::vector<msg::token_id>> alone;
    for (const auto& q : reqs) {
        auto t = run_one(r, q);
        REQUIRE(t.done);
        alone.push_back(generated_ids(t));
    }
    CHECK(r.stats().preemptions == 0);
    for (auto& q : reqs)
        q.id += 10;
    const auto together = run_together(r, reqs);
    CHECK(r.stats().preemptions > 0);
    for (std::size_t k = 0; k < reqs.size(); ++k) {
        CAPTURE(k);
        REQUIRE(together[k].done);
        CHECK(together[k].done->completion_tokens == n_gen);
        CHECK(generated_ids(together[k]) == alone[k]);
    }
}

TEST_CASE("tiny-i2_s: a stream resumed after k tokens continues with the first run's tokens, "
          "indices and text") {
    tiny_rig r(256);
    std::mt19937_64 rng(57);
    constexpr std::uint32_t n_gen = 32;
    msg::request_id next_id = 1;
    for (const float temperature : {0.0f, 0.8f}) {
        CAPTURE(temperature);
        const auto prompt = test::random_tokens(9, rng);
        const auto first_of = [&](std::vector<std::string> stops) {
            auto q = make_req(next_id++, prompt, n_gen, temperature, 4242);
            q.stop = std::move(stops);
            auto t = run_one(r, q);
            REQUIRE(t.done);
            REQUIRE(t.done->completion_tokens == n_gen);
            return t;
        };
        // A stop string that starts like the text at a few places but never matches: the
        // matcher holds text back there, so the cut points meet held-back text too.
        const std::string text = text_from(first_of({}), 0);
        REQUIRE(text.size() > 8);
        const std::vector<std::string> stops{text.substr(text.size() / 3, 2) + "\x01\x02",
                                             text.substr(text.size() / 2, 1) + "\x03"};
        const transcript first = first_of(stops);
        REQUIRE(text_from(first, 0) == text);
        const auto ids = generated_ids(first);
        for (std::uint32_t k = 1; k < n_gen; ++k) { // every cut point
            CAPTURE(k);
            auto q = make_req(next_id++, prompt, n_gen, temperature, 4242);
            q.stop = stops;
            q.prompt.insert(q.prompt.end(), ids.begin(), ids.begin() + k);
            q.n_resumed = k;
            const transcript resumed = run_one(r, q);
            REQUIRE(resumed.done);
            CHECK(generated_ids(resumed) == std::vector<msg::token_id>(ids.begin() + k, ids.end()));
            REQUIRE_FALSE(resumed.tokens.empty());
            CHECK(resumed.tokens.front().index == k);
            for (std::size_t i = 0; i < resumed.tokens.size(); ++i)
                if (resumed.tokens[i].token >= 0)
                    CHECK(resumed.tokens[i].index == k + i);
            // The text continues exactly where the text of tokens 0..k-1 stopped.
            CHECK(text_from(resumed, 0) == text_from(first, k));
            CHECK(resumed.done->completion_tokens == n_gen);
            CHECK(resumed.done->prompt_tokens == prompt.size());
            CHECK(resumed.done->finish == msg::finish_reason::length);
        }
    }
}

TEST_CASE("tiny-i2_s: a resumed request that cannot continue is refused at submit") {
    tiny_rig r(64);
    auto q = make_req(1, {10, 11, 12}, 4, 0.0f, 0);
    q.n_resumed = 3; // no original prompt left
    auto t = run_one(r, q);
    REQUIRE(t.failed);
    CHECK(t.failed->value() == errc::invalid_argument);
    CHECK(t.failed->param == "n_resumed");
    q.n_resumed = 2;
    q.max_tokens = 2; // every token already generated
    t = run_one(r, q);
    REQUIRE(t.failed);
    CHECK(t.failed->value() == errc::invalid_argument);
    // A first run that produced a stop string had ended there: nothing to resume.
    auto words = tiny_tokenizer()->encode("once upon a time");
    REQUIRE(words);
    REQUIRE(words->size() >= 3);
    q.prompt = *words;
    q.n_resumed = 1;
    q.max_tokens = 8;
    q.stop = {std::string(tiny_tokenizer()->token_to_piece(words->back()))};
    REQUIRE_FALSE(q.stop.front().empty());
    t = run_one(r, q);
    REQUIRE(t.failed);
    CHECK(t.failed->value() == errc::invalid_argument);
    CHECK(t.failed->message.find("stop string") != std::string::npos);
    q.stop = {"no such text"}; // the same request otherwise runs
    t = run_one(r, q);
    REQUIRE(t.done);
    CHECK(t.done->completion_tokens == 8);
}
