// model/constrain: states that differ only in a string's length count share one mask where the
// count cannot change which tokens fit (byte_matcher::mask_key), and their masks are equal.
#include "model/constrain/json_schema.hpp"
#include "model/constrain/token_constraint.hpp"
#include "vocab_fixtures.hpp"

#include <doctest/doctest.h>

#include <map>
#include <random>
#include <string>

using namespace bitnet;
using namespace bitnet::model::constrain;

namespace {

/// The state after `"` and `n` copies of `fill`.
byte_matcher after(const compiled_constraint& c, std::size_t n, char fill = 'a') {
    auto m = byte_matcher::start(c.rules());
    REQUIRE(m.feed(c.rules(), "\"" + std::string(n, fill)));
    return m;
}

/// For counts `ns`: states with equal keys have equal masks (by the plain per-token reference);
/// returns how many distinct keys they had.
std::size_t check_keys(const compiled_constraint& c, const std::vector<std::size_t>& ns,
                       char fill = 'a') {
    std::map<std::string, token_mask> by_key;
    for (auto n : ns) {
        CAPTURE(n);
        const auto m = after(c, n, fill);
        const auto key = c.mask_key(m);
        const auto mask = c.mask_by_scan(m);
        auto [it, fresh] = by_key.emplace(key, mask);
        if (!fresh)
            CHECK(it->second == mask);
    }
    return by_key.size();
}

} // namespace

TEST_CASE("mask sharing: far from maxLength, past minLength, the count is left out of the key") {
    for (const auto* tok : {&test::default_tokenizer(), &test::llama3_tokenizer()}) {
        const auto longest = [&] {
            auto c = schema_cache::shared().get(R"({"type":"string"})", *tok);
            REQUIRE(c);
            return (*c)->vocab().max_piece_bytes;
        }();
        CAPTURE(longest);
        auto cap = schema_cache::shared().get(R"({"type":"string","maxLength":3000})", *tok);
        REQUIRE(cap);
        // Far from the cap: one key for every count; within a token of it: a key per count.
        std::vector<std::size_t> far, near;
        for (std::size_t n = 0; n + longest <= 3000 && n < 700; n += 37)
            far.push_back(n);
        for (std::size_t n = 3000 - longest; n <= 3000; n += std::max<std::size_t>(1, longest / 9))
            near.push_back(n);
        CHECK(check_keys(**cap, far) == 1);
        CHECK(check_keys(**cap, near) == near.size());
        CHECK((*cap)->mask_by_scan(after(**cap, 0)) != (*cap)->mask_by_scan(after(**cap, 2999)));
        // minLength: below it by more than a token, one key; past it, one key.
        auto min = schema_cache::shared().get(R"({"type":"string","minLength":900})", *tok);
        REQUIRE(min);
        CHECK(check_keys(**min, {0, 11, 200, 900 - longest - 1}) == 1);
        CHECK(check_keys(**min, {900, 950, 1400}) == 1);
        // A pattern: the far zone starts its longest shortest completion earlier.
        auto pat = schema_cache::shared().get(
            R"({"type":"string","pattern":"^a+(-[a-z]{3})?$","maxLength":2000})", *tok);
        REQUIRE(pat);
        CHECK(check_keys(**pat, {3, 50, 333, 1000}) == 1);
        std::vector<std::size_t> pat_near;
        for (std::size_t n = 2000 - longest - 4; n < 2000;
             n += std::max<std::size_t>(1, longest / 7))
            pat_near.push_back(n);
        CHECK(check_keys(**pat, pat_near) > 1);
    }
}

TEST_CASE("mask sharing: an anyOf of 32 long strings is a handful of masks, not one per token") {
    // Length ranges with gaps between them, so the compiler cannot join the strings into one:
    // 32 configurations inside the string, each count far from its bounds.
    std::string schema = R"({"title":"mask sharing","anyOf":[)";
    for (int i = 0; i < 32; ++i)
        schema += std::string(i ? "," : "") + R"({"type":"string","minLength":)" +
                  std::to_string(2000 * i) + R"(,"maxLength":)" + std::to_string(2000 * i + 1000) +
                  "}";
    schema += "]}";
    auto c = schema_cache::shared().get(schema, test::default_tokenizer());
    REQUIRE(c);
    token_constraint tc(*c);
    std::mt19937_64 rng(5);
    int taken = 0;
    for (; taken < 150; ++taken) {
        auto mask = tc.allowed();
        REQUIRE(mask);
        std::vector<std::int32_t> ids;
        for (std::int32_t id = 0; id < (*c)->vocab().n_vocab; ++id)
            if (mask_has(**mask, id) && !test::default_tokenizer().is_eog(id) &&
                (*c)->vocab().pieces[static_cast<std::size_t>(id)].find('"', taken == 0 ? 1 : 0) ==
                    std::string::npos)
                ids.push_back(id); // opens the string, then stays inside it
        REQUIRE(!ids.empty());
        REQUIRE(tc.accept(ids[rng() % ids.size()]));
    }
    // Before the quote, inside the string (far from every cap), and the fixed handful of phases
    // inside an escape or a UTF-8 sequence: not one mask per token.
    CHECK((*c)->masks_computed() <= 16);
}
