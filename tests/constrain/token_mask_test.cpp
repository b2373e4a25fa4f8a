// model/constrain: the trie walk's masks against the plain reference (each vocabulary entry's
// piece walked on its own) on random reachable states of real tokenizers, and the caches.
#include "model/constrain/token_constraint.hpp"
#include "vocab_fixtures.hpp"

#include <doctest/doctest.h>

#include <random>

using namespace bitnet;
using namespace bitnet::model::constrain;

namespace {

const char* schema = R"({"type":"object","properties":{
    "name":{"type":"string","maxLength":12},
    "age":{"type":"integer","minimum":0,"maximum":150},
    "tags":{"type":"array","items":{"enum":["a","bc","déf"]},"maxItems":3},
    "score":{"type":"number"},"ok":{"type":"boolean"},
    "code":{"type":"string","pattern":"^[A-Z]{2}-\\d+$"},
    "extra":{"anyOf":[{"type":"null"},{"type":"object"}]}},
    "required":["name","age"],"additionalProperties":false})";

/// A closed object with few names: every name can be used up (no comma after the last).
const char* small_schema = R"({"type":"object","properties":{"a":{"type":"integer"},
    "b":{"type":"boolean"}},"required":["a"],"additionalProperties":false})";

/// Walks `n_states` random paths of allowed tokens, comparing both masks at every state.
void compare_masks(const model::tokenizer& tok, int n_paths, int max_len, std::uint64_t seed,
                   const char* which = schema) {
    auto c = schema_cache::shared().get(which, tok);
    REQUIRE(c);
    std::mt19937_64 rng(seed);
    int states = 0;
    for (int p = 0; p < n_paths; ++p) {
        token_constraint tc(*c);
        std::string text;
        for (int step = 0; step < max_len; ++step) {
            const auto by_trie = (*c)->mask_by_trie(tc.state());
            const auto by_scan = (*c)->mask_by_scan(tc.state());
            REQUIRE(by_trie == by_scan);
            ++states;
            std::vector<std::int32_t> allowed;
            for (std::int32_t id = 0; id < tok.n_vocab(); ++id)
                if (mask_has(by_scan, id))
                    allowed.push_back(id);
            REQUIRE_MESSAGE(!allowed.empty(), "dead end after: " << text); // no dead ends
            const auto id = allowed[rng() % allowed.size()];
            REQUIRE(tc.accept(id));
            text += tok.token_to_piece(id, false);
            text += "|";
            if (tok.is_eog(id))
                break;
        }
    }
    CHECK(states > n_paths);
}

} // namespace

TEST_CASE("token mask: trie walk == per-token reference, default model's tokenizer") {
    compare_masks(test::default_tokenizer(), 40, 60, 1);
    compare_masks(test::default_tokenizer(), 40, 30, 3, small_schema);
}

TEST_CASE("token mask: trie walk == per-token reference, Llama-3 tokenizer") {
    compare_masks(test::llama3_tokenizer(), 3, 12, 2);
}

TEST_CASE("token mask: EOG only where the value is complete, nothing after a finished value") {
    const auto& tok = test::default_tokenizer();
    auto c = schema_cache::shared().get(R"({"type":"boolean"})", tok);
    REQUIRE(c);
    token_constraint tc(*c);
    const auto eog = tok.eog_ids();
    REQUIRE_FALSE(eog.empty());
    CHECK_FALSE(mask_has(**tc.allowed(), eog[0]));
    for (auto id : tok.encode("true").value())
        REQUIRE(tc.accept(id));
    const auto m = *tc.allowed();
    std::size_t n_allowed = 0;
    for (std::int32_t id = 0; id < tok.n_vocab(); ++id)
        n_allowed += mask_has(*m, id) ? 1 : 0;
    CHECK(n_allowed == eog.size());
    CHECK(mask_has(*m, eog[0]));
}

TEST_CASE("schema cache: a schema compiles once per tokenizer, masks are cached per state") {
    const auto& tok = test::default_tokenizer();
    auto& cache = schema_cache::shared();
    const std::string s = R"({"type":"array","items":{"type":"integer"},"$comment":"cache-test"})";
    const auto before = cache.compilations();
    auto a = cache.get(s, tok);
    auto b = cache.get(s, tok);
    REQUIRE(a);
    REQUIRE(b);
    CHECK(cache.compilations() == before + 1);
    CHECK(a->get() == b->get());
    token_constraint t1(*a), t2(*b);
    (void)t1.allowed();
    const auto computed = (*a)->masks_computed();
    (void)t2.allowed(); // the same state
    CHECK((*a)->masks_computed() == computed);
}
